"""The external weights store: save/load round trips, attaching to a module,
the graph.weight verifier and lookup errors."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.utils.exceptions import VerifyException

from dlc.dialects import graph as g
from dlc.dialects.graph_base import tensor_type_of
from dlc.evaluator import EvaluationError, evaluate
from dlc.weights import (
    WEIGHTS_ATTR,
    WeightLookupError,
    WeightStore,
    attach,
    load_for_module,
    lookup_weight,
    store_of,
)
from test_graph_util import parse

ARRAYS = {
    "fc.weight": np.arange(15, dtype=np.float32).reshape(5, 3) / 7,
    "fc.bias": np.array([1, -2, 3, 0, 5], np.float32),
    "scalar": np.array(2.5, np.float64),
    "ids": np.array([[3, 1]], np.int64),
    "mask": np.array([True, False, True]),
    "u8": np.array([0, 255], np.uint8),
    "empty": np.zeros((0, 3), np.float16),
    "file": np.ones(2, np.float32),  # names that np.savez's keywords would swallow
    "allow_pickle": np.zeros(1, np.int32),
}


def test_save_load_round_trip(tmp_path):
    store = WeightStore(dict(ARRAYS))
    path = str(tmp_path / "model.weights.npz")
    store.save(path)
    assert store.path == path
    loaded = WeightStore.load(path)
    assert set(loaded) == set(ARRAYS) and len(loaded) == len(ARRAYS)
    for name, array in ARRAYS.items():
        assert loaded[name].dtype == array.dtype
        np.testing.assert_array_equal(loaded[name], array)
    assert loaded.nbytes() == sum(a.nbytes for a in ARRAYS.values())
    assert not list(tmp_path.glob("*.tmp*"))  # the temporary file is gone


def test_add_makes_names_unique_and_reuses_the_same_array():
    store = WeightStore()
    a, b = np.ones(2, np.float32), np.zeros(2, np.float32)
    assert store.add("w", a) == "w"
    assert store.add("w", a) == "w"  # the same array: no copy
    assert store.add("w", b) == "w_1"
    assert store.add("w", b) == "w_1"
    store.remove("w")
    assert "w" not in store and "w_1" in store


def _module_with_weight(type_text: str) -> ModuleOp:
    return parse(
        'builtin.module attributes {dlc.weights = "w.npz"} {\n'
        "  func.func @main(%x: tensor<2x3xf32>) -> tensor<2x5xf32> {\n"
        f'    %w = graph.weight "fc.weight" : {type_text}\n'
        '    %b = graph.weight "fc.bias" : tensor<5xf32>\n'
        "    %y = graph.dense %x, %w, %b : (tensor<2x3xf32>, tensor<5x3xf32>, tensor<5xf32>) -> tensor<2x5xf32>\n"
        "    func.return %y : tensor<2x5xf32>\n"
        "  }\n"
        "}\n"
    )


def test_module_names_its_store_and_evaluates_with_it(tmp_path):
    WeightStore(dict(ARRAYS)).save(str(tmp_path / "w.npz"))
    module = _module_with_weight("tensor<5x3xf32>")
    store = load_for_module(module, str(tmp_path / "model.mlir"))  # path relative to the IR file
    assert store is store_of(module.body.block.first_op)
    module.verify()
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    (y,) = evaluate(module, [x])
    np.testing.assert_allclose(y, x @ ARRAYS["fc.weight"].T + ARRAYS["fc.bias"], rtol=1e-6, atol=1e-6)


def test_module_without_weights_attribute_loads_nothing():
    module = ModuleOp([])
    assert load_for_module(module, None) is None
    module.attributes[WEIGHTS_ATTR] = StringAttr("/nonexistent/dir/w.npz")
    with pytest.raises(FileNotFoundError):
        load_for_module(module, None)


def test_weight_verifier_reports_a_shape_mismatch():
    module = _module_with_weight("tensor<5x3xf32>")
    attach(module, WeightStore({"fc.weight": np.zeros((3, 5), np.float32), "fc.bias": ARRAYS["fc.bias"]}))
    with pytest.raises(VerifyException, match=r'graph.weight: weight "fc.weight" in the store is '
                                              r"float32\[3, 5\], which does not match tensor<5x3xf32>"):
        module.verify()


def test_weight_verifier_reports_a_dtype_mismatch():
    module = _module_with_weight("tensor<5x3xf32>")
    attach(module, WeightStore({"fc.weight": ARRAYS["fc.weight"].astype(np.float64), "fc.bias": ARRAYS["fc.bias"]}))
    with pytest.raises(VerifyException, match=r"float64\[5, 3\], which does not match tensor<5x3xf32>"):
        module.verify()


def test_weight_verifier_reports_a_name_missing_from_an_attached_store():
    module = _module_with_weight("tensor<5x3xf32>")
    attach(module, WeightStore({"fc.weight": ARRAYS["fc.weight"]}))
    with pytest.raises(VerifyException, match=r'graph.weight: weight "fc.bias" is not in the module\'s weights store'):
        module.verify()


def test_weight_without_store_verifies_but_cannot_be_read():
    module = _module_with_weight("tensor<5x3xf32>")
    module.verify()  # parsing IR alone: nothing to check against
    weight = module.body.block.first_op.body.block.first_op
    assert isinstance(weight, g.WeightOp)
    with pytest.raises(WeightLookupError, match=r'^weight "fc.weight": the module has no weights store attached$'):
        weight.array()
    with pytest.raises(EvaluationError, match=r"graph.weight: weight \"fc.weight\": the module has no weights store"):
        evaluate(module, [np.zeros((2, 3), np.float32)])


def test_lookup_errors():
    module = ModuleOp([])
    assert lookup_weight(module, "x", missing_ok=True) is None
    attach(module, WeightStore({"y": np.zeros(1)}))
    with pytest.raises(KeyError):  # WeightLookupError is a KeyError
        lookup_weight(module, "x")
    with pytest.raises(WeightLookupError, match=r'^weight "x" is not in the module\'s weights store$'):
        lookup_weight(module, "x")
    assert lookup_weight(module, "x", missing_ok=True) is None


def test_make_named_weight_in_a_built_module():
    array = ARRAYS["fc.weight"]
    op = g.WeightOp.make_named("fc.weight", tensor_type_of(array))
    module = ModuleOp([op])
    attach(module, WeightStore({"fc.weight": array}))
    module.verify()
    np.testing.assert_array_equal(op.array(), array)
    np.testing.assert_array_equal(op.reference()[0], array)
    with pytest.raises(VerifyException, match=r"graph.weight's type comes from the weights store"):
        g.WeightOp.make()
