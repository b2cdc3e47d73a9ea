"""Spatial sampling and signal ops: resize, grid_sample, dft, col2im and roi_align.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Pure

from dlc.dialects.graph_base import (
    Attrs,
    BoolAttribute,
    EnumAttribute,
    FloatAttribute,
    GraphOp,
    IntAttribute,
    IntsAttribute,
    normalize_axis,
    or_default,
    ShapeError,
    tensor_type,
)
from dlc.dialects.graph.common import (
    _check_element,
    _contiguous,
    _expect_count,
    _same_element,
    Types,
)


_COORDINATE_MODES = ("half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel")
_NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


@irdl_op_definition
class ResizeOp(GraphOp):
    """Resize the trailing spatial dims of an N x C x ... tensor to ``sizes``
    (the full output shape). ``mode``: nearest | linear;
    ``coordinate_transformation_mode``: half_pixel (default) | asymmetric |
    align_corners | pytorch_half_pixel; ``nearest_mode``: round_prefer_floor
    (default) | round_prefer_ceil | floor | ceil.

    ```mlir
    %y = graph.resize %x {sizes = array<i64: 1, 3, 8, 8>, mode = "nearest"} : (tensor<1x3x4x4xf32>) -> tensor<1x3x8x8xf32>
    ```
    """

    name = "graph.resize"
    sizes = IntsAttribute()
    mode = EnumAttribute("nearest", "linear", message="mode must be nearest or linear")
    coordinate_transformation_mode = EnumAttribute(*_COORDINATE_MODES, message="{name} must be one of {choices}, got {value}")
    nearest_mode = EnumAttribute(*_NEAREST_MODES, message="{name} must be one of {choices}, got {value}")
    x = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 1)
        shape = list(operand_types[0].get_shape())
        sizes = list(attrs.sizes)
        if len(sizes) != len(shape) or min(sizes, default=1) < 1:
            raise ShapeError(f"sizes {sizes} must give a positive extent for each of the {len(shape)} dims")
        for axis, (d, s) in enumerate(zip(shape, sizes)):
            if d == 0 and s != 0:
                raise ShapeError(f"cannot resize axis {axis} of extent 0 (no values to sample)")
        # the declarations check the modes, in this order
        attrs.mode, attrs.coordinate_transformation_mode, attrs.nearest_mode
        if attrs.mode == "linear":
            _check_element(operand_types[0], "float")
        return [tensor_type(sizes, operand_types[0].element_type)]

    def reference(self, x):
        out = x
        sizes = self.sizes
        for axis, size in enumerate(sizes):
            if size != out.shape[axis] or axis >= 2:
                out = self._resize_axis(out, axis, size)
        return [out.astype(x.dtype)]

    def _resize_axis(self, x: np.ndarray, axis: int, size: int) -> np.ndarray:
        n = x.shape[axis]
        coords = resize_source_coords(
            n, size, self.coordinate_transformation_mode
        )
        if self.mode == "nearest":
            idx = resize_nearest_index(coords, self.nearest_mode)
            return np.take(x, np.clip(idx, 0, n - 1), axis=axis)
        coords = np.clip(coords, 0, n - 1)
        lo = np.floor(coords).astype(np.int64)
        hi = np.minimum(lo + 1, n - 1)
        frac = coords - lo
        shape = [1] * x.ndim
        shape[axis] = size
        frac = frac.reshape(shape)
        return np.take(x, lo, axis=axis) * (1 - frac) + np.take(x, hi, axis=axis) * frac




def resize_source_coords(n_in: int, n_out: int, mode: str) -> np.ndarray:
    """Source coordinate of each output index (ONNX Resize's formulas)."""
    scale = n_out / n_in
    o = np.arange(n_out, dtype=np.float64)
    if mode == "asymmetric":
        return o / scale
    if mode == "align_corners":
        return o * (n_in - 1) / (n_out - 1) if n_out > 1 else np.zeros(n_out)
    if mode == "pytorch_half_pixel":
        return (o + 0.5) / scale - 0.5 if n_out > 1 else np.zeros(n_out)
    if mode == "half_pixel":
        return (o + 0.5) / scale - 0.5
    raise ShapeError(f"unknown coordinate_transformation_mode {mode}")


def resize_nearest_index(coords: np.ndarray, mode: str) -> np.ndarray:
    if mode == "round_prefer_floor":
        return np.ceil(coords - 0.5).astype(np.int64)
    if mode == "round_prefer_ceil":
        return np.floor(coords + 0.5).astype(np.int64)
    if mode == "floor":
        return np.floor(coords).astype(np.int64)
    if mode == "ceil":
        return np.ceil(coords).astype(np.int64)
    raise ShapeError(f"unknown nearest_mode {mode}")


_GRID_MODES = ("linear", "nearest", "cubic")
_GRID_PADDINGS = ("zeros", "border", "reflection")


@irdl_op_definition
class GridSampleOp(GraphOp):
    """Sample ``x`` (N x C x D1..Dr, r = 1..3) at the normalized coordinates of
    ``grid`` (N x O1..Or x r, values in [-1, 1], innermost coordinate first: x,
    then y, then z), as ONNX GridSample. ``mode``: linear (default) | nearest |
    cubic; ``padding_mode``: zeros (default) | border | reflection;
    ``align_corners``: -1 and 1 are the centers (true) or outer edges (false)
    of the corner elements. Result: N x C x O1..Or.

    ```mlir
    %y = graph.grid_sample %x, %grid {mode = "cubic", padding_mode = "border"} : (tensor<1x3x5x7xf32>, tensor<1x2x4x2xf32>) -> tensor<1x3x2x4xf32>
    ```
    """

    name = "graph.grid_sample"
    mode = EnumAttribute(*_GRID_MODES, message="{name} must be one of {choices}, got {value}")
    padding_mode = EnumAttribute(*_GRID_PADDINGS, message="{name} must be one of {choices}, got {value}")
    align_corners = BoolAttribute()
    x = operand_def(TensorType)
    grid = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 2)
        x_t, grid_t = operand_types
        _check_element(x_t, "float", "x")
        _check_element(grid_t, "float", "grid")
        xs, gs = list(x_t.get_shape()), list(grid_t.get_shape())
        if not 3 <= len(xs) <= 5:
            raise ShapeError(f"x must be N x C x D1..Dr with 1 <= r <= 3, got rank {len(xs)}")
        r = len(xs) - 2
        if len(gs) != r + 2 or gs[-1] != r:
            raise ShapeError(f"grid must be N x O1..O{r} x {r} for a {r}-D x, got {gs}")
        if gs[0] != xs[0]:
            raise ShapeError(f"grid batch {gs[0]} differs from x batch {xs[0]}")
        if min(xs[2:]) < 1:
            raise ShapeError(f"spatial dims of x must be >= 1, got {xs[2:]}")
        attrs.mode, attrs.padding_mode  # checked by their declarations
        return [tensor_type(xs[:2] + gs[1:-1], x_t.element_type)]

    def reference(self, x, grid):
        a = self.attrs
        return [grid_sample_reference(
            x, grid, a.mode, a.padding_mode,
            a.align_corners)]


def grid_reflect(v: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Reflect ``v`` at the borders ``lo``/``hi`` until inside (ONNX's _gs_reflect)."""
    span = hi - lo
    if span <= 0:
        return np.full_like(v, lo)
    below = v < lo
    dist = np.where(below, lo - v, v - hi)
    flips = np.floor(dist / span)
    rest = dist - flips * span
    even = np.fmod(flips, 2) == 0
    low_side = np.where(below, even, ~even)  # ends at lo + rest, else at hi - rest
    reflected = np.where(low_side, lo + rest, hi - rest)
    return np.where((v < lo) | (v > hi), reflected, v)


def grid_cubic_weights(t: np.ndarray) -> list[np.ndarray]:
    """Keys cubic weights (alpha = -0.75) of the taps at -1, 0, 1, 2 for a fraction t."""
    A = -0.75
    w0 = ((A * (t + 1) - 5 * A) * (t + 1) + 8 * A) * (t + 1) - 4 * A
    w1 = ((A + 2) * t - (A + 3)) * t * t + 1
    w2 = ((A + 2) * (1 - t) - (A + 3)) * (1 - t) * (1 - t) + 1
    w3 = ((A * (2 - t) - 5 * A) * (2 - t) + 8 * A) * (2 - t) - 4 * A
    return [w0, w1, w2, w3]


def grid_sample_reference(x, grid, mode: str, padding: str, align_corners: bool) -> np.ndarray:
    """ONNX GridSample in f64 (numpy, vectorized over the output)."""
    import itertools

    dims = x.shape[2:]
    r = len(dims)
    g = grid.astype(np.float64)
    taps_per_dim = []  # per spatial dim: list of (index array, weight array, valid array)
    for i, d in enumerate(dims):
        n = g[..., r - 1 - i]
        c = (n + 1) / 2 * (d - 1) if align_corners else ((n + 1) * d - 1) / 2
        lo, hi = (0.0, d - 1.0) if align_corners else (-0.5, d - 0.5)
        if mode == "nearest":
            c = np.rint(c)
        outside = (c < lo) | (c > hi)
        if padding == "border":
            c = np.where(outside, np.clip(c, 0, d - 1), c)
        elif padding == "reflection":
            c = grid_reflect(c, lo, hi)
        c = np.clip(c, -8.0, d + 8.0)  # far outside: every tap is padding anyway
        base = np.floor(c)
        t = c - base
        if mode == "nearest":
            offsets, weights = [0], [np.ones_like(c)]
        elif mode == "linear":
            offsets, weights = [0, 1], [1 - t, t]
        else:
            offsets, weights = [-1, 0, 1, 2], grid_cubic_weights(t)
        taps = []
        for off, w in zip(offsets, weights):
            idx = base + off
            if padding == "reflection":
                idx = np.trunc(grid_reflect(idx, lo, hi))
            valid = (idx >= 0) & (idx <= d - 1)
            idx = np.clip(idx, 0, d - 1).astype(np.int64)
            taps.append((idx, w, valid))
        taps_per_dim.append(taps)
    batch = np.arange(x.shape[0]).reshape((-1,) + (1,) * r)
    out = np.zeros((x.shape[0],) + g.shape[1:-1] + (x.shape[1],), np.float64)
    xt = np.moveaxis(x, 1, -1).astype(np.float64)  # N x D.. x C
    for combo in itertools.product(*taps_per_dim):
        weight = np.ones(g.shape[:-1])
        valid = np.ones(g.shape[:-1], bool)
        for _, w, v in combo:
            weight = weight * w
            valid = valid & v
        values = xt[(batch,) + tuple(idx for idx, _, _ in combo)]
        if padding == "zeros":
            values = np.where(valid[..., None], values, 0.0)
        out += values * weight[..., None]
    return np.moveaxis(out, -1, 1).astype(x.dtype)


@irdl_op_definition
class DftOp(GraphOp):
    """Discrete Fourier transform of length ``length`` along ``axis`` (not the
    last dim) of a signal whose last dim is 1 (real) or 2 (real, imaginary),
    as ONNX DFT: input samples beyond ``length`` are dropped, missing ones are
    zero. ``inverse``: the inverse transform (scaled by 1/length);
    ``onesided``: forward keeps bins 0..length/2, inverse reads them as a
    Hermitian half spectrum and returns a real signal (last dim 1).

    ```mlir
    %y = graph.dft %x {axis = 1 : i64, length = 7 : i64, onesided = true} : (tensor<2x5x1xf32>) -> tensor<2x4x2xf32>
    ```
    """

    name = "graph.dft"
    axis = IntAttribute()
    length = IntAttribute()
    inverse = BoolAttribute()
    onesided = BoolAttribute()
    x = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 1)
        x_t = operand_types[0]
        _check_element(x_t, "float", "x")
        shape = list(x_t.get_shape())
        if len(shape) < 2 or shape[-1] not in (1, 2):
            raise ShapeError(f"x must have rank >= 2 and a last dim of 1 (real) or 2 (complex), got {shape}")
        axis = normalize_axis(attrs.axis, len(shape))
        if axis == len(shape) - 1:
            raise ShapeError("axis must not be the last dim (it holds real/imaginary parts)")
        length = attrs.length
        if length < 1:
            raise ShapeError(f"length must be >= 1, got {length}")
        inverse, onesided = attrs.inverse, attrs.onesided
        shape[axis] = length // 2 + 1 if onesided and not inverse else length
        shape[-1] = 1 if inverse and onesided else 2
        return [tensor_type(shape, x_t.element_type)]

    def reference(self, x):
        a = self.attrs
        axis = normalize_axis(a.axis, x.ndim)
        length, inverse, onesided = a.length, a.inverse, a.onesided
        signal = x[..., 0].astype(np.float64)
        if x.shape[-1] == 2:
            signal = signal + 1j * x[..., 1]
        if inverse and onesided:
            out = np.fft.irfft(signal, n=length, axis=axis)[..., None]
        else:
            out = (np.fft.ifft if inverse else np.fft.fft)(signal, n=length, axis=axis)
            if onesided:
                out = np.take(out, np.arange(length // 2 + 1), axis=axis)
            out = np.stack([out.real, out.imag], axis=-1)
        return [out.astype(x.dtype)]


def _spatial_extents(what: str, values: Sequence[int], r: int, lowest: int) -> None:
    if len(values) != r or min(values, default=lowest) < lowest:
        raise ShapeError(f"{what} must have {r} values >= {lowest}, got {list(values)}")


def col2im_blocks(image, block, strides, dilations, pads) -> list[int]:
    """Sliding-block positions per spatial dim (ONNX Col2Im / torch fold)."""
    r = len(image)
    return [
        (image[i] + pads[i] + pads[i + r] - (dilations[i] * (block[i] - 1) + 1)) // strides[i] + 1
        for i in range(r)
    ]


@irdl_op_definition
class Col2ImOp(GraphOp):
    """Rearrange column blocks into an image, summing overlaps (ONNX Col2Im,
    torch ``fold``): x is N x (C * prod(block_shape)) x L with L the number of
    sliding-block positions; the result is N x C x image_shape. ``pads`` is
    [begin..., end...] per spatial dim.

    ```mlir
    %y = graph.col2im %x {image_shape = array<i64: 5, 4>, block_shape = array<i64: 2, 3>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 1, 0, 1>} : (tensor<2x18x16xf32>) -> tensor<2x3x5x4xf32>
    ```
    """

    name = "graph.col2im"
    image_shape = IntsAttribute()
    block_shape = IntsAttribute()
    strides = IntsAttribute(optional=True)  # default: 1 per block dim
    dilations = IntsAttribute(optional=True)  # default: 1 per block dim
    pads = IntsAttribute(optional=True)  # default: 0 per side
    x = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 1)
        x_t = operand_types[0]
        _check_element(x_t, "numeric", "x")
        shape = list(x_t.get_shape())
        if len(shape) != 3:
            raise ShapeError(f"x must be N x (C*prod(block_shape)) x L, got rank {len(shape)}")
        image, block = attrs.image_shape, attrs.block_shape
        r = len(image)
        _spatial_extents("image_shape", image, r, 1)
        _spatial_extents("block_shape", block, r, 1)
        strides, dilations = or_default(attrs.strides, [1] * r), or_default(attrs.dilations, [1] * r)
        pads = or_default(attrs.pads, [0] * (2 * r))
        _spatial_extents("strides", strides, r, 1)
        _spatial_extents("dilations", dilations, r, 1)
        _spatial_extents("pads", pads, 2 * r, 0)
        blocks = col2im_blocks(image, block, strides, dilations, pads)
        if min(blocks) < 1:
            raise ShapeError(f"block_shape {list(block)} does not fit the padded image {list(image)}")
        per_channel = math.prod(block)
        if shape[1] % per_channel:
            raise ShapeError(f"x dim 1 ({shape[1]}) is not a multiple of prod(block_shape) = {per_channel}")
        if shape[2] != math.prod(blocks):
            raise ShapeError(f"x dim 2 ({shape[2]}) must equal the number of block positions {math.prod(blocks)} ({blocks})")
        return [tensor_type([shape[0], shape[1] // per_channel, *image], x_t.element_type)]

    def reference(self, x):
        import itertools

        a = self.attrs
        image, block = a.image_shape, a.block_shape
        r = len(image)
        strides, dilations = or_default(a.strides, [1] * r), or_default(a.dilations, [1] * r)
        pads = or_default(a.pads, [0] * (2 * r))
        blocks = col2im_blocks(image, block, strides, dilations, pads)
        n, c = x.shape[0], x.shape[1] // math.prod(block)
        padded = [image[i] + pads[i] + pads[i + r] for i in range(r)]
        out = np.zeros([n, c, *padded], x.dtype)
        cols = x.reshape(n, c, *block, *blocks)
        for b in itertools.product(*[range(k) for k in block]):
            window = tuple(
                slice(b[i] * dilations[i], b[i] * dilations[i] + strides[i] * (blocks[i] - 1) + 1, strides[i])
                for i in range(r)
            )
            out[(slice(None), slice(None)) + window] += cols[(slice(None), slice(None)) + b]
        crop = tuple(slice(pads[i], pads[i] + image[i]) for i in range(r))
        return [_contiguous(out[(slice(None), slice(None)) + crop])]


@irdl_op_definition
class RoiAlignOp(GraphOp):
    """Region-of-interest align (ONNX RoiAlign): for each roi [x1, y1, x2, y2]
    (rois: R x 4, scaled by ``spatial_scale``) on image ``batch_indices[r]`` of
    x (N x C x H x W), an ``output_height`` x ``output_width`` grid of bins,
    each the average (``mode`` = avg) or max (max) of bilinear samples on a
    ``sampling_ratio`` x ``sampling_ratio`` grid. ``sampling_ratio`` = 0 means
    ceil(roi size / bins) samples per bin, computed per roi and capped at
    ``max_samples`` (a static loop bound; the frontend derives it from known rois).
    ``coordinate_transformation_mode``: half_pixel (default) shifts by -0.5;
    output_half_pixel does not and makes rois at least 1 x 1. Result: R x C x
    output_height x output_width.

    ```mlir
    %y = graph.roi_align %x, %rois, %ids {output_height = 2 : i64, output_width = 3 : i64, sampling_ratio = 2 : i64, mode = "max"} : (tensor<2x3x7x5xf32>, tensor<4x4xf32>, tensor<4xi64>) -> tensor<4x3x2x3xf32>
    ```
    """

    name = "graph.roi_align"
    mode = EnumAttribute("avg", "max", message="{name} must be one of {choices}, got {value}")
    output_height = IntAttribute(default=1)
    output_width = IntAttribute(default=1)
    sampling_ratio = IntAttribute(default=0)
    max_samples = IntAttribute(default=0)
    spatial_scale = FloatAttribute(default=1.0)
    coordinate_transformation_mode = EnumAttribute("half_pixel", "output_half_pixel", message="{name} must be one of {choices}, got {value}")
    x = operand_def(TensorType)
    rois = operand_def(TensorType)
    batch_indices = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 3)
        x_t, rois_t, ids_t = operand_types
        _check_element(x_t, "float", "x")
        _check_element(rois_t, "float", "rois")
        _check_element(ids_t, "int", "batch_indices")
        _same_element([x_t, rois_t])
        xs, rs, ids = x_t.get_shape(), rois_t.get_shape(), ids_t.get_shape()
        if len(xs) != 4:
            raise ShapeError(f"x must be N x C x H x W, got rank {len(xs)}")
        if len(rs) != 2 or rs[1] != 4:
            raise ShapeError(f"rois must be R x 4, got {list(rs)}")
        if list(ids) != [rs[0]]:
            raise ShapeError(f"batch_indices must have shape [{rs[0]}] (one per roi), got {list(ids)}")
        oh, ow = attrs.output_height, attrs.output_width
        if oh < 1 or ow < 1:
            raise ShapeError(f"output_height and output_width must be >= 1, got {oh}, {ow}")
        ratio = attrs.sampling_ratio
        if ratio < 0:
            raise ShapeError(f"sampling_ratio must be >= 0, got {ratio}")
        if ratio == 0 and attrs.max_samples < 1:
            raise ShapeError("sampling_ratio = 0 (adaptive) needs max_samples >= 1 (the static loop bound)")
        attrs.mode, attrs.coordinate_transformation_mode  # checked by their declarations
        return [tensor_type([rs[0], xs[1], oh, ow], x_t.element_type)]

    def reference(self, x, rois, batch_indices):
        a = self.attrs
        oh, ow = a.output_height, a.output_width
        out = np.zeros((rois.shape[0], x.shape[1], oh, ow), np.float64)
        for r in range(rois.shape[0]):
            (ys, yw), (xs, xw), count = roi_align_samples(
                rois[r], x.shape[2], x.shape[3], oh, ow, a.spatial_scale,
                a.sampling_ratio, a.max_samples,
                a.coordinate_transformation_mode == "half_pixel")
            image = x[int(batch_indices[r])].astype(np.float64)  # C x H x W
            # terms[c, ph, pw, iy, ix, corner]
            terms = np.stack([
                image[:, ys[a_][:, :, None, None], xs[b_][None, None, :, :]]
                * (yw[a_][:, :, None, None] * xw[b_][None, None, :, :])
                for a_ in (0, 1) for b_ in (0, 1)], axis=-1)
            terms = terms.transpose(0, 1, 3, 2, 4, 5)  # c, ph, pw, iy, ix, corner
            if terms.size == 0:  # adaptive sampling with an empty roi: no samples
                out[r] = 0.0
            elif a.mode == "avg":
                out[r] = terms.sum(axis=(3, 4, 5)) / count
            else:
                out[r] = terms.max(axis=5).max(axis=(3, 4))
        return [out.astype(x.dtype)]


def roi_align_samples(roi, height, width, oh, ow, scale, ratio, max_samples, half_pixel):
    """Per axis: (low/high indices, low/high weights) of every sample as
    [bins, samples] arrays, and the sample count of a bin (ONNX RoiAlign)."""
    # Coordinates are computed in the rois' precision, step by step as
    # onnxruntime does: samples on a bin edge then agree with it exactly.
    dt = roi.dtype.type
    offset = dt(0.5 if half_pixel else 0.0)
    x1, y1, x2, y2 = (dt(v) * dt(scale) - offset for v in roi)
    axes = []
    grids = []
    for start, end, bins, extent in ((y1, y2, oh, height), (x1, x2, ow, width)):
        size = dt(end - start)
        if not half_pixel:
            size = max(size, dt(1.0))
        bin_size = dt(size / dt(bins))
        grid = ratio if ratio > 0 else min(max(int(np.ceil(bin_size)), 0), max_samples)
        grids.append(grid)
        i = np.arange(bins, dtype=dt)[:, None]
        s = np.arange(max(grid, 0), dtype=dt)[None, :]
        pos = start + i * bin_size + (s + dt(0.5)) * bin_size / dt(max(grid, 1))
        outside = (pos < -1.0) | (pos > extent)
        pos = np.maximum(pos, 0.0)
        low = np.floor(pos).astype(np.int64)
        at_end = low >= extent - 1
        low = np.where(at_end, extent - 1, low)
        high = np.where(at_end, extent - 1, low + 1)
        pos = np.where(at_end, low, pos)
        frac = pos - low
        axes.append(((low, high), (np.where(outside, 0.0, 1 - frac), np.where(outside, 0.0, frac))))
    (ylh, yw), (xlh, xw) = axes
    count = max(grids[0] * grids[1], 1)
    return (ylh, yw), (xlh, xw), count
