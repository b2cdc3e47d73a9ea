"""ConstantOfShape weights (the ONNX light models build every weight this way) are
known splats at import: held as stride-0 views, transposed and reshaped as splats, and
filled once as weights, never per call.

light_zfnet512 and light_vgg19 have an fc6 weight over the import fold limit (75.5M and
102.8M elements): it was filled per call by a ``graph.broadcast_to`` and Gemm's transB
made a per-call ``graph.transpose`` of 300-400 MB (66% of vgg19's run, 91% of zfnet's).
The limits are patched small here so that the tests need kilobytes, not 400 MB.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import dlc
from dlc.frontends.onnx import import_model
from dlc.frontends.onnx import importer as onnx_importer
from dlc.frontends.onnx import ops_shape
from dlc.weights import store_of

F = TensorProto.FLOAT


def gemm_model(m: int, k: int, n: int, value: float):
    """y = relu(x @ W^T + b), W = ConstantOfShape([n, k], value), b = ConstantOfShape([n], 0.5)."""
    nodes = [
        helper.make_node("ConstantOfShape", ["w_shape"], ["w"], value=helper.make_tensor("v", F, [1], [value])),
        helper.make_node("ConstantOfShape", ["b_shape"], ["b"], value=helper.make_tensor("v", F, [1], [0.5])),
        helper.make_node("Gemm", ["x", "w", "b"], ["g"], transB=1),
        helper.make_node("Relu", ["g"], ["y"]),
    ]
    inits = [numpy_helper.from_array(np.array([n, k], np.int64), "w_shape"),
             numpy_helper.from_array(np.array([n], np.int64), "b_shape")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [m, k])],
                              [helper.make_tensor_value_info("y", F, [m, n])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@pytest.fixture
def small_fold_limit(monkeypatch):
    """The import fold limit at 16 elements (every weight below is over it)."""
    monkeypatch.setattr(onnx_importer, "FOLD_ELEMENT_LIMIT", 16)
    monkeypatch.setattr(ops_shape, "FOLD_ELEMENT_LIMIT", 16)


@pytest.mark.parametrize("m, k, n", [(1, 37, 13), (3, 20, 8), (1, 1, 97)])
def test_transposed_splat_weight_is_a_weight_not_run_time_work(small_fold_limit, m, k, n):
    module = import_model(gemm_model(m, k, n, 0.25))
    text = str(module)
    assert "graph.broadcast_to" not in text  # not filled per call
    assert "graph.transpose" not in text  # transB of a splat is a splat
    weights = [a for _, a in store_of(module).items() if a.ndim == 2]
    assert [w.shape for w in weights] == [(k, n)] and weights[0].flags.c_contiguous
    assert np.all(weights[0] == np.float32(0.25))


@pytest.mark.parametrize("m, k, n", [(1, 37, 13), (3, 20, 8)])
def test_splat_weight_gemm_runs_right(small_fold_limit, m, k, n):
    x = np.random.default_rng(m + k + n).standard_normal((m, k)).astype(np.float32)
    compiled = dlc.compile(gemm_model(m, k, n, -0.125))
    expected = np.maximum(x @ np.full((k, n), -0.125, np.float32) + 0.5, 0)
    np.testing.assert_allclose(compiled(x)[0], expected, rtol=1e-5, atol=1e-5)


def test_constant_of_shape_past_its_own_limit_is_filled_at_run_time(small_fold_limit, monkeypatch):
    """Above CONSTANT_OF_SHAPE_LIMIT nothing is held at compile time (the limit, not the
    fold limit, decides)."""
    monkeypatch.setattr(ops_shape, "CONSTANT_OF_SHAPE_LIMIT", 100)
    assert "graph.broadcast_to" in str(import_model(gemm_model(1, 11, 10, 1.0)))  # 110 > 100
    assert "graph.broadcast_to" not in str(import_model(gemm_model(1, 10, 10, 1.0)))  # 100


def test_splat_view_holds_no_memory_until_materialized():
    """The importer's value for ConstantOfShape is a stride-0 view; reshape keeps it one."""
    ctx = type("Ctx", (), {"constant": onnx_importer.ImportContext.constant})()  # (it uses no state)
    big = ops_shape.splat_constant(ctx, np.float32(3.0), [4096, 25088])
    assert big.const.strides == (0, 0) and ops_shape.splat(big) == np.float32(3.0)
    t = ops_shape.transpose(ctx, big, [1, 0])
    r = ops_shape.reshape(ctx, t, [25088 * 4096])
    assert t.shape == (25088, 4096) and r.shape == (25088 * 4096,)
    assert ops_shape.splat(t) == 3.0 and r.const.strides == (0,)
