"""alter-op-layout and the blocked-layout ops: NCHW{b}c conv chains give the same
results as the plain graph (evaluator, and compiled to native code) on odd shapes,
with layout transforms only at the boundaries and weights re-laid out at compile time."""

from __future__ import annotations

import collections

import numpy as np
import pytest
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

import dlc
from dlc.context import make_context
from dlc.dialects import graph as g
from dlc.driver import CompileError, graph_passes
from dlc.evaluator import evaluate
from dlc.lowering.schedule.defaults_nchwc import register_tile
from dlc.transforms.alter_op_layout import AlterOpLayoutPass
from dlc.weights import WeightStore, attach, store_of

RNG = np.random.default_rng(5)


def _t(shape) -> str:
    return "tensor<" + "x".join(str(d) for d in shape) + "xf32>"


def _module(text: str, weights: dict[str, np.ndarray] | None = None):
    module = Parser(make_context(), text).parse_module()
    attach(module, WeightStore({k: v.astype(np.float32) for k, v in (weights or {}).items()}))
    return module


def _counts(module) -> collections.Counter:
    return collections.Counter(op.name for op in module.walk() if op.name.startswith("graph."))


def _transforms(module) -> list[tuple[str, str]]:
    return [(op.src, op.dst) for op in module.walk()
            if isinstance(op, g.LayoutTransformOp)]


# -- the ops ------------------------------------------------------------------------------------


@pytest.mark.parametrize("c,block", [(3, 16), (16, 16), (20, 16), (33, 8), (5, 5)])
def test_layout_transform_round_trip_pads_with_zeros(c, block):
    x = RNG.normal(size=(2, c, 3, 5)).astype(np.float32)
    to = g.LayoutTransformOp.make(_value(x), src="NCHW", dst=f"NCHW{block}c")
    blocked = to.reference(x)[0]
    cb = -(-c // block)
    assert blocked.shape == (2, cb, 3, 5, block)
    assert blocked[1, (c - 1) // block, 2, 4, (c - 1) % block] == x[1, c - 1, 2, 4]
    plain = np.zeros((2, cb * block, 3, 5), np.float32)
    plain[:, :c] = x
    np.testing.assert_array_equal(blocked.transpose(0, 1, 4, 2, 3).reshape(plain.shape), plain)
    back = g.LayoutTransformOp.make(to, src=f"NCHW{block}c", dst="NCHW", channels=c)
    np.testing.assert_array_equal(back.reference(blocked)[0], x)


def test_weight_transform_and_blocked_conv_match_conv2d():
    x = RNG.normal(size=(1, 20, 7, 9)).astype(np.float32)
    w = RNG.normal(size=(24, 20, 3, 3)).astype(np.float32)
    xv, wv = _value(x), _value(w)
    xb = g.LayoutTransformOp.make(xv, src="NCHW", dst="NCHW16c")
    wb = g.LayoutTransformOp.make(wv, src="OIHW", dst="OIHW16i16o")
    assert wb.results[0].type.get_shape() == (2, 2, 3, 3, 16, 16)
    w_blocked = wb.reference(w)[0]
    assert w_blocked[1, 0, 2, 1, 3, 5] == w[16 + 5, 3, 2, 1] and w_blocked[1, 1, 0, 0, 4, 8] == 0
    attrs = dict(strides=[2, 1], padding=[1, 0, 2, 1], dilations=[1, 2])
    conv = g.Conv2DNCHWcOp.make(xb, wb, **attrs)
    ref = g.Conv2DOp.make(xv, wv, **attrs).reference(x, w)[0]
    out = conv.reference(xb.reference(x)[0], w_blocked)[0]
    back = g.LayoutTransformOp.make(conv, src="NCHW16c", dst="NCHW", channels=24)
    np.testing.assert_allclose(back.reference(out)[0], ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kwargs,message", [
    (dict(src="NCHW", dst="NHWC"), "unsupported layout change NCHW -> NHWC"),
    (dict(src="NCHW16c", dst="NCHW"), "NCHW16c input must be 5-D"),
    (dict(src="NCHW", dst="NCHW0c"), "blocks must be >= 1"),
    (dict(src="NCHW", dst="NCHW16c", channels=4), "'channels' applies only"),
])
def test_layout_transform_rejects(kwargs, message):
    with pytest.raises(VerifyException, match=message):
        g.LayoutTransformOp.make(_value(np.zeros((1, 4, 2, 2), np.float32)), **kwargs)


def _value(array: np.ndarray):
    return g.ConstantOp.from_numpy(array).results[0]


# -- the pass: evaluator preservation and structure ---------------------------------------------

CHAIN = """
func.func @main(%x: {x_t}) -> {y_t} {{
  %w1 = graph.weight "w1" : {w1_t}
  %b1 = graph.weight "b1" : tensor<{o}x1x1xf32>
  %w2 = graph.weight "w2" : {w2_t}
  %c = graph.conv2d %x, %w1 {{strides = array<i64: {s}, {s}>, padding = array<i64: {p}, {p}, {p}, {p}>}} : ({x_t}, {w1_t}) -> {y_t}
  %a = graph.add %c, %b1 : ({y_t}, tensor<{o}x1x1xf32>) -> {y_t}
  %r = graph.relu %a : ({y_t}) -> {y_t}
  %c2 = graph.conv2d %r, %w2 {{padding = array<i64: {p2}, {p2}, {p2}, {p2}>}} : ({y_t}, {w2_t}) -> {y_t}
  %s2 = graph.add %c2, %r : ({y_t}, {y_t}) -> {y_t}
  %o2 = graph.relu %s2 : ({y_t}) -> {y_t}
  func.return %o2 : {y_t}
}}"""


def _chain(n, c, h, w, o, k, s, k2):
    p, p2 = k // 2, k2 // 2
    oh, ow = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
    text = CHAIN.format(x_t=_t((n, c, h, w)), y_t=_t((n, o, oh, ow)), w1_t=_t((o, c, k, k)),
                        w2_t=_t((o, o, k2, k2)), o=o, s=s, p=p, p2=p2)
    weights = {"w1": RNG.normal(size=(o, c, k, k)) / np.sqrt(c * k * k), "b1": RNG.normal(size=(o, 1, 1)),
               "w2": RNG.normal(size=(o, o, k2, k2)) / np.sqrt(o * k2 * k2)}
    return text, weights, RNG.normal(size=(n, c, h, w)).astype(np.float32)


# (n, c, h, w, o, k, stride, k2): a 3-channel input, channels not a multiple of 16, stride 2,
# padding, 1x1, prime sizes, batch 2, a single output column
CHAINS = [(1, 3, 11, 13, 20, 3, 2, 3), (2, 5, 7, 17, 16, 1, 1, 3), (1, 17, 9, 9, 33, 3, 1, 1),
          (1, 16, 5, 1, 7, 1, 1, 1), (1, 32, 15, 15, 32, 3, 1, 3)]


@pytest.mark.parametrize("shape", CHAINS)
def test_chain_preserved_with_one_transform_in_and_out(shape):
    text, weights, x = _chain(*shape)
    module = _module(text, weights)
    before = evaluate(module, [x])[0]
    AlterOpLayoutPass().apply(make_context(), module)
    module.verify()
    counts = _counts(module)
    assert counts["graph.conv2d"] == 0 and counts["graph.conv2d_nchwc"] == 2
    # one transform in (input), one out (result): the weights and the bias were folded
    assert [dst for _, dst in _transforms(module)] == [f"NCHW{min(shape[1], 16)}c", "NCHW"]
    assert all(v.ndim in (5, 6) or v.size <= 64 for _, v in store_of(module).items())
    assert not {"w1", "w2", "b1"} & set(store_of(module))  # originals dropped
    np.testing.assert_allclose(evaluate(module, [x])[0], before, rtol=1e-4, atol=1e-4)


def test_unsupported_consumer_reads_through_one_transform_back():
    text = f"""
func.func @main(%x: {_t((1, 16, 8, 8))}) -> ({_t((1, 1, 8, 8))}, {_t((1, 16, 8, 8))}, {_t((1, 1024))}) {{
  %w = graph.weight "w" : {_t((16, 16, 3, 3))}
  %c = graph.conv2d %x, %w {{padding = array<i64: 1, 1, 1, 1>}} : ({_t((1, 16, 8, 8))}, {_t((16, 16, 3, 3))}) -> {_t((1, 16, 8, 8))}
  %r = graph.sigmoid %c : ({_t((1, 16, 8, 8))}) -> {_t((1, 16, 8, 8))}
  %p = graph.reduce_sum %r {{axes = array<i64: 1>, keepdims = 1 : i64}} : ({_t((1, 16, 8, 8))}) -> {_t((1, 1, 8, 8))}
  %f = graph.reshape %r {{shape = array<i64: 1, 1024>}} : ({_t((1, 16, 8, 8))}) -> {_t((1, 1024))}
  %d = graph.div %r, %r : ({_t((1, 16, 8, 8))}, {_t((1, 16, 8, 8))}) -> {_t((1, 16, 8, 8))}
  func.return %p, %d, %f : {_t((1, 1, 8, 8))}, {_t((1, 16, 8, 8))}, {_t((1, 1024))}
}}"""
    module = _module(text, {"w": RNG.normal(size=(16, 16, 3, 3))})
    x = RNG.normal(size=(1, 16, 8, 8)).astype(np.float32)
    before = evaluate(module, [x])
    AlterOpLayoutPass().apply(make_context(), module)
    module.verify()
    # sigmoid stays blocked; a channel reduction, reshape and div (0/0 in padded lanes) read one
    # transform back
    assert _transforms(module) == [("NCHW", "NCHW16c"), ("NCHW16c", "NCHW")]
    assert _counts(module)["graph.sigmoid"] == 1
    for b, a in zip(before, evaluate(module, [x]), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


# -- compiled: the kernels and the driver option ---------------------------------------------------


@pytest.mark.parametrize("shape", CHAINS)
def test_chain_compiled_in_blocked_layout_matches_evaluator(shape):
    text, weights, x = _chain(*shape)
    expected = evaluate(_module(text, weights), [x])[0]
    compiled = dlc.compile(_module(text, weights), layout="NCHWc", num_threads=2)
    np.testing.assert_allclose(compiled(x)[0], expected, rtol=1e-4, atol=1e-4)


# (c, h, w, o, k, stride, pad): register tiles with row tails (oh % rows), column tails (prime
# widths), a 1-wide output, small input blocks
KERNEL_CASES = [(16, 9, 9, 32, 3, 1, 1), (16, 7, 7, 16, 3, 1, 0), (3, 13, 31, 16, 3, 2, 1),
                (32, 5, 17, 48, 1, 1, 0), (8, 3, 3, 16, 3, 1, 1), (16, 1, 1, 16, 1, 1, 0),
                (16, 23, 23, 16, 5, 2, 2)]


@pytest.mark.parametrize("c,h,w,o,k,s,p", KERNEL_CASES)
def test_blocked_conv_kernel_matches_reference(c, h, w, o, k, s, p):
    ib = min(c, 16)
    x_s, w_s = (1, -(-c // ib), h, w, ib), (-(-o // 16), -(-c // ib), k, k, ib, 16)
    oh, ow = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
    y_s = (1, w_s[0], oh, ow, 16)
    text = f"""func.func @main(%x: {_t(x_s)}, %w: {_t(w_s)}) -> {_t(y_s)} {{
  %y = graph.conv2d_nchwc %x, %w {{strides = array<i64: {s}, {s}>, padding = array<i64: {p}, {p}, {p}, {p}>}} : ({_t(x_s)}, {_t(w_s)}) -> {_t(y_s)}
  func.return %y : {_t(y_s)}
}}"""
    xv, wv = RNG.normal(size=x_s).astype(np.float32), RNG.normal(size=w_s).astype(np.float32)
    expected = evaluate(_module(text), [xv, wv])[0]
    np.testing.assert_allclose(dlc.compile(text, num_threads=2)(xv, wv)[0], expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("src,dst,shape,channels", [
    ("NCHW", "NCHW16c", (2, 20, 3, 5), None), ("NCHW16c", "NCHW", (1, 2, 3, 5, 16), 20),
    ("OIHW", "OIHW3i16o", (20, 7, 3, 1), None), ("NCHW", "NCHW3c", (1, 3, 1, 7), None)])
def test_layout_transform_kernels(src, dst, shape, channels):
    x = RNG.normal(size=shape).astype(np.float32)
    op = g.LayoutTransformOp.make(_value(x), src=src, dst=dst, channels=channels)
    out_t = op.results[0].type
    attrs = f'src = "{src}", dst = "{dst}"' + (f", channels = {channels} : i64" if channels else "")
    text = f"""func.func @main(%x: {_t(shape)}) -> {out_t} {{
  %y = graph.layout_transform %x {{{attrs}}} : ({_t(shape)}) -> {out_t}
  func.return %y : {out_t}
}}"""
    np.testing.assert_array_equal(dlc.compile(text)(x)[0], op.reference(x)[0])


def test_driver_layout_option(monkeypatch):
    assert "alter-op-layout" not in graph_passes("NCHW")
    passes = graph_passes("NCHWc")
    assert passes.index("alter-op-layout") == passes.index("fuse-ops") - 1
    monkeypatch.delenv("DLC_LAYOUT", raising=False)
    assert graph_passes() == passes  # the CPU default: blocked
    monkeypatch.setenv("DLC_LAYOUT", "NCHW")  # the opt-out
    assert "alter-op-layout" not in graph_passes()
    with pytest.raises(CompileError, match="unknown layout 'NHWC'"):
        graph_passes("NHWC")


@pytest.mark.parametrize("oh,ow,tile", [(56, 56, (1, 14)), (28, 28, (1, 14)), (112, 112, (1, 16)),
                                        (7, 7, (2, 7)), (1, 1, (1, 1)), (5, 17, (1, 16)), (3, 3, (3, 3))])
def test_register_tile(oh, ow, tile):
    assert register_tile(oh, ow) == tile


@pytest.mark.parametrize("oh,ow,tile", [(56, 56, (1, 4)), (112, 112, (1, 4)), (55, 55, (1, 5)), (27, 27, (1, 6)),
                                        (7, 7, (1, 6)), (3, 3, (2, 3)), (1, 1, (1, 1))])
def test_register_tile_with_16_ymm(oh, ow, tile):
    """AVX2 (Target.nchwc_tile_outputs: 4-6 outputs of a 16-lane block, 2 ymm each)."""
    assert register_tile(oh, ow, (4, 6)) == tile


def test_blocked_conv_tile_is_one_vector_per_accumulator():
    """The schedule's output-channel loop reaches LLVM as one whole vector (not unrolled
    first), so the optimized micro-kernel is vector FMAs, no scalar multiplies."""
    x_s, w_s, y_s = (1, 2, 9, 16, 16), (2, 2, 3, 3, 16, 16), (1, 2, 7, 14, 16)
    text = f"""func.func @main(%x: {_t(x_s)}, %w: {_t(w_s)}) -> {_t(y_s)} {{
  %y = graph.conv2d_nchwc %x, %w : ({_t(x_s)}, {_t(w_s)}) -> {_t(y_s)}
  func.return %y : {_t(y_s)}
}}"""
    compiled = dlc.compile(text, num_threads=1)
    assert "llvm.loop.unroll.disable" in compiled.llvm_ir
    kernel = next(f for f in compiled.optimized_llvm_ir.split("\ndefine ") if "conv2d_nchwc" in f.split("\n")[0]
                  and "fmuladd" in f)
    assert kernel.count("@llvm.fmuladd.v16f32(") >= 14  # the 1 x 14 register tile
    assert "@llvm.fmuladd.f32(" not in kernel and "fmul float" not in kernel


# -- pools, global pools and concat carried in the blocked layout ---------------------------------


def _conv_then(c_in: int, c: int, hw: tuple[int, int], tail: str, tail_t: tuple[int, ...]) -> tuple[str, dict]:
    """x -> 1x1 conv to ``c`` channels -> relu -> ``tail`` (reads %r, defines %y of shape tail_t)."""
    h, w = hw
    x_t, r_t, w_t = _t((1, c_in, h, w)), _t((1, c, h, w)), _t((c, c_in, 1, 1))
    text = f"""func.func @main(%x: {x_t}) -> {_t(tail_t)} {{
  %w = graph.weight "w" : {w_t}
  %c = graph.conv2d %x, %w : ({x_t}, {w_t}) -> {r_t}
  %r = graph.relu %c : ({r_t}) -> {r_t}
  {tail}
  func.return %y : {_t(tail_t)}
}}"""
    return text, {"w": RNG.normal(size=(c, c_in, 1, 1))}


def _pool_out(size, k, s, pad_b, pad_e, ceil):
    num = size + pad_b + pad_e - k
    out = (-(-num // s) if ceil else num // s) + 1
    return out - 1 if ceil and (out - 1) * s >= size + pad_b else out


# (channels, h, w, kernel, stride, padding [t, l, b, r], ceil_mode, count_include_pad)
POOL_CASES = [(16, 7, 5, 3, 2, (1, 1, 1, 1), False, False), (17, 7, 5, 3, 2, (0, 0, 0, 0), True, False),
              (48, 9, 9, 3, 2, (1, 0, 1, 2), True, True), (3, 1, 1, 1, 1, (0, 0, 0, 0), False, False),
              (16, 8, 8, 2, 2, (0, 0, 0, 0), False, False), (33, 6, 11, 3, 1, (1, 1, 1, 1), False, True)]


def _pool_module(kind, c, h, w, k, s, pads, ceil, include):
    oh, ow = _pool_out(h, k, s, pads[0], pads[2], ceil), _pool_out(w, k, s, pads[1], pads[3], ceil)
    attrs = (f"kernel = array<i64: {k}, {k}>, strides = array<i64: {s}, {s}>, "
             f"padding = array<i64: {', '.join(map(str, pads))}>" + (", ceil_mode = 1 : i64" if ceil else "")
             + (", count_include_pad = 1 : i64" if include else ""))
    tail = f"%y = graph.{kind} %r {{{attrs}}} : ({_t((1, c, h, w))}) -> {_t((1, c, oh, ow))}"
    return _conv_then(5, c, (h, w), tail, (1, c, oh, ow))


@pytest.mark.parametrize("kind", ["max_pool2d", "avg_pool2d"])
@pytest.mark.parametrize("case", POOL_CASES)
def test_pool_carried_in_blocked_layout(kind, case):
    text, weights = _pool_module(kind, *case)
    x = RNG.normal(size=(1, 5, case[1], case[2])).astype(np.float32)
    module = _module(text, weights)
    expected = evaluate(module, [x])[0]
    AlterOpLayoutPass().apply(make_context(), module)
    module.verify()
    counts = _counts(module)
    assert counts[f"graph.{kind}"] == 0 and counts[f"graph.{kind}_nchwc"] == 1
    assert [dst for _, dst in _transforms(module)] == ["NCHW5c", "NCHW"]  # in, and out after the pool
    np.testing.assert_allclose(evaluate(module, [x])[0], expected, rtol=1e-5, atol=1e-5)
    compiled = dlc.compile(_module(text, weights), layout="NCHWc", num_threads=2)
    np.testing.assert_allclose(compiled(x)[0], expected, rtol=1e-5, atol=1e-5)


def test_blocked_pool_keeps_padded_channels_zero():
    """17 channels: 15 padded lanes in the second block, which the next conv reads."""
    text, _ = _pool_module("avg_pool2d", 17, 5, 5, 3, 1, (1, 1, 1, 1), False, False)
    module = _module(text, {"w": RNG.normal(size=(17, 5, 1, 1))})
    AlterOpLayoutPass().apply(make_context(), module)
    pool = next(op for op in module.walk() if op.name == "graph.avg_pool2d_nchwc")
    blocked = RNG.normal(size=(1, 2, 5, 5, 16)).astype(np.float32)
    blocked[:, 1, :, :, 1:] = 0
    out = pool.reference(blocked)[0]
    assert not out[:, 1, :, :, 1:].any()


@pytest.mark.parametrize("kind,blocked_op", [("global_avg_pool", "avg_pool2d_nchwc"), ("global_max_pool", "max_pool2d_nchwc"),
                                              ("reduce_sum", "reduce_sum")])
@pytest.mark.parametrize("c,h,w", [(20, 7, 5), (16, 1, 1), (48, 3, 7), (17, 11, 13)])
def test_global_pool_carried_in_blocked_layout(kind, blocked_op, c, h, w):
    """legalize's global pools (reduce_mean/max over H, W) become blocked pools with an
    H x W window (13 x 11: more taps than the kernel unrolls); other spatial reductions
    reduce the blocked tensor."""
    attrs = " {axes = array<i64: 2, 3>, keepdims = 1 : i64}" if kind == "reduce_sum" else ""
    tail = f"%y = graph.{kind} %r{attrs} : ({_t((1, c, h, w))}) -> {_t((1, c, 1, 1))}"
    text, weights = _conv_then(5, c, (h, w), tail, (1, c, 1, 1))
    x = RNG.normal(size=(1, 5, h, w)).astype(np.float32)
    expected = evaluate(_module(text, weights), [x])[0]
    module = _module(text, weights)
    for name in graph_passes("NCHWc"):
        if name != "fuse-ops":
            _run(name, module)
    blocked = [op for op in module.walk() if op.name == f"graph.{blocked_op}"]
    assert [op.results[0].type.get_shape() for op in blocked] == [(1, -(-c // 16), 1, 1, 16)]
    assert [dst for _, dst in _transforms(module)] == ["NCHW5c", "NCHW"]
    np.testing.assert_allclose(evaluate(module, [x])[0], expected, rtol=1e-5, atol=1e-5)
    compiled = dlc.compile(_module(text, weights), layout="NCHWc", num_threads=2)
    np.testing.assert_allclose(compiled(x)[0], expected, rtol=1e-5, atol=1e-5)


def _run(name, module):
    from dlc.passes import available_passes

    available_passes()[name]()().apply(make_context(), module)


def _concat_module(c1: int, c2: int, h: int, w: int, second_plain: bool = False):
    """Two 1x1 convs (c1, c2 channels; or the plain input as the second operand) -> concat
    -> 1x1 conv to 16 channels."""
    x_t, a_t, b_t = _t((1, 5, h, w)), _t((1, c1, h, w)), _t((1, c2, h, w))
    cat_t, y_t = _t((1, c1 + c2, h, w)), _t((1, 16, h, w))
    second = ("%b = graph.relu %x2 : ({b_t}) -> {b_t}" if second_plain else
              "%b = graph.conv2d %x, %w2 : ({x_t}, {w2_t}) -> {b_t}")
    text = f"""func.func @main(%x: {x_t}, %x2: {b_t}) -> {y_t} {{
  %w1 = graph.weight "w1" : {_t((c1, 5, 1, 1))}
  %w2 = graph.weight "w2" : {_t((c2, 5, 1, 1))}
  %w3 = graph.weight "w3" : {_t((16, c1 + c2, 1, 1))}
  %a = graph.conv2d %x, %w1 : ({x_t}, {_t((c1, 5, 1, 1))}) -> {a_t}
  {second.format(b_t=b_t, x_t=x_t, w2_t=_t((c2, 5, 1, 1)))}
  %cat = graph.concat %a, %b {{axis = 1 : i64}} : ({a_t}, {b_t}) -> {cat_t}
  %y = graph.conv2d %cat, %w3 : ({cat_t}, {_t((16, c1 + c2, 1, 1))}) -> {y_t}
  func.return %y : {y_t}
}}"""
    weights = {"w1": RNG.normal(size=(c1, 5, 1, 1)), "w2": RNG.normal(size=(c2, 5, 1, 1)),
               "w3": RNG.normal(size=(16, c1 + c2, 1, 1))}
    inputs = [RNG.normal(size=(1, 5, h, w)).astype(np.float32), RNG.normal(size=(1, c2, h, w)).astype(np.float32)]
    return text, weights, inputs


@pytest.mark.parametrize("c1,c2,h,w,second_plain,carried,transforms", [
    (16, 32, 7, 5, False, True, ["NCHW5c", "NCHW"]),  # blocks joined: one transform in, one out
    (48, 16, 1, 1, True, True, ["NCHW5c", "NCHW16c", "NCHW"]),  # the plain operand is blocked
    (16, 17, 7, 5, False, False, ["NCHW5c", "NCHW", "NCHW", "NCHW16c", "NCHW"]),  # 17: plain concat
    (20, 12, 3, 2, False, False, ["NCHW5c", "NCHW", "NCHW", "NCHW16c", "NCHW"]),  # 20 + 12 = 32: still plain
])
def test_channel_concat(c1, c2, h, w, second_plain, carried, transforms):
    text, weights, inputs = _concat_module(c1, c2, h, w, second_plain)
    module = _module(text, weights)
    expected = evaluate(module, inputs)[0]
    AlterOpLayoutPass().apply(make_context(), module)
    module.verify()
    concat = next(op for op in module.walk() if op.name == "graph.concat")
    assert len(concat.results[0].type.get_shape()) == (5 if carried else 4)
    assert [dst for _, dst in _transforms(module)] == transforms
    np.testing.assert_allclose(evaluate(module, inputs)[0], expected, rtol=1e-4, atol=1e-4)
    compiled = dlc.compile(_module(text, weights), layout="NCHWc", num_threads=2)
    np.testing.assert_allclose(compiled(*inputs)[0], expected, rtol=1e-4, atol=1e-4)


def test_blocked_pool_with_fused_per_channel_epilogue():
    """fuse-ops joins a per-channel mul and a relu to the blocked pool's kernel (20 channels)."""
    text, weights = _conv_then(5, 20, (9, 7), """%p = graph.avg_pool2d %r {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x20x9x7xf32>) -> tensor<1x20x5x4xf32>
  %s = graph.weight "s" : tensor<20x1x1xf32>
  %m = graph.mul %p, %s : (tensor<1x20x5x4xf32>, tensor<20x1x1xf32>) -> tensor<1x20x5x4xf32>
  %y = graph.relu %m : (tensor<1x20x5x4xf32>) -> tensor<1x20x5x4xf32>""", (1, 20, 5, 4))
    weights["s"] = RNG.normal(size=(20, 1, 1))
    x = RNG.normal(size=(1, 5, 9, 7)).astype(np.float32)
    expected = evaluate(_module(text, weights), [x])[0]
    compiled = dlc.compile(_module(text, weights), layout="NCHWc", num_threads=2)
    assert "avg_pool2d_nchwc_mul_relu" in compiled.llvm_ir
    np.testing.assert_allclose(compiled(x)[0], expected, rtol=1e-5, atol=1e-5)


def _kernel_ir(compiled, name_part: str) -> str:
    return "\n".join(f for f in compiled.optimized_llvm_ir.split("\ndefine ") if name_part in f.split("\n")[0])


@pytest.mark.parametrize("body,kernel", [  # ({x_t}, {s_t}, {p_t}: replaced by the types below)
    ("%y = graph.max_pool2d_nchwc %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : ({x_t}) -> {p_t}",
     "max_pool2d_nchwc"),
    ("%y = graph.avg_pool2d_nchwc %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : ({x_t}) -> {p_t}",
     "avg_pool2d_nchwc"),
    ("%m = graph.mul %x, %s : ({x_t}, {s_t}) -> {x_t}\n  %y = graph.relu %m : ({x_t}) -> {x_t}", "mul_relu"),
], ids=["max_pool", "avg_pool", "mul_relu"])
def test_blocked_kernels_vectorize_over_the_channel_block(body, kernel):
    """Blocked pools and elementwise kernels over NCHW16c: one 16-lane vector per channel
    block, no gathers (LLVM unrolling the block loop and vectorizing the column loop)."""
    x_t, s_t, p_t = _t((1, 3, 13, 11, 16)), _t((1, 3, 1, 1, 16)), _t((1, 3, 7, 6, 16))
    y_t = x_t if kernel == "mul_relu" else p_t
    text = f"""func.func @main(%x: {x_t}, %s: {s_t}) -> {y_t} {{
  {body.replace("{x_t}", x_t).replace("{s_t}", s_t).replace("{p_t}", p_t)}
  func.return %y : {y_t}
}}"""
    x, s = RNG.normal(size=(1, 3, 13, 11, 16)).astype(np.float32), RNG.normal(size=(1, 3, 1, 1, 16)).astype(np.float32)
    compiled = dlc.compile(text, num_threads=1)
    ir = _kernel_ir(compiled, kernel)
    assert "<16 x float>" in ir and "gather" not in ir
    np.testing.assert_allclose(compiled(x, s)[0], evaluate(_module(text), [x, s])[0], rtol=1e-6, atol=1e-6)


# (blocked input shape, kernel, stride, padding, ceil_mode, dilation): a 3-lane block, 1x1,
# a window of more than 64 taps (a loop nest, not unrolled) with ceil mode, dilation
BLOCKED_POOL_KERNEL_CASES = [((1, 1, 7, 5, 3), 3, 1, 1, False, 1), ((2, 2, 1, 1, 16), 1, 1, 0, False, 1),
                             ((1, 1, 17, 17, 8), 9, 3, 0, True, 1), ((1, 2, 11, 9, 16), 3, 2, 1, False, 2)]


@pytest.mark.parametrize("shape,k,s,p,ceil,d", BLOCKED_POOL_KERNEL_CASES)
@pytest.mark.parametrize("kind", ["max_pool2d_nchwc", "avg_pool2d_nchwc"])
def test_blocked_pool_kernel_matches_reference(shape, k, s, p, ceil, d, kind):
    n, cb, h, w, b = shape
    span = d * (k - 1) + 1
    out = (n, cb, _pool_out(h, span, s, p, p, ceil), _pool_out(w, span, s, p, p, ceil), b)
    attrs = (f"kernel = array<i64: {k}, {k}>, strides = array<i64: {s}, {s}>, dilations = array<i64: {d}, {d}>, "
             f"padding = array<i64: {p}, {p}, {p}, {p}>" + (", ceil_mode = 1 : i64" if ceil else ""))
    text = f"""func.func @main(%x: {_t(shape)}) -> {_t(out)} {{
  %y = graph.{kind} %x {{{attrs}}} : ({_t(shape)}) -> {_t(out)}
  func.return %y : {_t(out)}
}}"""
    x = RNG.normal(size=shape).astype(np.float32)
    expected = evaluate(_module(text), [x])[0]
    np.testing.assert_allclose(dlc.compile(text, num_threads=2)(x)[0], expected, rtol=1e-6, atol=1e-6)
