"""Weights inline in IR text (dlc/weights.py): dense_resource blobs round-trip
bit for bit for every dtype dlc uses, elided weights parse and fail only when
read, the section's errors are one line, and compiled text computes as before."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp

from dlc.context import make_context
from dlc.diagnostics import DiagnosticError, parse_module
from dlc.dialects import graph_base
from dlc.tools.printing import module_to_str
from dlc.weights import (
    ELIDED_KEY,
    ElidedWeightError,
    WeightResourceError,
    WeightStore,
    attach,
    decode_blob,
    dtype_of_element,
    element_of_dtype,
    encode_blob,
    load_for_module,
    lookup_weight,
    resource_keys,
    split_resources,
    store_of,
)

RNG = np.random.default_rng(0)
ARRAYS = {
    "f32": np.array([1.5, -0.0, np.inf, np.nan, 1e-45], np.float32),
    "nan_payload": np.array([0x7FC00001, 0xFFFFFFFF], np.uint32).view(np.float32),
    "f64": RNG.standard_normal((2, 3)),
    "f16": np.array([[65504, -1e-7], [0.5, np.nan]], np.float16),
    "bf16": np.array([1.0, -3.5, 1e30, np.nan], ml_dtypes.bfloat16),
    "f8": np.array([0.5, -448.0], ml_dtypes.float8_e4m3fn),
    "int4": np.array([-8, 7, 0], ml_dtypes.int4),
    "bool": np.array([[True, False, True]]),
    "int8": np.array([-128, 127, 0], np.int8),
    "uint8": np.array([0, 255], np.uint8),
    "int64": np.array([-(2**63), 2**63 - 1], np.int64),
    "uint64": np.array([2**64 - 1], np.uint64),
    "int32 scalar": np.array(-7, np.int32),
    "empty": np.zeros((0, 3), np.float32),
    "onnx::Conv_12/w": RNG.standard_normal((4, 2)).astype(np.float32),  # not a bare identifier
}


def _module(store: WeightStore) -> ModuleOp:
    body = "\n".join(
        f'    %w{i} = graph.weight "{name}" : {graph_base.tensor_type_of(a)}'
        for i, (name, a) in enumerate(store.items()))
    text = f"builtin.module {{\n  func.func @main() {{\n{body}\n    func.return\n  }}\n}}\n"
    module = parse_module(make_context(), text, "<built>")
    attach(module, store)
    return module


def _reparse(text: str, name: str = "<text>") -> ModuleOp:
    module = parse_module(make_context(), text, name)
    load_for_module(module, None)
    return module


def test_every_dtype_round_trips_bit_for_bit():
    text = module_to_str(_module(WeightStore(dict(ARRAYS))))
    assert "{-#\n  dialect_resources: {\n    builtin: {" in text
    for _ in range(2):  # a second parse in the same process sees the same keys (xDSL would rename them)
        store = store_of(_reparse(text), create=False)
        assert set(store) == set(ARRAYS)
        for name, array in ARRAYS.items():
            assert store[name].dtype == array.dtype and store[name].shape == array.shape, name
            assert store[name].tobytes() == array.tobytes(), name
            assert store[name].flags.writeable and store[name].ctypes.data % 8 == 0


def test_printing_what_was_parsed_gives_the_same_text():
    text = module_to_str(_module(WeightStore(dict(ARRAYS))))
    assert module_to_str(_reparse(text)) == text
    generic = module_to_str(_reparse(text), generic=True)
    assert module_to_str(_reparse(generic), generic=True) == generic


def test_blob_is_mlirs_format():
    blob = encode_blob(np.array([1.0, 2.0], np.float32))
    assert blob == "0x04000000" + "0000803F00000040"  # alignment 4 (LE), then the raw bytes
    assert encode_blob(np.array([True, False])) == "0x010000000100"
    assert decode_blob(blob, np.dtype(np.float32), (2,), "w").tolist() == [1.0, 2.0]
    with pytest.raises(WeightResourceError, match=r'weight "w": its blob holds 8 bytes; float32\[3\] needs 12'):
        decode_blob(blob, np.dtype(np.float32), (3,), "w")
    with pytest.raises(WeightResourceError, match="not a hex string"):
        decode_blob("0x04000000ZZZZZZZZ", np.dtype(np.float32), (1,), "w")


def test_dtype_table_agrees_with_the_graph_dialect():
    for array in ARRAYS.values():
        element = graph_base.element_type_of(array.dtype)
        assert element_of_dtype(array.dtype) == element
        assert dtype_of_element(element) == graph_base.numpy_dtype(element) == array.dtype


def test_resource_keys_are_distinct_bare_identifiers():
    keys = resource_keys(["a.b", "a/b", "a_b", "1x", ELIDED_KEY, ""])
    assert keys == {"a.b": "a.b", "a/b": "a_b", "a_b": "a_b_1", "1x": "w_1x",
                    ELIDED_KEY: f"{ELIDED_KEY}_1", "": "w_"}


def test_elided_weights_parse_and_fail_only_when_read():
    store = WeightStore({"big": np.ones((4, 4), np.float32), "small": np.ones(2, np.float32)})
    text = module_to_str(_module(store), elide_constants=4)
    assert 'big = dense_resource<__elided__> : tensor<4x4xf32>' in text and "big:" not in text
    module = _reparse(text)  # parses and verifies
    parsed = store_of(module, create=False)
    assert parsed.is_elided("big") and "big" not in parsed and "small" in parsed
    with pytest.raises(ElidedWeightError, match=r'weight "big" was elided from the text .*; it has no data'):
        lookup_weight(module, "big")
    assert module_to_str(module) == text  # still elided when printed again


def test_section_errors_are_one_line():
    text = module_to_str(_module(WeightStore({"w": np.ones(2, np.float32)})))
    with pytest.raises(DiagnosticError, match="no closing '#-}'"):
        parse_module(make_context(), text.replace("#-}", ""), "<t>")
    with pytest.raises(DiagnosticError, match="dialect resources of 'foo' are not supported"):
        parse_module(make_context(), text.replace("builtin: {", "foo: {"), "<t>")
    with pytest.raises(WeightResourceError, match="resource 'w' has no blob"):
        _reparse(text.replace('w: "0x', 'v: "0x'))


def test_split_keeps_line_numbers():
    text = 'a\n{-#\n  dialect_resources: {\n    builtin: {\n      k: "0x01000000FF"\n    }\n  }\n#-}\nb'
    rest, blobs = split_resources(text)
    assert blobs == {"k": "0x01000000FF"} and rest.count("\n") == text.count("\n")
    assert rest.startswith("a\n") and rest.endswith("b")


def test_compiled_text_computes_as_the_module():
    import dlc
    from dlc.frontends.onnx import import_model

    module = import_model("examples/small_cnn.onnx")
    text = module_to_str(module)
    x = RNG.standard_normal((1, 3, 32, 32)).astype(np.float32)
    expected = dlc.compile(module)(x)
    np.testing.assert_array_equal(dlc.compile(text)(x), expected)
