"""layer_norm kernel: ``(x - mean) * rsqrt(var + epsilon) * scale + bias`` over the
trailing dims from ``axis``.

Per row (the leading dims, loops ``%d0..``) three passes over the normalized dims
(loops ``%r0..``): the sum (mean), the sum of squared differences (variance), then
the normalization with the affine tail. Mean and the reciprocal deviation live in two
kernel-local scratch buffers shaped like the rows, so the row loops stay independent
(parallel). ``fuse-ops`` turns legalize's expansion of ``graph.layer_norm`` (reduce_mean,
sub, mul, reduce_mean, add, rsqrt, mul, mul, add: five kernels and four passes through
memory, 7% of a GPT decoder's time) back into the op so that it runs as this one kernel,
in the expansion's order of operations. ``scale`` and ``bias`` broadcast to the
normalized shape (right-aligned, size-1 dims read at 0).
"""

from __future__ import annotations

import math

from xdsl.dialects import func, memref
from xdsl.dialects import math as xmath

from dlc.dialects.graph_base import GraphOp, normalize_axis
from dlc.lowering.kernels import kernel
from dlc.lowering.kernels.builder import KernelBuilder, storage_type


@kernel("graph.layer_norm")
def lower_layer_norm(op: GraphOp, name: str) -> func.FuncOp:
    x_t, s_t, b_t = (v.type for v in op.operands)
    out_t = op.results[0].type
    et = out_t.element_type
    shape = list(x_t.get_shape())
    axis = normalize_axis(op.axis, len(shape))
    lead, norm = shape[:axis], shape[axis:]
    kb = KernelBuilder(name, [x_t, s_t, b_t], [out_t], op.name, ["x", "scale", "bias", "out"])
    mean = kb.emit(memref.AllocaOp.get(storage_type(et), shape=lead))
    inv = kb.emit(memref.AllocaOp.get(storage_type(et), shape=lead))
    mean.name_hint, inv.name_hint = "row_mean", "row_inv"
    count = kb.const(float(math.prod(norm)), et)
    eps = kb.const(float(op.epsilon), et)

    def affine_index(param_shape, inner):
        """`inner` (the normalized dims' ivs) right-aligned to a broadcast operand."""
        offset = len(norm) - len(param_shape)
        return [kb.index(0) if size == 1 else inner[offset + i] for i, size in enumerate(param_shape)]

    with kb.loops([f"d{k}" for k in range(len(lead))], lead) as outer:
        kb.store(kb.const(0.0, et), mean, outer)
        with kb.loops([f"r{k}" for k in range(len(norm))], norm) as inner:
            kb.store(kb.add(kb.load(mean, outer), kb.load(kb.inputs[0], outer + inner), et), mean, outer)
        kb.store(kb.div(kb.load(mean, outer), count, et), mean, outer)
        kb.store(kb.const(0.0, et), inv, outer)
        with kb.loops([f"r{k}" for k in range(len(norm))], norm) as inner:
            d = kb.sub(kb.load(kb.inputs[0], outer + inner), kb.load(mean, outer), et)
            kb.store(kb.add(kb.load(inv, outer), kb.mul(d, d, et), et), inv, outer)
        variance = kb.div(kb.load(inv, outer), count, et)
        kb.store(kb.emit(xmath.RsqrtOp(kb.add(variance, eps, et))), inv, outer)
        with kb.loops([f"r{k}" for k in range(len(norm))], norm) as inner:
            d = kb.sub(kb.load(kb.inputs[0], outer + inner), kb.load(mean, outer), et)
            y = kb.mul(kb.mul(d, kb.load(inv, outer), et),
                       kb.load(kb.inputs[1], affine_index(s_t.get_shape(), inner)), et)
            y = kb.add(y, kb.load(kb.inputs[2], affine_index(b_t.get_shape(), inner)), et)
            kb.store(y, kb.outputs[0], outer + inner)
    return kb.finish()
