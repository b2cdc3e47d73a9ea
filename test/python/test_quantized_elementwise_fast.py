"""graph.qadd / graph.qmul kernels on their fast paths (lowering/kernels/quantized.py):
the [N*C, H*W] view of unbroadcast operands and qadd's single-rounding i64 sum, checked
on every pair of 8-bit values against the ops' numpy references (bit for bit), and
qadd's reference against onnxruntime's float formula."""

from __future__ import annotations

import numpy as np
import pytest

from dlc.dialects import graph as g
from dlc.dialects.graph import requant

from test_quantized_ops import check


def _all_pairs(dtype):
    """a, b of shape [1, 4, 128, 128]: every (a, b) pair of 8-bit values once."""
    info = np.iinfo(dtype)
    values = np.arange(info.min, info.max + 1)
    a = np.repeat(values, 256).astype(dtype).reshape(1, 4, 128, 128)
    b = np.tile(values, 256).astype(dtype).reshape(1, 4, 128, 128)
    return a, b


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("scales", [
    (0.031, 0.047, 0.029), (0.2, 0.0013, 0.05), (0.01, 0.01, 0.5), (1e-4, 3e-3, 1e-5),
    (0.013321572914719582, 0.07362545281648636, 0.029)])
def test_qadd_every_pair(dtype, scales):
    a, b = _all_pairs(dtype)
    sa, sb, sy = scales
    zp = (120, 131, 3) if dtype == np.uint8 else (-5, 17, -128)
    check(g.QAddOp, [a, b], a_scale=[sa], a_zero_point=[zp[0]], b_scale=[sb], b_zero_point=[zp[1]],
          y_scale=[sy], y_zero_point=[zp[2]])
    # a fused relu (out_min at the zero point)
    check(g.QAddOp, [a, b], a_scale=[sa], a_zero_point=[zp[0]], b_scale=[sb], b_zero_point=[zp[1]],
          y_scale=[sy], y_zero_point=[zp[2]], out_min=zp[2])


@pytest.mark.parametrize("scales", [(0.022823575884103775, 0.0004900117055512965, 0.01110050082206726),
                                    (0.031, 0.047, 0.029), (1e-4, 3e-3, 1e-5)])
def test_qadd_rounds_once_like_onnxruntime(scales):
    """QLinearAdd's float form, ``round_half_even(a' * sa/sy + b' * sb/sy)`` (f64 here):
    equal on every pair of 8-bit values away from a tie (|frac - 0.5| > 1e-6)."""
    a, b = _all_pairs(np.uint8)
    sa, sb, sy = (float(np.float32(v)) for v in scales)
    op_attrs = dict(a_scale=[sa], a_zero_point=[131], b_scale=[sb], b_zero_point=[127], y_scale=[sy],
                    y_zero_point=[0])
    exact = (a.astype(np.float64) - 131) * (sa / sy) + (b.astype(np.float64) - 127) * (sb / sy)
    want = np.clip(np.rint(exact), 0, 255)
    from test_quantized_ops import module_of

    _module, op = module_of(g.QAddOp, [a, b], op_attrs)
    got = op.reference(a, b)[0].astype(np.float64)
    clear = np.abs(exact - np.floor(exact) - 0.5) > 1e-6
    np.testing.assert_array_equal(got[clear], want[clear])


def test_qmul_every_pair():
    a, b = _all_pairs(np.uint8)
    check(g.QMulOp, [a, b], a_scale=[0.02], a_zero_point=[128], b_scale=[0.03], b_zero_point=[7],
          y_scale=[0.4], y_zero_point=[10])


@pytest.mark.parametrize("dtype", ["ui8", "i8"])
@pytest.mark.parametrize("shape", [(2, 3, 40), (1, 3, 64, 64), (1, 3, 37, 41)])
def test_quantize_saturates_in_i32(dtype, shape):
    """graph.quantize saturates as a saturating float -> i32 conversion then an i32 clamp
    would: NaN -> the clamp of 0, +-inf and huge values -> the range's ends, ties to even.
    Shapes: a short row, the per-tensor row view (8 rows of 1536), a prime-sided image
    (no such view: the [N*C, H*W] one)."""
    from xdsl.dialects.builtin import IntegerType, Signedness, i8

    et = IntegerType(8, Signedness.UNSIGNED) if dtype == "ui8" else i8
    x = (np.random.default_rng(3).standard_normal(shape) * 200).astype(np.float32)
    special = [np.nan, np.inf, -np.inf, 3e9, -3e9, 2.5, -2.5, 1e38, 0.25, -0.75, 1.5, -1.5]
    x.flat[:12] = special
    x.flat[-12:] = special  # (the vectorized body and the scalar tail)
    check(g.QuantizeOp, [x], scale=[0.5], zero_point=[3 if dtype == "ui8" else -4], dtype=et)


@pytest.mark.parametrize("axis", [None, 0, 1, 2, -1])
def test_quantize_dequantize_requantize_rows(axis):
    """The [N*C, rest] row views of quantize / dequantize / requantize (rank 4, NCHW rows
    of 7 with the per-channel axis 0 or 1; axis 2 and 3 keep the plain nest)."""
    from xdsl.dialects.builtin import IntegerType, Signedness, i8

    ui8 = IntegerType(8, Signedness.UNSIGNED)
    shape = (2, 3, 7, 7)
    rng = np.random.default_rng(5)
    count = 1 if axis is None else shape[axis]
    per = {} if axis is None else {"axis": axis}
    scales = [float(v) for v in rng.uniform(0.05, 0.5, count)]
    x = (rng.standard_normal(shape) * 20).astype(np.float32)
    check(g.QuantizeOp, [x], scale=scales, zero_point=[int(v) for v in rng.integers(-5, 5, count)], dtype=i8, **per)
    q = rng.integers(0, 256, shape).astype(np.uint8)
    check(g.DequantizeOp, [q], scale=scales, zero_point=[int(v) for v in rng.integers(0, 255, count)], **per)
    check(g.RequantizeOp, [q], x_scale=scales, x_zero_point=[100], y_scale=[0.03], y_zero_point=[5], dtype=ui8,
          **per)
