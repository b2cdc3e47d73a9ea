"""Converters for the simple-ops work: Acos/Asin/Atan, the Bitwise* ops,
BitShift (signed and unsigned), Det, QLinearMatMul, MatMulInteger,
ConvInteger, QLinearConv; and the cases ops_nn's converters hand over: 3-D
MaxPool/AveragePool and MaxPool's Indices output (N-D pool ops), 3-D Conv and
ConvTranspose (one conv2d / conv_transpose2d per depth tap)."""

from __future__ import annotations

import numpy as np

from dlc.dialects import graph as g
from dlc.dialects.graph_base import element_type_of
from dlc.frontends.onnx.importer import ImportContext, Node
from dlc.frontends.onnx.registry import converts

UNARY = {
    "Acos": g.AcosOp, "Asin": g.AsinOp, "Atan": g.AtanOp, "BitwiseNot": g.BitwiseNotOp,
}

BINARY = {
    "BitwiseAnd": g.BitwiseAndOp, "BitwiseOr": g.BitwiseOrOp, "BitwiseXor": g.BitwiseXorOp,
}


@converts(*UNARY)
def convert_simple_unary(node: Node, ctx: ImportContext):
    return [ctx.emit(UNARY[node.op_type], node.input(0))]


@converts(*BINARY)
def convert_simple_binary(node: Node, ctx: ImportContext):
    return [ctx.emit(BINARY[node.op_type], node.input(0), node.input(1))]


@converts("BitShift")
def convert_bit_shift(node: Node, ctx: ImportContext):
    x, count = node.input(0), node.input(1)
    if x.dtype.kind not in "iu":
        raise ctx.error(f"BitShift takes integer tensors, got {x.dtype}")
    direction = node.required("direction")
    if direction not in ("LEFT", "RIGHT"):
        raise ctx.error(f"direction must be LEFT or RIGHT, got '{direction}'")
    return [ctx.emit(g.ShiftLeftOp if direction == "LEFT" else g.ShiftRightOp, x, count)]


def convert_pool_nd(node: Node, ctx: ImportContext):
    """MaxPool with its Indices output (1-3 spatial dims), and MaxPool /
    AveragePool on 3 spatial dims; ops_nn's convert_pool hands these over."""
    from dlc.frontends.onnx.ops_nn import _window

    x = node.input(0)
    spatial = x.rank - 2
    if spatial not in (1, 2, 3):
        raise ctx.error(f"only 1-D, 2-D and 3-D {node.op_type} are supported, got {spatial}-D input {list(x.shape)}")
    kernel = list(node.required("kernel_shape"))
    strides, dilations, pads = _window(node, ctx, x.shape[2:], kernel)
    attrs = dict(kernel=kernel, strides=strides, dilations=dilations, padding=pads,
                 ceil_mode=bool(node.attr("ceil_mode", 0)))
    if node.op_type == "AveragePool":
        attrs["count_include_pad"] = bool(node.attr("count_include_pad", 0))
        return [ctx.emit(g.AvgPool3DOp, x, **attrs)]
    if node.num_outputs > 1:
        storage_order = int(node.attr("storage_order", 0))
        return ctx.emit_multi(g.MaxPoolWithIndicesOp, x, storage_order=storage_order, **attrs)
    return [ctx.emit(g.MaxPool3DOp, x, **attrs)]


@converts("Det")
def convert_det(node: Node, ctx: ImportContext):
    return [ctx.emit(g.DetOp, node.input(0))]


# -- integer and quantized linear algebra ------------------------------------------
# Written with graph ops exactly as onnx's reference computes them: operands
# widened to i32 minus their zero points, an i32 product, then (QLinearMatMul)
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


@converts("QLinearMatMul")
def convert_qlinear_matmul(node: Node, ctx: ImportContext):
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


@converts("QLinearConv")
def convert_qlinear_conv(node: Node, ctx: ImportContext):
    from dlc.frontends.onnx.ops_shape import reshape

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


# -- 3-D convolution -----------------------------------------------------------------


def convert_conv3d(node: Node, ctx: ImportContext):
    """Conv on (N, C, D, H, W), handed over by ops_nn's Conv converter: one
    conv2d per depth tap kd, each over the depth slices it reads folded into
    the batch (x[:, :, od * sd + kd * dd] for all od -> [N * OD, C, H, W]),
    summed; so the tuned conv2d kernel does the work."""
    from dlc.frontends.onnx.ops_nn import _add_channel_bias, _window
    from dlc.frontends.onnx.ops_shape import reshape, transpose

    x, w, bias = node.input(0), node.input(1), node.input(2)
    kernel = list(node.attr("kernel_shape", w.shape[2:]))
    strides, dilations, pads = _window(node, ctx, x.shape[2:], kernel)
    n, c, depth = x.shape[:3]
    m = w.shape[0]
    if pads[0] or pads[3]:
        x = ctx.emit(g.PadOp, x, pads=[0, 0, pads[0], 0, 0, 0, 0, pads[3], 0, 0])
    depth += pads[0] + pads[3]
    span = dilations[0] * (kernel[0] - 1) + 1
    if depth < span:
        raise ctx.error(f"depth window of extent {span} is larger than the padded depth {depth}")
    out_depth = (depth - span) // strides[0] + 1
    total = None
    for tap in range(kernel[0]):
        start = tap * dilations[0]
        xs = ctx.emit(g.SliceOp, x, starts=[start], ends=[start + strides[0] * (out_depth - 1) + 1],
                      axes=[2], steps=[strides[0]])
        xs = reshape(ctx, transpose(ctx, xs, [0, 2, 1, 3, 4]), [n * out_depth, c, *x.shape[3:]])
        ws = ctx.emit(g.SliceOp, w, starts=[tap], ends=[tap + 1], axes=[2], steps=[1])
        ws = reshape(ctx, ws, [m, w.shape[1], *w.shape[3:]])
        y = ctx.emit(g.Conv2DOp, xs, ws, strides=strides[1:], dilations=dilations[1:],
                     padding=[pads[1], pads[2], pads[4], pads[5]], groups=int(node.attr("group", 1)))
        total = y if total is None else ctx.emit(g.AddOp, total, y)
    y = transpose(ctx, reshape(ctx, total, [n, out_depth, m, *total.shape[2:]]), [0, 2, 1, 3, 4])
    return [_add_channel_bias(ctx, y, bias)]


def conv_transpose3d(node: Node, ctx: ImportContext, x, w, kernel, strides, dilations, pads, out_pad):
    """ConvTranspose on (N, C, D, H, W) (ops_nn resolves pads and hands over):
    per depth tap kd one conv_transpose2d over the depth slices folded into
    the batch; its result for input depth i lands at depth i * sd + kd * dd of
    the uncropped output (zeros interleaved by a pad on a split axis), and the
    taps are summed before the depth padding is cropped."""
    from dlc.frontends.onnx.ops_shape import reshape, transpose

    n, c, depth = x.shape[:3]
    m = w.shape[1] * int(node.attr("group", 1))
    sd, dd, kd = strides[0], dilations[0], kernel[0]
    full = sd * (depth - 1) + dd * (kd - 1) + 1 + out_pad[0]
    folded = reshape(ctx, transpose(ctx, x, [0, 2, 1, 3, 4]), [n * depth, c, *x.shape[3:]])
    total = None
    for tap in range(kd):
        ws = ctx.emit(g.SliceOp, w, starts=[tap], ends=[tap + 1], axes=[2], steps=[1])
        ws = reshape(ctx, ws, [w.shape[0], w.shape[1], *w.shape[3:]])
        y = ctx.emit(g.ConvTranspose2DOp, folded, ws, strides=strides[1:], dilations=dilations[1:],
                     padding=[pads[1], pads[2], pads[4], pads[5]], output_padding=out_pad[1:],
                     groups=int(node.attr("group", 1)))
        plane = list(y.shape[1:])  # [M, OH, OW]
        if sd > 1:  # input depth i -> i * sd: pad a unit axis to sd, merge it into depth
            y = reshape(ctx, y, [n, depth, 1, *plane])
            y = ctx.emit(g.PadOp, y, pads=[0, 0, 0, 0, 0, 0, 0, 0, sd - 1, 0, 0, 0])
        y = reshape(ctx, y, [n, depth * sd, *plane])
        begin = tap * dd  # the trailing sd - 1 zeros may reach past `full`: a negative pad crops them
        y = ctx.emit(g.PadOp, y, pads=[0, begin, 0, 0, 0, 0, full - begin - depth * sd, 0, 0, 0])
        total = y if total is None else ctx.emit(g.AddOp, total, y)
    total = ctx.emit(g.SliceOp, total, starts=[pads[0]], ends=[full - pads[3]], axes=[1], steps=[1])
    return transpose(ctx, total, [0, 2, 1, 3, 4])
