"""Depthwise conv2d in the blocked layout (issue 21 item 4): alter-op-layout runs a
MobileNet inverted-residual block (1x1 expand + relu6, depthwise 3x3 + relu6, 1x1
project + residual add) as depthwise_conv2d_nchwc / conv2d_nchwc with layout
transforms only at the chain's ends, and the compiled kernel matches the evaluator
on odd shapes (padded channel blocks, prime widths, stride 2, padding in the op)."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

import dlc
from dlc.context import make_context
from dlc.dialects import graph as g
from dlc.evaluator import evaluate
from dlc.transforms.alter_op_layout import AlterOpLayoutPass
from dlc.weights import WeightStore, attach

RNG = np.random.default_rng(21)


def _t(shape) -> str:
    return "tensor<" + "x".join(str(d) for d in shape) + "xf32>"


def _module(text: str, weights: dict | None = None):
    module = Parser(make_context(), text).parse_module()
    attach(module, WeightStore({k: v.astype(np.float32) for k, v in (weights or {}).items()}))
    return module


def _block(c, e, h, w, s):
    """x [1,c,h,w] -> 1x1 to e + bias, clip(0,6) -> depthwise 3x3 stride s pad 1 + bias,
    clip -> 1x1 back to c (+ x when s == 1)."""
    oh, ow = (h - 1) // s + 1, (w - 1) // s + 1
    x_t, e_t, d_t, y_t = _t((1, c, h, w)), _t((1, e, h, w)), _t((1, e, oh, ow)), _t((1, c, oh, ow))
    tail = (f"%y = graph.add %p, %x : ({y_t}, {x_t}) -> {y_t}" if s == 1
            else f"%y = graph.relu %p : ({y_t}) -> {y_t}")
    text = f"""func.func @main(%x: {x_t}) -> {y_t} {{
  %w1 = graph.weight "w1" : {_t((e, c, 1, 1))}
  %b1 = graph.weight "b1" : tensor<{e}x1x1xf32>
  %wd = graph.weight "wd" : {_t((e, 1, 3, 3))}
  %bd = graph.weight "bd" : tensor<{e}x1x1xf32>
  %w2 = graph.weight "w2" : {_t((c, e, 1, 1))}
  %c1 = graph.conv2d %x, %w1 : ({x_t}, {_t((e, c, 1, 1))}) -> {e_t}
  %a1 = graph.add %c1, %b1 : ({e_t}, tensor<{e}x1x1xf32>) -> {e_t}
  %r1 = graph.clip %a1 {{min = 0.0 : f64, max = 6.0 : f64}} : ({e_t}) -> {e_t}
  %cd = graph.conv2d %r1, %wd {{groups = {e} : i64, strides = array<i64: {s}, {s}>, padding = array<i64: 1, 1, 1, 1>}} : ({e_t}, {_t((e, 1, 3, 3))}) -> {d_t}
  %ad = graph.add %cd, %bd : ({d_t}, tensor<{e}x1x1xf32>) -> {d_t}
  %rd = graph.clip %ad {{min = 0.0 : f64, max = 6.0 : f64}} : ({d_t}) -> {d_t}
  %p = graph.conv2d %rd, %w2 : ({d_t}, {_t((c, e, 1, 1))}) -> {y_t}
  {tail}
  func.return %y : {y_t}
}}"""
    weights = {"w1": RNG.normal(size=(e, c, 1, 1)) / np.sqrt(c), "b1": RNG.normal(size=(e, 1, 1)),
               "wd": RNG.normal(size=(e, 1, 3, 3)) / 3, "bd": RNG.normal(size=(e, 1, 1)),
               "w2": RNG.normal(size=(c, e, 1, 1)) / np.sqrt(e)}
    return text, weights, RNG.normal(size=(1, c, h, w)).astype(np.float32)


# (c, expanded, h, w, stride): padded blocks (20, 36), one block, prime sizes, stride 2, odd rows
BLOCKS = [(8, 20, 7, 9, 1), (16, 36, 11, 5, 2), (16, 16, 8, 8, 1), (5, 32, 13, 13, 2)]


@pytest.mark.parametrize("shape", BLOCKS)
def test_inverted_residual_stays_blocked(shape):
    text, weights, x = _block(*shape)
    module = _module(text, weights)
    before = evaluate(module, [x])[0]
    AlterOpLayoutPass().apply(make_context(), module)
    module.verify()
    names = [op.name for op in module.walk() if op.name.startswith("graph.")]
    assert "graph.conv2d" not in names
    assert names.count("graph.depthwise_conv2d_nchwc") == 1 and names.count("graph.conv2d_nchwc") == 2
    transforms = [(op.src, op.dst) for op in module.walk() if isinstance(op, g.LayoutTransformOp)]
    assert [dst for _, dst in transforms] == [f"NCHW{min(shape[0], 16)}c", "NCHW"]  # the ends only
    np.testing.assert_allclose(evaluate(module, [x])[0], before, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape", BLOCKS[:2] + BLOCKS[3:])
def test_inverted_residual_compiled_matches_evaluator(shape):
    text, weights, x = _block(*shape)
    expected = evaluate(_module(text, weights), [x])[0]
    for threads in (1, 2):
        compiled = dlc.compile(_module(text, weights), layout="NCHWc", num_threads=threads)
        np.testing.assert_allclose(compiled(x)[0], expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("cb,b,h,w,s,p", [(2, 16, 9, 7, 1, 1), (1, 8, 6, 11, 2, 1), (3, 4, 5, 5, 2, 0)])
def test_depthwise_kernel_with_padding_in_the_op(cb, b, h, w, s, p):
    """The kernel alone, padding as an attribute: window_tap's clamped taps."""
    oh, ow = (h + 2 * p - 3) // s + 1, (w + 2 * p - 3) // s + 1
    x_s, w_s, y_s = (1, cb, h, w, b), (cb, 1, 3, 3, 1, b), (1, cb, oh, ow, b)
    text = f"""func.func @main(%x: {_t(x_s)}, %w: {_t(w_s)}) -> {_t(y_s)} {{
  %y = graph.depthwise_conv2d_nchwc %x, %w {{strides = array<i64: {s}, {s}>, padding = array<i64: {p}, {p}, {p}, {p}>}} : ({_t(x_s)}, {_t(w_s)}) -> {_t(y_s)}
  func.return %y : {_t(y_s)}
}}"""
    xv, wv = RNG.normal(size=x_s).astype(np.float32), RNG.normal(size=w_s).astype(np.float32)
    # independent numpy reference: per channel, a 3x3 correlation of the zero-padded plane
    xp = np.pad(xv, [(0, 0), (0, 0), (p, p), (p, p), (0, 0)])
    expected = np.zeros(y_s, np.float32)
    for i in range(3):
        for j in range(3):
            expected += xp[:, :, i:i + s * oh:s, j:j + s * ow:s, :] * wv[None, :, 0, i, j, 0, None, None, :]
    np.testing.assert_allclose(evaluate(_module(text), [xv, wv])[0], expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dlc.compile(text)(xv, wv)[0], expected, rtol=1e-4, atol=1e-4)


def test_depthwise_weight_must_match_the_blocks():
    x = g.ConstantOp.from_numpy(np.zeros((1, 2, 5, 5, 16), np.float32)).results[0]
    w = g.ConstantOp.from_numpy(np.zeros((2, 1, 3, 3, 2, 16), np.float32)).results[0]
    with pytest.raises(VerifyException, match=r"expected \[2, 1, KH, KW, 1, 16\]"):
        g.DepthwiseConv2DNCHWcOp.make(x, w)
