"""The 3-D (and N-D pool) cases of ops_nn's Conv, ConvTranspose, MaxPool and
AveragePool converters, which hand these over: N-D pool ops, MaxPool's Indices
output, and 3-D Conv / ConvTranspose as one conv2d / conv_transpose2d per
depth tap (so the tuned 2-D kernels do the work)."""

from __future__ import annotations

from dlc.dialects import graph as g
from dlc.frontends.onnx.importer import ImportContext, Node


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
