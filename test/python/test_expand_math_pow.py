"""expand-math's powf (f32/f16): exp(y log|x|) in f64 plus the C99 special cases,
compiled to native code and checked against float64 numpy rounded to f32."""

from __future__ import annotations

import numpy as np
import pytest

import dlc

SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 3.0, -3.0, np.inf, -np.inf, np.nan,
                    1e-45, -1e-45, 3e38, -8.0, 0.75, 1e-30, 7.0, 16777216.0, 16777218.0, -1e10, 1e10,
                    1.5, -1.5, 2.5, 1.0000001, 0.99999994, 127.0, -127.0, 150.0], np.float32)


def _compile(text: str, general_pow: bool = True):
    """dlc.compile, with expand-math{general-pow} run first on the loop IR (the
    driver's own expand-math run then finds nothing left)."""
    from dlc import driver
    from dlc.context import make_context
    from dlc.transforms.expand_math import ExpandMathPass

    module = driver._parse(text, None)
    for name in driver.graph_passes(None):
        driver.run_pass(name, module)
    driver.run_pass("lower-to-loops", module)
    driver._apply_default_schedules(module)
    ExpandMathPass(general_pow=general_pow).apply(make_context(), module)
    return dlc.compile(module)


def _pow_module(shape: str, dtype: str = "f32"):
    t = f"tensor<{shape}x{dtype}>"
    return _compile(f"""
func.func @main(%x: {t}, %y: {t}) -> {t} {{
  %z = graph.pow %x, %y : ({t}, {t}) -> {t}
  func.return %z : {t}
}}""")


def test_runtime_exponent_keeps_libm_by_default():
    t = "tensor<5xf32>"
    module = dlc.compile(f"""
func.func @main(%x: {t}, %y: {t}) -> {t} {{
  %z = graph.pow %x, %y : ({t}, {t}) -> {t}
  func.return %z : {t}
}}""")
    assert "llvm.pow.f32" in module.llvm_ir
    x = np.array([2, 3, 0.5, -2, 0], np.float32)
    np.testing.assert_array_equal(module(x, x)[0], _reference(x, x))


def _reference(x, y):
    with np.errstate(all="ignore"):
        return np.power(x.astype(np.float64), y.astype(np.float64)).astype(np.float32)


def _ulps(a, b):
    ia, ib = a.view(np.int32).astype(np.int64), b.view(np.int32).astype(np.int64)
    ia = np.where(ia < 0, -(ia & 0x7FFFFFFF), ia)  # monotonic integer order of floats
    ib = np.where(ib < 0, -(ib & 0x7FFFFFFF), ib)
    return np.abs(ia - ib)


def test_special_values_follow_c99():
    x, y = (g.ravel().copy() for g in np.meshgrid(SPECIAL, SPECIAL))
    module = _pow_module(str(x.size))
    assert "llvm.pow.f32" not in module.llvm_ir
    got, ref = module(x, y)[0], _reference(x, y)
    nan = np.isnan(ref)
    np.testing.assert_array_equal(np.isnan(got), nan)
    infinite = np.isinf(ref)
    np.testing.assert_array_equal(got[infinite], ref[infinite])
    finite = np.isfinite(ref)  # exact but for ties decided by f64 rounding (0.5^150: 0 or 1e-45)
    assert _ulps(got[finite], ref[finite]).max() <= 1
    assert (got[finite] == ref[finite]).mean() > 0.99
    zero_or_inf = ~nan & ((ref == 0) | infinite) & ((got == 0) | np.isinf(got))  # signs of odd powers
    np.testing.assert_array_equal(np.signbit(got[zero_or_inf]), np.signbit(ref[zero_or_inf]))


@pytest.mark.parametrize("count", [1, 13, 10007])
def test_random_within_one_ulp(count):
    rng = np.random.default_rng(count)
    x = np.exp(rng.uniform(-40, 40, count)).astype(np.float32)
    x[::3] *= -1  # negative bases: integer exponents below, NaN for the others
    y = rng.uniform(-6, 6, count).astype(np.float32)
    y[::3] = np.round(y[::3])
    got, ref = _pow_module(str(count))(x, y)[0], _reference(x, y)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    finite = np.isfinite(ref)
    np.testing.assert_array_equal(got[~finite & ~np.isnan(ref)], ref[~finite & ~np.isnan(ref)])
    assert _ulps(got[finite], ref[finite]).max() <= 1


def test_denormal_results_and_bases():
    x = np.array([1e-40, 3e-45, 2.0, 2.0, 0.5, 1e-20, 10.0], np.float32)
    y = np.array([0.5, 1.0, -130.0, -149.0, 149.5, 2.2, -44.9], np.float32)
    got, ref = _pow_module("7")(x, y)[0], _reference(x, y)
    assert _ulps(got, ref).max() <= 1


def test_scalar_exponent_broadcast_like_lrn():
    """LRN imports as (bias + alpha * avg)^beta with a scalar beta (frontends/onnx/ops_nn.py)."""
    rng = np.random.default_rng(5)
    x = (1.0 + rng.uniform(0, 3, (1, 7, 5, 3))).astype(np.float32)
    module = dlc.compile("""
func.func @main(%x: tensor<1x7x5x3xf32>) -> tensor<1x7x5x3xf32> {
  %b = graph.constant dense<0.75> : tensor<f32>
  %y = graph.pow %x, %b : (tensor<1x7x5x3xf32>, tensor<f32>) -> tensor<1x7x5x3xf32>
  func.return %y : tensor<1x7x5x3xf32>
}""")
    assert "llvm.pow.f32" not in module.llvm_ir  # the default pipeline rewrites a constant exponent
    got = module(x)[0]
    assert _ulps(got, _reference(x, np.float32(0.75))).max() <= 1


def test_f16_pow():
    rng = np.random.default_rng(2)
    x = rng.uniform(0.1, 4, 31).astype(np.float16)
    y = rng.uniform(-2, 2, 31).astype(np.float16)
    got = _pow_module("31", dtype="f16")(x, y)[0]
    ref = np.power(x.astype(np.float64), y.astype(np.float64)).astype(np.float16)
    np.testing.assert_allclose(got.astype(np.float64), ref.astype(np.float64), rtol=1e-3)


@pytest.mark.parametrize("c", [0.0, 1.0, 2.0, 3.0, -1.0, -2.0, 0.5, 0.25, 0.75, -0.5, 1.7])
def test_constant_exponent_special_forms(c):
    """A compile-time exponent (a constant weight every caller passes) becomes
    multiplications/square roots in the default pipeline; 1.7 keeps libm there."""
    rng = np.random.default_rng(11)
    x = np.concatenate([SPECIAL, np.exp(rng.uniform(-30, 30, 997)).astype(np.float32),
                        -rng.uniform(0, 5, 101).astype(np.float32)]).astype(np.float32)
    n = x.size
    module = dlc.compile(f"""
func.func @main(%x: tensor<{n}xf32>) -> tensor<{n}xf32> {{
  %b = graph.constant dense<{c!r}> : tensor<f32>
  %y = graph.pow %x, %b : (tensor<{n}xf32>, tensor<f32>) -> tensor<{n}xf32>
  func.return %y : tensor<{n}xf32>
}}""")
    assert ("llvm.pow.f32" in module.llvm_ir) == (c == 1.7)
    if c in (0.5, 0.25, 0.75, -0.5):
        assert "llvm.sqrt" in module.llvm_ir
    got, ref = module(x)[0], _reference(x, np.full_like(x, c))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    special = ~np.isfinite(ref) | (ref == 0)
    np.testing.assert_array_equal(got[special], ref[special])
    np.testing.assert_array_equal(np.signbit(got[special & ~np.isnan(ref)]), np.signbit(ref[special & ~np.isnan(ref)]))
    normal = np.isfinite(ref) & (np.abs(ref) > 1.2e-38)  # denormal results: absolute error
    assert _ulps(got[normal], ref[normal]).max() <= 2
