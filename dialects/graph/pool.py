"""Pooling: 2-D max/avg pools, global pools, and the N-D (3-D and
with-indices) pools over channels-first tensors.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import i64, TensorType
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Pure

from dlc.dialects.graph_base import (
    Attrs,
    BoolAttribute,
    EnumAttribute,
    GraphOp,
    IntAttribute,
    IntsAttribute,
    ShapeError,
    tensor_type,
)
from dlc.dialects.graph.common import _check_element, _contiguous, _expect_count, Types
from dlc.dialects.graph.conv import _DATA_LAYOUTS, _from_nchw, _nchw, _window_attrs
from dlc.dialects.graph import decompose
from dlc.dialects.traits import Composite, FusionAnchor, LayoutFree, WidenF16


class _Pool2DWindow(GraphOp):
    """What every 2-D pool (plain and NCHW{b}c) declares: the window attributes, in the
    order "unknown attribute" messages list them, one input, one result, and a kernel
    that takes a fused epilogue."""

    kernel = IntsAttribute()
    strides = IntsAttribute(default=(1, 1))
    padding = IntsAttribute(default=(0, 0, 0, 0))
    dilations = IntsAttribute(default=(1, 1))
    ceil_mode = BoolAttribute()
    x = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure(), FusionAnchor())


class _PoolOp(_Pool2DWindow):
    # count_include_pad is accepted by max_pool2d too (and means nothing there), so that
    # both pools share one attribute set
    layout = EnumAttribute(*_DATA_LAYOUTS)
    count_include_pad = BoolAttribute()

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 1)
        _check_element(operand_types[0], "numeric")
        x = list(operand_types[0].get_shape())
        if len(x) != 4:
            raise ShapeError(f"input must be 4-D, got rank {len(x)}")
        dl = attrs.layout
        n, c, h, w = _nchw(x, dl)
        kernel = attrs.kernel
        if len(kernel) != 2 or min(kernel) < 1:
            raise ShapeError(f"attribute 'kernel' must be 2 values >= 1, got {list(kernel)}")
        kh, kw = kernel
        (sh, sw), (dh, dw), (pt, pl, pb, pr) = _window_attrs(attrs)
        if max(pt, pb) >= dh * (kh - 1) + 1 or max(pl, pr) >= dw * (kw - 1) + 1:
            raise ShapeError("padding must be smaller than the window")
        ceil = attrs.ceil_mode
        oh = _pool_out(h, kh, sh, pt, pb, dh, ceil, "height")
        ow = _pool_out(w, kw, sw, pl, pr, dw, ceil, "width")
        _check_windows_see_input(h, kh, sh, pt, dh, oh, "height")
        _check_windows_see_input(w, kw, sw, pl, dw, ow, "width")
        return [tensor_type(_from_nchw([n, c, oh, ow], dl), operand_types[0].element_type)]

    def _windows(self, x: np.ndarray, fill: float):
        """Yield (ki, kj, patch, valid-mask) over the window positions, NCHW."""
        a = self.attrs
        kh, kw = a.kernel
        (sh, sw), (dh, dw), (pt, pl, pb, pr) = _window_attrs(a)
        oh, ow = self.out.type.get_shape()[2:] if a.layout == "NCHW" else self.out.type.get_shape()[1:3]
        extra_h = max((oh - 1) * sh + dh * (kh - 1) + 1 - (x.shape[2] + pt + pb), 0)
        extra_w = max((ow - 1) * sw + dw * (kw - 1) + 1 - (x.shape[3] + pl + pr), 0)
        pad = ((0, 0), (0, 0), (pt, pb + extra_h), (pl, pr + extra_w))
        xp = np.pad(x, pad, constant_values=fill)
        inside = np.pad(np.ones(x.shape[2:], dtype=np.int64), pad[2:])
        in_pad = np.pad(np.ones(x.shape[2:], dtype=np.int64), ((pt, pb), (pl, pr)), constant_values=1)
        in_pad = np.pad(in_pad, ((0, extra_h), (0, extra_w)))
        for i in range(kh):
            for j in range(kw):
                sl = (slice(i * dh, i * dh + sh * (oh - 1) + 1, sh), slice(j * dw, j * dw + sw * (ow - 1) + 1, sw))
                yield xp[(slice(None), slice(None)) + sl], inside[sl], in_pad[sl]

    def reference(self, x: np.ndarray) -> list[np.ndarray]:
        nhwc = self.layout == "NHWC"
        if nhwc:
            x = x.transpose(0, 3, 1, 2)
        out = self.pool(x)
        if nhwc:
            out = out.transpose(0, 2, 3, 1)
        return [_contiguous(out).astype(x.dtype)]


def _check_windows_see_input(size, k, stride, pad_b, dil, out, dim: str) -> None:
    """A window over padding only has no max (nor a mean): reject it. With
    dilation this can happen even when padding < window extent."""
    for o in range(out):
        start = o * stride - pad_b
        if not any(0 <= start + i * dil < size for i in range(k)):
            raise ShapeError(f"{dim}: pooling window #{o} covers only padding")


def _pool_out(size, k, stride, pad_b, pad_e, dil, ceil, dim: str) -> int:
    span = dil * (k - 1) + 1
    num = size + pad_b + pad_e - span
    if num < 0:
        raise ShapeError(
            f"{dim}: window of extent {span} is larger than the padded input extent "
            f"{size + pad_b + pad_e}"
        )
    out = (-(-num // stride) if ceil else num // stride) + 1
    if ceil and (out - 1) * stride >= size + pad_b:
        out -= 1  # the last window must start inside the input or the begin padding
    return out


@irdl_op_definition
class MaxPool2DOp(_PoolOp):
    """2-D max pooling. Attributes: ``kernel`` [2] (required), ``strides``,
    ``padding`` [top, left, bottom, right], ``dilations``, ``ceil_mode``, ``layout``.

    ```mlir
    %y = graph.max_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>} : (tensor<1x8x9x9xf32>) -> tensor<1x8x4x4xf32>
    ```
    """

    traits = traits_def(LayoutFree(blocked="graph.max_pool2d_nchwc"))
    name = "graph.max_pool2d"

    def pool(self, x: np.ndarray) -> np.ndarray:
        lowest = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
        out = None
        for patch, _, _ in self._windows(x, lowest):
            out = patch if out is None else np.maximum(out, patch)
        return out


@irdl_op_definition
class AvgPool2DOp(_PoolOp):
    """2-D average pooling; ``count_include_pad`` counts padded zeros in the
    divisor (never the ceil-mode overhang). Attributes as max_pool2d.

    ```mlir
    %y = graph.avg_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x8x8x8xf32>) -> tensor<1x8x4x4xf32>
    ```
    """

    traits = traits_def(WidenF16(), LayoutFree(blocked="graph.avg_pool2d_nchwc"))
    name = "graph.avg_pool2d"

    def pool(self, x: np.ndarray) -> np.ndarray:
        include_pad = self.count_include_pad
        total = count = None
        for patch, inside, in_pad in self._windows(x.astype(np.float64), 0.0):
            weight = in_pad if include_pad else inside
            total = patch if total is None else total + patch
            count = weight if count is None else count + weight
        return total / np.maximum(count, 1)


class _GlobalPoolOp(GraphOp):
    layout = EnumAttribute(*_DATA_LAYOUTS)
    x = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 1)
        _check_element(operand_types[0], "numeric")
        x = list(operand_types[0].get_shape())
        if len(x) < 3:
            raise ShapeError(f"input must be N x C x spatial..., got rank {len(x)}")
        layout = attrs.layout
        if layout == "NHWC":
            shape = [x[0]] + [1] * (len(x) - 2) + [x[-1]]
        else:
            shape = x[:2] + [1] * (len(x) - 2)
        return [tensor_type(shape, operand_types[0].element_type)]

    def _spatial_axes(self, rank: int) -> tuple[int, ...]:
        if self.layout == "NHWC":
            return tuple(range(1, rank - 1))
        return tuple(range(2, rank))


@irdl_op_definition
class GlobalAvgPoolOp(_GlobalPoolOp):
    """Mean over all spatial dims, keeping them as size 1.

    ```mlir
    %y = graph.global_avg_pool %x : (tensor<1x8x7x7xf32>) -> tensor<1x8x1x1xf32>
    ```
    """

    name = "graph.global_avg_pool"
    traits = traits_def(Composite(decompose.global_avg_pool))

    def reference(self, x: np.ndarray) -> list[np.ndarray]:
        return [x.mean(axis=self._spatial_axes(x.ndim), keepdims=True, dtype=np.float64).astype(x.dtype)]


@irdl_op_definition
class GlobalMaxPoolOp(_GlobalPoolOp):
    """Max over all spatial dims, keeping them as size 1.

    ```mlir
    %y = graph.global_max_pool %x : (tensor<1x8x7x7xf32>) -> tensor<1x8x1x1xf32>
    ```
    """

    name = "graph.global_max_pool"
    traits = traits_def(Composite(decompose.global_max_pool))

    def reference(self, x: np.ndarray) -> list[np.ndarray]:
        return [x.max(axis=self._spatial_axes(x.ndim), keepdims=True)]


def pool_geometry(attrs: Attrs, in_dims: Sequence[int]):
    """(kernel, strides, dilations, padding [begins.., ends..], out dims) of an
    N-D pooling window over spatial dims ``in_dims``; raises ShapeError."""
    n = len(in_dims)
    kernel = attrs.kernel
    if len(kernel) != n or min(kernel) < 1:
        raise ShapeError(f"attribute 'kernel' must be {n} values >= 1, got {list(kernel)}")
    strides, dil, pads = _window_attrs(attrs, n)
    ceil = attrs.ceil_mode
    out = []
    for i, size in enumerate(in_dims):
        if max(pads[i], pads[n + i]) >= dil[i] * (kernel[i] - 1) + 1:
            raise ShapeError("padding must be smaller than the window")
        dim = f"spatial dim {i}"
        out.append(_pool_out(size, kernel[i], strides[i], pads[i], pads[n + i], dil[i], ceil, dim))
        _check_windows_see_input(size, kernel[i], strides[i], pads[i], dil[i], out[-1], dim)
    return kernel, strides, dil, pads, out


def pool_index_steps(in_dims: Sequence[int], storage_order: int) -> list[int]:
    """Per spatial dim, the step of the flat Indices value: row-major
    (storage_order 0) or column-major (1) over the spatial dims."""
    dims = list(in_dims) if storage_order == 0 else list(reversed(in_dims))
    steps = [math.prod(dims[i + 1:]) for i in range(len(dims))]
    return steps if storage_order == 0 else list(reversed(steps))


class _PoolNdOp(GraphOp):
    """Channels-first (N, C, spatial...) pooling over any number of spatial
    dims; the 2-D ops above keep their own tuned kernels and layouts."""

    x = operand_def(TensorType)
    traits = traits_def(Pure())
    SPATIAL: ClassVar[tuple[int, ...]] = (3,)

    @classmethod
    def geometry(cls, operand_types: Types, attrs: Attrs):
        _expect_count(operand_types, 1)
        _check_element(operand_types[0], "numeric")
        x = list(operand_types[0].get_shape())
        if len(x) - 2 not in cls.SPATIAL:
            ranks = " or ".join(str(r + 2) for r in cls.SPATIAL)
            raise ShapeError(f"input must be {ranks}-D (N, C, spatial...), got rank {len(x)}")
        return x[:2], pool_geometry(attrs, x[2:])

    def windows(self, x: np.ndarray, fill: float):
        """Yield (tap offsets, patch, inside-input mask, inside-input-or-padding
        mask) per window tap; patches have the output's shape."""
        kernel, strides, dil, pads, out = pool_geometry(self.attrs, x.shape[2:])
        n = len(kernel)
        extra = [max((out[i] - 1) * strides[i] + dil[i] * (kernel[i] - 1) + 1
                     - (x.shape[2 + i] + pads[i] + pads[n + i]), 0) for i in range(n)]
        pad = [(pads[i], pads[n + i] + extra[i]) for i in range(n)]
        xp = np.pad(x, [(0, 0), (0, 0)] + pad, constant_values=fill)
        inside = np.pad(np.ones(x.shape[2:], dtype=np.int64), pad)
        # the ceil-mode overhang (extra) counts as neither input nor padding
        in_pad = np.pad(np.ones([x.shape[2 + i] + pads[i] + pads[n + i] for i in range(n)], np.int64),
                        [(0, e) for e in extra])
        for taps in np.ndindex(*kernel):
            sl = tuple(slice(t * dil[i], t * dil[i] + strides[i] * (out[i] - 1) + 1, strides[i])
                       for i, t in enumerate(taps))
            yield taps, xp[(slice(None), slice(None)) + sl], inside[sl], in_pad[sl]

    def max_and_argmax(self, x: np.ndarray, storage_order: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Window maxima and the flat input index of the first maximum
        (row-major, or column-major over the spatial dims for storage_order 1)."""
        kernel, strides, dil, pads, out = pool_geometry(self.attrs, x.shape[2:])
        n = len(kernel)
        lowest = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
        # the first input tap of a window always wins (index -1 = none yet), so
        # a window of `lowest` values still points at an input element
        best = np.full(x.shape[:2] + tuple(out), lowest, dtype=x.dtype)
        index = np.full(best.shape, -1, dtype=np.int64)
        plane = np.arange(x.shape[0] * x.shape[1], dtype=np.int64).reshape(x.shape[:2] + (1,) * n)
        steps = pool_index_steps(x.shape[2:], storage_order)
        for taps, patch, inside, _ in self.windows(x, lowest):
            flat = plane * math.prod(x.shape[2:])
            for i, t in enumerate(taps):
                pos = np.arange(out[i]) * strides[i] + t * dil[i] - pads[i]
                flat = flat + (pos * steps[i]).reshape((-1,) + (1,) * (n - 1 - i))
            better = ((patch > best) | (index < 0)) & (inside > 0)
            best = np.where(better, patch, best)
            index = np.where(better, flat, index)
        return best, index


def _pool_nd_doc(cls: type[GraphOp], what: str, example: str) -> None:
    cls.__doc__ = (
        f"{what} over 3 spatial dims (N, C, D, H, W). Attributes: ``kernel`` [3] "
        "(required), ``strides``, ``padding`` [begins.., ends..], ``dilations``, "
        f"``ceil_mode``, ``count_include_pad`` (average only).\n\n```mlir\n{example}\n```\n"
    )


class _Pool3DOp(_PoolNdOp):
    """The 3-D pools' window attributes and their one result."""

    kernel = IntsAttribute()
    strides = IntsAttribute(default=(1, 1, 1))
    padding = IntsAttribute(default=(0, 0, 0, 0, 0, 0))
    dilations = IntsAttribute(default=(1, 1, 1))
    ceil_mode = BoolAttribute()
    out = result_def(TensorType)

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        lead, (*_, out) = cls.geometry(operand_types, attrs)
        return [tensor_type(lead + out, operand_types[0].element_type)]


@irdl_op_definition
class MaxPool3DOp(_Pool3DOp):
    name = "graph.max_pool3d"

    def reference(self, x: np.ndarray) -> list[np.ndarray]:
        return [_contiguous(self.max_and_argmax(x)[0]).astype(x.dtype)]


@irdl_op_definition
class AvgPool3DOp(_Pool3DOp):
    traits = traits_def(WidenF16())
    name = "graph.avg_pool3d"
    count_include_pad = BoolAttribute()

    def reference(self, x: np.ndarray) -> list[np.ndarray]:
        include_pad = self.count_include_pad
        total = count = 0
        for _, patch, inside, in_pad in self.windows(x.astype(np.float64), 0.0):
            total = total + patch
            count = count + (in_pad if include_pad else inside)
        return [_contiguous(total / np.maximum(count, 1)).astype(x.dtype)]


@irdl_op_definition
class MaxPoolWithIndicesOp(_PoolNdOp):
    """Max pooling over 1, 2 or 3 spatial dims (channels first) that also
    returns, per output, the flat row-major index into the whole input of the
    window's first maximum (ONNX MaxPool's Indices output); ``storage_order``
    = 1 numbers the spatial positions column-major. Other attributes as max_pool3d.

    ```mlir
    %y, %i = graph.max_pool_with_indices %x {kernel = array<i64: 2, 2>} : (tensor<1x2x5x5xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xi64>)
    ```
    """

    name = "graph.max_pool_with_indices"
    kernel = IntsAttribute()
    strides = IntsAttribute(optional=True)  # default: 1 per spatial dim
    padding = IntsAttribute(optional=True)  # default: 0 per side
    dilations = IntsAttribute(optional=True)  # default: 1 per spatial dim
    ceil_mode = BoolAttribute()
    storage_order = IntAttribute(default=0)
    SPATIAL: ClassVar[tuple[int, ...]] = (1, 2, 3)
    out = result_def(TensorType)
    indices = result_def(TensorType)

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        lead, (*_, out) = cls.geometry(operand_types, attrs)
        if attrs.storage_order not in (0, 1):
            raise ShapeError(f"storage_order must be 0 or 1, got {attrs.storage_order}")
        return [tensor_type(lead + out, operand_types[0].element_type), tensor_type(lead + out, i64)]

    def reference(self, x: np.ndarray) -> list[np.ndarray]:
        best, index = self.max_and_argmax(x, self.storage_order)
        return [_contiguous(best).astype(x.dtype), _contiguous(index)]


_pool_nd_doc(
    MaxPool3DOp, "Max pooling",
    "%y = graph.max_pool3d %x {kernel = array<i64: 2, 2, 2>, strides = array<i64: 2, 2, 2>} "
    ": (tensor<1x3x5x6x7xf32>) -> tensor<1x3x2x3x3xf32>",
)


_pool_nd_doc(
    AvgPool3DOp, "Average pooling (``count_include_pad`` counts padded zeros, never the ceil-mode overhang)",
    "%y = graph.avg_pool3d %x {kernel = array<i64: 3, 3, 3>, padding = array<i64: 1, 1, 1, 1, 1, 1>} "
    ": (tensor<1x3x5x6x7xf32>) -> tensor<1x3x5x6x7xf32>",
)
