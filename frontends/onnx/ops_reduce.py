"""Converters for ONNX reductions (Reduce*, ArgMax/ArgMin). ReduceL1/L2/
LogSum/LogSumExp/SumSquare are expressed with the graph dialect's reduce_sum /
reduce_max and elementwise ops."""

from __future__ import annotations

import numpy as np

from dlc.dialects import graph as g
from dlc.dialects.graph_base import element_type_of
from dlc.frontends.onnx.importer import ImportContext, Node, Tensor
from dlc.frontends.onnx.registry import converts

BASIC = {
    "ReduceSum": g.ReduceSumOp, "ReduceMean": g.ReduceMeanOp, "ReduceMax": g.ReduceMaxOp,
    "ReduceMin": g.ReduceMinOp, "ReduceProd": g.ReduceProdOp,
}
COMPOSED = ("ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare")

# opset from which `axes` is an input instead of an attribute
_AXES_INPUT_OPSET = {"ReduceSum": 13}


def reduce_axes(node: Node, ctx: ImportContext) -> list[int] | None:
    """The axes to reduce, or None for "all"; [] with noop_with_empty_axes means none."""
    if node.opset < _AXES_INPUT_OPSET.get(node.op_type, 18):
        axes = node.attr("axes")
        return None if axes is None else [int(a) for a in axes]
    t = node.input(1)
    axes = None if t is None else ctx.const_ints(t, "axes")
    if not axes:
        return [] if node.attr("noop_with_empty_axes", 0) else None
    return axes


def _reduce(ctx: ImportContext, op_class, x: Tensor, axes, keep: bool) -> Tensor:
    attrs = {"keepdims": keep}
    if axes is not None:
        attrs["axes"] = axes
    return ctx.emit(op_class, x, **attrs)


@converts(*BASIC, *COMPOSED)
def convert_reduce(node: Node, ctx: ImportContext):
    x = node.input(0)
    keep = bool(node.attr("keepdims", 1))
    axes = reduce_axes(node, ctx)
    if axes is not None:
        axes = ctx.axes(axes, x.rank)
    op = node.op_type
    # elementwise prologue
    if op == "ReduceL1":
        x = ctx.emit(g.AbsOp, x)
    elif op in ("ReduceL2", "ReduceSumSquare"):
        x = ctx.emit(g.MulOp, x, x)
    if axes != [] and _reduces_nothing(x, axes):
        return [_empty_reduction(ctx, op, x, axes, keep)]
    if axes == []:  # noop_with_empty_axes: no reduction, only the elementwise parts
        if op == "ReduceL2":
            x = ctx.emit(g.SqrtOp, x)
        elif op == "ReduceLogSum":
            x = ctx.emit(g.LogOp, x)
        return [x]
    if op in BASIC:
        if x.dtype == np.bool_:  # max/min of booleans (any/all) through i8
            i8 = element_type_of(np.int8)
            y = _reduce(ctx, BASIC[op], ctx.emit(g.CastOp, x, to=i8), axes, keep)
            return [ctx.emit(g.CastOp, y, to=x.element_type)]
        return [_reduce(ctx, BASIC[op], x, axes, keep)]
    if op in ("ReduceL1", "ReduceSumSquare"):
        return [_reduce(ctx, g.ReduceSumOp, x, axes, keep)]
    if op == "ReduceL2":
        return [ctx.emit(g.SqrtOp, _reduce(ctx, g.ReduceSumOp, x, axes, keep))]
    if op == "ReduceLogSum":
        return [ctx.emit(g.LogOp, _reduce(ctx, g.ReduceSumOp, x, axes, keep))]
    # ReduceLogSumExp, max-shifted: m + log(sum(exp(x - m)))
    m = _reduce(ctx, g.ReduceMaxOp, x, axes, True)
    shifted = ctx.emit(g.ExpOp, ctx.emit(g.SubOp, x, m))
    total = ctx.emit(g.LogOp, _reduce(ctx, g.ReduceSumOp, shifted, axes, True))
    out = ctx.emit(g.AddOp, total, m)
    if not keep:
        out = ctx.emit(g.SqueezeOp, out, axes=list(range(x.rank)) if axes is None else axes)
    return [out]


# the value of a reduction over no elements (ONNX's identity elements)
_EMPTY_VALUE = {
    "ReduceSum": 0, "ReduceL1": 0, "ReduceL2": 0, "ReduceSumSquare": 0, "ReduceProd": 1,
    "ReduceMax": -np.inf, "ReduceMin": np.inf, "ReduceLogSum": -np.inf,
    "ReduceLogSumExp": -np.inf, "ReduceMean": np.nan,
}


def _reduces_nothing(x: Tensor, axes) -> bool:
    dims = range(x.rank) if axes is None else [a + x.rank if a < 0 else a for a in axes]
    return any(x.shape[a] == 0 for a in dims)


def _empty_reduction(ctx: ImportContext, op: str, x: Tensor, axes, keep: bool) -> Tensor:
    """A reduction over a zero-extent axis: a constant of the static result shape."""
    dims = set(range(x.rank) if axes is None else [a + x.rank if a < 0 else a for a in axes])
    shape = [1 if i in dims else d for i, d in enumerate(x.shape) if keep or i not in dims]
    value = _EMPTY_VALUE[op]
    if x.dtype == np.bool_:
        value = op == "ReduceMin"  # all() of nothing is true, any() false
    elif x.dtype.kind in "iu" and not np.isfinite(value):
        info = np.iinfo(x.dtype)
        value = info.min if value < 0 else info.max
    return ctx.constant(np.full(shape, value, dtype=x.dtype))


@converts("ArgMax", "ArgMin")
def convert_arg(node: Node, ctx: ImportContext):
    op_class = g.ArgMaxOp if node.op_type == "ArgMax" else g.ArgMinOp
    return [ctx.emit(op_class, node.input(0), axis=ctx.axis(node.attr("axis", 0), node.input(0).rank),
                     keepdims=bool(node.attr("keepdims", 1)),
                     select_last_index=bool(node.attr("select_last_index", 0)))]
