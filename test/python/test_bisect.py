"""`dlc run model.onnx --bisect` (tools/numeric_bisect.py) against onnxruntime.

A deliberately wrong kernel is injected through the kernel registry: the generator of
one graph op is replaced (``KERNELS.add(..., replace=True)``, restored afterwards) by
one that builds the real kernel and then adds 0.5 to every value it stores into its
output. The compiled code is then wrong at exactly that op, and bisect must name the
ONNX node it came from, with the node's inputs still matching.
"""

from __future__ import annotations

import io
import os
import re
import warnings

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import FloatAttr

from dlc.lowering.kernels import KERNELS
from dlc.tools import dlc_cli
from dlc.tools.numeric_bisect import compare_value, expose_intermediates

pytest.importorskip("onnxruntime", reason="--bisect needs onnxruntime as its reference")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SMALL_CNN = os.path.join(ROOT, "examples", "small_cnn.onnx")


def add_half_to_output(kernel):
    """Make ``kernel`` wrong: every value it stores into its output gets + 0.5."""
    out = kernel.body.block.args[-1]
    for store in [o for o in kernel.walk() if isinstance(o, memref.StoreOp) and o.memref is out]:
        half = arith.ConstantOp(FloatAttr(0.5, store.value.type))
        wrong = arith.AddfOp(store.value, half.result)
        store.parent.insert_ops_before([half, wrong], store)
        store.operands = [wrong.result, *store.operands[1:]]
    return kernel


@pytest.fixture
def wrong_kernel():
    """``wrong_kernel("graph.tanh")``: that op's kernel stores value + 0.5."""
    saved: dict[str, object] = {}

    def inject(op_name: str) -> None:
        real = KERNELS[op_name]
        saved[op_name] = real
        KERNELS.add(op_name, lambda op, name, *options: add_half_to_output(real(op, name, *options)),
                    replace=True)

    yield inject
    for op_name, real in saved.items():
        KERNELS.add(op_name, real, replace=True)


def mlp_model(path: str) -> None:
    """x -> fc1 (MatMul) -> bias1 (Add) -> act (Tanh) -> fc2 (MatMul) -> out (Sigmoid)."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), n)
             for n, s in (("w1", (7, 5)), ("b1", (5,)), ("w2", (5, 3)))]
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h1"], name="fc1"),
        helper.make_node("Add", ["h1", "b1"], ["h2"], name="bias1"),
        helper.make_node("Tanh", ["h2"], ["h3"], name="act"),
        helper.make_node("MatMul", ["h3", "w2"], ["h4"], name="fc2"),
        helper.make_node("Sigmoid", ["h4"], ["y"], name="out"),
    ]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 7])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def bisect(capsys, path: str, *extra: str) -> tuple[int, str, str]:
    code = dlc_cli.main(["run", path, "--bisect", *extra])
    out, err = capsys.readouterr()
    return code, out, err


def test_correct_model_has_no_divergence(capsys):
    code, out, err = bisect(capsys, SMALL_CNN)
    assert code == 0, err
    assert out.splitlines()[0] == "bisect: no divergence (10 values compared)"


def test_wrong_kernel_names_its_node(tmp_path, capsys, wrong_kernel):
    path = str(tmp_path / "mlp.onnx")
    mlp_model(path)
    code, out, _ = bisect(capsys, path)
    assert code == 0 and out.startswith("bisect: no divergence (5 values compared)")
    wrong_kernel("graph.tanh")
    code, out, err = bisect(capsys, path)
    assert code == 1, err
    summary, *table = out.splitlines()
    assert summary.startswith("bisect: first divergence at node 'act' (Tanh), output 'h3': max abs err 0.5")
    assert "its inputs already match ('h2': compared: match)" in summary
    rows = {line.split()[1]: line for line in table[1:] if not line.lstrip().startswith("...")}
    assert rows["act"].endswith("FIRST DIVERGENCE")
    assert rows["fc1"].endswith("ok") and rows["bias1"].endswith("ok")
    assert rows["fc2"].endswith("differs")  # the error propagates; the table shows it


def test_wrong_conv_kernel_in_a_cnn(capsys, wrong_kernel):
    # small_cnn runs its convs as conv2d_nchwc (CPU default layout): the first Conv node
    wrong_kernel("graph.conv2d_nchwc")
    code, out, _ = bisect(capsys, SMALL_CNN)
    assert code == 1
    assert out.startswith("bisect: first divergence at node 'conv1' (Conv)")
    assert "its inputs already match ('image': graph input" in out


def test_torch_exported_model(tmp_path, capsys, wrong_kernel):
    torch = pytest.importorskip("torch", reason="torch is not installed")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(7, 5), torch.nn.Tanh(), torch.nn.Linear(5, 3), torch.nn.ReLU())
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model.eval(), (torch.randn(2, 7),), buffer, dynamo=False)
    path = tmp_path / "torch_mlp.onnx"
    path.write_bytes(buffer.getvalue())
    tanh = next(n.name for n in onnx.load(str(path)).graph.node if n.op_type == "Tanh")
    wrong_kernel("graph.tanh")
    code, out, _ = bisect(capsys, str(path))
    assert code == 1
    assert out.startswith(f"bisect: first divergence at node '{tanh}' (Tanh)")


def test_wrong_fused_kernel_is_reported(tmp_path, capsys, monkeypatch):
    # every fused group's kernel is wrong: exposing the values splits the groups, so only
    # the model compiled as it is shows the error
    import dlc.lowering.fused as fused

    real = fused.fused_kernel
    monkeypatch.setattr(fused, "fused_kernel", lambda *args, **kw: add_half_to_output(real(*args, **kw)))
    path = str(tmp_path / "mlp.onnx")
    mlp_model(path)
    code, out, _ = bisect(capsys, path)
    assert code == 1
    first, second = out.splitlines()[:2]
    assert first == "bisect: no divergence (5 values compared)"
    assert second.startswith("bisect: but the model compiled as it is (fused) differs from onnxruntime "
                             "at output 'y' of node 'out' (Sigmoid): max abs err")
    assert second.endswith("the error is inside a fused kernel (exposing the values splits the groups)")


def test_torch_export_program(tmp_path, capsys, wrong_kernel):
    # a .pt2: dlc's torch frontend against torch running the same (decomposed) graph
    torch = pytest.importorskip("torch", reason="torch is not installed")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(7, 5), torch.nn.Tanh(), torch.nn.Linear(5, 3), torch.nn.ReLU())
    path = str(tmp_path / "mlp.pt2")
    torch.export.save(torch.export.export(model.eval(), (torch.randn(2, 7),)), path)
    code, out, err = bisect(capsys, path)
    assert code == 0, err
    assert out.startswith("bisect: no divergence (4 values compared)")
    wrong_kernel("graph.tanh")
    code, out, _ = bisect(capsys, path)
    assert code == 1
    assert re.match(r"bisect: first divergence at node 'tanh( \(\S+:\d+\))?' \(aten\.tanh\.default\), "
                    r"output 'tanh': max abs err 0\.5", out), out
    assert "its inputs already match ('linear': compared: match)" in out


def test_tolerances_decide(tmp_path, capsys, wrong_kernel):
    path = str(tmp_path / "mlp.onnx")
    mlp_model(path)
    wrong_kernel("graph.tanh")
    # act's error of 0.5 is within atol 0.6: the first value beyond it is fc2's
    code, out, _ = bisect(capsys, path, "--atol", "0.6", "--rtol", "0")
    assert code == 1
    assert out.startswith("bisect: first divergence at node 'fc2' (MatMul)")
    assert "its inputs already match ('h3': compared: match, 'w2': initializer)" in out


def test_expose_intermediates_adds_typed_outputs(tmp_path):
    path = str(tmp_path / "mlp.onnx")
    mlp_model(path)
    exposed, skipped = expose_intermediates(onnx.load(path))
    assert [o.name for o in exposed.graph.output] == ["y", "h1", "h2", "h3", "h4"]
    assert skipped == []


def test_compare_value_rules():
    a = np.array([1.0, np.nan], np.float32)
    assert compare_value(a, a.copy(), 1e-4, 1e-5)[2]  # NaN matches NaN
    assert not compare_value(a, np.array([1.0, 2.0], np.float32), 1e-4, 1e-5)[2]
    assert not compare_value(np.array([1, 2]), np.array([1, 3]), 1, 1)[2]  # ints: exact
    assert compare_value(np.zeros((2, 3)), np.zeros((3, 2)), 1, 1)[3] == "shape (2, 3), onnxruntime (3, 2)"


@pytest.mark.parametrize("argv, message", [
    (["--bisect"], "--bisect compares against onnxruntime (.onnx) or torch (.pt2), got '"),
    (["--bisect", "--check"], None),
])
def test_bisect_errors(tmp_path, capsys, argv, message):
    mlir = tmp_path / "m.mlir"
    mlir.write_text("func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n  func.return %a : tensor<2xf32>\n}\n")
    target = str(mlir) if message else SMALL_CNN
    code = dlc_cli.main(["run", target, *argv])
    err = capsys.readouterr().err
    assert code == 1
    assert len(err.strip().splitlines()) == 1
    assert (message or "--bisect runs alone") in err
