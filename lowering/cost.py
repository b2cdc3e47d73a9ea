"""What a graph op costs: FLOPs and compulsory memory traffic, from its types alone.

The one cost model of the profile (``lower-to-loops{profile=true}`` stamps each kernel
with the cost of the graph ops it computes; ``dlc.runtime.profile`` turns it into GFLOP/s
and GB/s). Counted per op class (never by name): a multiply-add is 2 FLOPs (conv2d in
either layout, conv_transpose2d, matmul, dense); pools count one FLOP per window
element of each output, reductions one per input element; an ``Elementwise`` op one per
output element. The quantized convolutions and products count their integer
multiply-adds the same way (2 ops each; the profile's GFLOP/s column reads GOP/s there). Ops that only move data (reshape, transpose, concat, gather...) have no
FLOP count (``None``: unknown, not zero), only bytes.

Bytes are the compulsory traffic: every operand read once and every result written once
(the floor a kernel's memory traffic cannot go below; a fused group's inner values never
touch memory, so a group counts its first op's operands, the chain's other operands and
its last op's result).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import ShapedType
from xdsl.ir import Attribute, Operation, SSAValue

from dlc.dialects import graph as g
from dlc.dialects.graph.pool import _Pool2DWindow
from dlc.dialects.graph_base import numpy_dtype
from dlc.dialects.traits import Elementwise


@dataclass(frozen=True)
class Cost:
    """FLOPs (None: not counted for this kind of op) and bytes of compulsory traffic."""

    flops: int | None
    bytes: int


def _elements(t: Attribute) -> int:
    return math.prod(t.get_shape()) if isinstance(t, ShapedType) else 0


def _bytes(values: Sequence[SSAValue]) -> int:
    return sum(_elements(v.type) * numpy_dtype(v.type.element_type).itemsize
               for v in values if isinstance(v.type, ShapedType))


def _conv2d(op: g.Conv2DOp) -> int:
    w = op.weight.type.get_shape()
    cpg, kh, kw = (w[2], w[0], w[1]) if op.kernel_layout == "HWIO" else (w[1], w[2], w[3])
    return 2 * _elements(op.results[0].type) * cpg * kh * kw


def _conv2d_nchwc(op: g.Conv2DNCHWcOp) -> int:
    _, cb, kh, kw, ib, _ = op.weight.type.get_shape()  # OIHW{i}i{o}o
    return 2 * _elements(op.results[0].type) * cb * ib * kh * kw


def _qconv2d(op: Operation) -> int:
    o, cpg, kh, kw = op.operands[1].type.get_shape()  # OIHW, I = channels per group
    return 2 * _elements(op.results[0].type) * cpg * kh * kw


def _qconv2d_nchwc(op: Operation) -> int:
    # the real channels only: the weight is the plain OIHW constant; padded output
    # channels of the last block and padded input channels are not work
    n, _, oh, ow, _ = op.results[0].type.get_shape()
    o, i, kh, kw = op.operands[1].type.get_shape()
    return 2 * n * oh * ow * o * i * kh * kw


def _qdepthwise_conv2d_nchwc(op: Operation) -> int:
    # one multiply-add per real channel, output pixel and tap
    n, _, oh, ow, _ = op.results[0].type.get_shape()
    c, _, kh, kw = op.operands[1].type.get_shape()
    return 2 * n * oh * ow * c * kh * kw


def _conv_transpose2d(op: g.ConvTranspose2DOp) -> int:
    # every input element meets every kernel tap of its group's output channels
    w = op.operands[1].type.get_shape()
    return 2 * _elements(op.operands[0].type) * w[1] * w[2] * w[3]


def _matmul(op: Operation) -> int:
    a = op.operands[0].type.get_shape()
    return 2 * _elements(op.results[0].type) * (a[-1] if a else 1)


def _attention(op: Operation) -> int:
    # the two products, Q K^T and P V (the softmax, scale and mask are not counted)
    dh = op.q.type.get_shape()[op.q_perm[3]]
    sk = op.k.type.get_shape()[op.k_perm[2]]
    rows = _elements(op.results[0].type) // op.results[0].type.get_shape()[op.out_perm.index(3)]
    return 2 * rows * sk * dh + 2 * _elements(op.results[0].type) * sk


def _pool(op: Operation) -> int:
    kh, kw = op.kernel
    return _elements(op.results[0].type) * kh * kw


def _per_input(op: Operation) -> int:
    return _elements(op.operands[0].type)


# op class -> FLOPs; the most specific class of an op's MRO that is listed wins
FLOPS: dict[type, Callable[[Operation], int]] = {
    g.Conv2DOp: _conv2d,
    g.Conv2DNCHWcOp: _conv2d_nchwc,
    g.ConvTranspose2DOp: _conv_transpose2d,
    g.MatmulOp: _matmul,
    g.MatmulPackedOp: _matmul,
    g.DenseOp: _matmul,
    g.AttentionOp: _attention,
    g.QConv2DOp: _qconv2d,
    g.QConv2DNCHWcOp: _qconv2d_nchwc,
    g.QDepthwiseConv2DNCHWcOp: _qdepthwise_conv2d_nchwc,
    g.QDenseOp: _matmul,
    g.QMatmulOp: _matmul,
    _Pool2DWindow: _pool,
    g.ReduceOp: _per_input,
    g._GlobalPoolOp: _per_input,
    g._ArgReduceOp: _per_input,
}


def op_flops(op: Operation) -> int | None:
    """FLOPs of one execution of ``op``; None where this model does not count them."""
    for cls in type(op).__mro__:
        if cls in FLOPS:
            return FLOPS[cls](op)
    if op.has_trait(Elementwise):
        return sum(_elements(r.type) for r in op.results)
    return None


def group_cost(ops: Sequence[Operation]) -> Cost:
    """The cost of ``ops`` computed by one kernel: one op, or a fused group (its first
    op's operands and the chain's outside operands read, its last op's result written)."""
    produced = {r for op in ops for r in op.results}
    reads: list[SSAValue] = []
    for op in ops:
        for v in op.operands:
            if v not in produced and v not in reads:
                reads.append(v)
    flops = [op_flops(op) for op in ops]
    total = None if all(f is None for f in flops) else sum(f or 0 for f in flops)
    return Cost(total, _bytes(reads) + _bytes(list(ops[-1].results)))
