"""softmax / log_softmax kernels (max-shifted, along one axis).

Per row (all dims but the axis, loops ``%d0..``) three passes over ``%r``:
max, then exp(x - max) summed, then the normalisation. The row max and sum
live in two kernel-local scratch buffers (``memref.alloca``) shaped like the
rows, so the row loops stay independent (safe to parallelize).

The max and sum loops are in-order reductions here (the GPU schedules read
this form); on the CPU the default schedule splits each into vector-wide
partial results (``lowering/schedule/rfactor.py``), so that they and the
``exp`` (a polynomial after expand-math) run on whole vectors. ``fuse-ops``
turns legalize's expansion (reduce_max, sub, exp, reduce_sum, div) back into
``graph.softmax`` so that it runs as this one kernel.
"""

from __future__ import annotations

from xdsl.dialects import func, memref
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import MemRefType

from dlc.dialects.graph import LogSoftmaxOp
from dlc.dialects.graph_base import GraphOp, normalize_axis
from dlc.lowering.kernels import kernel
from dlc.lowering.kernels.builder import KernelBuilder, storage_type


@kernel("graph.softmax", "graph.log_softmax")
def lower_softmax(op: GraphOp, name: str) -> func.FuncOp:
    x_t, out_t = op.operands[0].type, op.results[0].type
    et = out_t.element_type
    shape = x_t.get_shape()
    rank = len(shape)
    axis = normalize_axis(op.axis, rank)
    rows = [d for d in range(rank) if d != axis]
    kb = KernelBuilder(name, [x_t], [out_t], op.name, ["x", "out"])
    scratch_t = MemRefType(storage_type(et), [shape[d] for d in rows])
    row_max = kb.emit(memref.AllocaOp.get(scratch_t.element_type, shape=scratch_t.get_shape()))
    row_sum = kb.emit(memref.AllocaOp.get(scratch_t.element_type, shape=scratch_t.get_shape()))
    row_max.name_hint, row_sum.name_hint = "row_max", "row_sum"
    log = isinstance(op, LogSoftmaxOp)
    with kb.loops([f"d{k}" for k in range(len(rows))], [shape[d] for d in rows]) as outer:
        by_dim = dict(zip(rows, outer))

        def at(iv):
            return [iv if d == axis else by_dim[d] for d in range(rank)]

        kb.store(kb.const(float("-inf"), et), row_max, outer)
        kb.store(kb.const(0.0, et), row_sum, outer)
        with kb.loop("r", shape[axis]) as iv:
            m = kb.max(kb.load(row_max, outer), kb.load(kb.inputs[0], at(iv)), et)
            kb.store(m, row_max, outer)
        with kb.loop("r", shape[axis]) as iv:
            shifted = kb.sub(kb.load(kb.inputs[0], at(iv)), kb.load(row_max, outer), et)
            e = kb.emit(xmath.ExpOp(shifted))
            if not log:
                kb.store(e, kb.outputs[0], at(iv))
            kb.store(kb.add(kb.load(row_sum, outer), e, et), row_sum, outer)
        with kb.loop("r", shape[axis]) as iv:
            if log:
                shifted = kb.sub(kb.load(kb.inputs[0], at(iv)), kb.load(row_max, outer), et)
                y = kb.sub(shifted, kb.emit(xmath.LogOp(kb.load(row_sum, outer))), et)
            else:
                y = kb.div(kb.load(kb.outputs[0], at(iv)), kb.load(row_sum, outer), et)
            kb.store(y, kb.outputs[0], at(iv))
    return kb.finish()
