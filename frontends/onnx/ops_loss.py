"""Converters for ONNX losses (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss)
and (de)quantization (QuantizeLinear, DequantizeLinear), spelled with graph ops."""

from __future__ import annotations

import numpy as np

from dlc.dialects import graph as g
from dlc.dialects.graph_base import is_narrow, is_narrow_float, numpy_dtype
from dlc.frontends.onnx.ops_narrow import (
    as_compute_type,
    expand_blocks,
    integer_range,
    quantize_to_narrow_float,
)
from dlc.frontends.onnx.importer import ImportContext, Node, Tensor, graph_element_type
from dlc.frontends.onnx.ops_shape import gather_elements, reshape
from dlc.frontends.onnx.registry import converts


def _pick_class(ctx: ImportContext, scores: Tensor, target: Tensor) -> Tensor:
    """scores[n, target[n, d..], d..] -> shape of target."""
    index = ctx.emit(g.UnsqueezeOp, target, axes=[1])
    return ctx.emit(g.SqueezeOp, gather_elements(ctx, scores, index, 1), axes=[1])


def nll_loss(ctx: ImportContext, node: Node, log_prob: Tensor, target: Tensor,
             weight: Tensor | None) -> Tensor:
    reduction = node.attr("reduction", "mean")
    if reduction not in ("none", "sum", "mean"):
        raise ctx.error(f"unknown reduction '{reduction}'")
    ignore = node.attr("ignore_index")
    zero_i = ctx.constant(0, like=target)
    keep = None
    if ignore is not None:
        keep = ctx.emit(g.NotEqualOp, target, ctx.constant(ignore, like=target))
        target = ctx.emit(g.WhereOp, keep, target, zero_i)  # a safe index where ignored
    picked = _pick_class(ctx, log_prob, target)
    zero, one = ctx.constant(0, like=picked), ctx.constant(1, like=picked)
    if weight is not None:
        w = ctx.emit(g.GatherOp, weight, target, axis=0)
    else:
        w = ctx.emit(g.BroadcastToOp, one, shape=list(target.shape))
    if keep is not None:
        w = ctx.emit(g.WhereOp, keep, w, zero)
    loss = ctx.emit(g.NegOp, ctx.emit(g.MulOp, picked, w))
    if reduction == "none":
        return loss
    total = ctx.emit(g.ReduceSumOp, loss, keepdims=False)
    if reduction == "sum":
        return total
    return ctx.emit(g.DivOp, total, ctx.emit(g.ReduceSumOp, w, keepdims=False))


@converts("NegativeLogLikelihoodLoss")
def convert_nll_loss(node: Node, ctx: ImportContext):
    return [nll_loss(ctx, node, node.input(0), node.input(1), node.input(2))]


@converts("SoftmaxCrossEntropyLoss")
def convert_softmax_cross_entropy(node: Node, ctx: ImportContext):
    scores = node.input(0)
    log_prob = ctx.emit(g.LogSoftmaxOp, scores, axis=1)
    loss = nll_loss(ctx, node, log_prob, node.input(1), node.input(2))
    return [loss, log_prob]


# ---------------------------------------------------------------------------
# quantization
# ---------------------------------------------------------------------------


def _per_axis(ctx: ImportContext, node: Node, param: Tensor, x: Tensor) -> Tensor:
    """A scale / zero point: scalar, or 1-D along ``axis`` broadcast to x."""
    if node.attr("block_size", 0):
        return expand_blocks(ctx, node, param, x)
    if param.rank == 0 or (param.rank == 1 and param.shape[0] == 1):
        return param
    axis = ctx.axis(node.attr("axis", 1), x.rank)
    shape = [1] * x.rank
    shape[axis] = param.shape[0]
    return reshape(ctx, param, shape)


@converts("DequantizeLinear")
def convert_dequantize(node: Node, ctx: ImportContext):
    from dlc.frontends.onnx.ops_quantized import dequantize_static

    static = dequantize_static(node, ctx)  # compile-time parameters: graph.dequantize
    if static is not None:
        return [static]
    x, scale, zero_point = node.input(0), node.input(1), node.input(2)
    out_type = scale.element_type
    if node.attr("output_dtype", 0):
        out_type = graph_element_type(node.attr("output_dtype"), node.where)
    scale = as_compute_type(ctx, scale)
    xf = ctx.emit(g.CastOp, x, to=scale.element_type)
    if zero_point is not None:
        zp = ctx.emit(g.CastOp, _per_axis(ctx, node, zero_point, x), to=scale.element_type)
        xf = ctx.emit(g.SubOp, xf, zp)
    y = ctx.emit(g.MulOp, xf, _per_axis(ctx, node, scale, x))
    return [y if y.element_type == out_type else ctx.emit(g.CastOp, y, to=out_type)]


@converts("QuantizeLinear")
def convert_quantize(node: Node, ctx: ImportContext):
    x, scale, zero_point = node.input(0), node.input(1), node.input(2)
    if zero_point is not None:
        out_type = zero_point.element_type
    elif node.attr("output_dtype", 0):
        out_type = graph_element_type(node.attr("output_dtype"), node.where)
    else:
        out_type = graph_element_type(2, node.where)  # uint8
    dtype = numpy_dtype(out_type)
    if is_narrow_float(out_type):
        return [quantize_to_narrow_float(ctx, node, x, scale, zero_point, out_type)]
    if dtype.kind not in "iu" and not is_narrow(out_type):
        raise ctx.error(f"quantizing to {dtype} is not supported (integer types are)")
    from dlc.frontends.onnx.ops_quantized import quantize_static

    static = quantize_static(node, ctx, out_type)  # compile-time parameters: graph.quantize
    if static is not None:
        return [static]
    scale = as_compute_type(ctx, scale)
    xf = x if x.element_type == scale.element_type else ctx.emit(g.CastOp, x, to=scale.element_type)
    # round half to even, shift, saturate, convert
    y = ctx.emit(g.RoundOp, ctx.emit(g.DivOp, xf, _per_axis(ctx, node, scale, x)))
    if zero_point is not None:
        zp = ctx.emit(g.CastOp, _per_axis(ctx, node, zero_point, x), to=scale.element_type)
        y = ctx.emit(g.AddOp, y, zp)
    info = integer_range(dtype)
    y = ctx.emit(g.ClipOp, y, min=float(info.min), max=float(info.max))
    return [ctx.emit(g.CastOp, y, to=out_type)]
