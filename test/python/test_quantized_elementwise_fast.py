"""graph.qadd / graph.qmul kernels on their fast paths (lowering/kernels/quantized.py):
the [N*C, H*W] view of unbroadcast operands and qadd's i32-only input terms
(requant.mbqm_shifted), checked on every pair of 8-bit values against the ops' numpy
references (bit for bit)."""

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


def test_qmul_every_pair():
    a, b = _all_pairs(np.uint8)
    check(g.QMulOp, [a, b], a_scale=[0.02], a_zero_point=[128], b_scale=[0.03], b_zero_point=[7],
          y_scale=[0.4], y_zero_point=[10])


@pytest.mark.parametrize("m, shift", [(1554237504, -3), (1595064504, -1), (1 << 30, -1), ((1 << 31) - 1, -6),
                                      (1073742848, -2), (1234567890, 0), (1234567890, 3)])
def test_mbqm_shifted_equals_mbqm_of_the_shifted_value(m, shift):
    """The emitter itself, on every |v| <= 255, in the loop-IR executor: the i32 split
    equals the i64 single rounding bit for bit (negative values and ties included)."""
    from xdsl.dialects.builtin import ModuleOp, TensorType, i32

    from dlc.lowering.kernels import requant as rq
    from dlc.lowering.kernels.builder import KernelBuilder
    from tloop_exec import run_kernel

    v = np.arange(-255, 256, dtype=np.int32)
    t = TensorType(i32, [v.size])
    kb = KernelBuilder("k", [t], [t], "test", ["v", "out"])
    with kb.loop("i", v.size) as i:
        kb.store(rq.mbqm_shifted(kb, kb.load(kb.inputs[0], [i]), 20, m, shift, 255), kb.outputs[0], [i])
    got = run_kernel(ModuleOp([kb.finish()]), "k", [v, np.zeros_like(v)])[1]
    want = requant.wrap_i32(requant.multiply_by_quantized_multiplier(requant.wrap_i32(v.astype(np.int64) << 20),
                                                                     m, shift))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ["ui8", "i8"])
def test_quantize_saturates_in_i32(dtype):
    """graph.quantize clamps after the (saturating) float -> i32 conversion: the same as
    clamping the float, for NaN (-> the zero point's clamp of 0) and +-inf too."""
    from xdsl.dialects.builtin import IntegerType, Signedness, i8

    et = IntegerType(8, Signedness.UNSIGNED) if dtype == "ui8" else i8
    x = (np.random.default_rng(3).standard_normal((2, 3, 40)) * 200).astype(np.float32)
    x.flat[:8] = [np.nan, np.inf, -np.inf, 3e9, -3e9, 2.5, -2.5, 1e38]
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
