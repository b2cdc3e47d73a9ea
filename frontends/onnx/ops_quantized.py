"""Converters for ONNX's integer and quantized linear algebra: MatMulInteger,
QLinearMatMul, ConvInteger and QLinearConv, written with graph ops as onnx's reference
computes them. A 2-D QLinearConv (a QLinearMatMul of operands at least 2-D, per-tensor)
whose quantization parameters are constants (what onnxruntime's QOperator format writes)
is graph.qconv2d (graph.qmatmul) with ``requant = "float"`` instead, so the int8 kernels
run it: its rescale rounds the f32 product, as onnxruntime
does, where onnx's reference rounds the f64 one (they differ only within 2**-24 of a
tie)."""

from __future__ import annotations

import numpy as np

from dlc.dialects import graph as g
from dlc.dialects.graph_base import element_type_of
from dlc.frontends.onnx.importer import ImportContext, Node
from dlc.frontends.onnx.registry import converts


# Operands widened to i32 minus their zero points, an i32 product, then (QLinearMatMul)
# requantized in f64, which is what numpy's int32 * float promotion gives.


def _minus_zero_point(ctx: ImportContext, x, zero_point, channel_axis: int | None = None):
    from dlc.frontends.onnx.ops_shape import reshape

    wide = _cast(ctx, x, np.int32)
    if zero_point is None:
        return wide
    zp = _cast(ctx, zero_point, np.int32)
    if channel_axis is not None and zp.rank == 1 and zp.shape[0] > 1:  # per output channel
        zp = reshape(ctx, zp, [zp.shape[0]] + [1] * (x.rank - 1 - channel_axis))
    return ctx.emit(g.SubOp, wide, zp)


def _as_qmatmul(node: Node, ctx: ImportContext):
    """QLinearMatMul as graph.qmatmul with ``requant = "float"`` when its operands are at
    least 2-D and every scale and zero point is one compile-time constant; else None."""
    a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp = (node.input(i) for i in range(8))
    if a.rank < 2 or b.rank < 2:
        return None
    params = [_quant_params(a_scale, a_zp), _quant_params(b_scale, b_zp), _quant_params(y_scale, y_zp)]
    if any(p is None for p in params):
        return None
    (as_, az), (bs, bz), (ys, yz) = params
    out_type = (a if y_zp is None else y_zp).dtype
    return ctx.emit(g.QMatmulOp, a, b, a_scale=as_, a_zero_point=az, b_scale=bs, b_zero_point=bz,
                    y_scale=ys, y_zero_point=yz, dtype=element_type_of(out_type), requant="float")


@converts("QLinearMatMul")
def convert_qlinear_matmul(node: Node, ctx: ImportContext):
    fast = _as_qmatmul(node, ctx)
    if fast is not None:
        return [fast]
    a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp = (node.input(i) for i in range(8))
    product = ctx.emit(g.MatmulOp, _minus_zero_point(ctx, a, a_zp), _minus_zero_point(ctx, b, b_zp))
    # the scale ratio in the scales' own type, as the reference computes it
    ratio = ctx.emit(g.DivOp, ctx.emit(g.MulOp, a_scale, b_scale), y_scale)
    scaled = ctx.emit(g.MulOp, _cast(ctx, product, np.float64), _cast(ctx, ratio, np.float64))
    out_type = (a if y_zp is None else y_zp).dtype
    if y_zp is not None:
        scaled = ctx.emit(g.AddOp, scaled, _cast(ctx, y_zp, np.float64))
    info = np.iinfo(out_type)
    clipped = ctx.emit(g.ClipOp, ctx.emit(g.RoundOp, scaled), min=float(info.min), max=float(info.max))
    return [_cast(ctx, clipped, out_type)]


@converts("MatMulInteger")
def convert_matmul_integer(node: Node, ctx: ImportContext):
    a, b, a_zp, b_zp = (node.input(i) for i in range(4))
    return [ctx.emit(g.MatmulOp, _minus_zero_point(ctx, a, a_zp), _minus_zero_point(ctx, b, b_zp))]


def _integer_conv(node: Node, ctx: ImportContext, x, x_zp, w, w_zp):
    """conv2d (1-D through a unit dim) of the i32 operands minus their zero points."""
    from dlc.frontends.onnx.ops_nn import _as_2d, _from_2d, _spatial, _to_2d, _window

    spatial = _spatial(node, ctx, x)
    xs = _minus_zero_point(ctx, x, x_zp)
    ws = _minus_zero_point(ctx, w, w_zp, channel_axis=0)
    kernel = list(node.attr("kernel_shape", w.shape[2:]))
    strides, dilations, pads = _window(node, ctx, x.shape[2:], kernel)
    if spatial == 1:
        xs, ws = _as_2d(ctx, xs), _as_2d(ctx, ws)
        strides, dilations, pads = _to_2d(strides, 1), _to_2d(dilations, 1), _to_2d(pads, 0)
    y = ctx.emit(g.Conv2DOp, xs, ws, strides=strides, dilations=dilations, padding=pads,
                 groups=int(node.attr("group", 1)))
    return _from_2d(ctx, y) if spatial == 1 else y


@converts("ConvInteger")
def convert_conv_integer(node: Node, ctx: ImportContext):
    return [_integer_conv(node, ctx, node.input(0), node.input(2), node.input(1), node.input(3))]


def _quant_params(scale, zero_point, count: int | None = None) -> tuple[list[float], list[int]] | None:
    """(scales, zero points) of a QLinear operand when both are compile-time constants with
    finite positive f32 scales, one value (or, with ``count``, one per output channel);
    else None."""
    if scale is None or scale.const is None or (zero_point is not None and zero_point.const is None):
        return None
    s = np.asarray(scale.const)
    z = np.zeros(1, np.int64) if zero_point is None else np.asarray(zero_point.const).astype(np.int64)
    sizes = (1,) if count is None else (1, count)
    if s.dtype != np.float32 or s.ndim > 1 or s.size not in sizes or z.ndim > 1 or z.size not in sizes:
        return None
    if not np.all(np.isfinite(s)) or np.any(s <= 0):
        return None
    return [float(v) for v in s.reshape(-1)], [int(v) for v in z.reshape(-1)]


def _as_qconv2d(node: Node, ctx: ImportContext):
    """QLinearConv as graph.qconv2d with ``requant = "float"`` (onnxruntime's f32 rescale,
    so the int8 kernels run it) when its scales and zero points are compile-time constants
    and it is 2-D; else None (the exact decomposed form below)."""
    from dlc.frontends.onnx.ops_nn import _window

    x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, bias = (node.input(i) for i in range(9))
    if x.rank != 4 or w.rank != 4 or (bias is not None and (bias.dtype != np.int32 or bias.rank != 1)):
        return None
    o = w.shape[0]
    params = [_quant_params(x_scale, x_zp), _quant_params(w_scale, w_zp, o), _quant_params(y_scale, y_zp)]
    if any(p is None for p in params):
        return None
    (xs, xz), (ws, wz), (ys, yz) = params
    kernel = list(node.attr("kernel_shape", w.shape[2:]))
    strides, dilations, pads = _window(node, ctx, x.shape[2:], kernel)
    out_type = (x if y_zp is None else y_zp).dtype
    operands = [x, w] + ([bias] if bias is not None else [])
    return ctx.emit(g.QConv2DOp, *operands, strides=strides, dilations=dilations, padding=pads,
                    groups=int(node.attr("group", 1)), x_scale=xs, x_zero_point=xz, w_scale=ws,
                    w_zero_point=wz, y_scale=ys, y_zero_point=yz, dtype=element_type_of(out_type),
                    requant="float")


@converts("QLinearConv")
def convert_qlinear_conv(node: Node, ctx: ImportContext):
    from dlc.frontends.onnx.ops_shape import reshape

    fast = _as_qconv2d(node, ctx)
    if fast is not None:
        return [fast]
    x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, bias = (node.input(i) for i in range(9))
    y = _integer_conv(node, ctx, x, x_zp, w, w_zp)
    if bias is not None:
        y = ctx.emit(g.AddOp, y, reshape(ctx, _cast(ctx, bias, np.int32), [bias.shape[0], 1, 1][: y.rank - 1]))
    if w_scale.rank == 1 and w_scale.shape[0] > 1:  # per output channel
        w_scale = reshape(ctx, w_scale, [w_scale.shape[0]] + [1] * (y.rank - 2))
    ratio = ctx.emit(g.DivOp, ctx.emit(g.MulOp, x_scale, w_scale), y_scale)
    scaled = ctx.emit(g.MulOp, _cast(ctx, y, np.float64), _cast(ctx, ratio, np.float64))
    out_type = (x if y_zp is None else y_zp).dtype
    if y_zp is not None:
        scaled = ctx.emit(g.AddOp, scaled, _cast(ctx, y_zp, np.float64))
    info = np.iinfo(out_type)
    clipped = ctx.emit(g.ClipOp, scaled, min=float(info.min), max=float(info.max))
    return [_cast(ctx, ctx.emit(g.RoundOp, clipped), out_type)]


def _cast(ctx: ImportContext, x, dtype):
    if x.dtype == np.dtype(dtype):
        return x
    return ctx.emit(g.CastOp, x, to=element_type_of(np.dtype(dtype)))


# ---------------------------------------------------------------------------
# QuantizeLinear / DequantizeLinear with compile-time parameters -> graph.quantize /
# graph.dequantize (what fold-qdq matches); the others are decomposed (ops_loss.py)
# ---------------------------------------------------------------------------

_QUANT_DTYPES = (np.dtype(np.int8), np.dtype(np.uint8))


def _static_params(ctx: ImportContext, node: Node, x, scale, zero_point) -> dict | None:
    """The attributes of graph.quantize / graph.dequantize when ``scale`` (f32) and the
    zero point are compile-time constants, per tensor or per axis; else None."""
    if node.attr("block_size", 0) or scale is None or scale.const is None:
        return None
    if zero_point is not None and zero_point.const is None:
        return None
    s = np.asarray(scale.const)
    if s.dtype != np.float32 or s.ndim > 1 or s.size == 0:
        return None
    z = np.zeros(1, np.int64) if zero_point is None else np.asarray(zero_point.const).astype(np.int64)
    if z.ndim > 1 or z.size not in (1, s.size):
        return None
    if not np.all(np.isfinite(s)) or np.any(s <= 0):
        return None  # onnx's own arithmetic decides what such a scale gives
    attrs = {"scale": [float(v) for v in s.reshape(-1)], "zero_point": [int(v) for v in z.reshape(-1)]}
    if max(s.size, z.size) > 1:
        if x.rank == 0:
            return None
        axis = ctx.axis(node.attr("axis", 1), x.rank)
        if x.shape[axis] != s.size:
            raise ctx.error(f"scale has {s.size} values but axis {axis} of the input has {x.shape[axis]}")
        attrs["axis"] = axis
    return attrs


def emit_unfolded(ctx: ImportContext, op_class, x, **attrs):
    """``op_class`` on ``x`` as an op even when ``x`` is a constant: a dequantized weight
    must stay recognizable for fold-qdq (which folds what it leaves)."""
    from dlc.frontends.onnx.importer import Tensor

    op = ctx.make(op_class, ctx.value(x), **attrs)
    ctx.block.add_op(op)
    return Tensor(ctx._result_name(), op.results[0].type, ssa=op.results[0],
                  sources=(x.graph_input,) if x.graph_input else x.sources)


def dequantize_static(node: Node, ctx: ImportContext):
    """DequantizeLinear as graph.dequantize (i8/ui8/i32 input, f32 output), or None."""
    x, scale, zero_point = node.input(0), node.input(1), node.input(2)
    if x.dtype not in _QUANT_DTYPES + (np.dtype(np.int32),):
        return None
    if node.attr("output_dtype", 0) not in (0, 1):  # 1: float
        return None
    attrs = _static_params(ctx, node, x, scale, zero_point)
    if attrs is None:
        return None
    return emit_unfolded(ctx, g.DequantizeOp, x, **attrs)


def quantize_static(node: Node, ctx: ImportContext, out_type):
    """QuantizeLinear of f32 to i8/ui8 as graph.quantize, or None."""
    x, scale, zero_point = node.input(0), node.input(1), node.input(2)
    from dlc.dialects.graph_base import numpy_dtype

    if x.dtype != np.float32 or numpy_dtype(out_type) not in _QUANT_DTYPES:
        return None
    if node.attr("saturate", 1) != 1:
        return None
    attrs = _static_params(ctx, node, x, scale, zero_point)
    if attrs is None:
        return None
    return ctx.emit(g.QuantizeOp, x, dtype=out_type, **attrs)
