"""3-D max/avg pooling, max pooling with indices (1-3 spatial dims), and the ONNX
3-D Conv / ConvTranspose / LpPool converters (ops_nn_3d.py): compiled against
numpy, onnx.reference or onnxruntime on odd shapes."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator
from xdsl.ir import Block
from xdsl.utils.exceptions import VerifyException

from dlc.dialects import graph as g
from dlc.dialects.graph_base import tensor_type_of

from one_op_util import RNG, exact, integers, onnx_model, ort_max_pool, run_compiled, run_onnx_compiled
from test_graph_util import onnx_run


POOL_CASES = [
    # (input shape, kernel, strides, dilations, pads, ceil_mode)
    ((1, 3, 5, 6, 7), [2, 2, 2], [2, 2, 2], [1, 1, 1], [0, 0, 0, 0, 0, 0], 0),
    ((2, 1, 7, 5, 3), [3, 1, 2], [1, 2, 1], [1, 1, 2], [1, 0, 1, 1, 0, 0], 1),
    ((1, 2, 11, 1, 5), [3, 1, 3], [2, 1, 3], [2, 1, 1], [2, 0, 1, 0, 0, 2], 1),
]


@pytest.mark.parametrize("shape,kernel,strides,dilations,pads,ceil", POOL_CASES)
@pytest.mark.parametrize("kind", ["max", "avg", "avg_include_pad"])
def test_pool3d_matches_onnxruntime(shape, kernel, strides, dilations, pads, ceil, kind):
    x = RNG.standard_normal(shape).astype(np.float32)
    attrs = dict(kernel=kernel, strides=strides, dilations=dilations, padding=pads, ceil_mode=bool(ceil))
    onnx_attrs = dict(kernel_shape=kernel, strides=strides, dilations=dilations, pads=pads, ceil_mode=ceil)
    if kind == "max":
        got, want = run_compiled(g.MaxPool3DOp, [x], **attrs)
        (ort,) = onnx_run("MaxPool", [x], onnx_attrs, engine="ort")
    else:
        include = kind == "avg_include_pad"
        got, want = run_compiled(g.AvgPool3DOp, [x], count_include_pad=include, **attrs)
        (ort,) = onnx_run("AveragePool", [x], dict(onnx_attrs, count_include_pad=int(include)), opset=19, engine="ort")
    np.testing.assert_allclose(want[0], ort, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-6)


def test_pool3d_on_integers_is_exact():
    x = integers((1, 2, 3, 5, 4), np.int32)
    exact(g.MaxPool3DOp, [x], kernel=[2, 3, 2], padding=[1, 1, 0, 0, 1, 1])
    # the kernel sums a window in the element type (i32), the reference in i64: inputs
    # are scaled so that the 12 taps' sum fits in i32 (|x| / 16 * 12 < 2**31)
    exact(g.AvgPool3DOp, [x // 16], kernel=[3, 2, 2], strides=[1, 2, 2])


@pytest.mark.parametrize("shape,kernel,strides,dilations,pads,order", [
    ((2, 3, 11), [3], [2], [2], [1, 2], 0),
    ((1, 2, 5, 7), [2, 3], [1, 2], [1, 1], [1, 0, 0, 1], 0),
    ((1, 2, 5, 7), [3, 2], [2, 1], [1, 2], [0, 1, 1, 0], 1),
    ((1, 1, 3, 4, 5), [2, 2, 3], [1, 2, 1], [1, 1, 1], [0, 0, 1, 1, 0, 0], 0),
])
def test_max_pool_with_indices_matches_onnxruntime(shape, kernel, strides, dilations, pads, order):
    x = RNG.standard_normal(shape).astype(np.float32)
    got, want = run_compiled(g.MaxPoolWithIndicesOp, [x], kernel=kernel, strides=strides,
                             dilations=dilations, padding=pads, storage_order=order)
    ort = ort_max_pool(x, kernel_shape=kernel, strides=strides, dilations=dilations, pads=pads,
                       storage_order=order)
    for a, b, c in zip(got, want, ort, strict=True):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(b, c)


def test_max_pool_indices_take_the_first_maximum_of_a_window():
    x = np.zeros((1, 1, 3, 3), np.float32)
    x[0, 0, 1, 1] = x[0, 0, 2, 2] = 5.0
    values, indices = exact(g.MaxPoolWithIndicesOp, [x], kernel=[2, 2])
    np.testing.assert_array_equal(values[0, 0], [[5, 5], [5, 5]])
    np.testing.assert_array_equal(indices[0, 0], [[4, 4], [4, 4]])
    # a window of -inf still points at one of its input elements
    x = np.full((1, 1, 2, 3), -np.inf, np.float32)
    _, indices = exact(g.MaxPoolWithIndicesOp, [x], kernel=[2, 2], padding=[1, 1, 0, 0])
    np.testing.assert_array_equal(indices[0, 0], [[0, 0, 1], [0, 0, 1]])


@pytest.mark.parametrize("op_cls,shape,attrs,message", [
    (g.MaxPool3DOp, (1, 3, 8, 8), dict(kernel=[2, 2, 2]), "input must be 5-D"),
    (g.AvgPool3DOp, (1, 3, 4, 4, 4), dict(kernel=[2, 2]), "'kernel' must be 3 values"),
    (g.MaxPool3DOp, (1, 1, 2, 2, 2), dict(kernel=[3, 1, 1]), "larger than the padded input"),
    (g.MaxPoolWithIndicesOp, (1, 1, 2, 2, 2, 2), dict(kernel=[1, 1, 1, 1]), "input must be 3 or 4 or 5-D"),
])
def test_pool_verifier_rules(op_cls, shape, attrs, message):
    with pytest.raises(VerifyException, match=message):
        op_cls.make(*Block(arg_types=[tensor_type_of(np.zeros(shape, np.float32))]).args, **attrs).verify()


def test_onnx_maxpool_indices_and_3d_pools_import():
    x = RNG.standard_normal((1, 2, 5, 4, 3)).astype(np.float32)
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2, 2], pads=[1, 0, 1, 0, 1, 0])
    model = onnx_model(node, {"x": x})
    got = run_onnx_compiled(model, {"x": x})
    for a, b in zip(got, ort_max_pool(x, kernel_shape=[2, 2, 2], pads=[1, 0, 1, 0, 1, 0]), strict=True):
        np.testing.assert_array_equal(a, b)
    node = helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 2, 1], auto_pad="SAME_UPPER")
    model = onnx_model(node, {"x": x})
    (got,) = run_onnx_compiled(model, {"x": x})
    np.testing.assert_allclose(got, ReferenceEvaluator(model).run(None, {"x": x})[0], rtol=1e-6)


@pytest.mark.parametrize("attrs", [
    dict(),
    dict(pads=[1, 0, 1, 2, 1, 0], strides=[2, 1, 2], dilations=[1, 2, 1], group=2),
    dict(auto_pad="SAME_UPPER", strides=[3, 1, 1]),
])
def test_onnx_conv3d_matches_the_reference(attrs):
    x = RNG.standard_normal((2, 4, 5, 7, 3)).astype(np.float32)
    w = RNG.standard_normal((6, 4 // attrs.get("group", 1), 3, 2, 1)).astype(np.float32)
    b = RNG.standard_normal(6).astype(np.float32)
    model = onnx_model(helper.make_node("Conv", ["x", "w", "b"], ["y"], **attrs), {"x": x}, {"w": w, "b": b}, opset=17)
    (got,) = run_onnx_compiled(model, {"x": x})
    (want,) = ReferenceEvaluator(model).run(None, {"x": x})
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("attrs", [
    dict(),
    dict(strides=[3, 2, 1], pads=[1, 0, 1, 2, 1, 0], dilations=[2, 1, 1], output_padding=[1, 1, 0], group=2),
    dict(strides=[2, 1, 2], auto_pad="SAME_UPPER"),
])
def test_onnx_conv_transpose3d_matches_the_reference(attrs):
    x = RNG.standard_normal((2, 4, 3, 5, 2)).astype(np.float32)
    w = RNG.standard_normal((4, 3, 2, 3, 2)).astype(np.float32)
    b = RNG.standard_normal(3 * attrs.get("group", 1)).astype(np.float32)
    node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], **attrs)
    model = onnx_model(node, {"x": x}, {"w": w, "b": b}, opset=17)
    (got,) = run_onnx_compiled(model, {"x": x})
    # onnxruntime: onnx.reference's ConvTranspose mishandles groups
    import onnxruntime

    model.graph.output[0].type.tensor_type.elem_type = TensorProto.FLOAT
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (want,) = session.run(None, {"x": x})
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_onnx_lp_pool_3d_matches_the_reference():
    x = RNG.standard_normal((1, 2, 5, 3, 4)).astype(np.float32)
    node = helper.make_node("LpPool", ["x"], ["y"], kernel_shape=[2, 3, 2], p=3, pads=[1, 0, 0, 0, 1, 1])
    model = onnx_model(node, {"x": x}, opset=18)
    (got,) = run_onnx_compiled(model, {"x": x})
    np.testing.assert_allclose(got, ReferenceEvaluator(model).run(None, {"x": x})[0], rtol=1e-5, atol=1e-6)
