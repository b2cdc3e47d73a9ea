"""The cast kernel for narrow (storage-only) element types.

bf16, float8 (E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ, E8M0FNU), float4 E2M1FN and
4/2-bit integers live in memory as their ml_dtypes byte layout (bf16 in i16,
the others in i8 with the code in the low bits; see ``storage_type``). Only
``graph.cast`` interprets those bits, by integer bit manipulation with arith
ops (no lookup tables, no libcalls, so the loop vectorizes):

* narrow float -> f32 exactly (decode), narrow int -> i32 (sign/zero extend);
* f32 -> narrow float with round-to-nearest-even, subnormals and the NaN/Inf
  and saturation rules of ONNX Cast-19/21/24 per format (E8M0 uses the ONNX
  ``round_mode``); anything -> narrow int wraps like ml_dtypes ``astype``.

Other source/target types go through f32 (floats) or i32 (integers) with the
ordinary conversions of ``KernelBuilder.convert``. f64 rounds to f32 first,
exactly as ml_dtypes (and so the ONNX reference) converts f64: a double
rounding that can differ from a direct rounding on near-ties.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IntegerType, Signedness, f32
from xdsl.ir import Attribute, SSAValue

from dlc.dialects.graph_base import GraphOp, is_narrow, is_narrow_float, is_unsigned
from dlc.lowering.kernels.builder import KernelBuilder, storage_type

I32 = IntegerType(32)
UI32 = IntegerType(32, Signedness.UNSIGNED)


@dataclass(frozen=True)
class FloatFormat:
    """A narrow float: ``exp_bits``/``man_bits``/``bias``; ``nonfinite`` is
    "ieee" (max exponent holds Inf and NaN), "fn" (no Inf; all-ones code is
    NaN), "fnuz" (no Inf, no -0; 0x80 is the only NaN) or "none" (float4)."""

    exp_bits: int
    man_bits: int
    bias: int
    nonfinite: str
    max_code: int  # largest finite magnitude code

    @property
    def sign_shift(self) -> int:
        return self.exp_bits + self.man_bits


FORMATS = {
    "f8E4M3FN": FloatFormat(4, 3, 7, "fn", 0x7E),
    "f8E4M3FNUZ": FloatFormat(4, 3, 8, "fnuz", 0x7F),
    "f8E5M2": FloatFormat(5, 2, 15, "ieee", 0x7B),
    "f8E5M2FNUZ": FloatFormat(5, 2, 16, "fnuz", 0x7F),
    "f4E2M1FN": FloatFormat(2, 1, 1, "none", 0x7),
}
# ONNX Cast applies `saturate` to these targets only (float4 always saturates).
SATURATING = {"f8E4M3FN", "f8E4M3FNUZ", "f8E5M2", "f8E5M2FNUZ", "f8E8M0FNU"}


class _Bits:
    """Shorthands for i32 arithmetic on one KernelBuilder."""

    def __init__(self, kb: KernelBuilder):
        self.kb = kb

    def c(self, value: int) -> SSAValue:
        return self.kb.const(value, I32)

    def op(self, cls, a, b):
        return self.kb.emit(cls(a, self.c(b) if isinstance(b, int) else b))

    def and_(self, a, b):
        return self.op(arith.AndIOp, a, b)

    def or_(self, a, b):
        return self.op(arith.OrIOp, a, b)

    def add(self, a, b):
        return self.op(arith.AddiOp, a, b)

    def sub(self, a, b):
        return self.op(arith.SubiOp, a, b)

    def shl(self, a, b):
        return self.op(arith.ShLIOp, a, b)

    def lshr(self, a, b):
        return self.op(arith.ShRUIOp, a, b)

    def ashr(self, a, b):
        return self.op(arith.ShRSIOp, a, b)

    def cmp(self, pred: str, a, b):
        return self.kb.emit(arith.CmpiOp(a, self.c(b) if isinstance(b, int) else b, pred))

    def select(self, cond, a, b):
        a = self.c(a) if isinstance(a, int) else a
        b = self.c(b) if isinstance(b, int) else b
        return self.kb.emit(arith.SelectOp(cond, a, b))

    def umin(self, a, b):
        return self.op(arith.MinUIOp, a, b)

    def to_f32(self, bits):
        return self.kb.emit(arith.BitcastOp(bits, f32))

    def of_f32(self, value):
        return self.kb.emit(arith.BitcastOp(value, I32))


# -- decoding: narrow -> f32 / i32 ------------------------------------------------


def decode_float(kb: KernelBuilder, code: SSAValue, name: str) -> SSAValue:
    """f32 value of the narrow float whose code is the i32 ``code``."""
    b = _Bits(kb)
    if name == "bf16":
        return b.to_f32(b.shl(code, 16))
    if name == "f8E8M0FNU":  # 2^(c-127); c = 0 is the f32 subnormal 2^-127; 0xFF is NaN
        value = b.select(b.cmp("eq", code, 0), 0x00400000, b.shl(code, 23))
        return b.to_f32(b.select(b.cmp("eq", code, 0xFF), 0x7FC00000, value))
    fmt = FORMATS[name]
    exp = b.and_(b.lshr(code, fmt.man_bits), (1 << fmt.exp_bits) - 1)
    man = b.and_(code, (1 << fmt.man_bits) - 1)
    normal = b.cmp("ne", exp, 0)
    # value = (man + implicit one) * 2^(max(exp, 1) - bias - man_bits), exact in f32
    full = b.or_(man, b.select(normal, 1 << fmt.man_bits, 0))
    scale_exp = b.add(b.select(normal, exp, 1), 127 - fmt.bias - fmt.man_bits)
    scale = b.to_f32(b.shl(scale_exp, 23))
    magnitude = b.of_f32(kb.emit(arith.MulfOp(kb.emit(arith.SIToFPOp(full, f32)), scale)))
    sign = b.shl(b.and_(b.lshr(code, fmt.sign_shift), 1), 31)
    bits = b.or_(magnitude, sign)
    if fmt.nonfinite == "ieee":
        special = b.cmp("eq", exp, (1 << fmt.exp_bits) - 1)
        inf_or_nan = b.select(b.cmp("eq", man, 0), 0x7F800000, 0x7FC00000)
        bits = b.select(special, b.or_(inf_or_nan, sign), bits)
    elif fmt.nonfinite == "fn":
        bits = b.select(b.cmp("eq", b.and_(code, (1 << fmt.sign_shift) - 1), (1 << fmt.sign_shift) - 1),
                        0x7FC00000, bits)
    elif fmt.nonfinite == "fnuz":
        bits = b.select(b.cmp("eq", code, 0x80), 0x7FC00000, bits)
    return b.to_f32(bits)


def decode_int(kb: KernelBuilder, stored: SSAValue, et: Attribute) -> SSAValue:
    """i32 value of a 4/2-bit integer held in the low bits of an i8."""
    b = _Bits(kb)
    wide = kb.emit(arith.ExtUIOp(stored, I32))
    unused = 32 - et.width.data
    up = b.shl(wide, unused)
    return b.lshr(up, unused) if is_unsigned(et) else b.ashr(up, unused)


# -- encoding: f32 / i32 -> narrow ------------------------------------------------


def encode_float(kb: KernelBuilder, value: SSAValue, name: str, saturate: bool,
                 round_mode: str) -> SSAValue:
    """i32 code of the f32 ``value`` in the narrow float ``name``."""
    b = _Bits(kb)
    bits = b.of_f32(value)
    if name == "bf16":  # round to nearest even on the top 16 bits; NaN stays quiet NaN
        rounded = b.lshr(b.add(b.add(bits, 0x7FFF), b.and_(b.lshr(bits, 16), 1)), 16)
        is_nan = b.cmp("ugt", b.and_(bits, 0x7FFFFFFF), 0x7F800000)
        return b.select(is_nan, b.or_(b.lshr(bits, 16), 0x40), rounded)
    if name == "f8E8M0FNU":
        return _encode_e8m0(b, bits, saturate, round_mode)
    fmt = FORMATS[name]
    saturate = saturate or fmt.nonfinite == "none"
    magnitude = b.and_(bits, 0x7FFFFFFF)
    sign = b.lshr(bits, 31)
    shift = 23 - fmt.man_bits
    # normal targets: re-bias the exponent field, round to nearest even at `shift`
    round_bias = b.add(b.and_(b.lshr(magnitude, shift), 1), (1 << (shift - 1)) - 1)
    normal = b.lshr(b.sub(b.add(magnitude, round_bias), (127 - fmt.bias) << 23), shift)
    # subnormal targets: scale to integer units of the smallest subnormal and
    # round to nearest even by adding 2^23 (exact arithmetic, no fast-math)
    units = kb.emit(arith.MulfOp(b.to_f32(magnitude),
                                 b.to_f32(b.c((127 + fmt.bias - 1 + fmt.man_bits) << 23))))
    magic = b.to_f32(b.c(0x4B000000))
    subnormal = b.sub(b.of_f32(kb.emit(arith.AddfOp(units, magic))), 0x4B000000)
    code = b.select(b.cmp("ult", magnitude, (127 - fmt.bias + 1) << 23), subnormal, normal)
    is_nan = b.cmp("ugt", magnitude, 0x7F800000)
    # includes Inf (NaN is handled below); only needed without saturation
    overflow = None if saturate else b.cmp("ugt", code, fmt.max_code)
    if saturate:
        code = b.umin(code, fmt.max_code)
    elif fmt.nonfinite == "ieee":
        code = b.select(overflow, (1 << fmt.sign_shift) - (1 << fmt.man_bits), code)
    elif fmt.nonfinite == "fn":
        code = b.select(overflow, (1 << fmt.sign_shift) - 1, code)
    if fmt.nonfinite == "ieee":
        code = b.select(is_nan, (1 << fmt.sign_shift) - (1 << (fmt.man_bits - 1)), code)
    elif fmt.nonfinite == "fn":
        code = b.select(is_nan, (1 << fmt.sign_shift) - 1, code)
    signed = b.or_(code, b.shl(sign, fmt.sign_shift))
    if fmt.nonfinite == "fnuz":  # no -0; NaN (and overflow without saturation) is 0x80
        signed = b.select(b.cmp("eq", code, 0), 0, signed)
        bad = is_nan if saturate else b.kb.emit(arith.OrIOp(is_nan, overflow))
        signed = b.select(bad, 0x80, signed)
    elif fmt.nonfinite == "none":  # float4 has no NaN: ml_dtypes gives a zero of the opposite sign
        flipped_zero = b.shl(b.op(arith.XOrIOp, sign, 1), fmt.sign_shift)
        signed = b.select(is_nan, flipped_zero, signed)
    return signed


def _encode_e8m0(b: _Bits, bits: SSAValue, saturate: bool, round_mode: str) -> SSAValue:
    """ONNX Cast-24 to float8e8m0 (onnx.numpy_helper.to_float8e8m0): the f32
    exponent field, rounded by ``round_mode``; the sign is ignored."""
    exp = b.and_(b.lshr(bits, 23), 0xFF)
    special = b.cmp("eq", exp, 0xFF)
    if round_mode == "down":
        return exp
    if round_mode == "up":
        round_up = b.cmp("ne", b.and_(bits, 0x7FFFFF), 0)
    elif round_mode == "nearest":
        guard = b.cmp("ne", b.and_(bits, 0x400000), 0)
        rest = b.cmp("ne", b.and_(bits, 0x3FFFFF), 0)
        odd = b.cmp("ne", exp, 0)
        round_up = b.kb.emit(arith.AndIOp(guard, b.kb.emit(arith.OrIOp(rest, odd))))
    else:
        raise ValueError(f"unknown round_mode '{round_mode}'")
    if saturate:
        round_up = b.kb.emit(arith.AndIOp(round_up, b.cmp("ne", exp, 0xFE)))
    stepped = b.add(exp, b.kb.emit(arith.ExtUIOp(round_up, I32)))
    return b.select(special, 0xFF, stepped)


def encode_int(kb: KernelBuilder, value: SSAValue, et: Attribute) -> SSAValue:
    """Low ``width`` bits of the i32 ``value`` (wrapping, like ml_dtypes)."""
    return _Bits(kb).and_(value, (1 << et.width.data) - 1)


# -- the kernel ------------------------------------------------------------------------


def convert_narrow(kb: KernelBuilder, x: SSAValue, src: Attribute, dst: Attribute,
                   saturate: bool = True, round_mode: str = "up") -> SSAValue:
    """Convert a loaded element ``x`` (storage type of ``src``) to ``dst``."""
    # 1. narrow source -> f32 or i32 value
    if is_narrow_float(src):
        x, src = decode_float(kb, kb.emit(arith.ExtUIOp(x, I32)), str(src)), f32
    elif is_narrow(src):
        x, src = decode_int(kb, x, src), (UI32 if is_unsigned(src) else I32)
    # 2. f32 / i32 -> narrow target, or an ordinary conversion
    if is_narrow_float(dst):
        f = x if src == f32 else kb.convert(x, src, f32)
        code = encode_float(kb, f, str(dst), saturate and str(dst) in SATURATING, round_mode)
        return kb.emit(arith.TruncIOp(code, storage_type(dst)))
    if is_narrow(dst):
        i = x if isinstance(src, IntegerType) and src.width.data == 32 else kb.convert(x, src, I32)
        return kb.emit(arith.TruncIOp(encode_int(kb, i, dst), storage_type(dst)))
    return kb.convert(x, src, dst)


def lower_narrow_cast(op: GraphOp, name: str) -> func.FuncOp:
    """The graph.cast kernel when either side is a narrow type."""
    from dlc.lowering.kernels.elementwise import elementwise_kernel

    src = op.operands[0].type.element_type
    dst = op.results[0].type.element_type
    saturate = op.saturate
    round_mode = op.round_mode
    return elementwise_kernel(
        op, name, lambda kb, x: convert_narrow(kb, x, src, dst, saturate, round_mode)
    )

