"""BYOC: the pattern matcher, and models compiled with --byoc c against onnxruntime / torch."""

import numpy as np
import pytest

import dlc
from dlc.byoc import is_constant, is_op, match, wildcard
from dlc.driver import load_module

GRAPH = """
func.func @main(%x: tensor<2x4xf32>, %y: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %w = graph.constant dense<2.0> : tensor<4xf32>
  %a = graph.add %x, %w : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %r = graph.relu %a : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %t = graph.tanh %y : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %m = graph.mul %t, %y : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %r, %t : tensor<2x4xf32>, tensor<2x4xf32>
}
"""


def _ops():
    module = load_module(GRAPH)
    return {op.name: op for op in module.walk()}


def test_pattern_with_constant_and_optional():
    ops = _ops()
    add = is_op("graph.add")(wildcard(), is_constant())
    m = match(add.optional(lambda p: is_op("graph.relu")(p)), ops["graph.relu"])
    assert [o.name for o in m.ops] == ["graph.add", "graph.relu"]
    assert [v.owner.name if hasattr(v.owner, "name") else "arg" for v in m.inputs] == ["arg", "graph.constant"]
    alone = match(add.optional(lambda p: is_op("graph.relu")(p)), ops["graph.add"])  # the root may be used
    assert [o.name for o in alone.ops] == ["graph.add"]


def test_alternatives_checks_and_the_outside_use_rule():
    ops = _ops()
    either = is_op("graph.exp")(wildcard()) | is_op("graph.tanh")(wildcard())
    assert match(either, ops["graph.tanh"]) is not None
    assert match(is_op("graph.add")(wildcard(), wildcard()).has_attr(nothing=1), ops["graph.add"]) is None
    assert match(is_op("graph.add")(wildcard(), wildcard()).check(lambda op: False), ops["graph.add"]) is None
    # tanh's result is also returned: mul(tanh(y), y) may not absorb it
    assert match(is_op("graph.mul")(is_op("graph.tanh")(wildcard()), wildcard()), ops["graph.mul"]) is None
    assert match(is_op("graph.mul")(wildcard(), wildcard()), ops["graph.mul"]) is not None


def test_small_cnn_with_byoc_c_matches_onnxruntime():
    ort = pytest.importorskip("onnxruntime")
    path = "examples/small_cnn.onnx"
    from pathlib import Path

    path = str(Path(__file__).resolve().parents[2] / path)
    module = dlc.compile(path, byoc=["c"])
    assert any(line.startswith("partition @c_main_0 -> c") for line in module.byoc_report)
    assert any("stays with dlc: graph.conv2d" in line for line in module.byoc_report)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feed = {i.name: np.random.default_rng(0).standard_normal([d if isinstance(d, int) else 1 for d in i.shape])
            .astype(np.float32) for i in sess.get_inputs()}
    expected = sess.run(None, feed)
    got = module(*feed.values())
    for e, g in zip(expected, got):
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)


def test_torch_mlp_with_byoc_c_matches_torch():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8)).eval()
    x = torch.randn(4, 16)
    module = dlc.compile(mlp, example_args=(x,), byoc=["c"])
    assert any("graph.matmul" in line and line.startswith("partition") for line in module.byoc_report)
    with torch.no_grad():
        expected = mlp(x).numpy()
    np.testing.assert_allclose(module(x.numpy())[0], expected, rtol=1e-4, atol=1e-5)
