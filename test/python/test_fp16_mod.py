"""Regression tests: f64 -> f16 conversion and float graph.mod in compiled code.

Found by the ONNX conformance run: compiled f64 -> f16 casts (and every f16
mod, which computes in f64) hung, because LLVM lowers ``fptrunc double to
half`` to a ``__truncdfhf2`` call the JIT cannot resolve; float mod gave NaN
for a divisor of +-inf (0 * inf in ``a - trunc(a/b)*b``). Each compile+run
happens in a child process with a time limit, so a hang fails the test
instead of blocking the suite. Results are compared bit-for-bit (signed
zeros and NaNs included) with ``dlc.evaluator.evaluate`` and numpy.
"""

from __future__ import annotations

import pickle
import subprocess
import sys

import numpy as np
import pytest

TIME_LIMIT_S = 60

CHILD = r"""
import pickle, sys
from xdsl.parser import Parser
from dlc.context import make_context
from dlc.driver import compile
text, inputs = pickle.load(sys.stdin.buffer)
module = Parser(make_context(), text).parse_module()
outputs = compile(module)(*inputs)
sys.stdout.buffer.write(pickle.dumps([o.copy() for o in outputs]))
"""


def run_compiled(text: str, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """``dlc.compile(text)(*inputs)`` in a child process; fails on a hang or crash."""
    try:
        done = subprocess.run([sys.executable, "-c", CHILD], input=pickle.dumps((text, inputs)),
                              capture_output=True, timeout=TIME_LIMIT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"compiled code did not finish within {TIME_LIMIT_S}s (hang)")
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    return pickle.loads(done.stdout)


def evaluate(text: str, inputs: list[np.ndarray]) -> list[np.ndarray]:
    from xdsl.parser import Parser

    from dlc.context import make_context
    from dlc.evaluator import evaluate as evaluate_module

    return evaluate_module(Parser(make_context(), text).parse_module(), inputs)


def assert_bitwise_equal(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape
    same = (got == want) & (np.signbit(got) == np.signbit(want))
    same |= np.isnan(got) & np.isnan(want)
    assert same.all(), f"differs at {np.argwhere(~same).ravel().tolist()}: got {got[~same]}, want {want[~same]}"


def cast_text(n: int, src: str, dst: str) -> str:
    return f"""builtin.module {{ func.func @main(%x: tensor<{n}x{src}>) -> tensor<{n}x{dst}> {{
  %0 = graph.cast %x {{to = {dst}}} : (tensor<{n}x{src}>) -> tensor<{n}x{dst}>
  func.return %0 : tensor<{n}x{dst}> }} }}"""


def mod_text(shape_a: str, shape_b: str, shape_r: str, et: str) -> str:
    ta, tb, tr = (f"tensor<{s}{et}>" for s in (shape_a, shape_b, shape_r))
    return f"""builtin.module {{ func.func @main(%a: {ta}, %b: {tb}) -> {tr} {{
  %0 = graph.mod %a, %b : ({ta}, {tb}) -> {tr}
  func.return %0 : {tr} }} }}"""


def f64_to_f16_cases() -> np.ndarray:
    """Values where rounding f64 -> f32 -> f16 twice goes wrong, f16 denormals,
    overflow, signed zeros, inf and NaN, plus random values across the range."""
    half_ulp_ties = [1.0 + 2.0**-11, 1.0 + 2.0**-11 + 2.0**-40, 1.0 + 2.0**-11 - 2.0**-40,
                     1.0 + 3 * 2.0**-11, 1.0 + 2.0**-11 + 2.0**-30]
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 65504.0, 65519.99, 65520.0, 1e300, -1e-300,
               2.0**-24, 2.0**-25, 2.0**-25 + 2.0**-60, 3 * 2.0**-26, 6.1e-5, -7.0]
    rng = np.random.default_rng(7)
    randoms = rng.standard_normal(60) * np.exp2(rng.integers(-28, 18, 60))
    values = np.array(half_ulp_ties + [-v for v in half_ulp_ties] + special + list(randoms))
    return values[:97]  # a prime length


def test_cast_f64_to_f16_rounds_once():
    x = f64_to_f16_cases()
    got = run_compiled(cast_text(x.size, "f64", "f16"), [x])[0]
    with np.errstate(over="ignore"):
        want = x.astype(np.float16)  # numpy rounds f64 -> f16 directly, once
    assert_bitwise_equal(got, want)
    assert_bitwise_equal(got, evaluate(cast_text(x.size, "f64", "f16"), [x])[0])


def test_cast_f32_to_f16():
    with np.errstate(over="ignore"):
        x = f64_to_f16_cases().astype(np.float32)
        want = x.astype(np.float16)
    assert_bitwise_equal(run_compiled(cast_text(x.size, "f32", "f16"), [x])[0], want)


EDGE_A = [0.0, -0.0, 0.0, -0.0, -3.0, 3.0, -1.0, 1.0, np.inf, -np.inf, 1.0, 1.0, np.nan, 1.0,
          -4.0, 4.0, 5.5, -5.5, 7.0]
EDGE_B = [-2.0, 2.0, 2.0, -2.0, np.inf, np.inf, -np.inf, -np.inf, 2.0, 2.0, 0.0, -0.0, 2.0, np.nan,
          2.0, -2.0, 2.5, 2.5, -7.0]


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_mod_edge_cases(dtype):
    """C fmod: +-inf divisor gives a; zero results keep a's sign; 0 divisor, inf or NaN give NaN."""
    a, b = np.array(EDGE_A, dtype), np.array(EDGE_B, dtype)
    et = {np.float16: "f16", np.float32: "f32", np.float64: "f64"}[dtype]
    text = mod_text(f"{a.size}x", f"{a.size}x", f"{a.size}x", et)
    got = run_compiled(text, [a, b])[0]
    with np.errstate(invalid="ignore"):
        assert_bitwise_equal(got, np.fmod(a, b))
        assert_bitwise_equal(got, evaluate(text, [a, b])[0])


def test_mod_f16_mixed_sign_broadcast():
    rng = np.random.default_rng(3)
    a = (rng.standard_normal((3, 5, 7)) * 20).astype(np.float16)
    b = np.array([[3.5], [-1.25], [0.75], [-7.0], [2.0]], np.float16)
    text = mod_text("3x5x7x", "5x1x", "3x5x7x", "f16")
    got = run_compiled(text, [a, b])[0]
    assert_bitwise_equal(got, np.fmod(a, b))
    assert_bitwise_equal(got, evaluate(text, [a, b])[0])
