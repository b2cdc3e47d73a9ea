"""Fixed-point requantization in loop IR: the emitter twin of
``dlc.dialects.graph.requant`` (TFLite ``MultiplyByQuantizedMultiplier``), integer
ops only, bit-identical to it.

``mbqm(kb, acc, m, shift)``: ``acc`` an i32 value, ``m`` / ``shift`` i32 values or
Python ints (per-channel ones are loaded from a :func:`table`). ``requantize``
adds the zero point and clamps, giving the i32 value of the result element;
``narrow`` truncates it to the 8-bit storage type.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import IntegerType, i32, i64
from xdsl.ir import SSAValue

from dlc.lowering.kernels.builder import Index, KernelBuilder

Value = SSAValue | int


def _v(kb: KernelBuilder, value: Value, et=i32) -> SSAValue:
    return kb.const(value, et) if isinstance(value, int) else value


def table(kb: KernelBuilder, values: Sequence[int], et=i32) -> SSAValue:
    """A per-channel constant table: a kernel-entry ``memref.alloca`` filled with
    ``values`` (read with ``kb.load(t, [c])``)."""
    buf = kb._hoisted(memref.AllocaOp.get(et, shape=[len(values)]))  # before the loops
    for i, v in enumerate(values):
        kb.store(kb.const(v, et), buf, [i])
    return buf


def per_channel(kb: KernelBuilder, values: Sequence[int], channel: Index, et=i32) -> Value:
    """``values[channel]``: a Python int when there is one value, else a table load."""
    if len(set(int(v) for v in values)) == 1:
        return int(values[0])
    return kb.load(table(kb, values, et), [channel])


def srdhm(kb: KernelBuilder, a: SSAValue, m: Value) -> SSAValue:
    """gemmlowp SaturatingRoundingDoublingHighMul(a, m) for m in [0, 2**31) (never
    INT32_MIN, so the saturating case cannot occur): the product in i64, nudged, divided
    by 2**31 toward zero."""
    ab = kb.emit(arith.MuliOp(kb.emit(arith.ExtSIOp(a, i64)), kb.emit(arith.ExtSIOp(_v(kb, m), i64))))
    zero = kb.const(0, i64)
    nonneg = kb.emit(arith.CmpiOp(ab, zero, "sge"))
    nudged = kb.emit(arith.AddiOp(ab, kb.select(nonneg, kb.const(1 << 30, i64), kb.const(1 - (1 << 30), i64))))
    # C division by 2**31 truncates: shift the magnitude
    pos = kb.emit(arith.CmpiOp(nudged, zero, "sge"))
    thirty_one = kb.const(31, i64)
    up = kb.emit(arith.ShRSIOp(nudged, thirty_one))
    down = kb.emit(arith.SubiOp(zero, kb.emit(arith.ShRSIOp(kb.emit(arith.SubiOp(zero, nudged)), thirty_one))))
    return kb.emit(arith.TruncIOp(kb.select(pos, up, down), i32))


def rounding_divide_by_pot(kb: KernelBuilder, x: SSAValue, exponent: Value) -> SSAValue:
    """gemmlowp RoundingDivideByPOT(x, exponent), 0 <= exponent <= 31, on i32."""
    if isinstance(exponent, int) and exponent == 0:
        return x
    e = _v(kb, exponent)
    one, zero = kb.const(1, i32), kb.const(0, i32)
    mask = kb.emit(arith.SubiOp(kb.emit(arith.ShLIOp(one, e)), one))
    remainder = kb.emit(arith.AndIOp(x, mask))
    negative = kb.emit(arith.CmpiOp(x, zero, "slt"))
    threshold = kb.emit(arith.AddiOp(kb.emit(arith.ShRSIOp(mask, one)), kb.select(negative, one, zero)))
    bump = kb.select(kb.emit(arith.CmpiOp(remainder, threshold, "sgt")), one, zero)
    return kb.emit(arith.AddiOp(kb.emit(arith.ShRSIOp(x, e)), bump))


def mbqm(kb: KernelBuilder, acc: SSAValue, m: Value, shift: Value) -> SSAValue:
    """TFLite MultiplyByQuantizedMultiplier(acc, m, shift) on i32 (the left shift wraps)."""
    if isinstance(shift, int):
        left, right = max(shift, 0), max(-shift, 0)
    else:
        zero = kb.const(0, i32)
        left = kb.emit(arith.MaxSIOp(shift, zero))
        right = kb.emit(arith.MaxSIOp(kb.emit(arith.SubiOp(zero, shift)), zero))
    if not (isinstance(left, int) and left == 0):
        acc = kb.emit(arith.ShLIOp(acc, _v(kb, left)))
    return rounding_divide_by_pot(kb, srdhm(kb, acc, m), right)


def mbqm_shifted(kb: KernelBuilder, v: SSAValue, left: int, m: int, shift: int, bound: int) -> SSAValue:
    """``mbqm(v << left, m, shift)`` for an i32 ``v`` with ``|v| <= bound`` and constant
    ``m``, ``shift`` (TFLite ADD's input terms), without the i64 product where it can:
    with ``L = left + max(shift, 0)`` and ``k = 31 - L``, ``m = mh * 2**k + ml`` and
    ``w = |v|``, ``srdhm(v * 2**L, m) = sign(v) * (w * mh + ((w * ml + 2**(k-1) - [v < 0]) >> k))``
    exactly (the nudge and the truncating division of srdhm, multiplied out), every term
    in i32 when ``bound < 2**k`` and ``k <= 15``. Else the plain i64 path."""
    total = left + max(shift, 0)
    k = 31 - total
    if not (1 <= k <= 15 and bound < (1 << k)):
        shifted = kb.emit(arith.ShLIOp(v, kb.const(left, i32))) if left else v
        return mbqm(kb, shifted, m, shift)
    zero = kb.const(0, i32)
    negative = kb.emit(arith.CmpiOp(v, zero, "slt"))
    w = kb.select(negative, kb.emit(arith.SubiOp(zero, v)), v)
    high = kb.emit(arith.MuliOp(w, kb.const(m >> k, i32)))
    low = kb.emit(arith.MuliOp(w, kb.const(m & ((1 << k) - 1), i32)))
    nudge = kb.emit(arith.SubiOp(kb.const(1 << (k - 1), i32), kb.emit(arith.ExtUIOp(negative, i32))))
    q = kb.emit(arith.AddiOp(high, kb.emit(arith.ShRSIOp(kb.emit(arith.AddiOp(low, nudge)), kb.const(k, i32)))))
    return rounding_divide_by_pot(kb, kb.select(negative, kb.emit(arith.SubiOp(zero, q)), q), max(-shift, 0))


def requantize(kb: KernelBuilder, acc: SSAValue, m: Value, shift: Value, zero_point: Value,
               lo: int, hi: int) -> SSAValue:
    """``clamp(mbqm(acc, m, shift) + zero_point, lo, hi)`` as i32."""
    y = kb.emit(arith.AddiOp(mbqm(kb, acc, m, shift), _v(kb, zero_point)))
    return clamp(kb, y, lo, hi)


def clamp(kb: KernelBuilder, y: SSAValue, lo: int, hi: int) -> SSAValue:
    y = kb.emit(arith.MaxSIOp(y, kb.const(lo, i32)))
    return kb.emit(arith.MinSIOp(y, kb.const(hi, i32)))


def widen(kb: KernelBuilder, value: SSAValue, et) -> SSAValue:
    """An i8/ui8/i32 element (graph type ``et``) as i32."""
    return kb.convert(value, et, i32)


def narrow(kb: KernelBuilder, value: SSAValue) -> SSAValue:
    """A clamped i32 as the 8-bit storage value (i8 and ui8 are both stored as i8)."""
    return kb.emit(arith.TruncIOp(value, IntegerType(8)))
