"""FLOP count of a graph-level module (for GFLOP/s in the benchmarks).

Counted per op from its operand/result types: a multiply-add is 2 FLOPs
(conv2d, conv_transpose2d, matmul, dense), elementwise ops 1 per output
element (a few more for composites: batch_norm 2, softmax 5, gelu 8),
reductions and pools 1 per input element read (per window element for
pools). Data movement (reshape, transpose, concat, pad...) and constants
count 0. The total is dominated by convolutions and matmuls, as usual.
"""

from __future__ import annotations

import math

from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation

from dlc.dialects import graph as g
from dlc.dialects.graph_base import GraphOp

_MOVEMENT = {"graph.reshape", "graph.transpose", "graph.broadcast_to", "graph.slice", "graph.pad",
             "graph.concat", "graph.split", "graph.gather", "graph.squeeze", "graph.unsqueeze",
             "graph.constant", "graph.weight", "graph.cast", "graph.yield"}
_PER_ELEMENT = {"graph.batch_norm": 2, "graph.layer_norm": 8, "graph.softmax": 5, "graph.log_softmax": 5,
                "graph.gelu": 8, "graph.softplus": 4, "graph.sigmoid": 4, "graph.tanh": 4, "graph.erf": 4}


def _size(t) -> int:
    return math.prod(t.get_shape()) if isinstance(t, TensorType) else 0


def op_flops(op: Operation) -> int:
    if not isinstance(op, GraphOp) or op.name in _MOVEMENT:
        return 0
    out = sum(_size(r.type) for r in op.results)
    if isinstance(op, g.Conv2DOp):
        w = op.weight.type.get_shape()
        kl = op.kernel_layout
        cpg, kh, kw = (w[2], w[0], w[1]) if kl == "HWIO" else (w[1], w[2], w[3])
        return 2 * out * cpg * kh * kw
    if isinstance(op, g.ConvTranspose2DOp):
        # every input element meets every kernel tap of its group's output channels
        w = op.operands[1].type.get_shape()
        return 2 * _size(op.operands[0].type) * w[1] * w[2] * w[3]
    if isinstance(op, (g.MatmulOp, g.DenseOp)):
        a = op.operands[0].type.get_shape()
        return 2 * out * (a[-1] if a else 1)
    if isinstance(op, g._PoolOp):
        kh, kw = op.kernel
        return out * kh * kw
    if isinstance(op, (g.ReduceOp, g._GlobalPoolOp, g._ArgReduceOp)):
        return _size(op.operands[0].type)
    return out * _PER_ELEMENT.get(op.name, 1)


def count_flops(module: ModuleOp, entry: str | None = None) -> int:
    """FLOPs of one call of ``entry`` (default: every graph function of ``module``)."""
    from xdsl.dialects import func

    total = 0
    for fn in module.ops:
        if isinstance(fn, func.FuncOp) and (entry is None or fn.sym_name.data == entry):
            total += sum(op_flops(op) for op in fn.walk())
    return total
