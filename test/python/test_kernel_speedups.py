"""Speed-oriented kernel forms of the CNNs' non-conv kernels, checked for exactness on odd
shapes (primes, 1, tails):

* pools (lowering/kernels/pool.py ``_pool_rows``): windows unrolled into the output-column
  loop, row and column border segments, max as a tree of maxima, strided interior loops
  vectorized (``STRIDED_VECTOR_ATTR``); compiled results equal the reference and, bit for
  bit, the per-element NHWC kernel;
* the matrix-vector schedule (defaults_dense.py ``_schedule_skinny``): several B rows per
  pass over the C chunk, the same k order as one row per pass;
* parallel loops (lower_to_llvm.py): constants are re-created in the outlined function,
  not passed through the context struct; a pool's strided loop is forced to vectorize
  (``llvm.loop.vectorize.enable``) even when short.
"""

from __future__ import annotations

import numpy as np
import pytest

import dlc
from dlc.dialects import graph
from dlc.dialects.tloop import ForOp
from dlc.evaluator import evaluate
from dlc.lowering.lower_to_loops import lower_module
from dlc.lowering.schedule import defaults_dense
from dlc.lowering.schedule.defaults import apply_default_schedules
from dlc.lowering.schedule.defaults_elementwise import STRIDED_VECTOR_ATTR
from test_lower_to_loops import T, make_module

RNG = np.random.default_rng(11)

POOLS = [  # (input NCHW shape, attributes)
    ((1, 1, 1, 1), dict(kernel=[1, 1])),
    ((1, 2, 1, 1), dict(kernel=[3, 3], padding=[1, 1, 1, 1])),
    ((2, 3, 7, 5), dict(kernel=[3, 3], strides=[2, 2])),
    ((1, 5, 7, 5), dict(kernel=[2, 2], strides=[2, 2], ceil_mode=True)),
    ((1, 3, 13, 17), dict(kernel=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1])),
    ((1, 3, 13, 17), dict(kernel=[3, 3], strides=[3, 3], padding=[0, 1, 2, 2], ceil_mode=True)),
    ((1, 2, 13, 17), dict(kernel=[3, 2], strides=[1, 3], padding=[1, 0, 1, 1])),
    ((1, 2, 17, 13), dict(kernel=[3, 3], strides=[2, 2], dilations=[2, 2], padding=[2, 2, 2, 2])),
    ((1, 7, 27, 27), dict(kernel=[3, 3], strides=[1, 1], padding=[1, 1, 1, 1])),  # Inception branch
    ((1, 3, 31, 37), dict(kernel=[3, 3], strides=[2, 2])),  # SqueezeNet-like, long interior
    ((1, 2, 11, 9), dict(kernel=[9, 9], padding=[4, 4, 4, 4])),  # 81 taps: one pass per tap
]


def _pool_module(kind, shape, attrs, layout="NCHW"):
    op = graph.MaxPool2DOp if kind == "max" else graph.AvgPool2DOp
    extra = dict(count_include_pad=True) if kind == "avg_incl" else {}
    if layout == "NHWC":
        n, c, h, w = shape
        return make_module([T(n, h, w, c)], lambda a: op.make(a, layout="NHWC", **attrs, **extra))
    return make_module([T(*shape)], lambda a: op.make(a, **attrs, **extra))


@pytest.mark.parametrize("kind", ["max", "avg", "avg_incl"])
@pytest.mark.parametrize("shape, attrs", POOLS)
def test_pool_exact_on_odd_shapes(kind, shape, attrs):
    x = RNG.standard_normal(shape).astype(np.float32)
    module = _pool_module(kind, shape, attrs)
    want = evaluate(module, [x])[0]
    got = dlc.compile(module, num_threads=2)(x)[0]
    if kind == "max":
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    # the per-element kernel (NHWC keeps it) takes the same taps in the same order
    nhwc = dlc.compile(_pool_module(kind, shape, attrs, "NHWC"), num_threads=1)
    per_element = nhwc(np.ascontiguousarray(x.transpose(0, 2, 3, 1)))[0].transpose(0, 3, 1, 2)
    np.testing.assert_array_equal(got, per_element)


def test_max_pool_tree_keeps_nan_and_signed_zero():
    # max is exact in any order only with NaN propagation and max(-0, +0) = +0 kept
    x = np.full((1, 2, 7, 9), -0.0, np.float32)
    x[0, 1, 2:5, 3:6] = 0.0
    x[0, 0, 4, 4] = np.nan
    x[0, 1, 6, 8] = -1.0
    attrs = dict(kernel=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1])
    module = _pool_module("max", x.shape, attrs)
    got = dlc.compile(module)(x)[0]
    want = evaluate(module, [x])[0]  # numpy: NaN positions and values (its zero signs are arbitrary)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.nan_to_num(got), np.nan_to_num(want))
    # the per-element kernel's chain of maximumf: the same zero signs (max(-0, +0) = +0)
    chain = dlc.compile(_pool_module("max", x.shape, attrs, "NHWC"))(
        np.ascontiguousarray(x.transpose(0, 2, 3, 1)))[0].transpose(0, 3, 1, 2)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(chain))
    zeros = got[got == 0]
    assert np.isnan(got).any() and np.signbit(zeros).any() and not np.signbit(zeros).all()


def test_int8_max_pool_exact():
    from xdsl.dialects.builtin import i8

    x = RNG.integers(-128, 128, (1, 3, 13, 11)).astype(np.int8)
    module = make_module([T(1, 3, 13, 11, et=i8)], lambda a: graph.MaxPool2DOp.make(
        a, kernel=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1]))
    np.testing.assert_array_equal(dlc.compile(module)(x)[0].view(np.int8), evaluate(module, [x])[0])


def _scheduled(module):
    lower_module(module, flat_conv=True)  # the CPU kernel forms (the driver's)
    apply_default_schedules(module)
    return [op for op in module.walk() if isinstance(op, ForOp)]


def test_strided_pool_interior_is_vectorized_and_channels_parallel():
    loops = _scheduled(_pool_module("max", (1, 64, 111, 111), dict(kernel=[3, 3], strides=[2, 2])))
    tagged = [op for op in loops if STRIDED_VECTOR_ATTR in op.attributes]
    assert len(tagged) == 1 and tagged[0].loop_kind == "vectorized"
    assert (tagged[0].lower, tagged[0].upper) == (0, 55)
    assert [op.loop_kind for op in loops if op.body.block.args[0].name_hint == "c"] == ["parallel"]
    # the window is unrolled: no kh / kw loops remain
    assert not [op for op in loops if op.body.block.args[0].name_hint.startswith("k")]


def test_unit_stride_pool_is_not_tagged():
    loops = _scheduled(_pool_module("avg", (1, 4, 13, 13), dict(kernel=[3, 3], padding=[1, 1, 1, 1])))
    assert not [op for op in loops if STRIDED_VECTOR_ATTR in op.attributes]
    interior = [op for op in loops if (op.lower, op.upper) == (1, 12) and not any(
        isinstance(o, ForOp) for o in op.body.block.ops)]
    assert interior and all(op.loop_kind == "vectorized" for op in interior)


# -- matrix-vector (dense layers at batch 1) ------------------------------------------------

def _t(shape) -> str:
    return "tensor<" + "x".join(str(d) for d in shape) + "xf32>"


def _matmul_text(a_shape, b_shape, out_shape) -> str:
    return (f"func.func @main(%a: {_t(a_shape)}, %b: {_t(b_shape)}) -> {_t(out_shape)} {{\n"
            f"  %c = graph.matmul %a, %b : ({_t(a_shape)}, {_t(b_shape)}) -> {_t(out_shape)}\n"
            f"  func.return %c : {_t(out_shape)}\n}}")


@pytest.mark.parametrize("m, k, n", [(1, 1031, 257), (1, 997, 1), (1, 1024, 1000), (2, 96, 131),
                                     (3, 13, 521), (1, 8, 16), (1, 7, 12)])
def test_gemv_matches_numpy_and_one_row_per_pass(m, k, n, monkeypatch):
    text = _matmul_text((m, k), (k, n), (m, n))
    a = RNG.standard_normal((m, k)).astype(np.float32)
    b = RNG.standard_normal((k, n)).astype(np.float32)
    got = dlc.compile(text, num_threads=2)(a, b)[0]
    np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4 * np.sqrt(k))
    # the same k order as one row per pass; `contract` lets LLVM fuse a mul + add where it
    # sees fit, so an unfused pair may round differently (an ulp per step at most)
    monkeypatch.setattr(defaults_dense, "SKINNY_ROWS_PER_PASS", 1)
    one_row = dlc.compile(text, num_threads=2)(a, b)[0]
    np.testing.assert_allclose(got, one_row, rtol=1e-6, atol=1e-6 * np.sqrt(k))


def test_gemv_dense_layer_with_epilogue():
    # AlexNet-like FC (dense + bias + relu, fused) on prime sizes
    k, n = 1031, 263
    x = RNG.standard_normal((1, k)).astype(np.float32)
    w = RNG.standard_normal((n, k)).astype(np.float32)
    bias = RNG.standard_normal(n).astype(np.float32)
    text = (f"func.func @main(%x: {_t((1, k))}, %w: {_t((n, k))}, %b: {_t((n,))}) -> {_t((1, n))} {{\n"
            f"  %d = graph.dense %x, %w, %b : ({_t((1, k))}, {_t((n, k))}, {_t((n,))}) -> {_t((1, n))}\n"
            f"  %r = graph.relu %d : ({_t((1, n))}) -> {_t((1, n))}\n"
            f"  func.return %r : {_t((1, n))}\n}}")
    got = dlc.compile(text, num_threads=2)(x, w, bias)[0]
    want = np.maximum(x.astype(np.float64) @ w.T.astype(np.float64) + bias, 0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.sqrt(k))


@pytest.mark.parametrize("k, rows", [(9216, 8), (1031, 1), (1030, 5), (12, 6)])
def test_rows_per_pass_divides_k(k, rows):
    assert defaults_dense._skinny_rows_per_pass(k) == rows


# -- parallel loops keep their constants ----------------------------------------------------

def test_parallel_loop_context_carries_no_constants():
    module = _pool_module("max", (1, 64, 111, 111), dict(kernel=[3, 3], strides=[2, 2]))
    compiled = dlc.compile(module, num_threads=2)
    ir = compiled.llvm_ir
    assert "_par0" in ir
    contexts = [line for line in ir.splitlines() if "alloca {" in line]
    assert contexts, "the parallel loop's context struct"
    # only the two buffers travel: the stride, the -inf identity and the 1-trip batch index
    # are constants in the outlined function (LLVM sees a constant stride and vectorizes)
    assert all(line.split("alloca ")[1].startswith("{ptr, ptr}") for line in contexts), contexts
    x = RNG.standard_normal((1, 64, 111, 111)).astype(np.float32)
    np.testing.assert_array_equal(compiled(x)[0], evaluate(module, [x])[0])


def test_strided_pool_loop_is_forced_to_vectorize_when_short():
    # 13 output columns: LLVM leaves loops under 16 iterations scalar when they need runtime
    # alias checks, unless vectorization is forced (llvm.loop.vectorize.enable)
    module = _pool_module("max", (1, 5, 27, 27), dict(kernel=[3, 3], strides=[2, 2]))
    compiled = dlc.compile(module, num_threads=1)
    assert "llvm.loop.vectorize.enable" in compiled.llvm_ir
    x = RNG.standard_normal((1, 5, 27, 27)).astype(np.float32)
    np.testing.assert_array_equal(compiled(x)[0], evaluate(module, [x])[0])
    # unit-stride pools keep the plain width hint
    unit = dlc.compile(_pool_module("max", (1, 5, 27, 27), dict(kernel=[3, 3], padding=[1, 1, 1, 1])))
    assert "llvm.loop.vectorize.enable" not in unit.llvm_ir
