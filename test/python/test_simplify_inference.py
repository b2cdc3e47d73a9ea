"""simplify-inference: per-channel scale/shift folded into conv2d/matmul weights;
the evaluator gives the same results before and after, on odd shapes."""

from __future__ import annotations

import collections

import numpy as np
import pytest
from xdsl.parser import Parser

import dlc
from dlc.context import make_context
from dlc.evaluator import evaluate
from dlc.transforms.legalize import LegalizePass
from dlc.transforms.simplify_inference import SimplifyInferencePass
from dlc.weights import WeightStore, attach, store_of

RNG = np.random.default_rng(3)


def _module(text: str, weights: dict[str, np.ndarray]):
    module = Parser(make_context(), text).parse_module()
    attach(module, WeightStore({k: v.astype(np.float32) for k, v in weights.items()}))
    return module


def _counts(module) -> collections.Counter:
    return collections.Counter(op.name for op in module.walk() if op.name.startswith("graph."))


def _simplify_and_compare(module, inputs, rtol=1e-5):
    ctx = make_context()
    LegalizePass().apply(ctx, module)
    before = evaluate(module, inputs)
    SimplifyInferencePass().apply(ctx, module)
    module.verify()
    after = evaluate(module, inputs)
    for b, a in zip(before, after, strict=True):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-5)
    return _counts(module)


def _bn_params(c: int) -> dict[str, np.ndarray]:
    return {
        "scale": RNG.uniform(0.5, 2, c), "bias": RNG.normal(size=c),
        "mean": RNG.normal(size=c), "var": RNG.uniform(0.1, 3, c),
    }


CONV_BN = """
func.func @main(%x: tensor<2x{c}x11x7xf32>) -> tensor<2x{o}x{oh}x{ow}xf32> {{
  %w = graph.weight "conv.w" : tensor<{o}x{cpg}x3x3xf32>
  %s = graph.weight "scale" : tensor<{o}xf32>
  %b = graph.weight "bias" : tensor<{o}xf32>
  %m = graph.weight "mean" : tensor<{o}xf32>
  %v = graph.weight "var" : tensor<{o}xf32>
  %y = graph.conv2d %x, %w {{groups = {groups} : i64, padding = array<i64: 1, 0, 1, 0>, strides = array<i64: 1, 2>}} : (tensor<2x{c}x11x7xf32>, tensor<{o}x{cpg}x3x3xf32>) -> tensor<2x{o}x{oh}x{ow}xf32>
  %n = graph.batch_norm %y, %s, %b, %m, %v : (tensor<2x{o}x{oh}x{ow}xf32>, tensor<{o}xf32>, tensor<{o}xf32>, tensor<{o}xf32>, tensor<{o}xf32>) -> tensor<2x{o}x{oh}x{ow}xf32>
  %r = graph.relu %n : (tensor<2x{o}x{oh}x{ow}xf32>) -> tensor<2x{o}x{oh}x{ow}xf32>
  func.return %r : tensor<2x{o}x{oh}x{ow}xf32>
}}"""


@pytest.mark.parametrize("c,o,groups", [(3, 5, 1), (6, 6, 6), (4, 6, 2)])
def test_batch_norm_folds_into_conv(c, o, groups):
    text = CONV_BN.format(c=c, o=o, cpg=c // groups, groups=groups, oh=11, ow=3)
    module = _module(text, {"conv.w": RNG.normal(size=(o, c // groups, 3, 3)), **_bn_params(o)})
    x = RNG.normal(size=(2, c, 11, 7)).astype(np.float32)
    counts = _simplify_and_compare(module, [x])
    assert counts["graph.mul"] == 0 and counts["graph.rsqrt"] == 0
    assert counts["graph.conv2d"] == 1 and counts["graph.add"] == 1
    # the scaled weight replaced the original in the store (a small one is inline)
    assert set(store_of(module)) == ({"conv.w.scaled"} if o * (c // groups) * 9 > 64 else set())


def test_batch_norm_folds_into_nhwc_conv():
    text = """
func.func @main(%x: tensor<1x5x7x3xf32>) -> tensor<1x3x5x4xf32> {
  %w = graph.weight "w" : tensor<3x3x3x4xf32>
  %s = graph.weight "scale" : tensor<4xf32>
  %b = graph.weight "bias" : tensor<4xf32>
  %m = graph.weight "mean" : tensor<4xf32>
  %v = graph.weight "var" : tensor<4xf32>
  %y = graph.conv2d %x, %w {data_layout = "NHWC", kernel_layout = "HWIO"} : (tensor<1x5x7x3xf32>, tensor<3x3x3x4xf32>) -> tensor<1x3x5x4xf32>
  %n = graph.batch_norm %y, %s, %b, %m, %v {axis = 3 : i64} : (tensor<1x3x5x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x3x5x4xf32>
  func.return %n : tensor<1x3x5x4xf32>
}"""
    module = _module(text, {"w": RNG.normal(size=(3, 3, 3, 4)), **_bn_params(4)})
    counts = _simplify_and_compare(module, [RNG.normal(size=(1, 5, 7, 3)).astype(np.float32)])
    assert counts["graph.mul"] == 0 and counts["graph.add"] == 1


def test_conv_bias_then_batch_norm_leaves_one_add():
    text = """
func.func @main(%x: tensor<1x2x5x5xf32>) -> tensor<1x3x3x3xf32> {
  %w = graph.weight "w" : tensor<3x2x3x3xf32>
  %cb = graph.weight "conv.b" : tensor<3x1x1xf32>
  %s = graph.weight "scale" : tensor<3xf32>
  %b = graph.weight "bias" : tensor<3xf32>
  %m = graph.weight "mean" : tensor<3xf32>
  %v = graph.weight "var" : tensor<3xf32>
  %y = graph.conv2d %x, %w : (tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x3x3xf32>
  %yb = graph.add %y, %cb : (tensor<1x3x3x3xf32>, tensor<3x1x1xf32>) -> tensor<1x3x3x3xf32>
  %n = graph.batch_norm %yb, %s, %b, %m, %v : (tensor<1x3x3x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3x3x3xf32>
  func.return %n : tensor<1x3x3x3xf32>
}"""
    module = _module(text, {"w": RNG.normal(size=(3, 2, 3, 3)), "conv.b": RNG.normal(size=(3, 1, 1)),
                            **_bn_params(3)})
    counts = _simplify_and_compare(module, [RNG.normal(size=(1, 2, 5, 5)).astype(np.float32)])
    assert counts["graph.mul"] == 0 and counts["graph.add"] == 1 and counts["graph.conv2d"] == 1


def test_scale_after_dense_folds_into_matmul():
    text = """
func.func @main(%x: tensor<7x13xf32>) -> tensor<7x5xf32> {
  %w = graph.weight "fc.w" : tensor<5x13xf32>
  %b = graph.weight "fc.b" : tensor<5xf32>
  %s = graph.weight "s" : tensor<1x5xf32>
  %y = graph.dense %x, %w, %b : (tensor<7x13xf32>, tensor<5x13xf32>, tensor<5xf32>) -> tensor<7x5xf32>
  %z = graph.mul %y, %s : (tensor<7x5xf32>, tensor<1x5xf32>) -> tensor<7x5xf32>
  func.return %z : tensor<7x5xf32>
}"""
    module = _module(text, {"fc.w": RNG.normal(size=(5, 13)), "fc.b": RNG.normal(size=5),
                            "s": RNG.normal(size=(1, 5))})
    counts = _simplify_and_compare(module, [RNG.normal(size=(7, 13)).astype(np.float32)])
    assert counts["graph.mul"] == 0 and counts["graph.matmul"] == 1 and counts["graph.transpose"] == 0


def test_spatial_scale_and_shared_conv_are_left_alone():
    text = """
func.func @main(%x: tensor<1x2x5x5xf32>) -> (tensor<1x3x3x3xf32>, tensor<1x3x3x3xf32>) {
  %w = graph.weight "w" : tensor<3x2x3x3xf32>
  %s = graph.weight "s" : tensor<1x1x3x3xf32>
  %t = graph.weight "t" : tensor<3x1x1xf32>
  %y = graph.conv2d %x, %w : (tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x3x3xf32>
  %a = graph.mul %y, %s : (tensor<1x3x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x3x3x3xf32>
  %y2 = graph.conv2d %x, %w {padding = array<i64: 0, 0, 0, 0>} : (tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x3x3xf32>
  %b = graph.mul %y2, %t : (tensor<1x3x3x3xf32>, tensor<3x1x1xf32>) -> tensor<1x3x3x3xf32>
  %c = graph.add %b, %y2 : (tensor<1x3x3x3xf32>, tensor<1x3x3x3xf32>) -> tensor<1x3x3x3xf32>
  func.return %a, %c : tensor<1x3x3x3xf32>, tensor<1x3x3x3xf32>
}"""
    module = _module(text, {"w": RNG.normal(size=(3, 2, 3, 3)), "s": RNG.normal(size=(1, 1, 3, 3)),
                            "t": RNG.normal(size=(3, 1, 1))})
    counts = _simplify_and_compare(module, [RNG.normal(size=(1, 2, 5, 5)).astype(np.float32)])
    assert counts["graph.mul"] == 2 and counts["graph.conv2d"] == 2


def test_small_cnn_compiles_and_matches_onnxruntime():
    ort = pytest.importorskip("onnxruntime")
    path = "examples/small_cnn.onnx"
    import os

    path = os.path.join(os.path.dirname(dlc.__file__), path)
    compiled = dlc.compile(path)
    (name, shape, dtype), = compiled.input_specs
    x = RNG.normal(size=shape).astype(dtype)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    expected = session.run(None, {session.get_inputs()[0].name: x})[0]
    np.testing.assert_allclose(compiled(x)[0], expected, rtol=1e-4, atol=1e-5)


# compiled (simplify-inference + fuse-ops + the schedules) against the evaluator on the
# graph before any pass: primes, 1, channel counts that are not a register tile's multiple
@pytest.mark.parametrize("n,c,o,hw", [(1, 1, 1, 5), (2, 3, 7, 9), (1, 5, 13, 11), (1, 4, 16, 7)])
def test_conv_batch_norm_compiled_matches_the_unsimplified_graph(n, c, o, hw):
    text = f"""
func.func @main(%x: tensor<{n}x{c}x{hw}x{hw}xf32>) -> tensor<{n}x{o}x{hw}x{hw}xf32> {{
  %w = graph.weight "w" : tensor<{o}x{c}x3x3xf32>
  %s = graph.weight "scale" : tensor<{o}xf32>
  %b = graph.weight "bias" : tensor<{o}xf32>
  %m = graph.weight "mean" : tensor<{o}xf32>
  %v = graph.weight "var" : tensor<{o}xf32>
  %y = graph.conv2d %x, %w {{padding = array<i64: 1, 1, 1, 1>}} : (tensor<{n}x{c}x{hw}x{hw}xf32>, tensor<{o}x{c}x3x3xf32>) -> tensor<{n}x{o}x{hw}x{hw}xf32>
  %z = graph.batch_norm %y, %s, %b, %m, %v : (tensor<{n}x{o}x{hw}x{hw}xf32>, tensor<{o}xf32>, tensor<{o}xf32>, tensor<{o}xf32>, tensor<{o}xf32>) -> tensor<{n}x{o}x{hw}x{hw}xf32>
  %r = graph.relu %z : (tensor<{n}x{o}x{hw}x{hw}xf32>) -> tensor<{n}x{o}x{hw}x{hw}xf32>
  func.return %r : tensor<{n}x{o}x{hw}x{hw}xf32>
}}"""
    module = _module(text, {"w": RNG.normal(size=(o, c, 3, 3)), **_bn_params(o)})
    x = RNG.normal(size=(n, c, hw, hw)).astype(np.float32)
    expected = evaluate(module, [x])[0]
    got = dlc.compile(module)(x)[0]
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("m,k,n", [(1, 13, 5), (7, 1, 3), (11, 29, 67)])
def test_dense_scale_shift_compiled_matches_the_unsimplified_graph(m, k, n):
    text = f"""
func.func @main(%x: tensor<{m}x{k}xf32>) -> tensor<{m}x{n}xf32> {{
  %w = graph.weight "w" : tensor<{k}x{n}xf32>
  %b = graph.weight "b" : tensor<{n}xf32>
  %s = graph.weight "s" : tensor<{n}xf32>
  %t = graph.weight "t" : tensor<1x{n}xf32>
  %y = graph.matmul %x, %w : (tensor<{m}x{k}xf32>, tensor<{k}x{n}xf32>) -> tensor<{m}x{n}xf32>
  %a = graph.add %y, %b : (tensor<{m}x{n}xf32>, tensor<{n}xf32>) -> tensor<{m}x{n}xf32>
  %p = graph.mul %a, %s : (tensor<{m}x{n}xf32>, tensor<{n}xf32>) -> tensor<{m}x{n}xf32>
  %q = graph.add %p, %t : (tensor<{m}x{n}xf32>, tensor<1x{n}xf32>) -> tensor<{m}x{n}xf32>
  func.return %q : tensor<{m}x{n}xf32>
}}"""
    weights = {"w": RNG.normal(size=(k, n)), "b": RNG.normal(size=n), "s": RNG.normal(size=n),
               "t": RNG.normal(size=(1, n))}
    module = _module(text, weights)
    x = RNG.normal(size=(m, k)).astype(np.float32)
    expected = evaluate(module, [x])[0]
    # the scale went into W, the two biases became one
    counts = _simplify_and_compare(_module(text, weights), [x])
    assert counts["graph.mul"] == 0 and counts["graph.add"] == 1
    np.testing.assert_allclose(dlc.compile(module)(x)[0], expected, rtol=1e-4, atol=1e-4)
