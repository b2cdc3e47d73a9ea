"""`expand-math`: exp, log, tanh, erf, atan, asin, acos and powf on f32/f16 -> arith
polynomial sequences.

``expand-math{fma=true general-pow=false}``

Why: LLVM lowers ``math.exp``/``math.log`` to the ``llvm.exp``/``llvm.log``
intrinsics and ``math.tanh``/``math.erf`` to libm calls (``tanhf``, ``erff``);
without fast-math both stay scalar calls inside vectorized loops, about 100x
slower than numpy. xDSL 0.75 has no math-expansion pass (MLIR's
``-math-polynomial-approximation`` is absent), so this one writes each op as
straight-line ``arith`` + ``math.fma``/``roundeven``/``copysign``/``absf``
(all map to vectorizable LLVM instructions), so the loop vectorizer turns a
whole kernel into SIMD code.

The sequences (Cephes-style range reduction, accurate to a few f32 ulp; the
tests check 1e-5 relative against numpy on wide ranges):

* ``exp(x)``: ``n = roundeven(x / ln2)``, ``r = x - n ln2`` (ln2 split in a
  high and a low part), ``e^r`` by a degree-6 polynomial, times ``2^n`` built
  from the exponent bits in two halves so that denormal results (down to
  ``x = -103.97``) and ``+inf`` above ``88.72`` come out right; NaN passes.
* ``log(x)``: denormals are first scaled by ``2^23``; ``x = m 2^e`` with
  ``m`` in ``[sqrt(1/2), sqrt 2)``, ``log(m)`` by Cephes' degree-9 polynomial
  in ``m - 1``; ``x < 0`` or NaN -> NaN, ``0`` -> ``-inf``, ``+inf`` -> ``+inf``.
* ``tanh(x)``: ``|x| < 0.625``: odd polynomial (Cephes); otherwise
  ``1 - 2 / (exp(2|x|) + 1)`` with the sign of ``x`` (both computed, one
  selected: branch-free, so it vectorizes).
* ``erf(x)``: the rational approximation of Eigen/XLA (odd degree-13 over even
  degree-8 polynomial) on ``x`` clamped to ``[-4, 4]``.
* ``atan(x)``: Cephes' atanf: ``|x|`` reduced to ``[0, tan(pi/8)]`` through
  ``pi/2 + atan(-1/|x|)`` or ``pi/4 + atan((|x|-1)/(|x|+1))``, odd degree-9
  polynomial, sign of ``x``.
* ``asin(x)``, ``acos(x)``: Cephes' asinf/acosf: an odd polynomial on
  ``|v| <= 0.5``; above, ``v = sqrt((1 - |x|) / 2)`` with ``asin = pi/2 - 2 asin(v)``,
  ``acos = 2 asin(v)`` (``pi -`` that for ``x < 0``); ``acos = pi/2 - asin(x)``
  in the middle. ``|x| > 1`` gives NaN through ``sqrt`` of a negative number.

* ``powf(x, c)`` with ``c`` known at compile time (an ``arith.constant``, or a
  kernel argument every caller binds to a weight whose elements all equal ``c``,
  as LRN's beta): ``c`` in 0, 1, 2, 3, -1, -2 by multiplications, 0.5, 0.25, 0.75,
  -0.5 by square roots (0.75: ``sqrt(x) * sqrt(sqrt(x))``, <= 1.5 ulp), with the
  C99 special cases (``(-0)^c``, ``(-inf)^c``); other exponents keep the libm call
  unless ``general-pow=true``: ``exp(y log|x|)`` in f64 (log by the atanh series,
  exp by a Taylor polynomial, 2^n from exponent bits; within 1 ulp) with C99's
  special cases as selects (sign of odd integer powers, NaN for x < 0 and
  non-integer y, ``x^0 = 1^y = 1``, ``(-1)^inf = 1``).

f16 is computed in f32 and rounded back; f64 is left alone (its libm/intrinsic
calls are exact and f64 kernels are rare). ``fma=false`` uses a separate
multiply and add (for hosts without FMA, where ``llvm.fma`` becomes a libcall).
Kernels (``tloop.kernel`` functions) and any other function are rewritten alike.
"""

from __future__ import annotations

import math as math_lib
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from xdsl.context import Context
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import (
    Float16Type,
    Float32Type,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    f32,
    f64,
    i1,
    i32,
    i64,
)
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)

EXPANDED = ("math.exp", "math.log", "math.tanh", "math.erf", "math.atan", "math.asin", "math.acos",
            "math.powf")


class _Emitter:
    """Collects the f32 ops of one expansion (Python numbers become constants)."""

    def __init__(self, use_fma: bool, float_type=f32, int_type=i32, ops: list[Operation] | None = None):
        self.ops: list[Operation] = [] if ops is None else ops
        self.use_fma = use_fma
        self.ft, self.it = float_type, int_type  # f32/i32, or f64/i64 (pow's inner math)
        self._constants: dict[tuple[str, float | int], SSAValue] = {}

    def wide(self) -> "_Emitter":
        """An f64/i64 emitter appending to the same op list."""
        return _Emitter(self.use_fma, f64, i64, self.ops)

    def emit(self, op: Operation) -> SSAValue:
        self.ops.append(op)
        return op.results[0]

    def f(self, value: float | SSAValue) -> SSAValue:
        if isinstance(value, SSAValue):
            return value
        key = ("f", float(value))
        if key not in self._constants:
            self._constants[key] = self.emit(arith.ConstantOp(FloatAttr(float(value), self.ft)))
        return self._constants[key]

    def i(self, value: int | SSAValue) -> SSAValue:
        if isinstance(value, SSAValue):
            return value
        key = ("i", int(value))
        if key not in self._constants:
            self._constants[key] = self.emit(arith.ConstantOp(IntegerAttr(int(value), self.it)))
        return self._constants[key]

    # float arithmetic
    def add(self, a, b):
        return self.emit(arith.AddfOp(self.f(a), self.f(b)))

    def sub(self, a, b):
        return self.emit(arith.SubfOp(self.f(a), self.f(b)))

    def mul(self, a, b):
        return self.emit(arith.MulfOp(self.f(a), self.f(b)))

    def div(self, a, b):
        return self.emit(arith.DivfOp(self.f(a), self.f(b)))

    def fma(self, a, b, c):
        """a * b + c (fused when allowed)."""
        if self.use_fma:
            return self.emit(math.FmaOp(self.f(a), self.f(b), self.f(c)))
        return self.add(self.mul(a, b), c)

    def horner(self, x, coefficients: Sequence[float]):
        """c0 x^(n-1) + ... + c(n-1), coefficients highest degree first."""
        acc = self.f(coefficients[0])
        for c in coefficients[1:]:
            acc = self.fma(acc, x, c)
        return acc

    def cmp(self, pred: str, a, b):
        return self.emit(arith.CmpfOp(self.f(a), self.f(b), pred))

    def select(self, cond, a, b):
        return self.emit(arith.SelectOp(cond, self.f(a), self.f(b)))

    def maximum(self, a, b):
        return self.emit(arith.MaximumfOp(self.f(a), self.f(b)))

    def minimum(self, a, b):
        return self.emit(arith.MinimumfOp(self.f(a), self.f(b)))

    def abs(self, a):
        return self.emit(math.AbsFOp(a))

    def copysign(self, magnitude, sign):
        return self.emit(math.CopySignOp(self.f(magnitude), self.f(sign)))

    def sqrt(self, a):
        return self.emit(math.SqrtOp(a))

    def roundeven(self, a):
        return self.emit(math.RoundEvenOp(a))

    # bits
    def bits(self, a):
        return self.emit(arith.BitcastOp(a, self.it))

    def float_of_bits(self, a):
        return self.emit(arith.BitcastOp(a, self.ft))

    def to_int(self, a):
        return self.emit(arith.FPToSIOp(a, self.it))

    def to_float(self, a):
        return self.emit(arith.SIToFPOp(a, self.ft))

    def iadd(self, a, b):
        return self.emit(arith.AddiOp(self.i(a), self.i(b)))

    def isub(self, a, b):
        return self.emit(arith.SubiOp(self.i(a), self.i(b)))

    def iand(self, a, b):
        return self.emit(arith.AndIOp(self.i(a), self.i(b)))

    def ior(self, a, b):
        return self.emit(arith.OrIOp(self.i(a), self.i(b)))

    def shl(self, a, b):
        return self.emit(arith.ShLIOp(self.i(a), self.i(b)))

    def ashr(self, a, b):
        return self.emit(arith.ShRSIOp(self.i(a), self.i(b)))

    def iselect(self, cond, a, b):
        return self.emit(arith.SelectOp(cond, self.i(a), self.i(b)))

    def pow2(self, n):
        """2^n as f32 for an i32 n in [-126, 127] (built from exponent bits)."""
        return self.float_of_bits(self.shl(self.iadd(n, 127), 23))


# -- the expansions (f32 in, f32 out) --------------------------------------------------

LN2_HI = 0.693359375  # exactly representable: n * LN2_HI is exact for |n| < 2^9
LN2_LO = -2.12194440e-4
LOG2E = 1.44269504088896341
EXP_HI = 88.72283935546875  # above: +inf (expf overflows)
EXP_LO = -103.97208404541015625  # below: 0 (smaller than half the least denormal)
ROUNDING_SHIFT = 12582912.0  # 1.5 * 2^23
ROUNDING_SHIFT_BITS = 0x4B400000
EXP_POLY = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2,
            1.6666665459e-1, 5.0000001201e-1)


def expand_exp(e: _Emitter, x: SSAValue) -> SSAValue:
    clamped = e.minimum(e.maximum(x, EXP_LO - 1.0), EXP_HI + 1.0)
    # n = roundeven(x / ln2) by adding 1.5 * 2^23: the sum's low mantissa bits
    # are n as an integer (|n| < 2^22), cheaper than roundeven + fptosi
    shifted = e.fma(clamped, LOG2E, ROUNDING_SHIFT)
    n = e.sub(shifted, ROUNDING_SHIFT)
    r = e.fma(n, -LN2_HI, clamped)
    r = e.fma(n, -LN2_LO, r)
    r2 = e.mul(r, r)
    p = e.fma(e.horner(r, EXP_POLY), r2, e.add(r, 1.0))  # e^r, r in [-ln2/2, ln2/2]
    # 2^n = 2^(n/2 floor) * 2^(rest): both factors normal for n in [-150, 129]
    ni = e.isub(e.bits(shifted), ROUNDING_SHIFT_BITS)
    half = e.ashr(ni, 1)
    y = e.mul(e.mul(p, e.pow2(half)), e.pow2(e.isub(ni, half)))
    y = e.select(e.cmp("ogt", x, EXP_HI), float("inf"), y)
    y = e.select(e.cmp("olt", x, EXP_LO), 0.0, y)
    return e.select(e.cmp("uno", x, x), x, y)


SQRT_HALF = 0.707106781186547524
LOG_POLY = (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1,
            1.4249322787e-1, -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1,
            3.3333331174e-1)
MIN_NORMAL = 1.17549435e-38


def expand_log(e: _Emitter, x: SSAValue) -> SSAValue:
    denormal = e.cmp("olt", x, MIN_NORMAL)
    scaled = e.select(denormal, e.mul(x, 8388608.0), x)  # * 2^23: normal again
    bits = e.bits(scaled)
    exponent = e.isub(e.ashr(bits, 23), e.iselect(denormal, 126 + 23, 126))
    # mantissa in [0.5, 1): keep the fraction bits, exponent of 0.5
    m = e.float_of_bits(e.ior(e.iand(bits, 0x007FFFFF), 0x3F000000))
    small = e.cmp("olt", m, SQRT_HALF)
    ef = e.sub(e.to_float(exponent), e.select(small, 1.0, 0.0))
    m = e.sub(e.select(small, e.add(m, m), m), 1.0)  # log(x) = log(1 + m) + ef ln2
    z = e.mul(m, m)
    y = e.mul(e.mul(m, z), e.horner(m, LOG_POLY))
    y = e.fma(ef, LN2_LO, y)
    y = e.fma(z, -0.5, y)
    y = e.fma(ef, LN2_HI, e.add(m, y))
    y = e.select(e.cmp("oeq", x, float("inf")), float("inf"), y)
    y = e.select(e.cmp("oeq", x, 0.0), float("-inf"), y)
    return e.select(e.cmp("ult", x, 0.0), float("nan"), y)  # x < 0 or NaN


TANH_POLY = (-5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2, 1.33314422036e-1,
             -3.33332819422e-1)


def expand_tanh(e: _Emitter, x: SSAValue) -> SSAValue:
    ax = e.abs(x)
    z = e.mul(x, x)
    small = e.fma(e.mul(e.horner(z, TANH_POLY), z), x, x)
    exp2x = expand_exp(e, e.add(ax, ax))
    large = e.copysign(e.sub(1.0, e.div(2.0, e.add(exp2x, 1.0))), x)
    return e.select(e.cmp("olt", ax, 0.625), small, large)  # NaN: large (NaN)


ERF_NUMERATOR = (-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06,
                 -5.69250639462346e-05, -7.34990630326855e-04, -2.95459980854025e-03,
                 -1.60960333262415e-02)
ERF_DENOMINATOR = (-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
                   -7.37332916720468e-03, -1.42647390514189e-02)


def expand_erf(e: _Emitter, x: SSAValue) -> SSAValue:
    c = e.minimum(e.maximum(x, -4.0), 4.0)  # erf(4) is 1 in f32; NaN propagates
    c2 = e.mul(c, c)
    p = e.mul(c, e.horner(c2, ERF_NUMERATOR))
    q = e.horner(c2, ERF_DENOMINATOR)
    return e.div(p, q)


PI = 3.14159265358979323846
PIO2 = 1.57079632679489661923
TAN_3PI_8 = 2.414213562373095
TAN_PI_8 = 0.4142135623730950
ATAN_POLY = (8.05374449538e-2, -1.38776856032e-1, 1.99777106478e-1, -3.33329491539e-1)
ASIN_POLY = (4.2163199048e-2, 2.4181311049e-2, 4.5470025998e-2, 7.4953002686e-2, 1.6666752422e-1)


def expand_atan(e: _Emitter, x: SSAValue) -> SSAValue:
    ax = e.abs(x)
    big = e.cmp("ogt", ax, TAN_3PI_8)
    mid = e.cmp("ogt", ax, TAN_PI_8)
    # atan(a) = pi/2 + atan(-1/a) (big), pi/4 + atan((a-1)/(a+1)) (mid)
    r = e.select(big, e.div(-1.0, ax), e.select(mid, e.div(e.sub(ax, 1.0), e.add(ax, 1.0)), ax))
    base = e.select(big, PIO2, e.select(mid, PIO2 / 2, 0.0))
    z = e.mul(r, r)
    y = e.fma(e.mul(e.horner(z, ATAN_POLY), z), r, r)
    return e.copysign(e.add(base, y), x)  # NaN: every compare is false, r = NaN


def _asin_core(e: _Emitter, v: SSAValue, z: SSAValue) -> SSAValue:
    """asin(v) for |v| <= 0.5, z = v * v."""
    return e.fma(e.mul(e.horner(z, ASIN_POLY), z), v, v)


def expand_asin(e: _Emitter, x: SSAValue) -> SSAValue:
    ax = e.abs(x)
    large = e.cmp("ogt", ax, 0.5)
    # |x| > 0.5: asin(a) = pi/2 - 2 asin(sqrt((1 - a) / 2)); |x| > 1 gives sqrt(<0) = NaN
    z = e.select(large, e.mul(e.sub(1.0, ax), 0.5), e.mul(ax, ax))
    v = e.select(large, e.sqrt(z), ax)
    p = _asin_core(e, v, z)
    return e.copysign(e.select(large, e.fma(p, -2.0, PIO2), p), x)


def expand_acos(e: _Emitter, x: SSAValue) -> SSAValue:
    ax = e.abs(x)
    large = e.cmp("ogt", ax, 0.5)
    # |x| > 0.5: acos(a) = 2 asin(sqrt((1 - a) / 2)), acos(-a) = pi - acos(a);
    # otherwise pi/2 - asin(x) (no cancellation near 1)
    z = e.select(large, e.mul(e.sub(1.0, ax), 0.5), e.mul(x, x))
    v = e.select(large, e.sqrt(z), x)
    p = _asin_core(e, v, z)
    twice = e.add(p, p)
    outer = e.select(e.cmp("olt", x, 0.0), e.sub(PI, twice), twice)
    return e.select(large, outer, e.sub(PIO2, p))


# truncation errors: s^7 / 15 < 3e-12 (s = f^2 < 0.0295) and r^10 / 10! < 7e-12 (|r| < 0.347),
# far below an f32 ulp (6e-8) for |y log x| up to ~1000
LOG_SERIES = tuple(1.0 / (2 * k + 1) for k in range(6, -1, -1))  # atanh series: 1/13 ... 1/3, 1
EXP_SERIES = tuple(1.0 / math_lib.factorial(k) for k in range(9, -1, -1))  # 1/9! ... 1/1!, 1
SQRT2 = 1.4142135623730951
LN2 = 0.6931471805599453
F64_MANTISSA = 0x000FFFFFFFFFFFFF
F64_ONE_BITS = 0x3FF0000000000000
TWO_24 = 16777216.0  # f32 values at or above are even integers


def _wide_pow_magnitude(e: _Emitter, ax: SSAValue, y: SSAValue) -> SSAValue:
    """|x|^y for f32 |x| and y, as f32, through exp(y log|x|) in f64 (errors ~1e-14
    relative, so the one rounding to f32 decides: within 1 ulp). 0 and inf give
    -inf/+inf logs; NaN propagates."""
    w = e.wide()
    a = e.emit(arith.ExtFOp(ax, f64))
    bits = w.bits(a)
    # a = m 2^k, m in [sqrt(1/2), sqrt 2) (any non-zero f32 is a normal f64)
    m = w.float_of_bits(w.ior(w.iand(bits, F64_MANTISSA), F64_ONE_BITS))
    k = w.to_float(w.isub(w.ashr(bits, 52), 1023))
    big = w.cmp("ogt", m, SQRT2)
    m = w.select(big, w.mul(m, 0.5), m)
    k = w.select(big, w.add(k, 1.0), k)
    f = w.div(w.sub(m, 1.0), w.add(m, 1.0))  # log m = 2 atanh f, |f| < 0.172
    log_a = w.fma(k, LN2, w.mul(w.add(f, f), w.horner(w.mul(f, f), LOG_SERIES)))
    log_a = w.select(w.cmp("oeq", a, 0.0), float("-inf"), log_a)
    log_a = w.select(w.cmp("oeq", a, float("inf")), float("inf"), log_a)
    log_a = w.select(w.cmp("uno", a, a), a, log_a)
    t = w.mul(e.emit(arith.ExtFOp(y, f64)), log_a)  # NaN for 0 * inf (cases handled by the caller)
    # exp(t): beyond +-200 an f32 result is inf or 0 whatever the exact value
    tc = w.minimum(w.maximum(t, -200.0), 200.0)
    tc = w.select(w.cmp("uno", tc, tc), 0.0, tc)
    n = w.roundeven(w.mul(tc, LOG2E))
    r = w.fma(n, -LN2, tc)  # |r| <= ln2 / 2; n ln2's own error ~1e-14
    scale = w.float_of_bits(w.shl(w.iadd(w.to_int(n), 1023), 52))  # 2^n, |n| <= 289: normal
    v = e.emit(arith.TruncFOp(w.mul(w.horner(r, EXP_SERIES), scale), f32))
    return e.select(e.emit(arith.CmpfOp(t, t, "uno")), float("nan"), v)


def expand_pow(e: _Emitter, x: SSAValue, y: SSAValue) -> SSAValue:
    """C99 powf: |x|^y with the sign of x for odd integer y; NaN for finite x < 0
    and non-integer y; x^0 = 1 and 1^y = 1 even for NaN; (-1)^(+-inf) = 1."""
    ax = e.abs(x)
    v = _wide_pow_magnitude(e, ax, y)
    ay = e.abs(y)
    is_integer = e.cmp("oeq", e.roundeven(y), y)  # inf counts as an even integer
    small = e.cmp("olt", ay, TWO_24)
    low_bit = e.iand(e.to_int(e.select(small, y, 0.0)), 1)
    odd = e.emit(arith.AndIOp(e.emit(arith.AndIOp(is_integer, small)),
                              e.emit(arith.CmpiOp(low_bit, e.i(0), "ne"))))
    v = e.select(odd, e.copysign(v, x), v)
    negative_finite = e.emit(arith.AndIOp(e.cmp("olt", x, 0.0), e.cmp("one", x, float("-inf"))))
    not_integer = e.cmp("une", e.roundeven(y), y)
    v = e.select(e.emit(arith.AndIOp(negative_finite, not_integer)), float("nan"), v)
    one_to_inf = e.emit(arith.AndIOp(e.cmp("oeq", ax, 1.0), e.cmp("oeq", ay, float("inf"))))
    v = e.select(one_to_inf, 1.0, v)
    v = e.select(e.cmp("oeq", x, 1.0), 1.0, v)
    return e.select(e.cmp("oeq", y, 0.0), 1.0, v)


def _pow_constant_exponent(e: _Emitter, x: SSAValue, c: float) -> SSAValue | None:
    """x^c for the exponents of common models (LRN's 0.75, squares, roots) by
    multiplications and square roots (<= 1.5 ulp), C99 special cases kept;
    None for other exponents."""
    if c == 0.0:
        return e.f(1.0)
    if c == 1.0:
        return x
    if c in (2.0, 3.0, -1.0, -2.0):
        power = e.mul(x, x) if c in (2.0, 3.0, -2.0) else x
        power = e.mul(power, x) if c == 3.0 else power
        return e.div(1.0, power) if c < 0 else power
    if c not in (0.5, 0.25, 0.75, -0.5):
        return None
    root = e.abs(e.sqrt(x))  # abs: (-0)^c = +0, sqrt(-0) = -0
    if c == 0.5:
        v = root
    elif c == -0.5:
        v = e.div(1.0, root)
    else:
        fourth = e.sqrt(root)
        v = fourth if c == 0.25 else e.mul(root, fourth)
    # sqrt(-inf) is NaN, but (-inf)^c = (+inf)^c for these non-integer c
    return e.select(e.cmp("oeq", x, float("-inf")), 0.0 if c < 0 else float("inf"), v)


def constant_kernel_arguments(module: ModuleOp) -> dict[tuple[str, int], float]:
    """(kernel, argument index) -> c when every call passes a weight whose elements
    all equal c (a scalar exponent such as LRN's beta reaches kernels this way)."""
    from xdsl.dialects import func

    from dlc.weights import lookup_weight

    seen: dict[tuple[str, int], float | None] = {}
    for call in module.walk():
        if not isinstance(call, func.CallOp):
            continue
        callee = call.callee.string_value()
        for i, operand in enumerate(call.operands):
            value = None
            owner = operand.owner
            if isinstance(owner, Operation) and owner.name == "tloop.weight":
                array = lookup_weight(owner, owner.weight_name.data, missing_ok=True)
                if array is not None and 0 < array.size <= 4096 and array.dtype.kind == "f" \
                        and np.all(array == array.flat[0]):
                    value = float(array.flat[0])
            key = (callee, i)
            seen[key] = value if seen.get(key, value) == value else None
    return {key: value for key, value in seen.items() if value is not None}


def _constant_exponent(op: Operation, constants: dict[tuple[str, int], float]) -> float | None:
    """The value of powf's exponent when it is compile-time known: an arith.constant,
    or a load from a kernel argument every caller binds to one constant weight."""
    from xdsl.dialects import func
    from xdsl.ir import BlockArgument

    exponent = op.operands[1].owner
    if isinstance(exponent, arith.ConstantOp) and isinstance(exponent.value, FloatAttr):
        return exponent.value.value.data
    if not (isinstance(exponent, Operation) and exponent.name == "memref.load"):
        return None
    source = exponent.operands[0]
    if not isinstance(source, BlockArgument):
        return None
    fn = source.block.parent_op()
    if not isinstance(fn, func.FuncOp):
        return None
    return constants.get((fn.sym_name.data, source.index))


EXPANSIONS = {
    "math.exp": expand_exp,
    "math.log": expand_log,
    "math.tanh": expand_tanh,
    "math.erf": expand_erf,
    "math.atan": expand_atan,
    "math.asin": expand_asin,
    "math.acos": expand_acos,
    "math.powf": expand_pow,
}


def expansion_of(op: Operation, use_fma: bool = True, constants: dict[tuple[str, int], float] | None = None,
                 general_pow: bool = True) -> tuple[list[Operation], SSAValue] | None:
    """(new ops computing ``op``'s result from its operand, that result) for an
    f32/f16 op of EXPANSIONS, or None; the ops are not inserted anywhere (the
    PTX emitter emits them in place of the op: NVPTX has no acos/asin/atan)."""
    expand = EXPANSIONS.get(op.name)
    t = op.results[0].type if op.results else None
    if expand is None or not isinstance(t, (Float32Type, Float16Type)):
        return None
    e = _Emitter(use_fma)
    xs = list(op.operands)
    if isinstance(t, Float16Type):
        xs = [e.emit(arith.ExtFOp(x, f32)) for x in xs]
    y = None
    if op.name == "math.powf":
        c = _constant_exponent(op, constants or {})
        y = _pow_constant_exponent(e, xs[0], c) if c is not None else None
        if y is None and not general_pow:
            return None
    if y is None:
        y = expand(e, *xs)
    if isinstance(t, Float16Type):
        y = e.emit(arith.TruncFOp(y, t))
    return e.ops, y


@dataclass
class ExpandMathOp(RewritePattern):
    use_fma: bool
    constants: dict[tuple[str, int], float] = field(default_factory=dict)
    general_pow: bool = True

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        # f64 (and vectors) keep the exact libm/intrinsic call
        expansion = expansion_of(op, self.use_fma, self.constants, self.general_pow)
        if expansion is not None:
            rewriter.replace(op, expansion[0], [expansion[1]])


@dataclass(frozen=True)
class ExpandMathPass(ModulePass):
    """Rewrite f32/f16 exp, log, tanh and erf into polynomials (see module docstring)."""

    name = "expand-math"

    fma: bool = True
    """Use math.fma in the polynomials (false: separate multiply and add)."""

    general_pow: bool = False
    """Also expand powf with a run-time exponent (exp(y log|x|) in f64, 1 ulp). Off by
    default: on the AMD EPYC hosts it only matches glibc's powf when the loop is fully
    vectorized and loses with a scalar tail (1x96x55x55: 2.0 vs 1.3 ms)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        constants = constant_kernel_arguments(op)
        pattern = ExpandMathOp(self.fma, constants, self.general_pow)
        PatternRewriteWalker(pattern, apply_recursively=False).rewrite_module(op)
