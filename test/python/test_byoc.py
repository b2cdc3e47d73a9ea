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


THIRD_REGION = """
func.func @main(%x0: tensor<4xf32>) -> tensor<4xf32> {
  %x1 = graph.exp %x0 : (tensor<4xf32>) -> tensor<4xf32>
  %s1 = graph.tanh %x1 : (tensor<4xf32>) -> tensor<4xf32>
  %s2 = graph.sigmoid %x0 : (tensor<4xf32>) -> tensor<4xf32>
  %s3 = graph.add %s1, %s2 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %y = graph.mul %s2, %x1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %z = graph.sub %s3, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %z : tensor<4xf32>
}
"""


@pytest.fixture
def two_targets():
    import dlc.byoc as byoc

    byoc.pattern_table("tt", [])
    byoc.pattern_table("uu", [])
    byoc.supports("tt", "graph.exp", "graph.mul")(lambda op: True)
    byoc.supports("uu", "graph.tanh", "graph.sigmoid", "graph.add")(lambda op: True)
    yield
    byoc.unregister("tt")
    byoc.unregister("uu")


def test_a_cycle_through_a_third_region_is_split(two_targets):
    """x1 -> s1 in region S = {s1, s2, s3}, and S's s2 -> y: x1 and y in one region would
    need S before and after it, although no single path leaves x1 and enters y through
    an op outside the three (the walk must treat S as one node)."""
    from dlc.driver import run_pass

    module = load_module(THIRD_REGION)
    for spec in ("annotate-target{targets=tt,uu}", "merge-compiler-regions"):
        run_pass(spec, module)
    region = {op.results[0].name_hint: op.attributes["dlc.region"].value.data
              for op in module.walk() if "dlc.region" in op.attributes}
    assert region["s1"] == region["s2"] == region["s3"]
    assert region["x1"] != region["y"]
    run_pass("partition-graph", module)
    module.verify()
    calls = [op.callee.string_value() for op in module.walk() if op.name == "func.call"]
    assert len(calls) == 3


def test_a_codegen_that_refuses_is_one_line():
    import dlc.byoc as byoc

    byoc.pattern_table("refuses", [])
    byoc.supports("refuses", "graph.relu")(lambda op: True)

    @byoc.codegen("refuses")
    def generate(partition, ctx):
        raise byoc.CodegenError(f"BYOC target 'refuses' cannot emit graph.relu in @{ctx.symbol}")
    try:
        with pytest.raises(dlc.driver.CompileError, match=r"^BYOC target 'refuses' cannot emit graph.relu "
                                                          r"in @refuses_main_0$"):
            dlc.compile(GRAPH, byoc="refuses")
    finally:
        byoc.unregister("refuses")


def _transformer_layer(torch):
    class Layer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.att = torch.nn.MultiheadAttention(32, 4, batch_first=True)
            self.ln = torch.nn.LayerNorm(32)
            self.ff = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 32))

        def forward(self, x):
            a, _ = self.att(x, x, x, need_weights=False)
            x = self.ln(x + a)
            return x + self.ff(x)
    return Layer().eval(), torch.randn(2, 5, 32)


def _depthwise_block(torch):
    block = torch.nn.Sequential(torch.nn.Conv2d(8, 8, 3, padding=1, groups=8), torch.nn.BatchNorm2d(8),
                                torch.nn.ReLU6(), torch.nn.Conv2d(8, 16, 1), torch.nn.ReLU())
    return block.eval(), torch.randn(1, 8, 10, 10)


@pytest.mark.parametrize("build", [_transformer_layer, _depthwise_block], ids=["transformer", "depthwise"])
def test_torch_blocks_with_byoc_c_match_torch(build):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    model, x = build(torch)
    module = dlc.compile(model, example_args=(x,), byoc=["c"])
    assert any(line.startswith("partition @c_main_0 -> c") for line in module.byoc_report)
    with torch.no_grad():
        expected = model(x).numpy()
    np.testing.assert_allclose(module(x.numpy())[0], expected, rtol=1e-4, atol=1e-5)


def test_ir_partitioned_by_dlc_opt_compiles(tmp_path):
    """dlc-opt's partition-graph output is a model too: dlc.compile runs its codegens."""
    from dlc.driver import run_pass

    module = load_module(GRAPH)
    for spec in ("merge-composite{target=c}", "annotate-target{targets=c}", "merge-compiler-regions",
                 "partition-graph"):
        run_pass(spec, module)
    compiled = dlc.compile(str(module))
    x, y = (np.random.default_rng(1).standard_normal((2, 4)).astype(np.float32) for _ in range(2))
    r, t = compiled(x, y)
    np.testing.assert_allclose(r, np.maximum(x + 2.0, 0), rtol=1e-6)
    np.testing.assert_allclose(t, np.tanh(y), rtol=1e-6)


def test_c_codegen_emits_a_composite_as_one_loop():
    from dlc.byoc.codegen_run import run_codegens
    from dlc.driver import run_pass
    from dlc.target import Target

    module = load_module(GRAPH)
    for spec in ("merge-composite{target=c}", "annotate-target{targets=c}", "merge-compiler-regions",
                 "partition-graph"):
        run_pass(spec, module)
    (kernel,) = [k for k in run_codegens(module, Target.host()) if "relu" in k.sources[0][1]]
    source = kernel.sources[0][1]
    assert "/* graph.relu (composite c.add_relu #0) */" in source and "/* graph.add" not in source
    assert source.count("for (int64_t i0") == 1
