"""Converters for ONNX spatial sampling and signal ops: GridSample, DFT, STFT,
Col2Im, RoiAlign, DeformConv.

Lengths, axes and shapes given as inputs (DFT's dft_length/axis, STFT's
frame_step/frame_length, Col2Im's image/block shapes) must be known at compile
time (``ctx.const_ints``): they fix the result shape. STFT is framed with a
constant-index ``graph.gather``, windowed with ``graph.mul`` and transformed
by ``graph.dft``: no op of its own.
"""

from __future__ import annotations

import math

import numpy as np

from dlc.dialects import graph as g
from dlc.frontends.onnx.importer import ImportContext, Node, Tensor
from dlc.frontends.onnx.ops_shape import reshape
from dlc.frontends.onnx.registry import converts

# opset 16 spelled the modes bilinear / bicubic; opset 20 renamed them
_GRID_MODE_NAMES = {"bilinear": "linear", "bicubic": "cubic", "linear": "linear",
                    "cubic": "cubic", "nearest": "nearest"}


def _float_input(ctx: ImportContext, t: Tensor, what: str) -> None:
    if t.dtype.kind != "f":
        raise ctx.error(f"{what} must be a float tensor, got {t.dtype}")


@converts("GridSample")
def convert_grid_sample(node: Node, ctx: ImportContext):
    x, grid = node.input(0), node.input(1)
    mode = node.attr("mode", "linear" if node.opset >= 20 else "bilinear")
    if mode not in _GRID_MODE_NAMES:
        raise ctx.error(f"unknown mode '{mode}' (linear/bilinear, nearest, cubic/bicubic)")
    return [ctx.emit(g.GridSampleOp, x, grid, mode=_GRID_MODE_NAMES[mode],
                     padding_mode=node.attr("padding_mode", "zeros"),
                     align_corners=bool(node.attr("align_corners", 0)))]


def _scalar(ctx: ImportContext, t: Tensor | None, what: str) -> int | None:
    if t is None:
        return None
    values = ctx.const_ints(t, what)
    if len(values) != 1:
        raise ctx.error(f"'{what}' must be a scalar, got {len(values)} values")
    return values[0]


def dft(ctx: ImportContext, x: Tensor, axis: int, length: int | None, inverse: bool,
        onesided: bool) -> Tensor:
    axis = ctx.axis(axis, x.rank)
    if not axis < x.rank - 1:
        raise ctx.error(f"axis {axis} is out of range for a rank-{x.rank} signal (the last dim is not an axis)")
    if length is None:
        length = 2 * (x.shape[axis] - 1) if inverse and onesided else x.shape[axis]
    if length < 1:
        raise ctx.error(f"dft_length must be >= 1, got {length}")
    return ctx.emit(g.DftOp, x, axis=axis, length=length, inverse=inverse, onesided=onesided)


@converts("DFT")
def convert_dft(node: Node, ctx: ImportContext):
    x = node.input(0)
    _float_input(ctx, x, "input")
    length = _scalar(ctx, node.input(1), "dft_length")
    if node.opset >= 20:
        axis = _scalar(ctx, node.input(2), "axis")
        axis = -2 if axis is None else axis
    else:
        axis = node.attr("axis", 1)
    return [dft(ctx, x, axis, length, bool(node.attr("inverse", 0)), bool(node.attr("onesided", 0)))]


@converts("STFT")
def convert_stft(node: Node, ctx: ImportContext):
    signal, window = node.input(0), node.input(2)
    _float_input(ctx, signal, "signal")
    if signal.rank != 3:
        raise ctx.error(f"signal must be [batch, length, 1 or 2], got shape {list(signal.shape)}")
    step = _scalar(ctx, node.input(1), "frame_step")
    frame_length = _scalar(ctx, node.input(3), "frame_length")
    if window is not None and window.rank != 1:
        raise ctx.error(f"window must be 1-D, got shape {list(window.shape)}")
    if frame_length is None:
        if window is None:
            raise ctx.error("needs a window or a frame_length")
        frame_length = window.shape[0]
    width = window.shape[0] if window is not None else frame_length
    total = signal.shape[1]
    if step < 1 or frame_length < 1 or frame_length > total:
        raise ctx.error(f"frame_step {step} and frame_length {frame_length} do not frame a signal of length {total}")
    frames = 1 + (total - frame_length) // step
    # frame f holds samples f*step .. f*step+width-1 (zeros past the end)
    starts = np.arange(frames)[:, None] * step + np.arange(width)[None, :]
    overhang = int(starts.max()) + 1 - total
    if overhang > 0:
        signal = ctx.emit(g.PadOp, signal, pads=[0, 0, 0, 0, overhang, 0])
    framed = ctx.emit(g.GatherOp, signal, ctx.constant(starts.astype(np.int64)), axis=1)
    if window is not None:
        framed = ctx.emit(g.MulOp, framed, reshape(ctx, window, [width, 1]))
    return [dft(ctx, framed, 2, frame_length, False, bool(node.attr("onesided", 1)))]


@converts("Col2Im")
def convert_col2im(node: Node, ctx: ImportContext):
    x = node.input(0)
    image = ctx.const_ints(node.input(1), "image_shape")
    block = ctx.const_ints(node.input(2), "block_shape")
    r = len(image)
    return [ctx.emit(g.Col2ImOp, x, image_shape=image, block_shape=block,
                     strides=list(node.attr("strides", [1] * r)),
                     dilations=list(node.attr("dilations", [1] * r)),
                     pads=list(node.attr("pads", [0] * (2 * r))))]


def _adaptive_samples(rois: np.ndarray, bins: tuple[int, int], scale: float, half_pixel: bool) -> int:
    """Largest per-bin sample count of adaptive RoiAlign over ``rois`` (in the
    rois' precision, as the kernel computes it)."""
    dt = rois.dtype.type
    offset = dt(0.5 if half_pixel else 0.0)
    most = 1
    for x1, y1, x2, y2 in rois.reshape(-1, 4):
        for lo, hi, n in ((y1, y2, bins[0]), (x1, x2, bins[1])):
            size = dt(hi * dt(scale) - offset) - dt(lo * dt(scale) - offset)
            if not half_pixel:
                size = max(size, dt(1.0))
            most = max(most, int(math.ceil(dt(size / dt(n)))))
    return most


@converts("RoiAlign")
def convert_roi_align(node: Node, ctx: ImportContext):
    x, rois, ids = node.input(0), node.input(1), node.input(2)
    _float_input(ctx, x, "X")
    ctm = node.attr("coordinate_transformation_mode", "half_pixel" if node.opset >= 16 else "output_half_pixel")
    oh, ow = node.attr("output_height", 1), node.attr("output_width", 1)
    ratio = node.attr("sampling_ratio", 0)
    scale = float(node.attr("spatial_scale", 1.0))
    if rois.rank != 2 or rois.shape[1] != 4:
        raise ctx.error(f"rois must be [num_rois, 4], got {list(rois.shape)}")
    attrs = dict(mode=node.attr("mode", "avg"), output_height=oh, output_width=ow,
                 sampling_ratio=ratio, spatial_scale=scale, coordinate_transformation_mode=ctm)
    if ratio == 0:
        # adaptive sampling: the per-roi count needs a static bound, from known rois
        values = np.asarray(ctx.const_of(rois, "rois (sampling_ratio = 0 sizes its sample loops by them)"))
        attrs["max_samples"] = _adaptive_samples(values.astype(x.dtype), (oh, ow), scale,
                                                 ctm == "half_pixel")
    if rois.dtype != x.dtype:
        rois = ctx.emit(g.CastOp, rois, to=x.element_type)
    return [ctx.emit(g.RoiAlignOp, x, rois, ids, **attrs)]


@converts("DeformConv")
def convert_deform_conv(node: Node, ctx: ImportContext):
    x, w, offset, bias, mask = (node.input(i) for i in range(5))
    _float_input(ctx, x, "X")
    if x.rank != 4:
        raise ctx.error(f"only 2-D DeformConv (4-D X) is supported, got rank {x.rank}")
    kernel_shape = list(node.attr("kernel_shape", w.shape[2:]))
    if kernel_shape != list(w.shape[2:]):
        raise ctx.error(f"kernel_shape {kernel_shape} differs from W's spatial dims {list(w.shape[2:])}")
    return [ctx.emit(g.DeformConv2DOp, x, w, offset, mask, bias,
                     strides=list(node.attr("strides", [1, 1])),
                     dilations=list(node.attr("dilations", [1, 1])),
                     padding=list(node.attr("pads", [0, 0, 0, 0])),
                     groups=node.attr("group", 1), offset_groups=node.attr("offset_group", 1))]
