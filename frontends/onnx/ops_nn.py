"""Converters for ONNX neural-network ops: Conv/ConvTranspose, pooling, Gemm/
MatMul/Einsum/Det, normalizations, Softmax/LogSoftmax/Hardmax, LRN (3-D
convolutions and N-D pools: ops_nn_3d.py).

The graph dialect's convolution and pooling ops are 2-D (NCHW); 1-D ONNX
variants are expressed by inserting a unit H dim around them."""

from __future__ import annotations

import math

import numpy as np

from dlc.dialects import graph as g
from dlc.frontends.onnx.importer import ImportContext, Node, Tensor, graph_element_type
from dlc.frontends.onnx.ops_shape import reshape, transpose
from dlc.frontends.onnx.registry import converts


# ---------------------------------------------------------------------------
# windows: pads / auto_pad, 1-D -> 2-D
# ---------------------------------------------------------------------------


def _spatial(node: Node, ctx: ImportContext, x: Tensor) -> int:
    spatial = x.rank - 2
    if spatial not in (1, 2):
        raise ctx.error(f"only 1-D and 2-D {node.op_type} are supported, got {spatial}-D input {list(x.shape)}")
    return spatial


def check_window(ctx: ImportContext, n: int, in_dims, **lists) -> None:
    """One kernel/stride/dilation entry per spatial dim (two pads), positive strides and
    dilations, non-negative pads: a located error instead of an IndexError later."""
    if len(in_dims) != n:
        raise ctx.error(f"kernel has {n} spatial dims but the input has {len(in_dims)}")
    for name, values in lists.items():
        if values is None:
            continue
        want = 2 * n if name == "pads" else n
        if len(values) != want:
            raise ctx.error(f"attribute '{name}' {list(values)} must hold {want} values")
        low = 0 if name in ("pads", "output_padding") else 1
        if any(v < low for v in values):
            raise ctx.error(f"attribute '{name}' {list(values)} must be >= {low}")


def _window(node: Node, ctx: ImportContext, in_dims, kernel):
    """(strides, dilations, pads [begin.., end..]) with auto_pad resolved."""
    n = len(kernel)
    strides = list(node.attr("strides", [1] * n))
    dilations = list(node.attr("dilations", [1] * n))
    pads = list(node.attr("pads", [0] * (2 * n)))
    check_window(ctx, n, in_dims, kernel_shape=kernel, strides=strides, dilations=dilations, pads=pads)
    auto_pad = node.attr("auto_pad", "NOTSET")
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        pads = [0] * (2 * n)
        for i in range(n):
            out = -(-in_dims[i] // strides[i])
            total = max((out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - in_dims[i], 0)
            small = total // 2
            pads[i], pads[i + n] = (small, total - small) if auto_pad == "SAME_UPPER" else (total - small, small)
    elif auto_pad == "VALID":
        pads = [0] * (2 * n)
    elif auto_pad != "NOTSET":
        raise ctx.error(f"unknown auto_pad '{auto_pad}'")
    return strides, dilations, pads


def _to_2d(values, fill):
    """1-D window parameters -> 2-D with a unit leading dim."""
    if len(values) == 1:
        return [fill, values[0]]
    if len(values) == 2 and fill == 0:  # pads [b, e] -> [0, b, 0, e]
        return [0, values[0], 0, values[1]]
    return list(values)


def _as_2d(ctx: ImportContext, t: Tensor) -> Tensor:
    return ctx.emit(g.UnsqueezeOp, t, axes=[2])


def _from_2d(ctx: ImportContext, t: Tensor) -> Tensor:
    return ctx.emit(g.SqueezeOp, t, axes=[2])


def _add_channel_bias(ctx: ImportContext, y: Tensor, bias: Tensor | None) -> Tensor:
    if bias is None:
        return y
    if bias.shape != (y.shape[1],):
        raise ctx.error(f"bias 'B' has shape {list(bias.shape)}, expected [{y.shape[1]}] (one per output channel)")
    b = reshape(ctx, bias, [bias.shape[0]] + [1] * (y.rank - 2))
    return ctx.emit(g.AddOp, y, b)


# ---------------------------------------------------------------------------
# convolution
# ---------------------------------------------------------------------------


@converts("Conv")
def convert_conv(node: Node, ctx: ImportContext):
    x, w, bias = node.input(0), node.input(1), node.input(2)
    if x.rank == 5:  # through conv2d per depth tap (ops_nn_3d.py)
        from dlc.frontends.onnx.ops_nn_3d import convert_conv3d

        return convert_conv3d(node, ctx)
    spatial = _spatial(node, ctx, x)
    kernel = list(node.attr("kernel_shape", w.shape[2:]))
    strides, dilations, pads = _window(node, ctx, x.shape[2:], kernel)
    if spatial == 1:
        x, w = _as_2d(ctx, x), _as_2d(ctx, w)
        strides, dilations, pads = _to_2d(strides, 1), _to_2d(dilations, 1), _to_2d(pads, 0)
    y = ctx.emit(g.Conv2DOp, x, w, strides=strides, dilations=dilations, padding=pads,
                 groups=int(node.attr("group", 1)))
    if spatial == 1:
        y = _from_2d(ctx, y)
    return [_add_channel_bias(ctx, y, bias)]


@converts("ConvTranspose")
def convert_conv_transpose(node: Node, ctx: ImportContext):
    x, w, bias = node.input(0), node.input(1), node.input(2)
    spatial = 3 if x.rank == 5 else _spatial(node, ctx, x)  # 3-D: ops_nn_3d.py
    n = spatial
    kernel = list(node.attr("kernel_shape", w.shape[2:]))
    strides = list(node.attr("strides", [1] * n))
    dilations = list(node.attr("dilations", [1] * n))
    out_pad = list(node.attr("output_padding", [0] * n))
    pads = list(node.attr("pads", [0] * (2 * n)))
    auto_pad = node.attr("auto_pad", "NOTSET")
    output_shape = node.attr("output_shape")
    if w.rank != x.rank:
        raise ctx.error(f"weight 'W' has rank {w.rank}, expected {x.rank} like the input")
    check_window(ctx, n, x.shape[2:], kernel_shape=kernel, strides=strides, dilations=dilations,
                 pads=pads, output_padding=out_pad)
    if output_shape is not None and len(output_shape) < n:
        raise ctx.error(f"attribute 'output_shape' {list(output_shape)} must hold {n} values")
    if output_shape is not None or auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        in_dims = x.shape[2:]
        if output_shape is None:
            output_shape = [in_dims[i] * strides[i] for i in range(n)]
        output_shape = list(output_shape)[-n:]
        for i in range(n):
            total = (strides[i] * (in_dims[i] - 1) + out_pad[i]
                     + (kernel[i] - 1) * dilations[i] + 1 - output_shape[i])
            if total < 0:  # the output is larger than the full result: extend at the end
                out_pad[i] -= total
                total = 0
            small = total // 2
            pads[i], pads[i + n] = (small, total - small) if auto_pad == "SAME_UPPER" else (total - small, small)
    elif auto_pad == "VALID":
        pads = [0] * (2 * n)
    if spatial == 3:
        from dlc.frontends.onnx.ops_nn_3d import conv_transpose3d

        return [_add_channel_bias(ctx, conv_transpose3d(node, ctx, x, w, kernel, strides, dilations, pads, out_pad), bias)]
    if spatial == 1:
        x, w = _as_2d(ctx, x), _as_2d(ctx, w)
        strides, dilations = _to_2d(strides, 1), _to_2d(dilations, 1)
        pads, out_pad = _to_2d(pads, 0), [0, out_pad[0]]
    y = ctx.emit(g.ConvTranspose2DOp, x, w, strides=strides, dilations=dilations, padding=pads,
                 output_padding=out_pad, groups=int(node.attr("group", 1)))
    if spatial == 1:
        y = _from_2d(ctx, y)
    return [_add_channel_bias(ctx, y, bias)]


# ---------------------------------------------------------------------------
# pooling
# ---------------------------------------------------------------------------


@converts("MaxPool", "AveragePool")
def convert_pool(node: Node, ctx: ImportContext):
    x = node.input(0)
    if node.num_outputs > 1 or x.rank == 5:  # N-D pool ops (ops_nn_3d.py)
        from dlc.frontends.onnx.ops_nn_3d import convert_pool_nd

        return convert_pool_nd(node, ctx)
    spatial = _spatial(node, ctx, x)
    kernel = list(node.required("kernel_shape"))
    strides, dilations, pads = _window(node, ctx, x.shape[2:], kernel)
    if spatial == 1:
        x = _as_2d(ctx, x)
        kernel, strides, dilations, pads = (
            _to_2d(kernel, 1), _to_2d(strides, 1), _to_2d(dilations, 1), _to_2d(pads, 0))
    attrs = dict(kernel=kernel, strides=strides, dilations=dilations, padding=pads,
                 ceil_mode=bool(node.attr("ceil_mode", 0)))
    if node.op_type == "AveragePool":
        attrs["count_include_pad"] = bool(node.attr("count_include_pad", 0))
        y = ctx.emit(g.AvgPool2DOp, x, **attrs)
    else:
        y = ctx.emit(g.MaxPool2DOp, x, **attrs)
    return [_from_2d(ctx, y) if spatial == 1 else y]


@converts("LpPool")
def convert_lp_pool(node: Node, ctx: ImportContext):
    # (sum over the window of |x|^p)^(1/p): the window sum is an average pool
    # counting padding (zeros) times the window size
    x = node.input(0)
    p = float(node.attr("p", 2))
    spatial = 3 if x.rank == 5 else _spatial(node, ctx, x)  # 3-D: avg_pool3d
    kernel = list(node.required("kernel_shape"))
    strides, dilations, pads = _window(node, ctx, x.shape[2:], kernel)
    powered = ctx.emit(g.PowOp, ctx.emit(g.AbsOp, x), ctx.constant(p, like=x))
    if spatial == 1:
        powered = _as_2d(ctx, powered)
        kernel, strides, dilations, pads = (
            _to_2d(kernel, 1), _to_2d(strides, 1), _to_2d(dilations, 1), _to_2d(pads, 0))
    avg = ctx.emit(g.AvgPool3DOp if spatial == 3 else g.AvgPool2DOp, powered, kernel=kernel,
                   strides=strides, dilations=dilations, padding=pads,
                   ceil_mode=bool(node.attr("ceil_mode", 0)), count_include_pad=True)
    total = ctx.emit(g.MulOp, avg, ctx.constant(math.prod(kernel), like=x))
    y = ctx.emit(g.PowOp, total, ctx.constant(1.0 / p, like=x))
    return [_from_2d(ctx, y) if spatial == 1 else y]


@converts("GlobalAveragePool", "GlobalMaxPool")
def convert_global_pool(node: Node, ctx: ImportContext):
    op = g.GlobalAvgPoolOp if node.op_type == "GlobalAveragePool" else g.GlobalMaxPoolOp
    return [ctx.emit(op, node.input(0))]


@converts("LRN")
def convert_lrn(node: Node, ctx: ImportContext):
    # b = a / (bias + alpha/size * sum_window(a^2))^beta; the channel window sum
    # is an average pool with count_include_pad over a [N, 1, C, rest] view.
    x = node.input(0)
    if x.rank < 3:
        raise ctx.error(f"input must be N x C x ..., got rank {x.rank}")
    size = int(node.required("size"))
    alpha, beta = float(node.attr("alpha", 1e-4)), float(node.attr("beta", 0.75))
    bias = float(node.attr("bias", 1.0))
    n, c = x.shape[:2]
    rest = math.prod(x.shape[2:])
    sq = reshape(ctx, ctx.emit(g.MulOp, x, x), [n, 1, c, rest])
    lo, hi = (size - 1) // 2, -(-(size - 1) // 2)
    avg = ctx.emit(g.AvgPool2DOp, sq, kernel=[size, 1], padding=[lo, 0, hi, 0],
                   count_include_pad=True)
    avg = reshape(ctx, avg, x.shape)
    scaled = ctx.emit(g.MulOp, avg, ctx.constant(alpha, like=x))
    base = ctx.emit(g.AddOp, scaled, ctx.constant(bias, like=x))
    denom = ctx.emit(g.PowOp, base, ctx.constant(beta, like=x))
    return [ctx.emit(g.DivOp, x, denom)]


# ---------------------------------------------------------------------------
# linear algebra
# ---------------------------------------------------------------------------


@converts("MatMul")
def convert_matmul(node: Node, ctx: ImportContext):
    return [ctx.emit(g.MatmulOp, node.input(0), node.input(1))]


@converts("Det")
def convert_det(node: Node, ctx: ImportContext):
    return [ctx.emit(g.DetOp, node.input(0))]


@converts("Gemm")
def convert_gemm(node: Node, ctx: ImportContext):
    a, b, c = node.input(0), node.input(1), node.input(2)
    if node.attr("transA", 0):
        a = transpose(ctx, a, [1, 0])
    if node.attr("transB", 0):
        b = transpose(ctx, b, [1, 0])
    y = ctx.emit(g.MatmulOp, a, b)
    alpha, beta = float(node.attr("alpha", 1.0)), float(node.attr("beta", 1.0))
    if alpha != 1.0:
        y = ctx.emit(g.MulOp, y, ctx.constant(alpha, like=y))
    if c is not None and beta != 0.0:
        if beta != 1.0:
            c = ctx.emit(g.MulOp, c, ctx.constant(beta, like=c))
        y = ctx.emit(g.AddOp, y, c)
    return [y]


@converts("Einsum")
def convert_einsum(node: Node, ctx: ImportContext):
    equation = node.required("equation").replace(" ", "")
    if "..." in equation:
        raise ctx.error(f"einsum '{equation}': ellipsis is not supported")
    lhs, _, out = equation.partition("->")
    terms = lhs.split(",")
    inputs = [t for t in node.inputs if t is not None]
    if len(terms) != len(inputs):
        raise ctx.error(f"einsum '{equation}' names {len(terms)} operands, got {len(inputs)}")
    if not _:
        counts = {}
        for term in terms:
            for ch in term:
                counts[ch] = counts.get(ch, 0) + 1
        out = "".join(sorted(ch for ch, k in counts.items() if k == 1))
    for term, t in zip(terms, inputs):
        if len(set(term)) != len(term) or len(term) != t.rank:
            raise ctx.error(f"einsum '{equation}': term '{term}' (repeated index or rank "
                            f"mismatch with {list(t.shape)}) is not supported")
    if len(inputs) == 1:
        x, term = _einsum_drop(ctx, inputs[0], terms[0], out)
        return [transpose(ctx, x, [term.index(ch) for ch in out])]
    if len(inputs) != 2:
        raise ctx.error(f"einsum '{equation}': only one or two operands are supported")
    (a, ta), (b, tb) = (_einsum_drop(ctx, t, term, out + terms[1 - i])
                        for i, (t, term) in enumerate(zip(inputs, terms)))
    batch = [ch for ch in ta if ch in tb and ch in out]
    contract = [ch for ch in ta if ch in tb and ch not in out]
    left = [ch for ch in ta if ch not in tb]
    right = [ch for ch in tb if ch not in ta]
    size = {ch: d for term, t in ((ta, a), (tb, b)) for ch, d in zip(term, t.shape)}
    for ch in batch + contract:
        if a.shape[ta.index(ch)] != b.shape[tb.index(ch)]:
            raise ctx.error(f"einsum '{equation}': index '{ch}' has different extents")
    prod = lambda chs: math.prod(size[ch] for ch in chs)  # noqa: E731
    a3 = reshape(ctx, transpose(ctx, a, [ta.index(ch) for ch in batch + left + contract]),
                 [prod(batch), prod(left), prod(contract)])
    b3 = reshape(ctx, transpose(ctx, b, [tb.index(ch) for ch in batch + contract + right]),
                 [prod(batch), prod(contract), prod(right)])
    y = ctx.emit(g.MatmulOp, a3, b3)
    order = batch + left + right
    y = reshape(ctx, y, [size[ch] for ch in order])
    return [transpose(ctx, y, [order.index(ch) for ch in out])]


def _einsum_drop(ctx: ImportContext, t: Tensor, term: str, keep: str):
    """Sum out indices of ``term`` that appear nowhere in ``keep``."""
    drop = [i for i, ch in enumerate(term) if ch not in keep]
    if not drop:
        return t, term
    t = ctx.emit(g.ReduceSumOp, t, axes=drop, keepdims=False)
    return t, "".join(ch for ch in term if ch in keep)


# ---------------------------------------------------------------------------
# normalization and softmax
# ---------------------------------------------------------------------------


@converts("BatchNormalization")
def convert_batch_norm(node: Node, ctx: ImportContext):
    if node.num_outputs > 1 or node.attr("training_mode", 0):
        raise ctx.error("training-mode BatchNormalization (running statistics outputs) is not supported")
    x, scale, bias, mean, var = (node.input(i) for i in range(5))
    return [ctx.emit(g.BatchNormOp, x, scale, bias, mean, var,
                     epsilon=float(node.attr("epsilon", 1e-5)))]


@converts("LayerNormalization")
def convert_layer_norm(node: Node, ctx: ImportContext):
    x, scale, bias = node.input(0), node.input(1), node.input(2)
    axis = ctx.axis(node.attr("axis", -1), x.rank)
    eps = float(node.attr("epsilon", 1e-5))
    if node.num_outputs == 1:
        if bias is None:
            bias = ctx.constant(np.zeros(scale.shape, dtype=scale.dtype))
        return [ctx.emit(g.LayerNormOp, x, scale, bias, axis=axis, epsilon=eps)]
    # Mean and InvStdDev wanted too: spell the normalization out
    axes = list(range(axis, x.rank))
    stash = _stash(ctx, node, x)
    xs = _cast(ctx, x, stash)
    mean = ctx.emit(g.ReduceMeanOp, xs, axes=axes, keepdims=True)
    centered = ctx.emit(g.SubOp, xs, mean)
    var = ctx.emit(g.ReduceMeanOp, ctx.emit(g.MulOp, centered, centered), axes=axes, keepdims=True)
    inv_std = ctx.emit(g.ReciprocalOp, ctx.emit(g.SqrtOp, ctx.emit(g.AddOp, var, ctx.constant(eps, like=var))))
    y = _cast(ctx, ctx.emit(g.MulOp, centered, inv_std), x.element_type)
    y = ctx.emit(g.MulOp, y, scale)
    if bias is not None:
        y = ctx.emit(g.AddOp, y, bias)
    return [y, mean, inv_std]


def _stash(ctx: ImportContext, node: Node, x: Tensor):
    """Element type of the statistics (``stash_type``, default float32)."""
    return graph_element_type(node.attr("stash_type", 1), node.where)


def _cast(ctx: ImportContext, t: Tensor, element_type) -> Tensor:
    return t if t.element_type == element_type else ctx.emit(g.CastOp, t, to=element_type)


@converts("RMSNormalization")
def convert_rms_norm(node: Node, ctx: ImportContext):
    x, scale = node.input(0), node.input(1)
    axis = ctx.axis(node.attr("axis", -1), x.rank)
    xs = _cast(ctx, x, _stash(ctx, node, x))
    mean_sq = ctx.emit(g.ReduceMeanOp, ctx.emit(g.MulOp, xs, xs), axes=list(range(axis, x.rank)),
                       keepdims=True)
    eps = ctx.constant(float(node.attr("epsilon", 1e-5)), like=mean_sq)
    normed = ctx.emit(g.DivOp, xs, ctx.emit(g.SqrtOp, ctx.emit(g.AddOp, mean_sq, eps)))
    return [ctx.emit(g.MulOp, _cast(ctx, normed, x.element_type), scale)]


@converts("GroupNormalization")
def convert_group_norm(node: Node, ctx: ImportContext):
    x, scale, bias = node.input(0), node.input(1), node.input(2)
    groups = int(node.required("num_groups"))
    n, c = x.shape[:2]
    if groups < 1 or c % groups:
        raise ctx.error(f"num_groups={groups} does not divide the {c} channels")
    xs = _cast(ctx, x, _stash(ctx, node, x))
    grouped = reshape(ctx, xs, [n, groups, -1])
    mean = ctx.emit(g.ReduceMeanOp, grouped, axes=[2], keepdims=True)
    centered = ctx.emit(g.SubOp, grouped, mean)
    var = ctx.emit(g.ReduceMeanOp, ctx.emit(g.MulOp, centered, centered), axes=[2], keepdims=True)
    eps = ctx.constant(float(node.attr("epsilon", 1e-5)), like=var)
    normed = ctx.emit(g.DivOp, centered, ctx.emit(g.SqrtOp, ctx.emit(g.AddOp, var, eps)))
    normed = _cast(ctx, reshape(ctx, normed, x.shape), x.element_type)
    per_channel = [c] + [1] * (x.rank - 2)
    if scale.shape[0] != c:  # opset 18: one scale/bias per group
        scale = ctx.emit(g.BroadcastToOp, reshape(ctx, scale, [groups, 1]), shape=[groups, c // groups])
        bias = ctx.emit(g.BroadcastToOp, reshape(ctx, bias, [groups, 1]), shape=[groups, c // groups])
    y = ctx.emit(g.MulOp, normed, reshape(ctx, scale, per_channel))
    return [ctx.emit(g.AddOp, y, reshape(ctx, bias, per_channel))]


@converts("MeanVarianceNormalization")
def convert_mvn(node: Node, ctx: ImportContext):
    x = node.input(0)
    axes = ctx.axes(node.attr("axes", [0, 2, 3]), x.rank)
    mean = ctx.emit(g.ReduceMeanOp, x, axes=axes, keepdims=True)
    centered = ctx.emit(g.SubOp, x, mean)
    var = ctx.emit(g.ReduceMeanOp, ctx.emit(g.MulOp, centered, centered), axes=axes, keepdims=True)
    # the ONNX function body adds 1e-9 before the square root
    std = ctx.emit(g.SqrtOp, ctx.emit(g.AddOp, var, ctx.constant(1e-9, like=var)))
    return [ctx.emit(g.DivOp, centered, std)]


@converts("LpNormalization")
def convert_lp_norm(node: Node, ctx: ImportContext):
    x = node.input(0)
    axis, p = ctx.axis(node.attr("axis", -1), x.rank), int(node.attr("p", 2))
    if p == 1:
        norm = ctx.emit(g.ReduceSumOp, ctx.emit(g.AbsOp, x), axes=[axis], keepdims=True)
    elif p == 2:
        norm = ctx.emit(g.SqrtOp, ctx.emit(g.ReduceSumOp, ctx.emit(g.MulOp, x, x), axes=[axis],
                                           keepdims=True))
    else:
        raise ctx.error(f"p={p} is not supported (1 or 2)")
    zero = ctx.constant(0, like=x)
    is_zero = ctx.emit(g.EqualOp, norm, zero)
    safe = ctx.emit(g.WhereOp, is_zero, ctx.constant(1, like=x), norm)
    return [ctx.emit(g.WhereOp, is_zero, zero, ctx.emit(g.DivOp, x, safe))]


@converts("InstanceNormalization")
def convert_instance_norm(node: Node, ctx: ImportContext):
    x, scale, bias = node.input(0), node.input(1), node.input(2)
    eps = float(node.attr("epsilon", 1e-5))
    axes = list(range(2, x.rank))
    mean = ctx.emit(g.ReduceMeanOp, x, axes=axes, keepdims=True)
    centered = ctx.emit(g.SubOp, x, mean)
    var = ctx.emit(g.ReduceMeanOp, ctx.emit(g.MulOp, centered, centered), axes=axes, keepdims=True)
    std = ctx.emit(g.SqrtOp, ctx.emit(g.AddOp, var, ctx.constant(eps, like=x)))
    normed = ctx.emit(g.DivOp, centered, std)
    per_channel = [x.shape[1]] + [1] * (x.rank - 2)
    y = ctx.emit(g.MulOp, normed, reshape(ctx, scale, per_channel))
    return [ctx.emit(g.AddOp, y, reshape(ctx, bias, per_channel))]


@converts("Softmax", "LogSoftmax", "Hardmax")
def convert_softmax(node: Node, ctx: ImportContext):
    x = node.input(0)
    legacy = node.opset < 13  # softmax over the 2-D flattening at axis
    axis = ctx.axis(node.attr("axis", 1 if legacy else -1), x.rank)
    y = x
    if legacy and axis != x.rank - 1:
        y = reshape(ctx, x, [math.prod(x.shape[:axis]), math.prod(x.shape[axis:])])
        axis = 1
    if node.op_type == "Hardmax":
        y = _hardmax(ctx, y, axis)
    else:
        op = g.SoftmaxOp if node.op_type == "Softmax" else g.LogSoftmaxOp
        y = ctx.emit(op, y, axis=axis)
    return [reshape(ctx, y, x.shape)]


def _hardmax(ctx: ImportContext, x: Tensor, axis: int) -> Tensor:
    # one-hot of the first maximum: argmax(keepdims) == iota along axis
    idx = ctx.emit(g.ArgMaxOp, x, axis=axis, keepdims=True)
    shape = [1] * x.rank
    shape[axis] = x.shape[axis]
    iota = ctx.constant(np.arange(x.shape[axis], dtype=np.int64).reshape(shape))
    hot = ctx.emit(g.EqualOp, idx, iota)
    return ctx.emit(g.CastOp, hot, to=x.element_type)
