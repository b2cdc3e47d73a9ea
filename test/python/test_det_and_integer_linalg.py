"""graph.det (batched, pivoting) against numpy, and the ONNX integer/quantized linear
algebra converters (ops_quantized.py: QLinearMatMul, MatMulInteger, ConvInteger,
QLinearConv) and Det against onnx.reference."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator

from dlc.dialects import graph as g

from one_op_util import RNG, integers, onnx_model, run_compiled, run_onnx_compiled


@pytest.mark.parametrize("shape,dtype", [((1, 1), np.float32), ((3, 5, 5), np.float32),
                                         ((2, 1, 7, 7), np.float64), ((4, 2, 2), np.float32)])
def test_det_matches_numpy(shape, dtype):
    x = RNG.standard_normal(shape).astype(dtype)
    got, want = run_compiled(g.DetOp, [x])
    expected = np.linalg.det(x.astype(np.float64))
    np.testing.assert_allclose(got[0], expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(want[0], expected, rtol=1e-6)
    assert got[0].shape == shape[:-2] and got[0].dtype == dtype


def test_det_pivots_singular_and_permuted_matrices():
    x = np.zeros((4, 3, 3), np.float32)
    x[0] = np.eye(3)[[2, 0, 1]]  # even permutation, zero leading pivot: needs pivoting
    x[1] = np.eye(3)[[1, 0, 2]]  # odd permutation
    x[2] = [[1, 2, 3], [2, 4, 6], [0, 1, 5]]  # singular (dependent rows)
    x[3] = [[1e-8, 1, 0], [1, 1, 0], [0, 0, 2]]  # tiny pivot: partial pivoting keeps it accurate
    (got,), _ = run_compiled(g.DetOp, [x])
    np.testing.assert_allclose(got, [1.0, -1.0, 0.0, -2.0 + 2e-8], atol=1e-6)


def test_onnx_det_imports_and_runs():
    x = RNG.standard_normal((2, 3, 4, 4)).astype(np.float32)
    node = helper.make_node("Det", ["x"], ["y"])
    (got,) = run_onnx_compiled(onnx_model(node, {"x": x}), {"x": x})
    np.testing.assert_allclose(got, np.linalg.det(x.astype(np.float64)), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype,scale_dtype", [(np.uint8, np.float32), (np.int8, np.float16)])
def test_onnx_qlinear_matmul_matches_the_reference(dtype, scale_dtype):
    a, b = integers((2, 3, 5), dtype), integers((5, 7), dtype)
    feeds = {"a": a, "a_scale": np.array([0.0123], scale_dtype), "a_zp": integers((1,), dtype),
             "b": b, "b_scale": np.array(0.0071, scale_dtype), "b_zp": integers((), dtype),
             "y_scale": np.array([0.0457], scale_dtype), "y_zp": integers((1,), dtype)}
    node = helper.make_node("QLinearMatMul", list(feeds), ["y"])
    model = onnx_model(node, feeds)
    (got,) = run_onnx_compiled(model, feeds)  # scales and zero points are run-time inputs
    (want,) = ReferenceEvaluator(model).run(None, feeds)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_onnx_matmul_and_conv_integer_match_the_reference():
    a, b = integers((3, 1, 4, 6), np.uint8), integers((6, 5), np.uint8)
    feeds = {"a": a, "b": b, "a_zp": np.array(7, np.uint8), "b_zp": np.array(200, np.uint8)}
    model = onnx_model(helper.make_node("MatMulInteger", list(feeds), ["y"]), feeds, opset=10)
    np.testing.assert_array_equal(run_onnx_compiled(model, feeds)[0], ReferenceEvaluator(model).run(None, feeds)[0])
    x, w = integers((1, 2, 7, 5), np.uint8), integers((3, 2, 3, 2), np.uint8)
    feeds = {"x": x, "w": w, "x_zp": np.array(128, np.uint8), "w_zp": integers((3,), np.uint8)}
    model = onnx_model(helper.make_node("ConvInteger", list(feeds), ["y"], pads=[1, 0, 1, 1], strides=[2, 1]),
                       feeds, opset=10)
    got = run_onnx_compiled(model, feeds)[0]
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, ReferenceEvaluator(model).run(None, feeds)[0])


def test_onnx_qlinear_conv_per_channel_matches_the_reference():
    x, w = integers((1, 3, 6, 5), np.int8), integers((4, 3, 2, 3), np.int8)
    feeds = {"x": x, "x_scale": np.array(0.02, np.float32), "x_zp": np.array(-3, np.int8),
             "w": w, "w_scale": np.array([0.01, 0.002, 0.03, 0.005], np.float32), "w_zp": np.zeros(4, np.int8),
             "y_scale": np.array(0.5, np.float32), "y_zp": np.array(5, np.int8),
             "bias": RNG.integers(-500, 500, size=4).astype(np.int32)}
    model = onnx_model(helper.make_node("QLinearConv", list(feeds), ["y"], pads=[1, 1, 0, 1]), feeds, opset=10)
    got = run_onnx_compiled(model, feeds)[0]
    np.testing.assert_array_equal(got, ReferenceEvaluator(model).run(None, feeds)[0])
