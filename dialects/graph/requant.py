"""Fixed-point requantization, as TFLite and gemmlowp compute it (the numpy twin).

An integer accumulator ``acc`` (i32) of a quantized op stands for ``acc * real``
in the output's quantized domain, ``real = x_scale * w_scale / y_scale``. It is
rescaled without floats:

* :func:`quantize_multiplier` (TFLite ``QuantizeMultiplier``) writes ``real``
  once, at compile time, as a Q31 multiplier ``m`` in [2**30, 2**31) and a
  power-of-two ``shift`` (``real ~= m * 2**(shift - 31)``);
* :func:`multiply_by_quantized_multiplier` is TFLite's single-rounding
  ``MultiplyByQuantizedMultiplier`` (``TFLITE_SINGLE_ROUNDING``): the i64 product
  ``acc * m`` shifted right by ``31 - shift`` with one rounding, half up, saturated
  to i32. gemmlowp's double-rounding form (:func:`srdhm`, then
  :func:`rounding_divide_by_pot`, kept here for reference) rounds twice and misses
  by one on values just below a half (``-55.4997 -> -56``): about 4 in 10**4
  elements of a BERT-style layer, which attention amplifies until outputs differ
  from onnxruntime's by several steps. Single rounding equals ONNX's float form
  ``round_half_even(acc * real)`` except on exact ties and within the Q31
  multiplier's 2**-31 relative error.

The graph ops' references (``dialects/graph/quantized.py``) use these functions;
the loop-IR emitter of the same arithmetic, for the kernels, is
``dlc.lowering.kernels.requant`` (it must agree with this file bit for bit).
"""

from __future__ import annotations

import math

import numpy as np

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1


def quantize_multiplier(real: float) -> tuple[int, int]:
    """(Q31 multiplier, shift) with ``real ~= m * 2**(shift - 31)``; (0, 0) for 0.

    ``real`` must be finite and >= 0 (scales are positive)."""
    if not math.isfinite(real) or real < 0:
        raise ValueError(f"requantization multiplier {real} must be finite and >= 0")
    if real == 0.0:
        return 0, 0
    q, shift = math.frexp(real)  # real = q * 2**shift, q in [0.5, 1)
    q_fixed = int(round(q * (1 << 31)))
    if q_fixed == 1 << 31:
        q_fixed //= 2
        shift += 1
    if shift < -31:  # below the smallest representable multiplier: TFLite's flush to 0
        return 0, 0
    if shift > 30:
        raise ValueError(f"requantization multiplier {real} is too large (>= 2**30)")
    return q_fixed, shift


def quantize_multipliers(reals) -> tuple[np.ndarray, np.ndarray]:
    """:func:`quantize_multiplier` of each value: (multipliers i64[], shifts i64[])."""
    pairs = [quantize_multiplier(float(r)) for r in np.ravel(reals)]
    return (np.array([p[0] for p in pairs], dtype=np.int64),
            np.array([p[1] for p in pairs], dtype=np.int64))


def _trunc_div_pow2(x: np.ndarray, bits: int) -> np.ndarray:
    """C's ``x / 2**bits`` (toward zero) on int64."""
    return np.where(x >= 0, x >> bits, -((-x) >> bits))


def srdhm(a, b) -> np.ndarray:
    """gemmlowp ``SaturatingRoundingDoublingHighMul`` of int32 values (as int64 arrays)."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    ab = a * b
    nudge = np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    out = _trunc_div_pow2(ab + nudge, 31)
    return np.where((a == INT32_MIN) & (b == INT32_MIN), INT32_MAX, out)


def rounding_divide_by_pot(x, exponent) -> np.ndarray:
    """gemmlowp ``RoundingDivideByPOT``: ``x / 2**exponent`` rounded half away from zero."""
    x = np.asarray(x, dtype=np.int64)
    exponent = np.asarray(exponent, dtype=np.int64)
    mask = (np.int64(1) << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return (x >> exponent) + (remainder > threshold)


def wrap_i32(x) -> np.ndarray:
    """Two's-complement wrap to int32 (kept as int64), what the kernels' i32 ops do."""
    x = np.asarray(x, dtype=np.int64)
    return ((x + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def multiply_by_quantized_multiplier(acc, multiplier, shift) -> np.ndarray:
    """TFLite's single-rounding ``MultiplyByQuantizedMultiplier``: ``(acc * m + 2**(t-1))
    >> t`` with ``t = 31 - shift``, in i64, saturated to i32; ``multiplier`` / ``shift``
    broadcast against ``acc`` (per-channel arrays reshaped by the caller). int64 result
    in i32 range."""
    total = 31 - np.asarray(shift, dtype=np.int64)
    prod = np.asarray(acc, dtype=np.int64) * np.asarray(multiplier, dtype=np.int64)
    out = (prod + (np.int64(1) << (total - 1))) >> total
    return np.clip(out, INT32_MIN, INT32_MAX)


def requantize(acc, real, zero_point, lo: int, hi: int, axis: int | None = None) -> np.ndarray:
    """``clamp(MBQM(acc, real) + zero_point, lo, hi)`` as int64; ``real`` per tensor
    (length 1) or per channel along ``axis`` of ``acc``."""
    acc = np.asarray(acc, dtype=np.int64)
    m, s = quantize_multipliers(real)
    zp = np.asarray(zero_point, dtype=np.int64)
    if m.size > 1 or zp.size > 1:
        shape = [1] * acc.ndim
        shape[axis] = -1
        m, s = m.reshape(shape) if m.size > 1 else m[0], s.reshape(shape) if s.size > 1 else s[0]
        zp = zp.reshape(shape) if zp.size > 1 else zp.reshape(())
    else:
        m, s, zp = m[0], s[0], zp.reshape(())
    return np.clip(multiply_by_quantized_multiplier(acc, m, s) + zp, lo, hi)


def round_half_away_div(total, count) -> np.ndarray:
    """``total / count`` rounded half away from zero, in integers (TFLite's average pool)."""
    total = np.asarray(total, dtype=np.int64)
    count = np.asarray(count, dtype=np.int64)
    half = count // 2
    num = np.where(total >= 0, total + half, total - half)
    return np.where(num >= 0, num // count, -((-num) // count))
