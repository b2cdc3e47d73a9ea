"""The quantized graph ops (dialects/graph/quantized.py): each op compiled to native code
equals its numpy reference exactly, on odd shapes (primes, ones, per-channel parameters,
broadcasting); the fixed-point helpers against TFLite's C arithmetic written out with
Python ints; and the ops' references against onnx's float forms within one step."""

from __future__ import annotations

import math

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, IntegerType, ModuleOp, Signedness, i8
from xdsl.ir import Block, Region

from dlc.dialects import graph as g
from dlc.dialects.graph import requant
from dlc.dialects.graph_base import tensor_type_of
from dlc.driver import compile

RNG = np.random.default_rng(18)
ui8 = IntegerType(8, Signedness.UNSIGNED)


def module_of(op_cls, arrays, attrs) -> ModuleOp:
    types = [tensor_type_of(np.asarray(a)) for a in arrays]
    block = Block(arg_types=types)
    op = op_cls.make(*block.args, **attrs)
    block.add_ops([op, func.ReturnOp(*op.results)])
    fn = func.FuncOp("main", FunctionType.from_lists(types, [r.type for r in op.results]), Region(block))
    return ModuleOp([fn]), op


def check(op_cls, arrays, **attrs):
    module, op = module_of(op_cls, arrays, attrs)
    want = op.reference(*arrays)[0]
    got = compile(module)(*arrays)[0]
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    return got


def u8(*shape):
    return RNG.integers(0, 256, shape).astype(np.uint8)


def s8(*shape):
    return RNG.integers(-128, 128, shape).astype(np.int8)


# -- the fixed point against TFLite's C code, with Python ints ---------------------------

def _c_srdhm(a: int, b: int) -> int:
    if a == b == -(1 << 31):
        return (1 << 31) - 1
    ab = a * b
    nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
    return int((ab + nudge) / (1 << 31)) if abs(ab + nudge) < (1 << 52) else \
        (abs(ab + nudge) >> 31) * (1 if ab + nudge >= 0 else -1)


def _c_rdbpot(x: int, e: int) -> int:
    mask = (1 << e) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> e) + (1 if remainder > threshold else 0)


def test_fixed_point_matches_tflite_arithmetic():
    for real in (0.0001234, 0.25, 0.5, 0.999999, 0.0072, 1.0, 3.7):
        m, shift = requant.quantize_multiplier(real)
        assert (1 << 30) <= m < (1 << 31)
        assert math.isclose(m * 2.0 ** (shift - 31), real, rel_tol=1e-9)
        accs = RNG.integers(-(1 << 20), 1 << 20, 200).tolist() + [0, 1, -1, 3, -3, 1 << 24]
        got = requant.multiply_by_quantized_multiplier(np.array(accs), m, shift)
        for acc, y in zip(accs, got):
            left, right = max(shift, 0), max(-shift, 0)
            assert y == _c_rdbpot(_c_srdhm(acc * (1 << left), m), right), (real, acc)


def test_quantize_multiplier_rejects_bad_scales():
    with pytest.raises(ValueError, match="finite and >= 0"):
        requant.quantize_multiplier(float("nan"))
    assert requant.quantize_multiplier(0.0) == (0, 0)


# -- each op compiled == its reference ---------------------------------------------------

@pytest.mark.parametrize("shape", [(1,), (7,), (3, 1, 5), (2, 3, 11)])
def test_quantize_dequantize(shape):
    x = (RNG.standard_normal(shape) * 40).astype(np.float32)
    x.flat[0] = 2.5  # a tie: rounds to even
    check(g.QuantizeOp, [x], scale=[0.5], zero_point=[3], dtype=ui8)
    check(g.QuantizeOp, [x], scale=[0.7], zero_point=[-4], dtype=i8)
    if len(shape) == 3:
        check(g.QuantizeOp, [x], scale=[0.5, 0.25, 1.5][:shape[1]] if shape[1] == 3 else [0.3],
              axis=1, dtype=i8)
        check(g.QuantizeOp, [x], scale=[0.1 * (i + 1) for i in range(shape[-1])], axis=-1, dtype=i8)
    q = u8(*shape)
    check(g.DequantizeOp, [q], scale=[0.02], zero_point=[128])
    check(g.DequantizeOp, [RNG.integers(-5000, 5000, shape).astype(np.int32)], scale=[0.001])
    if len(shape) == 3:
        check(g.DequantizeOp, [s8(*shape)], scale=[0.1 * (i + 1) for i in range(shape[-1])],
              zero_point=list(range(shape[-1])), axis=2)


@pytest.mark.parametrize("shape", [(5,), (3, 7), (2, 3, 1)])
def test_requantize(shape):
    acc = RNG.integers(-20000, 20000, shape).astype(np.int32)
    check(g.RequantizeOp, [acc], x_scale=[0.001], y_scale=[0.05], y_zero_point=[-3], dtype=i8)
    check(g.RequantizeOp, [u8(*shape)], x_scale=[0.02], x_zero_point=[100], y_scale=[0.03], y_zero_point=[5],
          out_min=10, out_max=200)
    if len(shape) == 2:
        check(g.RequantizeOp, [acc], x_scale=[0.001, 0.002, 0.0005], y_scale=[0.05], axis=0, dtype=i8)


@pytest.mark.parametrize("case", [
    dict(x=(1, 3, 7, 5), w=(5, 3, 3, 3), attrs=dict(padding=[1, 0, 1, 2])),
    dict(x=(2, 4, 5, 5), w=(4, 2, 1, 3), attrs=dict(strides=[2, 1], groups=2)),
    dict(x=(1, 3, 6, 7), w=(3, 1, 3, 3), attrs=dict(groups=3, padding=[1, 1, 1, 1], dilations=[2, 1])),
    dict(x=(1, 1, 1, 1), w=(3, 1, 1, 1), attrs={}),
])
@pytest.mark.parametrize("signed", [False, True])
def test_qconv2d(case, signed):
    x = s8(*case["x"]) if signed else u8(*case["x"])
    w = s8(*case["w"])
    o = case["w"][0]
    b = RNG.integers(-3000, 3000, o).astype(np.int32)
    per_channel = [float(v) for v in RNG.uniform(0.002, 0.02, o)]
    attrs = dict(case["attrs"], x_scale=[0.05], x_zero_point=[-3 if signed else 128], w_scale=per_channel,
                 y_scale=[0.15], y_zero_point=[2 if signed else 120])
    check(g.QConv2DOp, [x, w, b], **attrs)
    check(g.QConv2DOp, [x, w], **dict(attrs, w_scale=[0.01], out_min=attrs["y_zero_point"][0]))


@pytest.mark.parametrize("lead", [(1,), (3,), (2, 5)])
def test_qdense(lead):
    x, w = u8(*lead, 13), s8(3, 13)
    b = RNG.integers(-1000, 1000, 3).astype(np.int32)
    check(g.QDenseOp, [x, w, b], x_scale=[0.04], x_zero_point=[130], w_scale=[0.01, 0.02, 0.005],
          y_scale=[0.2], y_zero_point=[128])
    check(g.QDenseOp, [s8(*lead, 13), w], x_scale=[0.04], w_scale=[0.01], w_zero_point=[3], y_scale=[0.1],
          dtype=ui8, y_zero_point=[7])


@pytest.mark.parametrize("shapes", [((3, 5), (5, 2)), ((2, 3, 5), (5, 7)), ((2, 1, 3, 5), (3, 5, 1))])
def test_qmatmul(shapes):
    a, b = u8(*shapes[0]), u8(*shapes[1])
    check(g.QMatmulOp, [a, b], a_scale=[0.02], a_zero_point=[128], b_scale=[0.03], b_zero_point=[100],
          y_scale=[0.5], y_zero_point=[131])


@pytest.mark.parametrize("shapes", [((7,), (7,)), ((2, 1, 3), (4, 1)), ((3, 1), (1,))])
def test_qadd_qmul(shapes):
    a, b = s8(*shapes[0]), s8(*shapes[1])
    check(g.QAddOp, [a, b], a_scale=[0.1], a_zero_point=[2], b_scale=[0.3], y_scale=[0.25], y_zero_point=[-1])
    check(g.QAddOp, [a, b], a_scale=[0.05], b_scale=[0.05], b_zero_point=[-7], y_scale=[0.05], out_min=0)
    check(g.QMulOp, [a, b], a_scale=[0.1], b_scale=[0.3], y_scale=[0.5], y_zero_point=[4])


def test_qconcat():
    a, b, c = s8(2, 3, 1), s8(2, 5, 1), s8(2, 1, 1)
    check(g.QConcatOp, [a, b, c], axis=1, in_scale=[0.1, 0.2, 0.1], in_zero_point=[0, 5, 0], y_scale=[0.1])
    check(g.QConcatOp, [a, a], axis=-1, in_scale=[0.1, 0.1], in_zero_point=[3, 3], y_scale=[0.1],
          y_zero_point=[3])


@pytest.mark.parametrize("attrs", [
    dict(kernel=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1]),
    dict(kernel=[2, 3], padding=[1, 1, 0, 1], count_include_pad=True),
    dict(kernel=[5, 7]),  # a global pool
])
def test_qavg_pool2d(attrs):
    x = u8(1, 3, 5, 7)
    check(g.QAvgPool2DOp, [x], **attrs, x_scale=[0.1], x_zero_point=[7], y_scale=[0.1], y_zero_point=[7])
    check(g.QAvgPool2DOp, [x], **attrs, x_scale=[0.1], x_zero_point=[7], y_scale=[0.07], y_zero_point=[100])


def test_max_pool_takes_quantized_values():
    x = s8(1, 3, 5, 7)
    got = compile(module_of(g.MaxPool2DOp, [x], dict(kernel=[3, 3], padding=[1, 1, 1, 1]))[0])(x)[0]
    assert got.dtype == np.int8 and got.max() <= x.max()
