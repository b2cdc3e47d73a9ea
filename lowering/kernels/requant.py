"""Fixed-point requantization in loop IR: the emitter twin of
``dlc.dialects.graph.requant`` (TFLite's single-rounding ``MultiplyByQuantizedMultiplier``),
integer ops only, bit-identical to it.

``mbqm(kb, acc, m, shift)``: ``acc`` an i32 value, ``m`` / ``shift`` i32 values or
Python ints (per-channel ones are loaded from a :func:`table`). ``requantize``
adds the zero point and clamps, giving the i32 value of the result element;
``narrow`` truncates it to the 8-bit storage type. :func:`requantize_float` is the
``requant = "float"`` rounding of the accumulating ops (``graph.quantized._Requantizing``),
twin of ``graph.quantized.float_requantize``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import f32, IntegerType, i32, i64
from xdsl.ir import SSAValue

from dlc.lowering.kernels.builder import Index, KernelBuilder

Value = SSAValue | int

MAGIC = 12582912.0  # 1.5 * 2**23: y + MAGIC holds the integer y in its low mantissa bits
MAGIC_BITS = 0x4B400000  # the bits of MAGIC


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


def mbqm(kb: KernelBuilder, acc: SSAValue, m: Value, shift: Value) -> SSAValue:
    """TFLite's single-rounding MultiplyByQuantizedMultiplier(acc, m, shift) on i32:
    ``(acc * m + 2**(t-1)) >> t`` in i64 with ``t = 31 - shift``, saturated to i32."""
    total = 31 - shift if isinstance(shift, int) else kb.emit(arith.SubiOp(kb.const(31, i32), shift))
    return single_rounding(kb, acc, m, total)


def single_rounding(kb: KernelBuilder, acc: SSAValue, m: Value, total: Value) -> SSAValue:
    """``sat_i32((acc * m + 2**(total-1)) >> total)``: i32 ``acc``, ``m``, ``total`` (1..62)."""
    wide = kb.emit(arith.MuliOp(kb.emit(arith.ExtSIOp(acc, i64)), kb.emit(arith.ExtSIOp(_v(kb, m), i64))))
    if isinstance(total, int):
        t, half = kb.const(total, i64), kb.const(1 << (total - 1), i64)
    else:
        t = kb.emit(arith.ExtSIOp(total, i64))
        half = kb.emit(arith.ShLIOp(kb.const(1, i64), kb.emit(arith.SubiOp(t, kb.const(1, i64)))))
    y = kb.emit(arith.ShRSIOp(kb.emit(arith.AddiOp(wide, half)), t))
    y = kb.emit(arith.MinSIOp(kb.emit(arith.MaxSIOp(y, kb.const(-(1 << 31), i64))), kb.const((1 << 31) - 1, i64)))
    return kb.emit(arith.TruncIOp(y, i32))


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


def rounding_constants(m, shift):
    """Per-channel i64 ``(m, total, half)`` of :func:`requantize_i64` from
    ``requant.quantize_multipliers``' ``(m, shift)`` (numpy arrays): ``total = 31 - shift``,
    ``half = 2**(total - 1)``."""

    m = np.asarray(m, np.int64)
    total = 31 - np.asarray(shift, np.int64)
    return m, total, np.left_shift(np.int64(1), total - 1)


def requantize_i64(kb: KernelBuilder, acc: SSAValue, m: SSAValue, total: SSAValue, half: SSAValue,
                   zero_point: int, lo: int, hi: int) -> SSAValue:
    """:func:`requantize` for per-channel ``m`` (i32 or i64), i64 ``total``, ``half`` (loaded from
    tables of :func:`rounding_constants`), in fewer vector ops: ``clamp(((acc * m + half)
    >> total) + zero_point, lo, hi)`` in i64, then truncated to i32. The i32 saturation of
    MBQM is subsumed by the clamp (``[lo, hi]`` lies inside i32), so the result is
    bit-identical to ``requant.requantize``."""
    if m.type == i32:  # an i32 table: the product of two sign-extended i32s (x86: vpmuldq, not vpmullq)
        m = kb.emit(arith.ExtSIOp(m, i64))
    wide = kb.emit(arith.MuliOp(kb.emit(arith.ExtSIOp(acc, i64)), m))
    y = kb.emit(arith.ShRSIOp(kb.emit(arith.AddiOp(wide, half)), total))
    y = kb.emit(arith.AddiOp(y, kb.const(zero_point, i64)))
    y = kb.emit(arith.MinSIOp(kb.emit(arith.MaxSIOp(y, kb.const(lo, i64))), kb.const(hi, i64)))
    return kb.emit(arith.TruncIOp(y, i32))


SHIFT_KEYS = ("shift_hi", "total", "half")  # the tables shift_tables may write


def shift_tables(total):
    """The per-channel shift tables of a requantizing write-back (numpy, i64 ``total``):
    ``{"shift_hi": min(total - 32, 31) as i32, "half"}`` when every total is at least 32
    (every multiplier below 0.5, as conv / dense requantization has: the high-word form),
    else ``{"total", "half"}`` (:func:`requantize_i64`). :func:`requantize_tabled` reads
    either."""

    total = np.asarray(total, np.int64)
    half = np.left_shift(np.int64(1), total - 1)
    if np.all(total >= 32):
        return {"shift_hi": np.minimum(total - 32, 31).astype(np.int32), "half": half}
    return {"total": total, "half": half}


def requantize_tabled(kb: KernelBuilder, acc: SSAValue, m: SSAValue, tables: dict[str, SSAValue],
                      zero_point: int, lo: int, hi: int) -> SSAValue:
    """The write-back's requantization from the tables :func:`shift_tables` chose (loaded
    per channel: ``tables`` maps their keys to values)."""
    if "shift_hi" in tables:
        return requantize_high_word(kb, acc, m, tables["shift_hi"], tables["half"], zero_point, lo, hi)
    return requantize_i64(kb, acc, m, tables["total"], tables["half"], zero_point, lo, hi)


def requantize_high_word(kb: KernelBuilder, acc: SSAValue, m: SSAValue, shift_hi: SSAValue, half: SSAValue,
                         zero_point: int, lo: int, hi: int) -> SSAValue:
    """:func:`requantize_i64` for totals of at least 32, bit-identical: ``floor(p / 2**total)
    = floor(floor(p / 2**32) / 2**(total - 32))`` for ``p = acc * m + half``, so only the
    product and the rounding add are i64; the shift, zero point and clamp act on p's high
    word in i32 (``shift_hi = min(total - 32, 31)``: a high word below 2**31 in magnitude
    shifted by 31 or more is its sign either way). Why: AVX2 has i64 multiplies and adds but
    no per-lane i64 arithmetic shift or i64 min / max (vpsravq, vpminsq are AVX-512), which
    LLVM emulates with several ops per vector; measured 2x on the write-back of MobileNet's
    wide 1x1 layers (16 input channels: the requantization is most of their work)."""
    if m.type == i32:
        m = kb.emit(arith.ExtSIOp(m, i64))
    wide = kb.emit(arith.AddiOp(kb.emit(arith.MuliOp(kb.emit(arith.ExtSIOp(acc, i64)), m)), half))
    high = kb.emit(arith.TruncIOp(kb.emit(arith.ShRUIOp(wide, kb.const(32, i64))), i32))
    y = kb.emit(arith.AddiOp(kb.emit(arith.ShRSIOp(high, shift_hi)), kb.const(zero_point, i32)))
    return clamp(kb, y, lo, hi)



def round_clamped(kb: KernelBuilder, y: SSAValue, lo: int, hi: int, offset: int = 0) -> SSAValue:
    """``round_half_even(clamp(y, lo, hi)) + offset`` as i32, for an f32 ``y`` (not NaN) and
    integer bounds below 2**22 in magnitude: the clamp in f32 (two selects: vmaxps /
    vminps), then ``bits(y + 1.5 * 2**23) - bits(1.5 * 2**23)``, exact for integers below
    2**22 and vectorized (LLVM scalarizes a vector ``fptosi.sat``: 7.5x slower on a 224x224
    image's quantize); ``offset`` folds into the subtracted constant."""
    assert -(1 << 22) < lo <= hi < 1 << 22, "bounds below 2**22 (the magic number's exact range)"
    e = kb.emit
    low, high = kb.const(float(lo), f32), kb.const(float(hi), f32)
    y = e(arith.SelectOp(e(arith.CmpfOp(y, low, "olt")), low, y))
    y = e(arith.SelectOp(e(arith.CmpfOp(y, high, "ogt")), high, y))
    bits = e(arith.BitcastOp(e(arith.AddfOp(y, kb.const(MAGIC, f32))), i32))
    return e(arith.SubiOp(bits, kb.const(MAGIC_BITS - offset, i32)))


def requantize_float(kb: KernelBuilder, acc: SSAValue, scale: SSAValue | float, zero_point: int,
                     lo: int, hi: int) -> SSAValue:
    """``clamp(round_half_even(f32(acc) * scale) + zero_point, lo, hi)`` as i32, ``scale``
    an f32 value (a table load) or a Python float: the product clamped to ``[lo - zp,
    hi - zp]`` (integers: the same result as clamping after the rounding), then
    :func:`round_clamped` (vcvtdq2ps, vmulps, vmaxps, vminps, vaddps, vpsubd)."""
    s = kb.const(float(scale), f32) if isinstance(scale, float) else scale
    y = kb.emit(arith.MulfOp(kb.emit(arith.SIToFPOp(acc, f32)), s))
    return round_clamped(kb, y, lo - zero_point, hi - zero_point, zero_point)


CHANNEL_KEYS = ("scale", "mult") + SHIFT_KEYS  # the tables channel_tables may write


def channel_tables(op, count: int, channels: int) -> dict[str, np.ndarray]:
    """The per-output-channel requantization tables of a blocked int8 kernel's write-back
    (numpy, ``channels`` long: the op's ``count`` channels padded to whole blocks, the padding's
    multiplier or scale 0, so a padded channel holds the clamped output zero point):
    ``{"scale"}`` (f32) for ``requant = "float"``, else ``{"mult"}`` (i32, below 2**31:
    sign-extended in the kernel) and the :func:`shift_tables`. Read them with
    :func:`requantize_channel`."""

    from dlc.dialects.graph import requant

    def padded(values, dtype):
        out = np.zeros(channels, dtype)
        values = np.asarray(values)
        out[: values.size] = values
        return out

    if op.requant == "float":
        return {"scale": padded(np.broadcast_to(op.float_scales(), (count,)), np.float32)}
    reals = np.broadcast_to(np.asarray(op.multipliers(), np.float64), (count,))
    mult, shift = requant.quantize_multipliers(reals)
    mult = np.asarray(mult, np.int64)
    if np.any(mult < 0) or np.any(mult >= 1 << 31):
        raise ValueError("requantization multipliers must be in [0, 2**31)")
    # 31 - shift per channel, 32 past the real ones (their multiplier is 0: any total gives
    # 0; 32 keeps the high-word form open)
    total = np.full(channels, 32, np.int64)
    total[: mult.size] = rounding_constants(mult, shift)[1]
    return {"mult": padded(mult, np.int32), **shift_tables(total)}


def requantize_channel(kb: KernelBuilder, acc: SSAValue, tables: dict[str, SSAValue], zero_point: int,
                       lo: int, hi: int) -> SSAValue:
    """The write-back's requantization from one channel's loaded :func:`channel_tables`."""
    if "scale" in tables:
        return requantize_float(kb, acc, tables["scale"], zero_point, lo, hi)
    return requantize_tabled(kb, acc, tables["mult"], {k: tables[k] for k in SHIFT_KEYS if k in tables},
                             zero_point, lo, hi)
