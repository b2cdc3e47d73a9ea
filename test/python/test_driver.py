"""`dlc.driver.compile`: sources, entry points, errors, and graph programs vs the evaluator."""

from __future__ import annotations

import os

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp
from xdsl.ir import Block, Region
from xdsl.parser import Parser

from dlc.context import make_context
from dlc.dialects import graph as g
from dlc.dialects.graph_base import tensor_type_of
from dlc.driver import CompileError, compile
from dlc.evaluator import evaluate
from dlc.weights import WeightStore, attach

RNG = np.random.default_rng(11)

LOOPS = """
builtin.module {
  func.func @main_0_double(%x: memref<7xf32>, %y: memref<7xf32>) attributes {tloop.kernel} {
    tloop.for %i = 0 to 7 {
      %v = memref.load %x[%i] : memref<7xf32>
      %s = arith.addf %v, %v : f32
      memref.store %s, %y[%i] : memref<7xf32>
    }
    func.return
  }
  func.func @main(%x: memref<7xf32>, %y: memref<7xf32>) attributes {tloop.host, tloop.num_inputs = 1 : i64} {
    func.call @main_0_double(%x, %y) : (memref<7xf32>, memref<7xf32>) -> ()
    func.return
  }
  func.func @twice(%x: memref<7xf32>, %y: memref<7xf32>) attributes {tloop.host, tloop.num_inputs = 1 : i64} {
    %t = memref.alloc() : memref<7xf32>
    func.call @main_0_double(%x, %t) : (memref<7xf32>, memref<7xf32>) -> ()
    func.call @main_0_double(%t, %y) : (memref<7xf32>, memref<7xf32>) -> ()
    memref.dealloc %t : memref<7xf32>
    func.return
  }
}
"""

GRAPH = """
func.func @main(%x: tensor<3x5xf32>, %b: tensor<1x5xf32>) -> tensor<3x5xf32> {
  %w = graph.weight "w" : tensor<5x5xf32>
  %m = graph.matmul %x, %w : (tensor<3x5xf32>, tensor<5x5xf32>) -> tensor<3x5xf32>
  %a = graph.add %m, %b : (tensor<3x5xf32>, tensor<1x5xf32>) -> tensor<3x5xf32>
  %r = graph.relu %a : (tensor<3x5xf32>) -> tensor<3x5xf32>
  func.return %r : tensor<3x5xf32>
}
"""


def test_compile_loop_level_text_and_entries():
    m = compile(LOOPS)
    x = RNG.standard_normal(7).astype(np.float32)
    np.testing.assert_array_equal(m(x)[0], 2 * x)
    np.testing.assert_array_equal(m.run("twice", x)[0], 4 * x)
    assert sorted(m.entries) == ["main", "twice"]
    m2 = compile(LOOPS, entry="twice")
    np.testing.assert_array_equal(m2(x)[0], 4 * x)
    assert "define i32 @\"main\"" in m.llvm_ir or "define i32 @main" in m.llvm_ir  # the status
    assert {"load", "lower-to-llvm", "translate", "llvm-jit"} <= set(m.timings)


def test_compile_graph_with_weights_from_a_path(tmp_path):
    w = RNG.standard_normal((5, 5)).astype(np.float32)
    WeightStore({"w": w}).save(str(tmp_path / "model.weights.npz"))
    path = tmp_path / "model.mlir"
    path.write_text('builtin.module attributes {dlc.weights = "model.weights.npz"} {\n' + GRAPH + "}\n")
    m = compile(str(path))
    x = RNG.standard_normal((3, 5)).astype(np.float32)
    b = RNG.standard_normal((1, 5)).astype(np.float32)
    np.testing.assert_allclose(m(x, b)[0], np.maximum(x @ w + b, 0), rtol=1e-5, atol=1e-6)
    assert [s[0] for s in m.input_specs] == ["x", "b"]
    assert {"fold-constant", "lower-to-loops", "lower-to-llvm", "llvm-jit"} <= set(m.timings)


def test_compile_does_not_modify_a_module_op():
    module = Parser(make_context(), GRAPH).parse_module()
    attach(module, WeightStore({"w": np.eye(5, dtype=np.float32)}))
    before = str(module)
    m = compile(module)
    assert str(module) == before
    x = RNG.standard_normal((3, 5)).astype(np.float32)
    b = np.zeros((1, 5), np.float32)
    np.testing.assert_allclose(m(x, b)[0], evaluate(module, [x, b])[0], rtol=1e-5)


def test_export_of_a_graph_program(tmp_path):
    module = Parser(make_context(), GRAPH).parse_module()
    w = RNG.standard_normal((5, 5)).astype(np.float32)
    attach(module, WeightStore({"w": w}))
    m = compile(module)
    path = m.export(str(tmp_path / "g.so"))
    from dlc.runtime import load

    x = RNG.standard_normal((3, 5)).astype(np.float32)
    b = RNG.standard_normal((1, 5)).astype(np.float32)
    np.testing.assert_array_equal(load(path)(x, b)[0], m(x, b)[0])
    assert "export" in m.timings


def test_export_only_build_runs_llvm_once(tmp_path):
    """jit=False (dlc compile -o m.so): no JIT, the library is the only LLVM run, and it
    computes what the JIT build computes."""
    module = Parser(make_context(), GRAPH).parse_module()
    w = RNG.standard_normal((5, 5)).astype(np.float32)
    attach(module, WeightStore({"w": w}))
    m = compile(module, jit=False)
    assert "llvm-jit" not in m.timings
    with pytest.raises(CompileError, match=r"compiled with jit=False: export\(\) it"):
        m(np.zeros((3, 5), np.float32), np.zeros((1, 5), np.float32))
    from dlc.runtime import load

    x = RNG.standard_normal((3, 5)).astype(np.float32)
    b = RNG.standard_normal((1, 5)).astype(np.float32)
    module = Parser(make_context(), GRAPH).parse_module()
    attach(module, WeightStore({"w": w}))
    np.testing.assert_array_equal(load(m.export(str(tmp_path / "g.so")))(x, b)[0], compile(module)(x, b)[0])


@pytest.mark.parametrize("source,message", [
    ("func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {\n  func.return %y : tensor<3xf32>\n}",
     r"<source>:\d+:\d+: values used but not defined: \[%y\]"),
    ("/nonexistent/model.mlir", "no such file"),
])
def test_bad_sources_are_one_line_errors(source, message):
    with pytest.raises(CompileError, match=message) as info:
        compile(source)
    assert "\n" not in str(info.value)


def test_bad_options():
    with pytest.raises(CompileError, match="unknown target 'tpu'"):
        compile(LOOPS, target="tpu")
    with pytest.raises(CompileError, match=r"no function named @nope \(have main, twice\)"):
        compile(LOOPS, entry="nope")
    with pytest.raises(CompileError, match="cannot compile a int"):
        compile(3)


def test_missing_weight_is_a_compile_error():
    module = Parser(make_context(), GRAPH).parse_module()
    with pytest.raises(CompileError, match='weight "w"'):
        compile(module)


def test_package_level_compile_export():
    import dlc

    assert dlc.compile is compile


# ---------------------------------------------------------------------------
# every graph op of the reference tests, compiled, against the evaluator
# ---------------------------------------------------------------------------

def _graph_cases():
    import sys

    sys.path.insert(0, os.path.dirname(__file__))
    from test_graph_reference import CASES

    return CASES


CASES = _graph_cases()


def single_op_module(op_cls, arrays, attrs, constants: dict[int, np.ndarray] | None = None) -> ModuleOp:
    """``@main`` holding one ``op_cls``: ``arrays`` as arguments, except the operands
    ``constants`` gives (index -> value), which become graph.constant ops."""
    constants = constants or {}
    args = [a for i, a in enumerate(arrays) if i not in constants]
    types = [tensor_type_of(np.asarray(a)) for a in args]
    block = Block(arg_types=types)
    free = iter(block.args)
    operands = []
    for i in range(len(arrays)):
        if i in constants:
            const = g.ConstantOp.from_numpy(constants[i])
            block.add_op(const)
            operands.append(const.results[0])
        else:
            operands.append(next(free))
    op = op_cls.make(*operands, **attrs)
    block.add_ops([op, func.ReturnOp(*op.results)])
    fn = func.FuncOp("main", FunctionType.from_lists(types, [r.type for r in op.results]), Region(block))
    return ModuleOp([fn])


# the blocked int8 convs' kernels pack their weight at compile time (alter-op-layout only
# builds them on constant weights): operand 1 is a constant there
CONSTANT_WEIGHT = {g.QConv2DNCHWcOp, g.QDepthwiseConv2DNCHWcOp}


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_graph_op_compiled_matches_evaluator(case):
    _, op_cls, inputs, attrs, _ = case
    constants = {1: inputs[1]} if op_cls in CONSTANT_WEIGHT else {}
    module = single_op_module(op_cls, inputs, attrs, constants)
    inputs = [a for i, a in enumerate(inputs) if i not in constants]
    want = evaluate(module, inputs)
    got = compile(module)(*inputs)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        b = np.asarray(b)
        assert a.shape == b.shape and a.dtype == b.dtype
        if a.dtype.kind == "f":
            # atol scales with the output's largest magnitude: a sum's rounding error is
            # relative to its terms, and an element that cancels to ~0 keeps that error
            # (conv2d_nchwc: 0.04701 of terms ~50, 1.6e-6 apart once the FMAs moved)
            scale = float(np.abs(b).max()) if b.size and np.isfinite(b).all() else 1.0
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6 * max(1.0, scale))
        else:
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("shape", [(1,), (13,), (3, 1, 7), (2, 5, 11)])
def test_softsign_compiled_matches_numpy_on_odd_shapes(shape):
    # the example op of docs/adding-an-op.md: x / (1 + |x|), against numpy's formula
    x = (RNG.standard_normal(shape) * 4).astype(np.float32)
    x.flat[0] = -0.0
    got = compile(single_op_module(g.SoftsignOp, [x], {}))(x)[0]
    np.testing.assert_allclose(got, x / (1 + np.abs(x)), rtol=1e-6, atol=0)
    assert np.signbit(got.flat[0])


def test_onnx_model_matches_onnxruntime(tmp_path):
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper

    w = RNG.standard_normal((4, 3)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["image", "w"], ["h"]), helper.make_node("Tanh", ["h"], ["probs"])],
        "g",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [5, 4])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [5, 3])],
        [onnx.numpy_helper.from_array(w, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    path = str(tmp_path / "m.onnx")
    onnx.save(model, path)
    x = RNG.standard_normal((5, 4)).astype(np.float32)
    want = ort.InferenceSession(path).run(None, {"image": x})[0]
    for source in (path, model):
        m = compile(source)
        assert [s[0] for s in m.input_specs] == ["image"]
        assert [s[0] for s in m.output_specs] == ["probs"]
        np.testing.assert_allclose(m(x)[0], want, rtol=1e-5, atol=1e-6)


def test_disable_passes_skips_a_pipeline_pass(monkeypatch):
    """bench/models.py --no-expand-math: the pipeline leaves the named pass out, and
    disable_passes(()) puts it back."""
    import dlc.driver as driver

    ran = []
    monkeypatch.setattr(driver, "run_pass", lambda spec, module: ran.append(spec))
    try:
        driver.disable_passes({"expand-math"})
        driver._pipeline_pass("expand-math", None)
        driver._pipeline_pass("lower-to-loops{flat-conv=true}", None)
        assert ran == ["lower-to-loops{flat-conv=true}"]
    finally:
        driver.disable_passes(())
    driver._pipeline_pass("expand-math", None)
    assert ran[-1] == "expand-math"
