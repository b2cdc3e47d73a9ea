"""Converters for ONNX ops whose output shape depends on the data: NonZero and
Compress.

Known inputs (NonZero of a constant, Compress with a constant condition) give a
static shape and import as a constant or a graph.gather. Otherwise they become
graph.nonzero / graph.compress (dialects/graph/data_dependent.py): a buffer
sized by the op's bound plus the run-time count. That result is marked on its
:class:`Tensor` (``extent``); it may be a graph output (the runtime returns its
true shape) and nothing else yet: an op that reads it is refused with a line
naming both nodes, because its shape would need symbolic dims.
"""

from __future__ import annotations

import math

import numpy as np

from dlc.dialects import graph as g
from dlc.frontends.onnx.importer import ImportContext, Node, Tensor
from dlc.frontends.onnx.ops_shape import reshape
from dlc.frontends.onnx.registry import converts


def _bounded(ctx: ImportContext, node: Node, results: list[Tensor], dim: int) -> list[Tensor]:
    out, count = results
    out.extent = (count, dim, node.where)
    return [out]


@converts("NonZero")
def convert_nonzero(node: Node, ctx: ImportContext):
    x = node.input(0)
    if x.const is not None:
        return [ctx.constant(np.array(np.nonzero(np.atleast_1d(x.const)), np.int64))]
    return _bounded(ctx, node, ctx.emit_multi(g.NonZeroOp, x), 1)


@converts("Compress")
def convert_compress(node: Node, ctx: ImportContext):
    x, condition = node.input(0), node.input(1)
    axis = node.attr("axis")
    if axis is not None:
        axis = ctx.axis(axis, x.rank)
    if condition.rank != 1:
        raise ctx.error(f"condition must be 1-D, got shape {list(condition.shape)}")
    length = math.prod(x.shape) if axis is None else x.shape[axis]
    if condition.shape[0] > length:
        what = "the elements of input" if axis is None else f"axis {axis} of input"
        raise ctx.error(f"condition has {condition.shape[0]} entries, more than the {length} of {what} '{x.name}'")
    if condition.const is not None:  # a static shape: the kept slices are known
        if axis is None:
            x, axis = reshape(ctx, x, [length]), 0
        kept = np.nonzero(np.asarray(condition.const).reshape(-1).astype(bool))[0].astype(np.int64)
        return [ctx.emit(g.GatherOp, x, ctx.constant(kept), axis=axis)]
    if condition.dtype != np.bool_:
        raise ctx.error(f"condition must be bool, got {condition.dtype}")
    return _bounded(ctx, node, ctx.emit_multi(g.CompressOp, x, condition, axis=axis), 0 if axis is None else axis)
