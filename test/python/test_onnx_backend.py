"""dlc.onnx_backend.Backend: onnx's backend API, compiled to machine code."""

from __future__ import annotations

import os

import numpy as np
import onnx
import pytest
from onnx import helper

import dlc.evaluator
from dlc.onnx_backend import Backend

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "small_cnn.onnx")


@pytest.fixture(autouse=True)
def no_evaluator(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the ONNX backend must run compiled code, not the evaluator")

    monkeypatch.setattr(dlc.evaluator, "evaluate", refuse)


def test_prepare_and_run_matches_onnxruntime():
    ort = pytest.importorskip("onnxruntime")
    model = onnx.load(EXAMPLE)
    rep = Backend.prepare(model, "CPU")
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
    (ours,) = rep.run([x])
    (by_name,) = rep.run({"image": x})
    (ref,) = ort.InferenceSession(EXAMPLE, providers=["CPUExecutionProvider"]).run(None, {"image": x})
    np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(ours, by_name)


def test_run_node_and_devices():
    node = helper.make_node("Add", ["a", "b"], ["c"])
    a = np.arange(15, dtype=np.float32).reshape(3, 5)
    b = np.arange(5, dtype=np.float32)
    (c,) = Backend.run_node(node, [a, b])
    np.testing.assert_array_equal(c, a + b)
    assert Backend.supports_device("CPU") and not Backend.supports_device("CUDA")
    with pytest.raises(ValueError, match="runs on CPU"):
        Backend.prepare(onnx.load(EXAMPLE), "CUDA")


def test_missing_named_input_is_reported():
    rep = Backend.prepare(onnx.load(EXAMPLE))
    with pytest.raises(ValueError, match="missing model inputs: image"):
        rep.run({"other": np.zeros((1, 3, 32, 32), np.float32)})
