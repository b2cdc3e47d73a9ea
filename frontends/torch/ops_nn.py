"""Converters: convolution, normalization, pooling, attention, embedding."""

from __future__ import annotations

import math

import numpy as np

from dlc.dialects import graph as g
from dlc.frontends.torch.importer import ImportContext, Unavailable
from dlc.frontends.torch.registry import converts


def _pair(value, what: str, cx: ImportContext) -> list[int]:
    values = [int(v) for v in ([value] if isinstance(value, int) else value)]
    if len(values) == 1:
        values = values * 2
    if len(values) != 2:
        raise cx.error(f"{what} must have 1 or 2 values, got {values}")
    return values


def _channel_bias(cx: ImportContext, y, bias):
    """``y + bias`` with bias[C] broadcast over N x C x H x W."""
    if bias is None:
        return y
    b = cx.cast(cx.tensor(bias), cx.dtype(y))
    return cx.emit(g.AddOp, y, cx.emit(g.ReshapeOp, b, shape=[-1, 1, 1]))


# ---------------------------------------------------------------------------
# convolution
# ---------------------------------------------------------------------------


def _conv(cx: ImportContext, x, w, bias, stride, padding, dilation, transposed, output_padding, groups):
    x, w = cx.promoted(x, w)
    x_rank, w_rank = len(cx.shape(x)), len(cx.shape(w))
    if w_rank == 3:  # 1-D convolution: run as 2-D with a height of 1
        x = cx.emit(g.UnsqueezeOp, x, axes=[-2])
        w = cx.emit(g.UnsqueezeOp, w, axes=[-2])
        lift = lambda v, fill: [fill] + [int(u) for u in ([v] if isinstance(v, int) else v)]  # noqa: E731
        stride, dilation = lift(stride, 1), lift(dilation, 1)
        output_padding = lift(output_padding or [0], 0)
        if not isinstance(padding, str):
            padding = lift(padding, 0)
        y = _conv(cx, x, w, bias, stride, padding, dilation, transposed, output_padding, groups)
        return cx.emit(g.SqueezeOp, y, axes=[-2])
    if w_rank != 4:
        raise cx.error(f"only 1-D and 2-D convolutions are supported, weight has rank {w_rank}")
    if x_rank == 3:  # unbatched C x H x W
        y = _conv(cx, cx.emit(g.UnsqueezeOp, x, axes=[0]), w, bias, stride, padding, dilation,
                  transposed, output_padding, groups)
        return cx.emit(g.SqueezeOp, y, axes=[0])
    strides, dilations = _pair(stride, "stride", cx), _pair(dilation, "dilation", cx)
    kernel = cx.shape(w)[2:]
    if isinstance(padding, str):
        if padding == "valid":
            pads = [0, 0, 0, 0]
        elif padding == "same":
            totals = [d * (k - 1) for d, k in zip(dilations, kernel)]
            begins = [t // 2 for t in totals]
            pads = begins + [t - b for t, b in zip(totals, begins)]
        else:
            raise cx.error(f"padding '{padding}' is not supported (valid, same or integers)")
    else:
        ph, pw = _pair(padding, "padding", cx)
        pads = [ph, pw, ph, pw]
    if transposed:
        y = cx.emit(g.ConvTranspose2DOp, x, w, strides=strides, padding=pads, dilations=dilations,
                    groups=int(groups), output_padding=_pair(output_padding or [0], "output_padding", cx))
    else:
        y = cx.emit(g.Conv2DOp, x, w, strides=strides, padding=pads, dilations=dilations,
                    groups=int(groups))
    return _channel_bias(cx, y, bias)


@converts("aten.convolution", "aten._convolution")
def _convolution(cx, a):
    return _conv(cx, a["input"], a["weight"], a.get("bias"), a["stride"], a["padding"], a["dilation"],
                 a["transposed"], a["output_padding"], a["groups"])


@converts("aten.conv2d", "aten.conv1d")
def _conv2d(cx, a):
    return _conv(cx, a["input"], a["weight"], a.get("bias"), a["stride"], a["padding"], a["dilation"],
                 False, [0], a["groups"])


@converts("aten.conv_transpose2d", "aten.conv_transpose1d")
def _conv_transpose(cx, a):
    return _conv(cx, a["input"], a["weight"], a.get("bias"), a["stride"], a["padding"], a["dilation"],
                 True, a["output_padding"], a["groups"])


# ---------------------------------------------------------------------------
# normalization
# ---------------------------------------------------------------------------


def _or_fill(cx: ImportContext, value, channels: int, fill: float, dtype):
    if value is None:
        return cx.constant(np.full([channels], fill, dtype=dtype))
    return cx.cast(cx.tensor(value), dtype)


def _batch_norm(cx: ImportContext, a, training: bool):
    x = cx.tensor(a["input"])
    if training or a.get("running_mean") is None:
        raise cx.error("batch norm with batch statistics (training mode) is not supported; "
                       "call model.eval() before export")
    channels = cx.shape(x)[1]
    dt = cx.dtype(x)
    return cx.emit(g.BatchNormOp, x, _or_fill(cx, a.get("weight"), channels, 1.0, dt),
                   _or_fill(cx, a.get("bias"), channels, 0.0, dt),
                   cx.cast(cx.tensor(a["running_mean"]), dt), cx.cast(cx.tensor(a["running_var"]), dt),
                   epsilon=float(a["eps"]))


@converts("aten.batch_norm")
def _batch_norm_op(cx, a):
    return _batch_norm(cx, a, bool(a.get("training")))


@converts("aten._native_batch_norm_legit_no_training")
def _bn_no_training(cx, a):
    return [_batch_norm(cx, a, False), Unavailable("batch norm's saved mean"),
            Unavailable("batch norm's saved inverse std")]


@converts("aten.native_batch_norm", "aten._native_batch_norm_legit",
          "aten._native_batch_norm_legit_functional")
def _native_bn(cx, a):
    return [_batch_norm(cx, a, bool(a.get("training"))), Unavailable("batch norm's saved mean"),
            Unavailable("batch norm's saved inverse std")]


def _layer_norm(cx: ImportContext, a):
    x = cx.tensor(a["input"])
    norm_shape = [int(d) for d in a["normalized_shape"]]
    dt = cx.dtype(x)
    weight, bias = a.get("weight"), a.get("bias")
    scale = cx.constant(np.ones(norm_shape, dt)) if weight is None else cx.cast(cx.tensor(weight), dt)
    shift = cx.constant(np.zeros(norm_shape, dt)) if bias is None else cx.cast(cx.tensor(bias), dt)
    return cx.emit(g.LayerNormOp, x, scale, shift, axis=-len(norm_shape), epsilon=float(a["eps"]))


@converts("aten.layer_norm")
def _layer_norm_op(cx, a):
    return _layer_norm(cx, a)


@converts("aten.native_layer_norm")
def _native_layer_norm(cx, a):
    return [_layer_norm(cx, a), Unavailable("layer norm's saved mean"),
            Unavailable("layer norm's saved inverse std")]


def _group_norm(cx: ImportContext, x, groups: int, weight, bias, eps: float):
    shape = cx.shape(x)
    dt = cx.dtype(x)
    grouped = cx.emit(g.ReshapeOp, x, shape=[shape[0], groups, -1])
    count = cx.shape(grouped)[2]
    ones = cx.constant(np.ones([count], dt))
    zeros = cx.constant(np.zeros([count], dt))
    normed = cx.emit(g.LayerNormOp, grouped, ones, zeros, axis=-1, epsilon=eps)
    y = cx.emit(g.ReshapeOp, normed, shape=shape)
    channel = [-1] + [1] * (len(shape) - 2)
    if weight is not None:
        y = cx.emit(g.MulOp, y, cx.emit(g.ReshapeOp, cx.cast(cx.tensor(weight), dt), shape=channel))
    if bias is not None:
        y = cx.emit(g.AddOp, y, cx.emit(g.ReshapeOp, cx.cast(cx.tensor(bias), dt), shape=channel))
    return y


@converts("aten.group_norm")
def _group_norm_op(cx, a):
    return _group_norm(cx, cx.tensor(a["input"]), int(a["num_groups"]), a.get("weight"), a.get("bias"),
                       float(a["eps"]))


@converts("aten.native_group_norm")
def _native_group_norm(cx, a):
    y = _group_norm(cx, cx.tensor(a["input"]), int(a["group"]), a.get("weight"), a.get("bias"),
                    float(a["eps"]))
    return [y, Unavailable("group norm's saved mean"), Unavailable("group norm's saved inverse std")]


# ---------------------------------------------------------------------------
# pooling
# ---------------------------------------------------------------------------


def _batched(cx: ImportContext, x, build):
    """Run ``build`` on N x C x H x W; an unbatched C x H x W input gets N = 1."""
    x = cx.tensor(x)
    if len(cx.shape(x)) == 3:
        return cx.emit(g.SqueezeOp, build(cx.emit(g.UnsqueezeOp, x, axes=[0])), axes=[0])
    return build(x)


def _max_pool(cx: ImportContext, a):
    kernel = _pair(a["kernel_size"], "kernel_size", cx)
    stride = _pair(a["stride"], "stride", cx) if a.get("stride") else kernel
    ph, pw = _pair(a.get("padding", 0), "padding", cx)
    dilation = _pair(a.get("dilation", 1), "dilation", cx)
    return _batched(cx, a["self"], lambda x: cx.emit(
        g.MaxPool2DOp, x, kernel=kernel, strides=stride, padding=[ph, pw, ph, pw], dilations=dilation,
        ceil_mode=bool(a.get("ceil_mode", False))))


@converts("aten.max_pool2d")
def _max_pool2d(cx, a):
    return _max_pool(cx, a)


@converts("aten.max_pool2d_with_indices")
def _max_pool2d_with_indices(cx, a):
    return [_max_pool(cx, a), Unavailable("max_pool2d's indices")]


@converts("aten.avg_pool2d")
def _avg_pool2d(cx, a):
    if a.get("divisor_override") is not None:
        raise cx.error("avg_pool2d with divisor_override is not supported")
    kernel = _pair(a["kernel_size"], "kernel_size", cx)
    stride = _pair(a["stride"], "stride", cx) if a.get("stride") else kernel
    ph, pw = _pair(a.get("padding", 0), "padding", cx)
    return _batched(cx, a["self"], lambda x: cx.emit(
        g.AvgPool2DOp, x, kernel=kernel, strides=stride, padding=[ph, pw, ph, pw],
        ceil_mode=bool(a.get("ceil_mode", False)),
        count_include_pad=bool(a.get("count_include_pad", True))))


def _adaptive(cx: ImportContext, a, maximum: bool):
    sizes = list(a["output_size"])
    out_h, out_w = sizes * 2 if len(sizes) == 1 else sizes  # None keeps the input size

    def build(x):
        h, w = cx.shape(x)[2:]
        oh = h if out_h is None else out_h
        ow = w if out_w is None else out_w
        if (oh, ow) == (1, 1):
            return cx.emit(g.GlobalMaxPoolOp if maximum else g.GlobalAvgPoolOp, x)
        if h % oh or w % ow:
            raise cx.error(f"adaptive pooling of {h}x{w} to {oh}x{ow} needs output sizes that "
                           "divide the input sizes")
        kernel = [h // oh, w // ow]
        return cx.emit(g.MaxPool2DOp if maximum else g.AvgPool2DOp, x, kernel=kernel, strides=kernel)

    return _batched(cx, a["self"], build)


@converts("aten.adaptive_avg_pool2d", "aten._adaptive_avg_pool2d")
def _adaptive_avg_pool2d(cx, a):
    return _adaptive(cx, a, maximum=False)


@converts("aten.adaptive_max_pool2d")
def _adaptive_max_pool2d(cx, a):
    return [_adaptive(cx, a, maximum=True), Unavailable("adaptive_max_pool2d's indices")]


# ---------------------------------------------------------------------------
# attention and embedding
# ---------------------------------------------------------------------------


@converts("aten.scaled_dot_product_attention")
def _sdpa(cx, a):
    """softmax(q k^T * scale + mask) v, decomposed into graph ops."""
    q, k, v = cx.promoted(a["query"], a["key"], a["value"])
    if a.get("dropout_p"):
        raise cx.error("scaled_dot_product_attention with dropout_p > 0 is random; pass 0.0")
    qs, ks = cx.shape(q), cx.shape(k)
    if a.get("enable_gqa") and qs[-3] != ks[-3]:
        raise cx.error("grouped-query attention (enable_gqa with fewer key heads) is not supported")
    rank = len(ks)
    dt = cx.dtype(q)
    scale = a.get("scale")
    scale = 1.0 / math.sqrt(qs[-1]) if scale is None else float(scale)
    perm = list(range(rank - 2)) + [rank - 1, rank - 2]
    scores = cx.emit(g.MatmulOp, q, cx.emit(g.TransposeOp, k, perm=perm))
    scores = cx.emit(g.MulOp, scores, cx.scalar(scale, dt))
    minus_inf = cx.scalar(-np.inf, dt)
    if a.get("is_causal"):
        causal = np.tril(np.ones((qs[-2], ks[-2]), dtype=np.bool_))
        scores = cx.emit(g.WhereOp, cx.constant(causal), scores, minus_inf)
    mask = a.get("attn_mask")
    if mask is not None:
        mask = cx.tensor(mask)
        if cx.dtype(mask) == np.bool_:
            scores = cx.emit(g.WhereOp, mask, scores, minus_inf)
        else:
            scores = cx.emit(g.AddOp, scores, cx.cast(mask, dt))
    weights = cx.emit(g.SoftmaxOp, scores, axis=-1)
    return cx.emit(g.MatmulOp, weights, v)


@converts("aten.embedding")
def _embedding(cx, a):
    return cx.emit(g.GatherOp, cx.tensor(a["weight"]), cx.tensor(a["indices"]), axis=0)


@converts("aten.upsample_nearest2d")
def _upsample_nearest2d(cx, a):
    expected = cx.expected()
    if expected is None:
        raise cx.error("needs torch's shape metadata (meta['val']) on the node")
    return cx.emit(g.ResizeOp, cx.tensor(a["input"] if "input" in a else a["self"]), sizes=expected[0],
                   mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor")
