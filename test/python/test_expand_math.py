"""expand-math: polynomial exp/log/tanh/erf (and sigmoid through exp) compiled to
native code, checked against float64 numpy/math on wide ranges and edge cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dlc
from dlc.context import make_context
from dlc.transforms.expand_math import ExpandMathPass
from xdsl.parser import Parser

RNG = np.random.default_rng(7)
EDGES = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-40, 1.4e-45, 88.72, 88.73, -87.5,
         -103.9, -104.5, 1e-30, 3.4e38, -3.4e38, 0.625, -0.625, 0.6249, 1.0, 4.0, -4.0, 9.5]


def _inputs(op: str) -> np.ndarray:
    parts = [RNG.uniform(-1, 1, 3001), RNG.uniform(-12, 12, 3001), RNG.uniform(-120, 100, 3001), EDGES]
    if op == "log":  # positive values over the whole range, denormals included
        parts += [np.exp(RNG.uniform(-103, 88, 3001)), RNG.uniform(0.5, 2, 3001),
                  10 ** RNG.uniform(-45, -38, 307)]
    return np.concatenate([np.asarray(p, np.float64) for p in parts]).astype(np.float32)


REFERENCES = {
    "exp": np.exp,
    "log": np.log,
    "tanh": np.tanh,
    "erf": np.vectorize(math.erf, otypes=[np.float64]),
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
}


def _unary(op: str, n: int, dtype: str = "f32", shape: str | None = None) -> str:
    t = f"tensor<{shape or n}x{dtype}>"
    return f"""func.func @main(%x: {t}) -> {t} {{
  %y = graph.{op} %x : ({t}) -> {t}
  func.return %y : {t}
}}"""


def _check_close(y: np.ndarray, x: np.ndarray, reference, rel: float = 1e-5) -> None:
    with np.errstate(all="ignore"):
        exact = reference(x.astype(np.float64))
        expected = exact.astype(np.float32)
    # NaN and infinities exactly where float32 of the exact result has them
    np.testing.assert_array_equal(np.isnan(y), np.isnan(expected))
    np.testing.assert_array_equal(np.isinf(y), np.isinf(expected))
    np.testing.assert_array_equal(np.signbit(y[np.isinf(y)]), np.signbit(expected[np.isinf(y)]))
    finite = np.isfinite(expected)
    # relative error, with an absolute floor at the normal range (denormal results)
    err = np.abs(y[finite] - exact[finite]) / np.maximum(np.abs(exact[finite]), 1.1754944e-38)
    worst = int(np.argmax(err))
    assert err[worst] <= rel, (
        f"x={x[finite][worst]!r}: got {y[finite][worst]!r}, expected {exact[finite][worst]!r}")


@pytest.mark.parametrize("op", ["exp", "log", "tanh", "erf", "sigmoid"])
def test_expanded_math_matches_float64_reference(op):
    x = _inputs(op)
    compiled = dlc.compile(_unary(op, x.size))
    ir = compiled.llvm_ir
    assert "@erff" not in ir and "@tanhf" not in ir and "llvm.exp.f32" not in ir and "llvm.log.f32" not in ir
    _check_close(compiled(x)[0], x, REFERENCES[op])


def test_expanded_kernel_is_vectorized():
    compiled = dlc.compile(_unary("tanh", 0, shape="3x67"))
    assert "<8 x float>" in compiled.optimized_llvm_ir or "<16 x float>" in compiled.optimized_llvm_ir
    x = RNG.uniform(-5, 5, (3, 67)).astype(np.float32)
    _check_close(compiled(x)[0], x, np.tanh)


def test_f16_is_computed_in_f32():
    x = np.concatenate([RNG.uniform(-11, 11, 1009), [0.0, np.inf, -np.inf, np.nan]]).astype(np.float16)
    compiled = dlc.compile(_unary("exp", x.size, "f16"))
    y = compiled(x)[0]
    with np.errstate(all="ignore"):
        expected = np.exp(x.astype(np.float64)).astype(np.float16)
    np.testing.assert_allclose(y.astype(np.float64), expected.astype(np.float64), rtol=1e-3)
    np.testing.assert_array_equal(np.isnan(y), np.isnan(expected))


def test_f64_keeps_the_exact_call():
    x = RNG.uniform(-3, 3, 31)
    compiled = dlc.compile(_unary("tanh", x.size, "f64"))
    assert '@"tanh"(' in compiled.llvm_ir
    np.testing.assert_allclose(compiled(x)[0], np.tanh(x), rtol=1e-15)


KERNEL = """builtin.module {
  func.func @k(%x: memref<5xf32>, %y: memref<5xf32>) attributes {tloop.kernel} {
    tloop.for %i = 0 to 5 {
      %v = memref.load %x[%i] : memref<5xf32>
      %e = math.exp %v : f32
      memref.store %e, %y[%i] : memref<5xf32>
    }
    func.return
  }
}"""


@pytest.mark.parametrize("fma", [True, False])
def test_pass_option_fma(fma):
    module = Parser(make_context(), KERNEL).parse_module()
    ExpandMathPass(fma=fma).apply(make_context(), module)
    names = {op.name for op in module.walk()}
    assert "math.exp" not in names
    assert ("math.fma" in names) == fma
    module.verify()
