"""Converters for ONNX ops whose output shape depends on the data: NonZero,
Compress, Unique and NonMaxSuppression.

Known inputs (NonZero of a constant, Compress with a constant condition) give a
static shape and import as a constant or a graph.gather. Otherwise they become
graph.nonzero / compress / unique / non_max_suppression
(dialects/graph/data_dependent.py): buffers sized by the op's bound plus the
run-time count. That result is marked on its
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


def _bounded(node: Node, results: list[Tensor]) -> list[Tensor]:
    """The op's results but its count, the bounded ones marked with their extent."""
    *outs, count = results
    op = count.ssa.owner
    for index, dim in op.bounded_results():
        outs[index].extent = (count, dim, node.where)
    return outs


@converts("NonZero")
def convert_nonzero(node: Node, ctx: ImportContext):
    x = node.input(0)
    if x.const is not None:
        return [ctx.constant(np.array(np.nonzero(np.atleast_1d(x.const)), np.int64))]
    return _bounded(node, ctx.emit_multi(g.NonZeroOp, x))


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
    return _bounded(node, ctx.emit_multi(g.CompressOp, x, condition, axis=axis))


@converts("Unique")
def convert_unique(node: Node, ctx: ImportContext):
    x = node.input(0)
    axis = node.attr("axis")
    if axis is not None:
        axis = ctx.axis(axis, x.rank)
    results = ctx.emit_multi(g.UniqueOp, x, axis=axis, sorted=bool(node.attr("sorted", 1)))
    *outs, count = results
    if count.const is not None:  # folded: each result cut to its true shape
        n = int(count.const)
        y, first, inverse, counts = outs
        y_shape = list(y.shape)
        y_shape[0 if axis is None else axis] = n
        return [ctx.constant(_prefix(y.const, y_shape)), ctx.constant(first.const[:n]), inverse,
                ctx.constant(counts.const[:n])]
    return _bounded(node, results)


def _prefix(buffer: np.ndarray, shape) -> np.ndarray:
    return buffer.reshape(-1)[:math.prod(shape)].reshape(shape)


@converts("NonMaxSuppression")
def convert_non_max_suppression(node: Node, ctx: ImportContext):
    boxes, scores = node.input(0), node.input(1)
    max_out, iou, score_min = (node.inputs[k] if len(node.inputs) > k else None for k in (2, 3, 4))
    center = node.attr("center_point_box", 0)
    if center not in (0, 1):
        raise ctx.error(f"center_point_box must be 0 or 1, got {center}")
    if max_out is None:  # ONNX's default: 0 boxes per class
        max_out = ctx.constant(np.zeros(1, np.int64))
    if iou is None:
        iou = ctx.constant(np.zeros(1, boxes.dtype))
    known_max = None
    if max_out.const is not None and max_out.const.size == 1:
        known_max = max(int(np.asarray(max_out.const).reshape(-1)[0]), 0)
    operands = [boxes, scores, max_out, iou] + ([score_min] if score_min is not None else [])
    results = ctx.emit_multi(g.NonMaxSuppressionOp, *operands, center_point_box=bool(center),
                             max_selected_per_class=known_max)
    rows, count = results
    if count.const is not None:  # folded
        return [ctx.constant(rows.const[:int(count.const)])]
    return _bounded(node, results)
