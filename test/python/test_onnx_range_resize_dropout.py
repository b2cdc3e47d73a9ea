"""ONNX converter cases: Range on [1]-shaped inputs, Resize keep_aspect_ratio_policy,
training-mode Dropout with ratio 0; compiled against onnx.reference."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator

from dlc.frontends.onnx import import_model
from dlc.frontends.onnx.errors import OnnxImportError

from one_op_util import RNG, onnx_model, run_onnx_compiled


def test_onnx_range_takes_one_element_tensors():
    node = helper.make_node("Range", ["s", "l", "d"], ["y"])
    inits = {"s": np.array([2.5], np.float32), "l": np.array([-4.0], np.float32), "d": np.array([-1.5], np.float32)}
    model = onnx_model(node, {}, inits)
    (got,) = run_onnx_compiled(model, {})
    np.testing.assert_allclose(got, np.arange(2.5, -4.0, -1.5, dtype=np.float32))
    bad = onnx_model(node, {}, dict(inits, d=np.array([1.0, 2.0], np.float32)))
    with pytest.raises(OnnxImportError, match="delta must be a scalar or a 1-element tensor"):
        import_model(bad)


@pytest.mark.parametrize("policy", ["not_larger", "not_smaller"])
@pytest.mark.parametrize("mode,sizes", [("nearest", [5, 2]), ("linear", [7, 11]), ("nearest", [1, 13])])
def test_onnx_resize_keep_aspect_ratio_policy(policy, mode, sizes):
    x = RNG.standard_normal((1, 2, 5, 3)).astype(np.float32)
    node = helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode=mode, axes=[2, 3],
                            keep_aspect_ratio_policy=policy)
    model = onnx_model(node, {"x": x}, {"sizes": np.array(sizes, np.int64)}, opset=19)
    (got,) = run_onnx_compiled(model, {"x": x})
    (want,) = ReferenceEvaluator(model).run(None, {"x": x})
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_onnx_training_dropout_with_zero_ratio_is_identity_and_random_masks_are_rejected():
    x = RNG.standard_normal((3, 1, 5)).astype(np.float32)
    node = helper.make_node("Dropout", ["x", "r", "t"], ["y", "mask"])
    inits = {"r": np.array(0.0, np.float32), "t": np.array(True)}
    y, mask = run_onnx_compiled(onnx_model(node, {"x": x}, inits), {"x": x})
    np.testing.assert_array_equal(y, x)
    assert mask.dtype == np.bool_ and mask.all()
    with pytest.raises(OnnxImportError, match="ratio 0.5 .random mask. is not supported"):
        import_model(onnx_model(node, {"x": x}, dict(inits, r=np.array(0.5, np.float32))))
