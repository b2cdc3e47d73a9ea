"""Execution tests of lower-to-llvm + llvmlite JIT on hand-written loop-level IR.

Each test compiles kernels + a host function with ``dlc.driver.compile`` and
compares with numpy: odd shapes (primes, 1, broadcasting), f32 within 1e-5
relative, integers exact.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from xdsl.parser import Parser

from dlc.context import make_context
from dlc.driver import CompileError, compile
from dlc.runtime import DlcRuntimeError
from dlc.weights import WeightStore, attach
from elementwise_ir import elementwise_module

RTOL = 1e-5


def build(text: str, weights: dict[str, np.ndarray] | None = None, **options):
    module = Parser(make_context(), text).parse_module()
    if weights:
        attach(module, WeightStore(weights))
    return compile(module, **options)


def unary_module(shape, in_elem: str, out_elem: str, body: str) -> str:
    """One kernel ``y[idx] = body(x[idx])`` (``%v`` in, ``%r`` out) + host @main."""
    return elementwise_module(shape, [("x", "v", in_elem)], [("y", "r", out_elem)], body)


def binary_module(shape, elem: str, out_elem: str, body: str) -> str:
    """One kernel ``y[idx] = body(a[idx], b[idx])`` (``%u``, ``%w`` in, ``%r`` out) + host @main."""
    return elementwise_module(shape, [("a", "u", elem), ("b", "w", elem)], [("y", "r", out_elem)], body)


RNG = np.random.default_rng(1234)


# ---------------------------------------------------------------------------
# float math
# ---------------------------------------------------------------------------

def _round_half_away(x):
    x = x.astype(np.float64)
    return (np.sign(x) * np.floor(np.abs(x) + 0.5)).astype(np.float32)


UNARY_FLOAT = {
    "math.exp": (np.exp, (-5, 5)),
    "math.log": (np.log, (0.01, 50)),
    "math.sqrt": (np.sqrt, (0, 50)),
    "math.rsqrt": (lambda x: 1 / np.sqrt(x), (0.01, 50)),
    "math.tanh": (np.tanh, (-4, 4)),
    "math.erf": (np.vectorize(math.erf, otypes=[np.float64]), (-3, 3)),
    "math.floor": (np.floor, (-9, 9)),
    "math.ceil": (np.ceil, (-9, 9)),
    "math.roundeven": (np.rint, (-9, 9)),
    "math.round": (_round_half_away, (-9, 9)),
    "math.sin": (np.sin, (-6, 6)),
    "math.cos": (np.cos, (-6, 6)),
    "math.absf": (np.abs, (-9, 9)),
    "arith.negf": (np.negative, (-9, 9)),
}


@pytest.mark.parametrize("op", sorted(UNARY_FLOAT))
def test_unary_float_math(op):
    fn, (lo, hi) = UNARY_FLOAT[op]
    shape = (7, 13)
    m = build(unary_module(shape, "f32", "f32", f"%r = {op} %v : f32"))
    x = RNG.uniform(lo, hi, shape).astype(np.float32)
    if op in ("math.roundeven", "math.round"):
        x[0, :4] = [0.5, 1.5, -2.5, 2.5]  # ties decide between the two roundings
    (y,) = m(x)
    np.testing.assert_allclose(y, fn(x).astype(np.float32), rtol=RTOL, atol=1e-6)


def test_f64_and_f16_math():
    m = build(unary_module((5,), "f64", "f64", "%r = math.tanh %v : f64"))
    x = RNG.uniform(-3, 3, 5)
    np.testing.assert_allclose(m(x)[0], np.tanh(x), rtol=1e-12)
    # f16: libm has no half functions, the backend computes in f32
    m = build(unary_module((11,), "f16", "f16", "%r = math.erf %v : f16"))
    h = RNG.uniform(-2, 2, 11).astype(np.float16)
    expected = np.vectorize(math.erf)(h.astype(np.float64)).astype(np.float16)
    np.testing.assert_allclose(m(h)[0].astype(np.float32), expected.astype(np.float32), rtol=2e-3, atol=1e-3)


BINARY_FLOAT = {
    "arith.addf": np.add,
    "arith.subf": np.subtract,
    "arith.mulf": np.multiply,
    "arith.divf": np.divide,
    "arith.maximumf": np.maximum,
    "arith.minimumf": np.minimum,
    "math.powf": np.power,
}


@pytest.mark.parametrize("op", sorted(BINARY_FLOAT))
def test_binary_float(op):
    shape = (3, 1, 17)
    m = build(binary_module(shape, "f32", "f32", f"%r = {op} %u, %w : f32"))
    a = RNG.uniform(0.5, 4, shape).astype(np.float32)
    b = RNG.uniform(0.5, 4, shape).astype(np.float32) * np.where(RNG.random(shape) < 0.5, -1, 1).astype(np.float32)
    if op == "math.powf":
        b = np.abs(b)
    (y,) = m(a, b)
    np.testing.assert_allclose(y, BINARY_FLOAT[op](a, b), rtol=RTOL)


def test_maximumf_propagates_nan():
    m = build(binary_module((4,), "f32", "f32", "%r = arith.maximumf %u, %w : f32"))
    a = np.array([np.nan, 1, 2, -np.inf], np.float32)
    b = np.array([0, np.nan, 3, -1], np.float32)
    np.testing.assert_array_equal(m(a, b)[0], np.maximum(a, b))


def test_fma_and_cmpf_select():
    body = """
      %m = math.fma %u, %w, %u : f32
      %c = arith.cmpf ogt, %u, %w : f32
      %r = arith.select %c, %m, %w : f32"""
    m = build(binary_module((19,), "f32", "f32", body))
    a, b = RNG.standard_normal(19).astype(np.float32), RNG.standard_normal(19).astype(np.float32)
    expected = np.where(a > b, (a.astype(np.float64) * b + a).astype(np.float32), b)
    np.testing.assert_allclose(m(a, b)[0], expected, rtol=RTOL)


# ---------------------------------------------------------------------------
# integers (exact)
# ---------------------------------------------------------------------------

def _c_div(a, b):
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q).astype(a.dtype)


BINARY_INT = {
    "arith.addi": np.add,
    "arith.subi": np.subtract,
    "arith.muli": np.multiply,
    "arith.divsi": _c_div,
    "arith.remsi": np.fmod,
    "arith.floordivsi": np.floor_divide,
    "arith.ceildivsi": lambda a, b: -np.floor_divide(-a, b),
    "arith.maxsi": np.maximum,
    "arith.minsi": np.minimum,
    "arith.andi": np.bitwise_and,
    "arith.ori": np.bitwise_or,
    "arith.xori": np.bitwise_xor,
}


@pytest.mark.parametrize("elem,dtype", [("i32", np.int32), ("i64", np.int64), ("i8", np.int8)])
@pytest.mark.parametrize("op", sorted(BINARY_INT))
def test_binary_int(op, elem, dtype):
    shape = (2, 11)
    m = build(binary_module(shape, elem, elem, f"%r = {op} %u, %w : {elem}"))
    info = np.iinfo(dtype)
    hi = min(info.max, 1000)
    a = RNG.integers(-hi, hi, shape, dtype=dtype)
    b = RNG.integers(1, hi, shape, dtype=dtype) * RNG.choice([-1, 1], shape).astype(dtype)
    with np.errstate(over="ignore"):
        expected = BINARY_INT[op](a, b).astype(dtype)
    np.testing.assert_array_equal(m(a, b)[0], expected)


def test_unsigned_division_and_compare():
    body = """
      %q = arith.divui %u, %w : i8
      %c = arith.cmpi ult, %u, %w : i8
      %z = arith.constant 255 : i8
      %r = arith.select %c, %z, %q : i8"""
    # arith needs signless types: uint8 data travels as i8 bit patterns
    m = build(binary_module((9,), "i8", "i8", body))
    a = RNG.integers(0, 256, 9, dtype=np.uint8)
    b = RNG.integers(1, 256, 9, dtype=np.uint8)
    (y,) = m(a.view(np.int8), b.view(np.int8))
    np.testing.assert_array_equal(y.view(np.uint8), np.where(a < b, 255, a // b).astype(np.uint8))


def test_bit_counting():
    x = RNG.integers(0, 2**31 - 1, 7, dtype=np.int32)
    x[0] = 0
    for op, fn in (("ctpop", lambda v: bin(v).count("1")), ("ctlz", lambda v: 32 - v.bit_length()),
                   ("cttz", lambda v: (v & -v).bit_length() - 1 if v else 32)):
        m = build(unary_module((7,), "i32", "i32", f"%r = math.{op} %v : i32"))
        np.testing.assert_array_equal(m(x)[0], [fn(int(v)) for v in x], err_msg=op)


def test_absi_and_bool_output():
    m = build(unary_module((13,), "i32", "i32", "%r = math.absi %v : i32"))
    x = RNG.integers(-100, 100, 13, dtype=np.int32)
    np.testing.assert_array_equal(m(x)[0], np.abs(x))
    body = "%z = arith.constant 0 : i32\n%r = arith.cmpi sgt, %v, %z : i32"
    m = build(unary_module((13,), "i32", "i1", body))
    np.testing.assert_array_equal(m(x)[0], x > 0)


# ---------------------------------------------------------------------------
# casts
# ---------------------------------------------------------------------------

CASTS = [
    ("arith.sitofp", "i32", "f32", np.int32, np.float32),
    ("arith.uitofp", "ui8", "f32", np.uint8, np.float32),
    ("arith.uitofp", "ui64", "f64", np.uint64, np.float64),
    ("arith.fptosi", "f32", "i32", np.float32, np.int32),
    ("arith.fptoui", "f32", "ui8", np.float32, np.uint8),
    ("arith.extf", "f16", "f32", np.float16, np.float32),
    ("arith.truncf", "f64", "f32", np.float64, np.float32),
    ("arith.extsi", "i8", "i64", np.int8, np.int64),
    ("arith.extui", "ui8", "i32", np.uint8, np.int32),
    ("arith.trunci", "i64", "i16", np.int64, np.int16),
    ("arith.bitcast", "f32", "i32", np.float32, np.int32),
]


@pytest.mark.parametrize("op,src,dst,sdt,ddt", CASTS, ids=[f"{c[0]}-{c[1]}-{c[2]}" for c in CASTS])
def test_casts(op, src, dst, sdt, ddt):
    m = build(unary_module((3, 7), src, dst, f"%r = {op} %v : {src} to {dst}"))
    if np.dtype(sdt).kind == "f":
        x = RNG.uniform(0 if dst.startswith("ui") else -100, 200, (3, 7)).astype(sdt)
    elif sdt == np.uint64:
        x = RNG.integers(0, 2**63, (3, 7), dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    else:
        info = np.iinfo(sdt)
        x = RNG.integers(info.min, info.max, (3, 7), dtype=sdt, endpoint=True)
    (y,) = m(x)
    expected = x.view(ddt) if op == "arith.bitcast" else x.astype(ddt)
    if op == "arith.extui":
        expected = x.astype(np.uint32).astype(np.int32)
    np.testing.assert_array_equal(y, expected)


def test_index_cast_reads_the_loop_index():
    body = "%r = arith.index_cast %i1 : index to i32"
    m = build(unary_module((2, 5), "i32", "i32", body))
    np.testing.assert_array_equal(m(np.zeros((2, 5), np.int32))[0], np.tile(np.arange(5, dtype=np.int32), (2, 1)))


# ---------------------------------------------------------------------------
# control flow, scratch buffers, host functions, weights
# ---------------------------------------------------------------------------

GUARDED = """
builtin.module {
  func.func @main_0_scale(%x: memref<10xf32>, %y: memref<10xf32>) attributes {tloop.kernel} {
    tloop.for %o = 0 to 12 step 4 {
      tloop.for %i = 0 to 4 unrolled {
        %j = arith.addi %o, %i : index
        %n = arith.constant 10 : index
        %in = arith.cmpi slt, %j, %n : index
        scf.if %in {
          %v = memref.load %x[%j] : memref<10xf32>
          %z = arith.constant 0.0 : f32
          %neg = arith.cmpf olt, %v, %z : f32
          %r = scf.if %neg -> (f32) {
            %m = arith.negf %v : f32
            scf.yield %m : f32
          } else {
            %two = arith.constant 2.0 : f32
            %d = arith.mulf %v, %two : f32
            scf.yield %d : f32
          }
          memref.store %r, %y[%j] : memref<10xf32>
        }
      }
    }
    func.return
  }
  func.func @main(%x: memref<10xf32>, %y: memref<10xf32>) attributes {tloop.host, tloop.num_inputs = 1 : i64} {
    func.call @main_0_scale(%x, %y) : (memref<10xf32>, memref<10xf32>) -> ()
    func.return
  }
}
"""


def test_guarded_partial_tiles_and_if_with_results():
    m = build(GUARDED)
    x = RNG.standard_normal(10).astype(np.float32)
    np.testing.assert_allclose(m(x)[0], np.where(x < 0, -x, 2 * x), rtol=RTOL)
    assert "llvm.loop.unroll.full" in m.llvm_ir


MATMUL_HOST = """
builtin.module {
  func.func @main_0_matmul(%a: memref<5x7xf32>, %b: memref<7x3xf32>, %c: memref<5x3xf32>) attributes {tloop.kernel} {
    tloop.for %i = 0 to 5 {
      %acc = memref.alloca() : memref<3xf32>
      tloop.for %j = 0 to 3 {
        %z = arith.constant 0.0 : f32
        memref.store %z, %acc[%j] : memref<3xf32>
      }
      tloop.for %k = 0 to 7 {
        tloop.for %j = 0 to 3 vectorized {
          %x = memref.load %a[%i, %k] : memref<5x7xf32>
          %w = memref.load %b[%k, %j] : memref<7x3xf32>
          %s = memref.load %acc[%j] : memref<3xf32>
          %p = arith.mulf %x, %w : f32
          %t = arith.addf %s, %p : f32
          memref.store %t, %acc[%j] : memref<3xf32>
        }
      }
      tloop.for %j = 0 to 3 {
        %s = memref.load %acc[%j] : memref<3xf32>
        memref.store %s, %c[%i, %j] : memref<5x3xf32>
      }
    }
    func.return
  }
  func.func @main_1_add(%a: memref<5x3xf32>, %b: memref<3xf32>, %c: memref<5x3xf32>) attributes {tloop.kernel} {
    tloop.for %i = 0 to 5 parallel {
      tloop.for %j = 0 to 3 {
        %x = memref.load %a[%i, %j] : memref<5x3xf32>
        %y = memref.load %b[%j] : memref<3xf32>
        %s = arith.addf %x, %y : f32
        memref.store %s, %c[%i, %j] : memref<5x3xf32>
      }
    }
    func.return
  }
  func.func @main(%x: memref<5x7xf32>, %out: memref<5x3xf32>) attributes {tloop.host, tloop.num_inputs = 1 : i64} {
    %w = tloop.weight "fc.weight" : memref<7x3xf32>
    %bias = tloop.weight "fc.bias" : memref<3xf32>
    %arena = memref.alloc() : memref<128xi8>
    %off = arith.constant 64 : index
    %t = memref.view %arena[%off][] : memref<128xi8> to memref<5x3xf32>
    func.call @main_0_matmul(%x, %w, %t) : (memref<5x7xf32>, memref<7x3xf32>, memref<5x3xf32>) -> ()
    func.call @main_1_add(%t, %bias, %out) : (memref<5x3xf32>, memref<3xf32>, memref<5x3xf32>) -> ()
    memref.dealloc %arena : memref<128xi8>
    func.return
  }
}
"""


def test_host_with_weights_arena_view_and_scratch():
    from dlc.runtime.native import aligned

    w = aligned(RNG.standard_normal((7, 3)).astype(np.float32))
    b = RNG.standard_normal(3).astype(np.float32)
    m = build(MATMUL_HOST, {"fc.weight": w, "fc.bias": b})
    x = RNG.standard_normal((5, 7)).astype(np.float32)
    np.testing.assert_allclose(m(x)[0], x @ w + b, rtol=RTOL, atol=1e-6)
    # 64-byte aligned weights are bound by address, not copied: a change is seen by the
    # next call
    w[0, 0] += 1.0
    np.testing.assert_allclose(m(x)[0], x @ w + b, rtol=RTOL, atol=1e-6)
    assert m.input_specs == [("x", (5, 7), np.dtype(np.float32))]
    assert m.output_specs == [("out", (5, 3), np.dtype(np.float32))]


def test_two_modules_with_same_weight_names_coexist():
    w1, w2 = np.ones((7, 3), np.float32), np.full((7, 3), 2, np.float32)
    b = np.zeros(3, np.float32)
    m1 = build(MATMUL_HOST, {"fc.weight": w1, "fc.bias": b})
    m2 = build(MATMUL_HOST, {"fc.weight": w2, "fc.bias": b})
    x = np.ones((5, 7), np.float32)
    np.testing.assert_array_equal(m1(x)[0], np.full((5, 3), 7, np.float32))
    np.testing.assert_array_equal(m2(x)[0], np.full((5, 3), 14, np.float32))


def test_zero_dim_memref_and_size_one_dims():
    text = """
builtin.module {
  func.func @main_0_sum(%x: memref<1x5x1xf32>, %y: memref<f32>) attributes {tloop.kernel} {
    %z = arith.constant 0.0 : f32
    memref.store %z, %y[] : memref<f32>
    tloop.for %i = 0 to 5 {
      %c0 = arith.constant 0 : index
      %v = memref.load %x[%c0, %i, %c0] : memref<1x5x1xf32>
      %s = memref.load %y[] : memref<f32>
      %t = arith.addf %s, %v : f32
      memref.store %t, %y[] : memref<f32>
    }
    func.return
  }
  func.func @main(%x: memref<1x5x1xf32>, %y: memref<f32>) attributes {tloop.host, tloop.num_inputs = 1 : i64} {
    func.call @main_0_sum(%x, %y) : (memref<1x5x1xf32>, memref<f32>) -> ()
    func.return
  }
}
"""
    m = build(text)
    x = RNG.standard_normal((1, 5, 1)).astype(np.float32)
    (y,) = m(x)
    assert y.shape == ()
    np.testing.assert_allclose(y, x.sum(), rtol=RTOL)


# ---------------------------------------------------------------------------
# vectorization, errors
# ---------------------------------------------------------------------------


def test_vectorized_loop_gets_metadata_and_vector_code():
    m = build(binary_module((1024,), "f32", "f32", "%r = arith.addf %u, %w : f32").replace(
        "tloop.for %i0 = 0 to 1024 {", "tloop.for %i0 = 0 to 1024 vectorized {"))
    assert "llvm.loop.vectorize.width\", i32 8" in m.llvm_ir
    assert "x float>" in m.optimized_llvm_ir  # LLVM really vectorized it
    a, b = RNG.standard_normal(1024).astype(np.float32), RNG.standard_normal(1024).astype(np.float32)
    np.testing.assert_array_equal(m(a, b)[0], a + b)


def test_unknown_op_is_a_clear_compile_error():
    text = unary_module((4,), "f32", "f32", "%n = arith.constant 3 : i32\n%r = math.fpowi %v, %n : f32, i32")
    with pytest.raises(CompileError, match=r"lower-to-llvm: 'math.fpowi' is not supported .*\(in @main_0_op\)"):
        build(text)


def test_bad_call_arguments_are_clear_errors():
    m = build(unary_module((2, 3), "f32", "f32", "%r = math.absf %v : f32"))
    with pytest.raises(DlcRuntimeError, match=r"input 'x' has shape \(3, 2\), expected \(2, 3\)"):
        m(np.zeros((3, 2), np.float32))
    with pytest.raises(DlcRuntimeError, match="input 'x' has dtype float64, expected float32"):
        m(np.zeros((2, 3)))
    with pytest.raises(DlcRuntimeError, match="takes 1 inputs"):
        m()
    with pytest.raises(DlcRuntimeError, match="output buffer 'y'"):
        m(np.zeros((2, 3), np.float32), outputs=[np.zeros((2, 3))])


def test_outputs_buffer_reuse_and_non_contiguous_input():
    m = build(unary_module((2, 3), "f32", "f32", "%r = math.absf %v : f32"))
    x = -np.arange(12, dtype=np.float32).reshape(3, 4)[:2, :3]  # a strided view
    out = np.empty((2, 3), np.float32)
    (y,) = m(x, outputs=[out])
    assert y is out
    np.testing.assert_array_equal(out, np.abs(x))
