"""graph.custom: a user-defined op in the tensor-expression language inside a
graph — inference by the TE's shape rules, numpy reference, lowering through
the TE lowering, and execution by dlc.compile against the evaluator. Also the
tools' .te paths (dlc-translate --from-te, dlc run x.te --check)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from xdsl.dialects.builtin import Float32Type, TensorType
from xdsl.utils.exceptions import VerifyException

from dlc.dialects import graph as g
from dlc.driver import compile as dlc_compile
from dlc.driver import load_module
from dlc.evaluator import evaluate
from test_graph_util import rand, values

GRAPH = """
func.func @main(%a: tensor<5x3xf32>, %b: tensor<3x7xf32>, %bias: tensor<7xf32>) -> (tensor<5x7xf32>, tensor<5xf32>) {
  %c = graph.custom %a, %b {te = "C[i, j] = sum(k: A[i, k] * B[k, j])"} : (tensor<5x3xf32>, tensor<3x7xf32>) -> tensor<5x7xf32>
  %d = graph.custom %c, %bias {te = "input X\\ninput b\\nT[i, j] = X[i, j] + b[j]; Y[i, j] = 0.5 * T[i, j] * (1.0 + tanh(0.7978845608 * (T[i, j] + 0.044715 * T[i, j] * T[i, j] * T[i, j])))"} : (tensor<5x7xf32>, tensor<7xf32>) -> tensor<5x7xf32>
  %e = graph.relu %d : (tensor<5x7xf32>) -> tensor<5x7xf32>
  %m, %s = graph.custom %e {te = "output M: f32[5]; output S: f32[5]; M[i] = max(j: X[i, j]); S[i] = sum(j: exp(X[i, j] - M[i]))"} : (tensor<5x7xf32>) -> (tensor<5xf32>, tensor<5xf32>)
  %r = graph.add %m, %s : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
  func.return %e, %r : tensor<5x7xf32>, tensor<5xf32>
}
"""


def f32(*shape):
    return TensorType(Float32Type(), list(shape))


def test_make_infers_result_types_from_the_te():
    a, b = values(f32(4, 3), f32(3, 5))
    op = g.CustomOp.make(a, b, te="C[i, j] = sum(k: A[i, k] * B[k, j])")
    assert [r.type for r in op.results] == [f32(4, 5)]
    (x,) = values(f32(11))
    conv = g.CustomOp.make(x, values(f32(4))[0], te="Y[i] = sum(r: X[i + r] * W[r])")
    assert conv.results[0].type == f32(8)


def test_make_rejects_bad_te_with_position():
    a, b = values(f32(4, 3), f32(4, 5))
    with pytest.raises(VerifyException, match=r"graph.custom: in te: 1:28: shape conflict: index 'k'"):
        g.CustomOp.make(a, b, te="C[i, j] = sum(k: A[i, k] * B[k, j])")
    with pytest.raises(VerifyException, match=r"in te: 1:21: unknown tensor 'B' \(1 operands, bound to A\)"):
        g.CustomOp.make(a, te="C[i, j] = A[i, j] * B[j]")
    with pytest.raises(VerifyException, match=r"in te: 1:11: expected"):
        g.CustomOp.make(a, te="C[i, j] = ")
    with pytest.raises(VerifyException, match=r"input 'A' is declared f32\[4, 4\] but operand #0 is f32\[4, 3\]"):
        g.CustomOp.make(a, te="input A: f32[4, 4]\nC[i, j] = A[i, j]")
    with pytest.raises(VerifyException, match="2 operands given but the program declares 1 inputs"):
        g.CustomOp.make(a, b, te="input A\nC[i, j] = A[i, j]")
    with pytest.raises(VerifyException, match="missing attribute 'te'"):
        g.CustomOp.make(a)


def test_wrong_result_type_fails_verification():
    from dlc.context import make_context
    from xdsl.parser import Parser

    text = """
    func.func @main(%a: tensor<5x3xf32>) -> tensor<5x2xf32> {
      %c = graph.custom %a {te = "C[i, j] = A[i, j]"} : (tensor<5x3xf32>) -> tensor<5x2xf32>
      func.return %c : tensor<5x2xf32>
    }
    """
    with pytest.raises(Exception, match="does not match the inferred type tensor<5x3xf32>"):
        Parser(make_context(), text).parse_module().verify()


def test_reference_on_odd_shapes_and_int_types():
    x = rand(1, 13)
    (y,) = g.CustomOp.make(*values(f32(1, 13)), te="Y[i, j] = X[i, j] * 2.0 + j").reference(x)
    np.testing.assert_allclose(y, x * 2 + np.arange(13), rtol=1e-6)
    xi = np.arange(-6, 6, dtype=np.int64).reshape(3, 4)
    op = g.CustomOp.make(*values(TensorType(g.i64, [3, 4])), te="Y[j] = sum(i: abs(X[i, j]))")
    np.testing.assert_array_equal(op.reference(xi)[0], np.abs(xi).sum(0))


def test_custom_ops_compile_and_match_the_evaluator():
    compiled = dlc_compile(GRAPH)
    rng = np.random.default_rng(3)
    args = [rng.standard_normal(s).astype(np.float32) for s in ((5, 3), (3, 7), (7,))]
    got = compiled(*args)
    want = evaluate(load_module(GRAPH), args)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    # and the evaluator agrees with plain numpy
    t = args[0] @ args[1] + args[2]
    e = np.maximum(0.5 * t * (1 + np.tanh(0.7978845608 * (t + 0.044715 * t ** 3))), 0)
    np.testing.assert_allclose(want[0], e, rtol=1e-5, atol=1e-6)
    m = e.max(1)
    np.testing.assert_allclose(want[1], m + np.exp(e - m[:, None]).sum(1), rtol=1e-5)


def test_lower_to_loops_uses_the_te_lowering():
    from dlc.lowering.lower_to_loops import lower_module

    module = load_module(GRAPH)
    lower_module(module)
    kernels = [op for op in module.ops if "tloop.kernel" in op.attributes]
    sources = [k.attributes["tloop.source"].data for k in kernels]
    assert sources.count("graph.custom") == 3
    names = {op.induction_var.name_hint for k in kernels for op in k.walk() if op.name == "tloop.for"}
    assert {"i", "j", "k", "i_init"} <= names


def test_fold_constant_evaluates_custom_ops_on_constants():
    text = """
    func.func @main() -> tensor<3xf32> {
      %c = graph.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
      %y = graph.custom %c {te = "Y[i] = X[i] * X[i]"} : (tensor<3xf32>) -> tensor<3xf32>
      func.return %y : tensor<3xf32>
    }
    """
    (out,) = dlc_compile(text)()
    np.testing.assert_allclose(out, [1.0, 4.0, 9.0])


# --------------------------------------------------------------------------- tools


def _tool(*args, input_text=None):
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, input=input_text)


def test_dlc_translate_from_te_prints_loop_ir(tmp_path):
    path = tmp_path / "mm.te"
    path.write_text("input A: f32[4, 3]\ninput B: f32[3, 5]\nC[i, j] = sum(k: A[i, k] * B[k, j])\n")
    proc = _tool("dlc.tools.dlc_translate", "--from-te", str(path))
    assert proc.returncode == 0, proc.stderr
    assert "func.func @kernel(%A: memref<4x3xf32>, %B: memref<3x5xf32>, %C: memref<4x5xf32>)" in proc.stdout
    assert "tloop.for %k = 0 to 3" in proc.stdout


def test_dlc_run_te_with_check_and_errors(tmp_path):
    path = tmp_path / "sm.te"
    path.write_text("input X: f32[7, 13]\nM[i] = max(j: X[i, j])\nE[i, j] = exp(X[i, j] - M[i])\n"
                    "S[i] = sum(j: E[i, j])\nY[i, j] = E[i, j] / S[i]\n")
    proc = _tool("dlc.tools.dlc_cli", "run", str(path), "--check", "--repeat", "1")
    assert proc.returncode == 0, proc.stderr
    assert "check: output 0" in proc.stdout and ": ok" in proc.stdout
    bad = tmp_path / "bad.te"
    bad.write_text("input X: f32[7]\nY[i] = X[i] + Z[i]\n")
    proc = _tool("dlc.tools.dlc_cli", "run", str(bad))
    assert proc.returncode == 1
    assert f"{bad}:2:15: error: unknown tensor 'Z'" in proc.stderr
    assert "Traceback" not in proc.stderr
