"""The ONNX importer refuses models onnxruntime refuses, each with one line naming the place.

One test per class of invalid model (issue 14, part 3 and the ONNX cases of part 4):
constant indices out of range, two producers of a value, duplicate or empty names,
unknown opsets, attributes of the wrong type, declared output types the graph does not
make, negative dims, axes out of range, Range with delta 0, a NUL byte in an
external-data location, and cases the mutation fuzz found (ConstantOfShape, Conv bias,
Resize). The last test runs ``dlc-translate --from-onnx`` on some of them: non-zero
exit, the one-line message, no traceback.
"""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from dlc.frontends.onnx import OnnxImportError, import_model

F = TensorProto.FLOAT


def vi(name, shape, elem=F):
    return helper.make_tensor_value_info(name, elem, shape)


def model(nodes, inputs=None, outputs=None, inits=(), opset=17, opsets=()):
    inputs = [vi("x", [2, 3])] if inputs is None else inputs
    outputs = [vi("y", None, TensorProto.UNDEFINED)] if outputs is None else outputs
    graph = helper.make_graph(nodes, "g", inputs, outputs,
                              [numpy_helper.from_array(np.asarray(a), n) for n, a in dict(inits).items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset), *opsets])
    m.ir_version = 8
    return m


def error_of(m) -> str:
    with pytest.raises(OnnxImportError) as err:
        import_model(m)
    text = str(err.value)
    assert "\n" not in text and "cannot convert (" not in text
    return text


def test_constant_gather_index_out_of_range():
    m = model([helper.make_node("Gather", ["x", "i"], ["y"], name="g0", axis=0)],
              inits={"i": np.array([5], np.int64)})
    assert error_of(m) == ("node 'g0' (Gather, #0): index 5 in input 'indices' ('i') is out of range "
                           "for axis 0 of 'data' of size 2 (valid: -2 to 1)")
    m = model([helper.make_node("Gather", ["x", "i"], ["y"], name="g0", axis=1)],
              inits={"i": np.array([-3, 2], np.int64)})
    import_model(m)  # -3 and 2 are inside a dim of 3


@pytest.mark.parametrize("op, inits, attrs, message", [
    ("GatherElements", {"i": np.array([[0, 1, 3]], np.int64)}, {"axis": 1},
     "index 3 in input 'indices' ('i') is out of range for axis 1 of 'data' of size 3"),
    ("GatherND", {"i": np.array([[1, 4]], np.int64)}, {},
     "index 4 in input 'indices' ('i') is out of range for axis 1 of 'data' of size 3"),
    ("ScatterElements", {"i": np.array([[2, 0, 0]], np.int64), "u": np.ones((1, 3), np.float32)}, {},
     "index 2 in input 'indices' ('i') is out of range for axis 0 of 'data' of size 2"),
])
def test_constant_indices_of_other_indexing_ops(op, inits, attrs, message):
    m = model([helper.make_node(op, ["x", *inits], ["y"], name="n", **attrs)], inits=inits)
    assert error_of(m).startswith(f"node 'n' ({op}, #0): {message}")


def test_two_producers_of_one_value():
    m = model([helper.make_node("Relu", ["x"], ["y"], name="a"), helper.make_node("Neg", ["x"], ["y"], name="b")])
    assert error_of(m) == ("node 'b' (Neg, #1): output 'y' is already produced by node 'a' (Relu, #0) "
                           "(each value must have one producer)")


def test_output_shadowing_a_graph_input_or_initializer():
    m = model([helper.make_node("Relu", ["x"], ["x"], name="a"), helper.make_node("Neg", ["x"], ["y"])])
    assert error_of(m) == ("node 'a' (Relu, #0): output 'x' is already produced by graph input 'x' "
                           "(each value must have one producer)")
    m = model([helper.make_node("Relu", ["x"], ["w"]), helper.make_node("Add", ["x", "w"], ["y"])],
              inits={"w": np.zeros((2, 3), np.float32)})
    assert error_of(m) == ("node #0 (Relu): output 'w' is already produced by initializer 'w' "
                           "(each value must have one producer)")


def test_duplicate_and_empty_names():
    m = model([helper.make_node("Add", ["x", "x"], ["y"])], inputs=[vi("x", [2]), vi("x", [2])])
    assert error_of(m) == "graph input 'x' is declared twice (inputs #0 and #1)"
    m = model([helper.make_node("Add", ["x", ""], ["y"], name="a")])
    assert error_of(m) == "node 'a' (Add, #0): input 1 ('B') is required but its name is empty"


def test_unknown_opsets():
    last = onnx.defs.onnx_opset_version()
    m = model([helper.make_node("Relu", ["x"], ["y"])], opset=99)
    assert error_of(m) == (f"opset_import: domain 'ai.onnx' version 99 is not known (onnx "
                           f"{onnx.__version__} defines versions 1 to {last})")
    m = model([helper.make_node("Relu", ["x"], ["y"])], opsets=[helper.make_opsetid("ai.onnx.ml", 99)])
    assert error_of(m).startswith("opset_import: domain 'ai.onnx.ml' version 99 is not known")
    import_model(model([helper.make_node("Relu", ["x"], ["y"])], opset=last))
    m = model([helper.make_node("Foo", ["x"], ["y"], domain="com.example")],
              opsets=[helper.make_opsetid("com.example", 1)])
    assert error_of(m) == "unsupported ONNX op type (opset 17): com.example::Foo x1 (first: '#0')"


def test_op_newer_than_the_model_opset():
    m = model([helper.make_node("Gelu", ["x"], ["y"], name="gelu")], opset=17)
    assert error_of(m) == "node 'gelu' (Gelu, #0): op Gelu does not exist in opset 17 (onnx defines it from opset 20)"


def test_attribute_types_follow_the_schema():
    m = model([helper.make_node("Transpose", ["x"], ["y"], name="t", perm=[1.0, 0.0])])
    assert error_of(m) == "node 't' (Transpose, #0): attribute 'perm' is FLOATS, expected INTS"
    m = model([helper.make_node("Softmax", ["x"], ["y"], name="s", axis="one")])
    assert error_of(m) == "node 's' (Softmax, #0): attribute 'axis' is STRING, expected INT"
    m = model([helper.make_node("Relu", ["x"], ["y"], name="r", alpha=1.0)])
    assert error_of(m) == "node 'r' (Relu, #0): unknown attribute 'alpha' (Relu at opset 17 has no attributes)"


def test_declared_output_types_match_inference():
    relu = [helper.make_node("Relu", ["x"], ["y"])]
    assert error_of(model(relu, outputs=[vi("y", [7, 7], TensorProto.INT64)])) == (
        "graph output 'y': declared type int64[7,7] but the graph makes float32[2,3] (element type differs)")
    assert error_of(model(relu, outputs=[vi("y", [2, 4])])) == (
        "graph output 'y': declared type float32[2,4] but the graph makes float32[2,3] (dim 1 is 4, inferred 3)")
    assert error_of(model(relu, outputs=[vi("y", [6])])) == (
        "graph output 'y': declared type float32[6] but the graph makes float32[2,3] (rank 1 vs 2)")
    import_model(model(relu, outputs=[vi("y", ["N", None])]))  # symbolic and unknown dims match


def test_negative_input_dim():
    m = model([helper.make_node("Relu", ["x"], ["y"])], inputs=[vi("x", [-2, 3])])
    assert error_of(m) == "graph input 'x': dim 0 is -2 (a dim must be >= 0)"


def test_axes_out_of_range_name_node_axis_and_rank():
    m = model([helper.make_node("ReduceSum", ["x", "ax"], ["y"], name="r")], inits={"ax": np.array([9], np.int64)})
    assert error_of(m) == "node 'r' (ReduceSum, #0): axes [9]: axis 9 is out of range for rank 2 (valid: -2 to 1)"
    m = model([helper.make_node("ReduceMax", ["x", "ax"], ["y"], name="r")], opset=18,
              inits={"ax": np.array([1, -1], np.int64)})
    assert error_of(m) == "node 'r' (ReduceMax, #0): axes [1, -1] name axis 1 twice"
    for op in ("Softmax", "ArgMax", "Gather"):
        nodes = [helper.make_node(op, ["x"] + (["i"] if op == "Gather" else []), ["y"], name="n", axis=-3)]
        m = model(nodes, inits={"i": np.array([0], np.int64)} if op == "Gather" else ())
        assert error_of(m) == f"node 'n' ({op}, #0): axis -3 is out of range for rank 2 (valid: -2 to 1)"


def test_range_with_delta_zero():
    zero = np.array(0, np.float32)
    m = model([helper.make_node("Range", ["s", "l", "d"], ["y"], name="rg")], inputs=[],
              inits={"s": zero, "l": np.array(4, np.float32), "d": zero})
    assert error_of(m) == "node 'rg' (Range, #0): delta is 0 (Range needs a non-zero step)"


def test_nul_byte_in_external_data_location(tmp_path):
    w = numpy_helper.from_array(np.zeros((2, 3), np.float32), "w")
    w.data_location = TensorProto.EXTERNAL
    w.ClearField("raw_data")
    entry = w.external_data.add()
    entry.key, entry.value = "location", "a\0b"
    m = model([helper.make_node("Add", ["x", "w"], ["y"])])
    m.graph.initializer.append(w)
    path = tmp_path / "m.onnx"
    path.write_bytes(m.SerializeToString())
    with pytest.raises(OnnxImportError) as err:
        import_model(str(path))
    assert str(err.value) == ("initializer 'w': external data location 'a\\x00b' holds a NUL byte "
                              "(not a valid file name)")


def test_fuzz_found_cases():
    m = model([helper.make_node("ConstantOfShape", ["s"], ["y"], name="c")], inputs=[],
              inits={"s": np.array([2, -1], np.int64)})
    assert error_of(m) == "node 'c' (ConstantOfShape, #0): shape [2, -1] has a negative dim"
    m = model([helper.make_node("Conv", ["x", "w", "b"], ["y"], name="conv")], inputs=[vi("x", [1, 1, 4, 4])],
              inits={"w": np.ones((2, 1, 3, 3), np.float32), "b": np.ones((3,), np.float32)})
    assert error_of(m) == "node 'conv' (Conv, #0): bias 'B' has shape [3], expected [2] (one per output channel)"
    m = model([helper.make_node("Resize", ["x", "", "sc"], ["y"], name="rs", mode="")],
              inits={"sc": np.array([1, 2], np.float32)})
    assert error_of(m) == "node 'rs' (Resize, #0): attribute 'mode' is '' (known: nearest, linear, cubic)"
    m = model([helper.make_node("Resize", ["x", "", "", "sz"], ["y"], name="rs")],
              inits={"sz": np.zeros((0,), np.int64)})
    assert error_of(m) == "node 'rs' (Resize, #0): needs 'scales' or 'sizes'"  # empty sizes: not given
    m = model([helper.make_node("Resize", ["x", "", "", "sz"], ["y"], name="rs")],
              inits={"sz": np.array([2], np.int64)})
    assert error_of(m) == "node 'rs' (Resize, #0): sizes [2] must hold one positive size per resized axis (2)"


def test_no_numpy_warning_and_no_huge_compile_time_tensor():
    """A float attribute overflowing f16 is inf (as at run time), not a printed numpy warning;
    a ConstantOfShape too big to hold at compile time is filled at run time."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = model([helper.make_node("Celu", ["x"], ["y"], alpha=1e30)], inputs=[vi("x", [2], TensorProto.FLOAT16)])
        import_model(m)
        m = model([helper.make_node("ConstantOfShape", ["s"], ["y"])], inputs=[],
                  inits={"s": np.array([1 << 20, 1 << 20], np.int64)})
        assert "graph.broadcast_to" in str(import_model(m))


@pytest.mark.parametrize("op, inits, attrs, message", [
    ("Transpose", {}, {"perm": [0, 1]}, "perm [0, 1] has 2 entries but the input has rank 4"),
    ("Transpose", {}, {"perm": [0, 0, 1, 2]}, "perm [0, 0, 1, 2] name axis 0 twice"),
    ("DepthToSpace", {}, {"blocksize": 0}, "blocksize must be >= 1, got 0"),
    ("DepthToSpace", {}, {"blocksize": 2, "mode": "XYZ"}, "attribute 'mode' is 'XYZ' (known: DCR, CRD)"),
    ("Clip", {"lo": np.array([1, 2], np.float32)}, {}, "'min' must be a scalar, got shape [2]"),
    ("Trilu", {"k": np.array([1, 2], np.int64)}, {}, "'k' must be a scalar, got shape [2]"),
    ("CumSum", {"a": np.array([1, 2], np.int64)}, {}, "'axis' must be a scalar, got shape [2]"),
    ("AveragePool", {}, {"kernel_shape": [1, 1], "strides": [0, 0]}, "attribute 'strides' [0, 0] must be >= 1"),
    ("MaxPool", {}, {"kernel_shape": [2]}, "kernel has 1 spatial dims but the input has 2"),
    ("Split", {}, {"axis": 1, "num_outputs": 0}, "num_outputs 0 must equal the node's 1 outputs"),
])
def test_spot_checks(op, inits, attrs, message):
    node = helper.make_node(op, ["x", *inits], ["y"], name="n", **attrs)
    m = model([node], inputs=[vi("x", [1, 4, 2, 2])], opset=18, inits=inits)
    assert error_of(m).startswith(f"node 'n' ({op}, #0): {message}")


def test_cli_refuses_with_one_line_and_no_traceback(tmp_path):
    """One subprocess (more models: test/lit/onnx/import-checks.test)."""
    path = tmp_path / "gather.onnx"
    m = model([helper.make_node("Gather", ["x", "i"], ["y"], name="g0")], inits={"i": np.array([5])})
    path.write_bytes(m.SerializeToString())
    out = tmp_path / "gather.mlir"
    proc = subprocess.run([sys.executable, "-m", "dlc.tools.dlc_translate", "--from-onnx", str(path),
                           "-o", str(out)], capture_output=True, text=True)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "dlc-translate: error: --from-onnx: node 'g0' (Gather, #0): index 5 in input 'indices' ('i') is out "
        "of range for axis 0 of 'data' of size 2 (valid: -2 to 1)"]
    assert not out.exists()
