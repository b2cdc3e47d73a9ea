"""Quantized ops: integer tensors (i8/ui8, i32 accumulators) with affine scales.

A quantized value ``q`` stands for the real ``scale * (q - zero_point)``.

Design: the quantization parameters are **typed attributes of the op**, not
operands and not an element type.

* MLIR's quant dialect puts them in the element type (``!quant.uniform<i8:f32,
  0.5:3>``); xDSL 0.75 has no quant dialect, and a new element type would have
  to be taught to every op, kernel, the weights store and the runtime. The
  tensors here stay builtin ``tensor<...xi8>`` / ``ui8``, which every data
  movement op, kernel and the runtime already handle.
* TVM's QNN passes scales as operands; but in every QDQ (onnxruntime
  ``quantize_static``) and TFLite model they are compile-time constants, and as
  attributes the requantization multipliers are computed once, at compile time,
  as Q31 fixed point (``dialects/graph/requant.py``). A run-time scale
  (DynamicQuantizeLinear, a DequantizeLinear whose scale is computed) stays on
  the float path: the ONNX importer decomposes such nodes into float graph ops.

Attribute spelling (all declared with ``dialects/graph_attributes.py``):

* ``<p>_scale = array<f32: ...>`` and ``<p>_zero_point = array<i64: ...>``
  (default ``[0]``) for each quantized operand or result ``p``: ``x``, ``w``,
  ``y`` (conv, dense), ``a``, ``b``, ``y`` (matmul, add, mul), ``y`` and the
  per-input lists ``in_scale`` / ``in_zero_point`` (concat). graph.quantize /
  graph.dequantize call theirs plain ``scale`` / ``zero_point``. A list holds 1
  value (per tensor) or one per channel along ``axis`` (quantize, dequantize,
  requantize; the output channel of qconv2d's / qdense's weight).
* ``dtype``: the result's element type (i8 or ui8). Required on
  graph.quantize; elsewhere it defaults to the first operand's type.
* ``out_min`` / ``out_max``: an optional clamp in the output's quantized
  domain (a fused relu or relu6), tighter than the dtype's range.

Arithmetic: integer throughout. Accumulators are i32 (products of operands
minus their zero points, plus an i32 bias whose scale is ``x_scale *
w_scale``); the accumulator is rescaled by ``real = x_scale * w_scale /
y_scale`` with TFLite's fixed-point ``MultiplyByQuantizedMultiplier``, then
``y_zero_point`` is added and the result clamped; an accumulating op (conv, dense,
matmul) with ``requant = "float"`` rounds the f32 product instead, as onnxruntime does
(:class:`_Requantizing`). graph.qadd follows TFLite's
ADD (both inputs shifted left by 20 bits and rescaled to twice the larger input
scale, summed, rescaled to the output). graph.qavg_pool2d divides its window sum
rounding half away from zero (TFLite's AVERAGE_POOL_2D) when the scales agree, else
rescales the sum once by ``x_scale / (y_scale * count)``. graph.quantize rounds
half to even and saturates (ONNX QuantizeLinear, computed in f32: ``x / scale``).

ONNX's QLinearConv / QLinearMatMul conformance cases expect onnx's float
requantization (round half to even of ``acc * real``, in f64: numpy's int32 * float32),
which differs from the fixed point by 1 on ties and from ``requant = "float"`` (f32)
only within 2**-24 of a tie: the ONNX importer makes those nodes qconv2d / qmatmul with
``requant = "float"`` when their parameters are constants, else keeps onnx's decomposed
form (``frontends/onnx/ops_quantized.py``); the other ops come from DQ -> op -> Q
patterns (``transforms/fold_qdq.py``) and TFLite int8 models.

Max pooling needs no op of its own: graph.max_pool2d runs on i8/ui8 unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import Float32Type, IntegerType, Signedness, TensorType
from xdsl.irdl import irdl_op_definition, operand_def, opt_operand_def, result_def, traits_def, var_operand_def
from xdsl.traits import Pure

from dlc.dialects.graph_base import (
    Attrs,
    BoolAttribute,
    broadcast_shapes,
    EnumAttribute,
    ElementTypeAttribute,
    FloatsAttribute,
    GraphOp,
    IntAttribute,
    IntsAttribute,
    normalize_axis,
    numpy_dtype,
    ShapeError,
    tensor_type,
)
from dlc.dialects.graph.common import _contiguous, _expect_count, Types
from dlc.dialects.graph.conv import _conv2d_nchw, _conv_out, _ConvWindow, _GroupedConvWindow, _window_attrs
from dlc.dialects.graph.pool import _PoolOp
from dlc.dialects.graph import requant
from dlc.dialects.traits import LayoutFree

f32 = Float32Type()
_QUANT_RANGES = {(8, Signedness.SIGNLESS): (-128, 127), (8, Signedness.SIGNED): (-128, 127),
                 (8, Signedness.UNSIGNED): (0, 255)}
I32_RANGE = (requant.INT32_MIN, requant.INT32_MAX)


def quant_range(et) -> tuple[int, int] | None:
    """(lo, hi) of a quantized element type (i8, ui8), else None."""
    if isinstance(et, IntegerType):
        return _QUANT_RANGES.get((et.width.data, et.signedness.data))
    return None


def is_i32(et) -> bool:
    return isinstance(et, IntegerType) and et.width.data == 32 and et.signedness.data != Signedness.UNSIGNED


def _quantized(t: TensorType, what: str, allow_i32: bool = False) -> tuple[int, int]:
    et = t.element_type
    r = quant_range(et)
    if r is not None:
        return r
    if allow_i32 and is_i32(et):
        return I32_RANGE
    kinds = "i8, ui8 or i32" if allow_i32 else "i8 or ui8"
    raise ShapeError(f"{what} element type {et} is not {kinds} (quantized values)")


def _out_dtype(attrs: Attrs, default):
    et = attrs.dtype if attrs.dtype is not None else default
    if et is None:
        raise ShapeError("attribute 'dtype' (i8 or ui8) is required: the operand's type is not quantized")
    if quant_range(et) is None:
        raise ShapeError(f"attribute 'dtype' must be i8 or ui8, got {et}")
    return et


def _check_params(attrs: Attrs, prefix: str, rng: tuple[int, int], channels: int | None,
                  channel_what: str = "channel along axis") -> None:
    """``<prefix>_scale`` / ``<prefix>_zero_point``: lengths (1, or ``channels``),
    positive finite scales, zero points inside ``rng``."""
    scale_name = f"{prefix}_scale" if prefix else "scale"
    zp_name = f"{prefix}_zero_point" if prefix else "zero_point"
    scale, zp = getattr(attrs, scale_name.replace("scale", "scale")), getattr(attrs, zp_name)
    allowed = (1,) if channels is None else (1, channels)
    if len(scale) not in allowed:
        want = "1 value" if channels is None else f"1 value or one per {channel_what} ({channels})"
        raise ShapeError(f"{scale_name} has {len(scale)} values, expected {want}")
    if len(zp) not in (1, len(scale)):
        raise ShapeError(f"{zp_name} has {len(zp)} values, expected 1 or as many as {scale_name} ({len(scale)})")
    for s in scale:
        if not (math.isfinite(s) and s > 0):
            raise ShapeError(f"{scale_name} values must be positive and finite, got {s}")
    for z in zp:
        if not rng[0] <= z <= rng[1]:
            raise ShapeError(f"{zp_name} value {z} is outside the range [{rng[0]}, {rng[1]}] of the element type")


def _check_clamp(attrs: Attrs, rng: tuple[int, int]) -> tuple[int, int]:
    lo = rng[0] if attrs.out_min is None else attrs.out_min
    hi = rng[1] if attrs.out_max is None else attrs.out_max
    if not rng[0] <= lo <= hi <= rng[1]:
        raise ShapeError(f"out_min {lo} and out_max {hi} must satisfy {rng[0]} <= out_min <= out_max <= {rng[1]}")
    return lo, hi


def _per_axis(values: Sequence, ndim: int, axis: int, dtype) -> np.ndarray:
    """A parameter list as an array broadcasting along ``axis`` of an ``ndim`` tensor."""
    arr = np.asarray(values, dtype=dtype)
    if arr.size == 1:
        return arr.reshape(())
    shape = [1] * ndim
    shape[axis] = arr.size
    return arr.reshape(shape)


def _real(num_scales, den: float) -> np.ndarray:
    """The rescale factors ``num / den`` in f64 (num: f32 products, per channel)."""
    return np.asarray(num_scales, dtype=np.float64) / np.float64(den)


def _requantize(acc: np.ndarray, real, zp, lo: int, hi: int, axis: int | None, dtype) -> np.ndarray:
    return requant.requantize(requant.wrap_i32(acc), real, zp, lo, hi, axis).astype(dtype)


class _QuantOp(GraphOp):
    """Shared: the result's ``dtype`` and the optional output clamp."""

    dtype = ElementTypeAttribute(optional=True)
    out_min = IntAttribute(optional=True)
    out_max = IntAttribute(optional=True)

    def out_range(self) -> tuple[int, int]:
        return _check_clamp(self.attrs, quant_range(self.results[0].type.element_type))


def float_requantize(acc, scale, zero_point, lo: int, hi: int) -> np.ndarray:
    """``clamp(round_half_even(f32(acc) * scale) + zero_point, lo, hi)`` in f32 (int64
    result): the ``requant = "float"`` rounding. ``acc`` an i32 accumulator (int64 array),
    ``scale`` f32 broadcasting against it (:meth:`_Requantizing.float_scales`)."""
    y = np.rint(np.asarray(acc, np.int64).astype(np.float32) * np.asarray(scale, np.float32))
    return np.clip(y.astype(np.int64) + np.asarray(zero_point, np.int64), lo, hi)


class _Requantizing(_QuantOp):
    """An op whose i32 accumulator is rescaled to the output (conv, dense, matmul).

    ``requant`` picks the rounding of ``acc * x_scale * w_scale / y_scale``:

    * ``fixed_point`` (the default): TFLite's integer ``MultiplyByQuantizedMultiplier``
      (a Q31 multiplier, one rounding half up; ``requant.py``): what TFLite int8 models
      are defined by;
    * ``float``: ``round_half_even(f32(acc) * s)`` with ``s = f32(f32(x_scale * w_scale) /
      y_scale)``, in f32: ONNX's QuantizeLinear of the float product, computed as
      onnxruntime's MLAS requantizes (``MlasRequantizeOutput``), so a QDQ model's outputs
      equal onnxruntime's bit for bit; fold-qdq sets it. On AVX-512 its write-back is
      about 7 vector ops per 16 outputs against the fixed point's 16 (no i64 products).
    """

    requant = EnumAttribute("fixed_point", "float")

    def scale_pair(self) -> tuple[float, Sequence[float]]:
        """(the activation's scale, the weight's scales per channel or single)."""
        return self.x_scale[0], self.w_scale

    def float_scales(self) -> np.ndarray:
        """Per channel (or single) f32 ``f32(x_scale * w_scale) / y_scale``, each step
        rounded to f32 as onnxruntime computes its output scales."""
        xs, ws = self.scale_pair()
        product = np.float32(xs) * np.asarray(ws, np.float32)
        return (product / np.float32(self.y_scale[0])).astype(np.float32)

    def requantize(self, acc: np.ndarray, axis: int | None) -> np.ndarray:
        """The op's output from its i32 accumulator (per-channel parameters along ``axis``)
        in the result's dtype, by the op's ``requant`` rounding."""
        lo, hi = self.out_range()
        et = numpy_dtype(self.out.type.element_type)
        if self.requant == "float":
            scale = self.float_scales()
            if scale.size > 1:
                shape = [1] * acc.ndim
                shape[axis] = -1
                scale = scale.reshape(shape)
            return float_requantize(requant.wrap_i32(acc), scale, self.y_zero_point[0], lo, hi).astype(et)
        return _requantize(acc, self.multipliers(), self.y_zero_point[0], lo, hi, axis, et)


# ---------------------------------------------------------------------------
# quantize, dequantize, requantize
# ---------------------------------------------------------------------------


@irdl_op_definition
class QuantizeOp(GraphOp):
    """f32 -> i8/ui8: ``saturate(round(x / scale) + zero_point)``; per tensor or per
    channel along ``axis``. ``rounding``: ``half_even`` (ONNX QuantizeLinear, the
    default) or ``half_away`` (TFLite's QUANTIZE).

    ```mlir
    %q = graph.quantize %x {scale = array<f32: 0.5>, zero_point = array<i64: 3>, dtype = ui8} : (tensor<2x3xf32>) -> tensor<2x3xui8>
    ```
    """

    name = "graph.quantize"
    scale = FloatsAttribute()
    zero_point = IntsAttribute(default=(0,))
    axis = IntAttribute(default=1)
    dtype = ElementTypeAttribute()
    rounding = EnumAttribute("half_even", "half_away")
    x = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 1)
        x = operand_types[0]
        if not isinstance(x.element_type, Float32Type):
            raise ShapeError(f"operand element type {x.element_type} is not f32")
        et = _out_dtype(attrs, None)
        _check_params(attrs, "", quant_range(et), _axis_extent(x, attrs))
        return [tensor_type(x.get_shape(), et)]

    def reference(self, x: np.ndarray) -> list[np.ndarray]:
        ax = _axis_of(x.ndim, self.axis, len(self.scale))
        scale = _per_axis(self.scale, x.ndim, ax, np.float32)
        zp = _per_axis(self.zero_point, x.ndim, ax, np.float32)
        lo, hi = quant_range(self.dtype)
        r = x.astype(np.float32) / scale
        if self.rounding == "half_even":
            r = np.rint(r)
        else:  # C's round(): exactly half away from zero (r - trunc(r) is exact)
            t = np.trunc(r)
            r = t + np.sign(r) * (np.abs(r - t) >= np.float32(0.5))
        y = np.clip(r + zp, lo, hi)
        return [_contiguous(y.astype(numpy_dtype(self.dtype)))]


def _axis_extent(t: TensorType, attrs: Attrs) -> int | None:
    """The extent of ``axis`` (None for a scalar tensor: per tensor only)."""
    rank = t.get_num_dims()
    counts = [len(getattr(attrs, f)) for f in ("scale", "zero_point", "x_scale", "x_zero_point",
                                               "y_scale", "y_zero_point") if f in attrs]
    if rank == 0 or max(counts, default=1) == 1:
        return None  # per tensor: the axis is not read
    return t.get_shape()[normalize_axis(attrs.axis, rank)]


def _axis_of(ndim: int, axis: int, count: int) -> int | None:
    return normalize_axis(axis, ndim) if count > 1 else None


@irdl_op_definition
class DequantizeOp(GraphOp):
    """i8/ui8/i32 -> f32: ``(x - zero_point) * scale`` in f32 (ONNX DequantizeLinear).

    ```mlir
    %x = graph.dequantize %q {scale = array<f32: 0.5, 0.25, 2.0>, zero_point = array<i64: 0>, axis = 0 : i64} : (tensor<3x4xi8>) -> tensor<3x4xf32>
    ```
    """

    name = "graph.dequantize"
    scale = FloatsAttribute()
    zero_point = IntsAttribute(default=(0,))
    axis = IntAttribute(default=1)
    x = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 1)
        x = operand_types[0]
        rng = _quantized(x, "operand", allow_i32=True)
        _check_params(attrs, "", rng, _axis_extent(x, attrs))
        return [tensor_type(x.get_shape(), f32)]

    def reference(self, x: np.ndarray) -> list[np.ndarray]:
        ax = _axis_of(x.ndim, self.axis, len(self.scale))
        scale = _per_axis(self.scale, x.ndim, ax, np.float32)
        zp = _per_axis(self.zero_point, x.ndim, ax, np.float32)
        return [_contiguous(((x.astype(np.float32) - zp) * scale).astype(np.float32))]


@irdl_op_definition
class RequantizeOp(_QuantOp):
    """int -> i8/ui8 with new parameters: ``clamp(MBQM(x - x_zero_point,
    x_scale / y_scale) + y_zero_point)``, per tensor or per channel along ``axis``.

    ```mlir
    %y = graph.requantize %x {x_scale = array<f32: 0.02>, y_scale = array<f32: 0.05>, y_zero_point = array<i64: -3>, dtype = i8} : (tensor<2x5xi32>) -> tensor<2x5xi8>
    ```
    """

    name = "graph.requantize"
    x_scale = FloatsAttribute()
    x_zero_point = IntsAttribute(default=(0,))
    y_scale = FloatsAttribute()
    y_zero_point = IntsAttribute(default=(0,))
    axis = IntAttribute(default=1)
    x = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 1)
        x = operand_types[0]
        rng = _quantized(x, "operand", allow_i32=True)
        et = _out_dtype(attrs, x.element_type if quant_range(x.element_type) else None)
        extent = _axis_extent(x, attrs)
        _check_params(attrs, "x", rng, extent)
        _check_params(attrs, "y", quant_range(et), extent)
        _check_clamp(attrs, quant_range(et))
        return [tensor_type(x.get_shape(), et)]

    def multipliers(self) -> np.ndarray:
        """The per-channel (or single) real rescale factors x_scale / y_scale."""
        xs, ys = np.asarray(self.x_scale, np.float64), np.asarray(self.y_scale, np.float64)
        return np.broadcast_to(xs / ys, (max(xs.size, ys.size),))

    def reference(self, x: np.ndarray) -> list[np.ndarray]:
        n = max(len(self.x_scale), len(self.y_scale), len(self.x_zero_point), len(self.y_zero_point))
        ax = _axis_of(x.ndim, self.axis, n)
        acc = x.astype(np.int64) - _per_axis(self.x_zero_point, x.ndim, ax, np.int64) if ax is not None \
            else x.astype(np.int64) - self.x_zero_point[0]
        real = self.multipliers()
        zp = np.broadcast_to(np.asarray(self.y_zero_point, np.int64), (max(real.size, len(self.y_zero_point)),))
        if real.size == 1 and zp.size > 1:
            real = np.broadcast_to(real, zp.shape)
        lo, hi = self.out_range()
        return [_contiguous(_requantize(acc, real, zp, lo, hi, ax, numpy_dtype(self.out.type.element_type)))]


# ---------------------------------------------------------------------------
# convolution, dense, matmul
# ---------------------------------------------------------------------------


def _check_bias(t: TensorType, n: int) -> None:
    if not is_i32(t.element_type) or list(t.get_shape()) != [n]:
        raise ShapeError(f"bias must be i32 [{n}], got {t}")


def _same_signedness_ok(x_et, w_et) -> None:
    for et, what in ((x_et, "x"), (w_et, "weight")):
        if quant_range(et) is None:
            raise ShapeError(f"{what} element type {et} is not i8 or ui8 (quantized values)")


@irdl_op_definition
class QConv2DOp(_Requantizing, _GroupedConvWindow):
    """Quantized 2-D convolution, NCHW data, OIHW weight (a constant), optional
    i32 bias [O] (scale x_scale * w_scale); conv2d's window attributes; w's
    parameters per tensor or per output channel; result ``dtype`` (default x's).

    ```mlir
    %y = graph.qconv2d %x, %w, %b {padding = array<i64: 1, 1, 1, 1>, x_scale = array<f32: 0.05>, x_zero_point = array<i64: 128>, w_scale = array<f32: 0.01, 0.02, 0.03>, y_scale = array<f32: 0.1>, y_zero_point = array<i64: 120>, out_min = 120 : i64} : (tensor<1x2x5x5xui8>, tensor<3x2x3x3xi8>, tensor<3xi32>) -> tensor<1x3x5x5xui8>
    ```
    """

    name = "graph.qconv2d"
    x_scale = FloatsAttribute()
    x_zero_point = IntsAttribute(default=(0,))
    w_scale = FloatsAttribute()
    w_zero_point = IntsAttribute(default=(0,))
    y_scale = FloatsAttribute()
    y_zero_point = IntsAttribute(default=(0,))
    x = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, (2, 3))
        xt, wt = operand_types[:2]
        _same_signedness_ok(xt.element_type, wt.element_type)
        x, w = list(xt.get_shape()), list(wt.get_shape())
        if len(x) != 4 or len(w) != 4:
            raise ShapeError(f"input and weight must be 4-D, got ranks {len(x)} and {len(w)}")
        n, c, h, wd = x
        o, i, kh, kw = w
        groups = attrs.groups
        if groups < 1 or c % groups or o % groups:
            raise ShapeError(f"groups={groups} must divide input channels {c} and output channels {o}")
        if i * groups != c:
            raise ShapeError(f"weight has {i} input channels per group but input has {c} channels "
                             f"with groups={groups}")
        if len(operand_types) == 3:
            _check_bias(operand_types[2], o)
        (sh, sw), (dh, dw), (pt, pl, pb, pr) = _window_attrs(attrs)
        oh = _conv_out(h, kh, sh, pt + pb, dh, "height")
        ow = _conv_out(wd, kw, sw, pl + pr, dw, "width")
        et = _out_dtype(attrs, xt.element_type)
        _check_params(attrs, "x", quant_range(xt.element_type), None)
        _check_params(attrs, "w", quant_range(wt.element_type), o, "output channel")
        _check_params(attrs, "y", quant_range(et), None)
        _check_clamp(attrs, quant_range(et))
        return [tensor_type([n, o, oh, ow], et)]

    def accumulate(self, x: np.ndarray, w: np.ndarray, b: np.ndarray | None) -> np.ndarray:
        """The i32 accumulator (int64 array, wrapped as i32 arithmetic would)."""
        a = self.attrs
        xs = x.astype(np.int64) - self.x_zero_point[0]
        ws = w.astype(np.int64) - _per_axis(self.w_zero_point, 4, 0, np.int64)
        (sh, sw), (dh, dw), pads = _window_attrs(a)
        acc = _conv2d_nchw(xs, ws, (sh, sw), pads, (dh, dw), a.groups)
        if b is not None:
            acc = acc + b.astype(np.int64).reshape(1, -1, 1, 1)
        return requant.wrap_i32(acc)

    def multipliers(self) -> np.ndarray:
        """Per output channel (or single) ``x_scale * w_scale / y_scale``."""
        return _real(np.float64(self.x_scale[0]) * np.asarray(self.w_scale, np.float64), self.y_scale[0])

    def reference(self, x, w, b=None) -> list[np.ndarray]:
        return [_contiguous(self.requantize(self.accumulate(x, w, b), 1))]


@irdl_op_definition
class QDenseOp(_Requantizing):
    """Quantized fully connected layer: ``x[..., K] . w[N, K]^T (+ bias[N] i32)``,
    w a constant with per-tensor or per-output-channel (N) parameters.

    ```mlir
    %y = graph.qdense %x, %w, %b {x_scale = array<f32: 0.1>, x_zero_point = array<i64: -5>, w_scale = array<f32: 0.01, 0.02>, y_scale = array<f32: 0.2>} : (tensor<3x7xi8>, tensor<2x7xi8>, tensor<2xi32>) -> tensor<3x2xi8>
    ```
    """

    name = "graph.qdense"
    x_scale = FloatsAttribute()
    x_zero_point = IntsAttribute(default=(0,))
    w_scale = FloatsAttribute()
    w_zero_point = IntsAttribute(default=(0,))
    y_scale = FloatsAttribute()
    y_zero_point = IntsAttribute(default=(0,))
    x = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, (2, 3))
        xt, wt = operand_types[:2]
        _same_signedness_ok(xt.element_type, wt.element_type)
        x, w = list(xt.get_shape()), list(wt.get_shape())
        if len(x) < 1 or len(w) != 2:
            raise ShapeError(f"weight must be 2-D [N, K] and x at least 1-D, got weight {w} and x {x}")
        if x[-1] != w[1]:
            raise ShapeError(f"x has K={x[-1]} but weight [N, K] has K={w[1]}")
        if len(operand_types) == 3:
            _check_bias(operand_types[2], w[0])
        et = _out_dtype(attrs, xt.element_type)
        _check_params(attrs, "x", quant_range(xt.element_type), None)
        _check_params(attrs, "w", quant_range(wt.element_type), w[0], "output channel")
        _check_params(attrs, "y", quant_range(et), None)
        _check_clamp(attrs, quant_range(et))
        return [tensor_type(x[:-1] + [w[0]], et)]

    def accumulate(self, x, w, b=None) -> np.ndarray:
        xs = x.astype(np.int64) - self.x_zero_point[0]
        ws = w.astype(np.int64) - _per_axis(self.w_zero_point, 2, 0, np.int64)
        acc = np.matmul(xs, ws.T)
        if b is not None:
            acc = acc + b.astype(np.int64)
        return requant.wrap_i32(acc)

    def multipliers(self) -> np.ndarray:
        return _real(np.float64(self.x_scale[0]) * np.asarray(self.w_scale, np.float64), self.y_scale[0])

    def reference(self, x, w, b=None) -> list[np.ndarray]:
        acc = self.accumulate(x, w, b)
        return [_contiguous(self.requantize(acc, acc.ndim - 1))]


def _matmul_shape(a: list[int], b: list[int]) -> list[int]:
    if len(a) < 2 or len(b) < 2:
        raise ShapeError(f"operands must have rank >= 2, got ranks {len(a)} and {len(b)}")
    if a[-1] != b[-2]:
        raise ShapeError(f"contraction dims differ: lhs has K={a[-1]}, rhs has K={b[-2]}")
    return list(broadcast_shapes(a[:-2], b[:-2])) + [a[-2], b[-1]]


@irdl_op_definition
class QMatmulOp(_Requantizing):
    """Quantized batched matmul of two activations (numpy matmul batching, both
    operands at least 2-D), per-tensor parameters: BERT's QK^T and attention x V.

    ```mlir
    %y = graph.qmatmul %a, %b {a_scale = array<f32: 0.1>, a_zero_point = array<i64: 3>, b_scale = array<f32: 0.05>, y_scale = array<f32: 0.3>, y_zero_point = array<i64: 1>} : (tensor<2x3x5xui8>, tensor<2x5x4xui8>) -> tensor<2x3x4xui8>
    ```
    """

    name = "graph.qmatmul"
    a_scale = FloatsAttribute()
    a_zero_point = IntsAttribute(default=(0,))
    b_scale = FloatsAttribute()
    b_zero_point = IntsAttribute(default=(0,))
    y_scale = FloatsAttribute()
    y_zero_point = IntsAttribute(default=(0,))
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 2)
        at, bt = operand_types
        _quantized(at, "lhs")
        _quantized(bt, "rhs")
        shape = _matmul_shape(list(at.get_shape()), list(bt.get_shape()))
        et = _out_dtype(attrs, at.element_type)
        _check_params(attrs, "a", quant_range(at.element_type), None)
        _check_params(attrs, "b", quant_range(bt.element_type), None)
        _check_params(attrs, "y", quant_range(et), None)
        _check_clamp(attrs, quant_range(et))
        return [tensor_type(shape, et)]

    def multipliers(self) -> np.ndarray:
        return _real([np.float64(self.a_scale[0]) * np.float64(self.b_scale[0])], self.y_scale[0])

    def scale_pair(self) -> tuple[float, Sequence[float]]:
        return self.a_scale[0], self.b_scale

    def reference(self, a, b) -> list[np.ndarray]:
        acc = np.matmul(a.astype(np.int64) - self.a_zero_point[0], b.astype(np.int64) - self.b_zero_point[0])
        return [_contiguous(self.requantize(requant.wrap_i32(acc), None))]


# ---------------------------------------------------------------------------
# elementwise: add, mul; concat; average pooling
# ---------------------------------------------------------------------------


class _QBinaryOp(_QuantOp):
    a_scale = FloatsAttribute()
    a_zero_point = IntsAttribute(default=(0,))
    b_scale = FloatsAttribute()
    b_zero_point = IntsAttribute(default=(0,))
    y_scale = FloatsAttribute()
    y_zero_point = IntsAttribute(default=(0,))
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 2)
        at, bt = operand_types
        _quantized(at, "lhs")
        _quantized(bt, "rhs")
        shape = broadcast_shapes(at.get_shape(), bt.get_shape())
        et = _out_dtype(attrs, at.element_type)
        _check_params(attrs, "a", quant_range(at.element_type), None)
        _check_params(attrs, "b", quant_range(bt.element_type), None)
        _check_params(attrs, "y", quant_range(et), None)
        _check_clamp(attrs, quant_range(et))
        return [tensor_type(shape, et)]


def qadd_params(a_scale: float, b_scale: float, y_scale: float) -> tuple[int, int, int]:
    """(m_a, m_b, total) of graph.qadd: ``m_x = round(x_scale / y_scale * 2**total)`` with
    ``total`` the largest shift that keeps both below 2**31 (at most 62)."""
    ra = float(np.float32(a_scale)) / float(np.float32(y_scale))
    rb = float(np.float32(b_scale)) / float(np.float32(y_scale))
    _, e = math.frexp(max(ra, rb))
    total = min(31 - e, 62)
    ma, mb = round(ra * 2.0 ** total), round(rb * 2.0 ** total)
    if max(ma, mb) >= 1 << 31:
        total -= 1
        ma, mb = round(ra * 2.0 ** total), round(rb * 2.0 ** total)
    if total < 1:
        raise ValueError(f"qadd scale ratio {max(ra, rb)} is too large (>= 2**30)")
    return ma, mb, total


@irdl_op_definition
class QAddOp(_QBinaryOp):
    """Quantized add with numpy broadcasting, one rounding: ``y = zy + ((a - za) * m_a +
    (b - zb) * m_b + 2**(t-1)) >> t`` in i64 (:func:`qadd_params`: Q31-sized multipliers of
    ``a_scale / y_scale`` and ``b_scale / y_scale`` at a common shift ``t``), saturated.
    onnxruntime's QLinearAdd computes ``round(a' * a_scale/y_scale + b' * b_scale/y_scale)``
    in f32: this equals it but on near-ties (TFLite ADD's three roundings, with its
    ``left_shift = 20``, differed from it on about 1 in 10**4 elements).

    ```mlir
    %y = graph.qadd %a, %b {a_scale = array<f32: 0.1>, a_zero_point = array<i64: 2>, b_scale = array<f32: 0.3>, y_scale = array<f32: 0.25>, y_zero_point = array<i64: -1>} : (tensor<2x1x3xi8>, tensor<4x1xi8>) -> tensor<2x4x3xi8>
    ```
    """

    name = "graph.qadd"
    # alter-op-layout may run it on NCHW{b}c values (the int8 residuals of a blocked chain)
    traits = traits_def(Pure(), LayoutFree())

    def reference(self, a, b) -> list[np.ndarray]:
        ma, mb, total = qadd_params(self.a_scale[0], self.b_scale[0], self.y_scale[0])
        acc = (a.astype(np.int64) - self.a_zero_point[0]) * ma + (b.astype(np.int64) - self.b_zero_point[0]) * mb
        y = np.clip((acc + (1 << (total - 1))) >> total, requant.INT32_MIN, requant.INT32_MAX)
        out = y + self.y_zero_point[0]
        lo, hi = self.out_range()
        return [_contiguous(np.clip(out, lo, hi).astype(numpy_dtype(self.out.type.element_type)))]


@irdl_op_definition
class QMulOp(_QBinaryOp):
    """Quantized multiply with numpy broadcasting: ``MBQM((a - za) * (b - zb),
    a_scale * b_scale / y_scale) + zy`` (TFLite MUL).

    ```mlir
    %y = graph.qmul %a, %b {a_scale = array<f32: 0.1>, b_scale = array<f32: 0.3>, y_scale = array<f32: 0.05>} : (tensor<2x3xi8>, tensor<3xi8>) -> tensor<2x3xi8>
    ```
    """

    name = "graph.qmul"

    def multipliers(self) -> np.ndarray:
        return _real([np.float64(self.a_scale[0]) * np.float64(self.b_scale[0])], self.y_scale[0])

    def reference(self, a, b) -> list[np.ndarray]:
        acc = (a.astype(np.int64) - self.a_zero_point[0]) * (b.astype(np.int64) - self.b_zero_point[0])
        lo, hi = self.out_range()
        return [_contiguous(_requantize(acc, self.multipliers(), self.y_zero_point[0], lo, hi, None,
                                        numpy_dtype(self.out.type.element_type)))]


@irdl_op_definition
class QConcatOp(_QuantOp):
    """Join quantized tensors along ``axis``, each input requantized from its own
    (``in_scale[i]``, ``in_zero_point[i]``) to the result's (a plain copy where
    they are equal).

    ```mlir
    %y = graph.qconcat %a, %b {axis = 1 : i64, in_scale = array<f32: 0.1, 0.2>, in_zero_point = array<i64: 0, 5>, y_scale = array<f32: 0.2>, y_zero_point = array<i64: 5>} : (tensor<2x3xi8>, tensor<2x5xi8>) -> tensor<2x8xi8>
    ```
    """

    name = "graph.qconcat"
    axis = IntAttribute()
    in_scale = FloatsAttribute()
    in_zero_point = IntsAttribute()
    y_scale = FloatsAttribute()
    y_zero_point = IntsAttribute(default=(0,))
    inputs = var_operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        if not operand_types:
            raise ShapeError("expects at least one operand")
        n = len(operand_types)
        if len(attrs.in_scale) != n or len(attrs.in_zero_point) != n:
            raise ShapeError(f"in_scale and in_zero_point must have one value per input ({n}), "
                             f"got {len(attrs.in_scale)} and {len(attrs.in_zero_point)}")
        first = list(operand_types[0].get_shape())
        axis = normalize_axis(attrs.axis, len(first))
        total = 0
        for i, t in enumerate(operand_types):
            rng = _quantized(t, f"operand #{i}")
            s = list(t.get_shape())
            if len(s) != len(first) or any(a != b for j, (a, b) in enumerate(zip(s, first)) if j != axis):
                raise ShapeError(f"operand #{i} has shape {s}, which differs from {first} outside axis {axis}")
            sc, zp = attrs.in_scale[i], attrs.in_zero_point[i]
            if not (math.isfinite(sc) and sc > 0):
                raise ShapeError(f"in_scale values must be positive and finite, got {sc}")
            if not rng[0] <= zp <= rng[1]:
                raise ShapeError(f"in_zero_point value {zp} is outside the range [{rng[0]}, {rng[1]}] "
                                 "of the element type")
            total += s[axis]
        first[axis] = total
        et = _out_dtype(attrs, operand_types[0].element_type)
        _check_params(attrs, "y", quant_range(et), None)
        _check_clamp(attrs, quant_range(et))
        return [tensor_type(first, et)]

    def reference(self, *xs) -> list[np.ndarray]:
        lo, hi = self.out_range()
        dtype = numpy_dtype(self.out.type.element_type)
        parts = []
        for x, s, z in zip(xs, self.in_scale, self.in_zero_point):
            acc = x.astype(np.int64) - z
            parts.append(_requantize(acc, [np.float64(s) / np.float64(self.y_scale[0])], self.y_zero_point[0],
                                     lo, hi, None, dtype))
        return [np.concatenate(parts, axis=self.axis)]


@irdl_op_definition
class QAvgPool2DOp(_QuantOp):
    """Quantized 2-D average pool, NCHW: the window sum of ``x - x_zero_point``
    (i32), divided by the count rounding half away from zero when ``x_scale ==
    y_scale`` (TFLite's AVERAGE_POOL_2D), else rescaled once by ``x_scale / (y_scale *
    count)`` in fixed point; plus ``y_zero_point``.
    Pool attributes as graph.avg_pool2d (a global pool is the full window).

    ```mlir
    %y = graph.qavg_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, x_scale = array<f32: 0.1>, x_zero_point = array<i64: 7>, y_scale = array<f32: 0.1>, y_zero_point = array<i64: 7>} : (tensor<1x3x5x5xui8>) -> tensor<1x3x3x3xui8>
    ```
    """

    name = "graph.qavg_pool2d"
    # the window attributes of graph.avg_pool2d (its infer and windows are reused; the
    # class is not derived from it: a pool is a FusionAnchor, this kernel takes no epilogue)
    kernel = IntsAttribute()
    strides = IntsAttribute(default=(1, 1))
    padding = IntsAttribute(default=(0, 0, 0, 0))
    dilations = IntsAttribute(default=(1, 1))
    ceil_mode = BoolAttribute()
    layout = EnumAttribute("NCHW", message="layout must be NCHW, got '{value}'")
    count_include_pad = BoolAttribute()
    x = operand_def(TensorType)
    x_scale = FloatsAttribute()
    x_zero_point = IntsAttribute(default=(0,))
    y_scale = FloatsAttribute()
    y_zero_point = IntsAttribute(default=(0,))
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 1)
        xt = operand_types[0]
        rng = _quantized(xt, "operand")
        [out] = _PoolOp.infer.__func__(cls, operand_types, attrs)
        et = _out_dtype(attrs, xt.element_type)
        _check_params(attrs, "x", rng, None)
        _check_params(attrs, "y", quant_range(et), None)
        _check_clamp(attrs, quant_range(et))
        return [tensor_type(out.get_shape(), et)]

    def window_sums(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(sum of x - x_zp, count) per output element, int64."""
        total = count = None
        for patch, inside, in_pad in _PoolOp._windows(self, x.astype(np.int64) - self.x_zero_point[0], 0):
            weight = in_pad if self.count_include_pad else inside
            total = patch if total is None else total + patch
            count = weight if count is None else count + weight
        return total, np.maximum(count, 1)

    def count_multipliers(self) -> tuple[np.ndarray, np.ndarray]:
        """(Q31 multipliers, shifts) of ``x_scale / (y_scale * count)`` for count = 0 ..
        the window size (index 0 unused): one rounding from the window sum to the output."""
        kh, kw = self.kernel
        counts = np.maximum(np.arange(kh * kw + 1), 1)
        return requant.quantize_multipliers(np.float64(self.x_scale[0]) / (np.float64(self.y_scale[0]) * counts))

    def reference(self, x: np.ndarray) -> list[np.ndarray]:
        total, count = self.window_sums(x)
        lo, hi = self.out_range()
        dtype = numpy_dtype(self.out.type.element_type)
        if self.x_scale[0] == self.y_scale[0]:  # TFLite: the rounded mean, in the same scale
            avg = requant.round_half_away_div(total, count) + self.y_zero_point[0]
            return [_contiguous(np.clip(avg, lo, hi).astype(dtype))]
        m, s = self.count_multipliers()
        y = requant.multiply_by_quantized_multiplier(requant.wrap_i32(total), m[count], s[count])
        return [_contiguous(np.clip(y + self.y_zero_point[0], lo, hi).astype(dtype))]


# ---------------------------------------------------------------------------
# qconv2d on the channel-blocked layout (alter-op-layout's int8 chains)
# ---------------------------------------------------------------------------

VNNI_GROUP = 4  # input-channel bytes one vpdpbusd lane sums: the input block's granule


@irdl_op_definition
class QConv2DNCHWcOp(_Requantizing):
    """Quantized 2-D convolution (groups 1) on channel-blocked u8 activations: input
    ``[N, C/ib, H, W, ib]`` (NCHW{ib}c, already padded spatially: alter-op-layout pads it
    with x's zero point, so every tap is real), weight the plain OIHW ``[O, I, KH, KW]``
    constant (I <= C/ib * ib: input channels past I are padding and meet zero weights;
    the kernel packs it at compile time), optional i32 bias [O], result
    ``[N, ceil(O/block), OH, OW, block]`` (NCHW{block}c). ``strides``, ``dilations`` and
    the quantization attributes as graph.qconv2d. Output channels past O hold the
    output zero point (real 0, clamped to ``out_min``/``out_max``). ``ib`` must be a
    multiple of 4: the kernel's ``vpdpbusd`` sums 4 consecutive input channels of one
    pixel (``lowering/kernels/quantized_nchwc.py``).

    ```mlir
    %y = graph.qconv2d_nchwc %x, %w, %b {x_scale = array<f32: 0.05>, x_zero_point = array<i64: 128>, w_scale = array<f32: 0.01, 0.02, 0.03>, y_scale = array<f32: 0.1>, y_zero_point = array<i64: 120>} : (tensor<1x1x7x7x4xui8>, tensor<3x3x3x3xi8>, tensor<3xi32>) -> tensor<1x1x5x5x16xui8>
    ```
    """

    name = "graph.qconv2d_nchwc"
    strides = IntsAttribute(default=(1, 1))
    dilations = IntsAttribute(default=(1, 1))
    block = IntAttribute(default=16)
    x_scale = FloatsAttribute()
    x_zero_point = IntsAttribute(default=(0,))
    w_scale = FloatsAttribute()
    w_zero_point = IntsAttribute(default=(0,))
    y_scale = FloatsAttribute()
    y_zero_point = IntsAttribute(default=(0,))
    x = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, (2, 3))
        xt, wt = operand_types[:2]
        _same_signedness_ok(xt.element_type, wt.element_type)
        if quant_range(xt.element_type)[0] != 0:
            raise ShapeError(f"x must be ui8 (u8 activations feed vpdpbusd), got {xt.element_type}")
        x, w = list(xt.get_shape()), list(wt.get_shape())
        if len(x) != 5 or len(w) != 4:
            raise ShapeError(f"input must be 5-D (NCHW{{b}}c) and weight 4-D (OIHW), got ranks {len(x)} and {len(w)}")
        n, cb, h, wd, ib = x
        o, i, kh, kw = w
        if ib % VNNI_GROUP:
            raise ShapeError(f"input block {ib} must be a multiple of {VNNI_GROUP} (vpdpbusd's 4-byte groups)")
        if i > cb * ib:
            raise ShapeError(f"weight has {i} input channels but the input holds {cb} x {ib}")
        if len(operand_types) == 3:
            _check_bias(operand_types[2], o)
        block = attrs.block
        if block < 1:
            raise ShapeError(f"block must be >= 1, got {block}")
        (sh, sw), (dh, dw) = attrs.strides, attrs.dilations
        if min(sh, sw, dh, dw) < 1:
            raise ShapeError(f"strides {list(attrs.strides)} and dilations {list(attrs.dilations)} must be >= 1")
        oh = _conv_out(h, kh, sh, 0, dh, "height")
        ow = _conv_out(wd, kw, sw, 0, dw, "width")
        et = _out_dtype(attrs, xt.element_type)
        _check_params(attrs, "x", quant_range(xt.element_type), None)
        _check_params(attrs, "w", quant_range(wt.element_type), o, "output channel")
        _check_params(attrs, "y", quant_range(et), None)
        _check_clamp(attrs, quant_range(et))
        return [tensor_type([n, -(-o // block), oh, ow, block], et)]

    def multipliers(self) -> np.ndarray:
        """Per output channel (or single) ``x_scale * w_scale / y_scale``."""
        return _real(np.float64(self.x_scale[0]) * np.asarray(self.w_scale, np.float64), self.y_scale[0])

    def reference(self, x, w, b=None) -> list[np.ndarray]:
        n, cb, h, wd, ib = x.shape
        o, i = w.shape[:2]
        plain = x.transpose(0, 1, 4, 2, 3).reshape(n, cb * ib, h, wd)[:, :i].astype(np.int64)
        xs = plain - self.x_zero_point[0]
        ws = w.astype(np.int64) - _per_axis(self.w_zero_point, 4, 0, np.int64)
        acc = _conv2d_nchw(xs, ws, tuple(self.strides), (0, 0, 0, 0), tuple(self.dilations), 1)
        if b is not None:
            acc = acc + b.astype(np.int64).reshape(1, -1, 1, 1)
        lo, hi = self.out_range()
        et = numpy_dtype(self.out.type.element_type)
        y = self.requantize(requant.wrap_i32(acc), 1)
        block = self.attrs.block
        obn = -(-o // block)
        full = np.full((n, obn * block) + y.shape[2:], np.clip(self.y_zero_point[0], lo, hi), dtype=et)
        full[:, :o] = y
        return [_contiguous(full.reshape(n, obn, block, *y.shape[2:]).transpose(0, 1, 3, 4, 2))]


@irdl_op_definition
class QDepthwiseConv2DNCHWcOp(_Requantizing, _ConvWindow):
    """Quantized depthwise 2-D convolution (one filter per channel) on channel-blocked
    activations: input ``[N, CB, H, W, b]`` (NCHW{b}c, ui8 or i8; ``padding`` [top, left,
    bottom, right] holds x's zero point, real 0, so no graph.pad copy runs), weight
    the plain depthwise OIHW ``[C, 1, KH, KW]`` constant (``CB = ceil(C / b)``: channels
    past C are the block's padding; the kernel packs the weight per block at compile
    time), optional i32 bias [C], result ``[N, CB, OH, OW, b]`` in the input's block.
    ``strides``, ``padding``, ``dilations`` and the quantization attributes as
    graph.qconv2d (w's per tensor or per channel). Channels past C hold the output zero point (real 0, clamped
    to ``out_min``/``out_max``), as qconv2d_nchwc's padded channels do.

    A depthwise op of its own rather than qconv2d_nchwc with groups: its weight has no
    input-channel axis to pack into vpdpbusd's 4-byte groups, its block is the input's
    (no ib/ob split), and its kernel (``lowering/kernels/quantized_depthwise_nchwc.py``)
    multiplies lane by lane, with no reduction over channels.

    ```mlir
    %y = graph.qdepthwise_conv2d_nchwc %x, %w, %b {strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 1, 1>, x_scale = array<f32: 0.05>, x_zero_point = array<i64: 128>, w_scale = array<f32: 0.01>, y_scale = array<f32: 0.1>, y_zero_point = array<i64: 5>, out_min = 5 : i64} : (tensor<1x2x8x8x16xui8>, tensor<20x1x3x3xi8>, tensor<20xi32>) -> tensor<1x2x4x4x16xui8>
    ```
    """

    name = "graph.qdepthwise_conv2d_nchwc"
    x_scale = FloatsAttribute()
    x_zero_point = IntsAttribute(default=(0,))
    w_scale = FloatsAttribute()
    w_zero_point = IntsAttribute(default=(0,))
    y_scale = FloatsAttribute()
    y_zero_point = IntsAttribute(default=(0,))
    x = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, (2, 3))
        xt, wt = operand_types[:2]
        _same_signedness_ok(xt.element_type, wt.element_type)
        x, w = list(xt.get_shape()), list(wt.get_shape())
        if len(x) != 5 or len(w) != 4:
            raise ShapeError(f"input must be 5-D (NCHW{{b}}c) and weight 4-D (C x 1 x KH x KW), "
                             f"got ranks {len(x)} and {len(w)}")
        n, cb, h, wd, b = x
        c, one, kh, kw = w
        if one != 1:
            raise ShapeError(f"a depthwise weight has 1 input channel per filter, got {one}")
        if -(-c // b) != cb:
            raise ShapeError(f"weight has {c} channels but the input holds {cb} blocks of {b} "
                             f"(ceil({c}/{b}) = {-(-c // b)} expected)")
        if len(operand_types) == 3:
            _check_bias(operand_types[2], c)
        (sh, sw), (dh, dw), (pt, pl, pb, pr) = _window_attrs(attrs)
        oh = _conv_out(h, kh, sh, pt + pb, dh, "height")
        ow = _conv_out(wd, kw, sw, pl + pr, dw, "width")
        et = _out_dtype(attrs, xt.element_type)
        _check_params(attrs, "x", quant_range(xt.element_type), None)
        _check_params(attrs, "w", quant_range(wt.element_type), c, "channel")
        _check_params(attrs, "y", quant_range(et), None)
        _check_clamp(attrs, quant_range(et))
        return [tensor_type([n, cb, oh, ow, b], et)]

    def multipliers(self) -> np.ndarray:
        """Per channel (or single) ``x_scale * w_scale / y_scale``."""
        return _real(np.float64(self.x_scale[0]) * np.asarray(self.w_scale, np.float64), self.y_scale[0])

    def reference(self, x, w, b=None) -> list[np.ndarray]:
        n, cb, h, wd, blk = x.shape
        c = w.shape[0]
        plain = x.transpose(0, 1, 4, 2, 3).reshape(n, cb * blk, h, wd)[:, :c].astype(np.int64)
        xs = plain - self.x_zero_point[0]
        ws = w.astype(np.int64) - _per_axis(self.w_zero_point, 4, 0, np.int64)
        acc = _conv2d_nchw(xs, ws, tuple(self.strides), tuple(self.padding), tuple(self.dilations), c)
        if b is not None:
            acc = acc + b.astype(np.int64).reshape(1, -1, 1, 1)
        lo, hi = self.out_range()
        et = numpy_dtype(self.out.type.element_type)
        y = self.requantize(requant.wrap_i32(acc), 1)
        full = np.full((n, cb * blk) + y.shape[2:], np.clip(self.y_zero_point[0], lo, hi), dtype=et)
        full[:, :c] = y
        return [_contiguous(full.reshape(n, cb, blk, *y.shape[2:]).transpose(0, 1, 3, 4, 2))]
