"""lower-to-llvm handlers of arith and math ops: LLVM instructions, intrinsics
(exp, sqrt, fma, the saturating float->int casts...) and libm calls (erf -> erff,
tanh -> tanhf; f16 computes in f32). No fast-math flags except those an arith op
carries; a ``contract`` mul + add pair is one ``llvm.fmuladd``. What each op computes is written down in ``lowering/scalar_semantics.py``
(test_scalar_semantics.py checks it against this lowering).
"""

from __future__ import annotations

from xdsl.dialects import llvm
from xdsl.dialects.builtin import Float16Type, Float32Type, Float64Type, FloatAttr, IndexType, IntegerAttr, IntegerType, i1, i32, i64
from xdsl.dialects.utils.fast_math import FastMathFlag
from xdsl.ir import Attribute, Operation, SSAValue

from dlc.lowering.to_llvm.function import ICMP_PREDICATES, FunctionLowering, handles, llvm_type, type_suffix

# libm functions for math ops LLVM has no intrinsic for (f32 name, f64 name).
LIBM = {
    "math.erf": ("erff", "erf"),
    "math.tanh": ("tanhf", "tanh"),
    "math.atan": ("atanf", "atan"),
    "math.tan": ("tanf", "tan"),
    "math.asin": ("asinf", "asin"),
    "math.acos": ("acosf", "acos"),
    "math.sinh": ("sinhf", "sinh"),
    "math.cosh": ("coshf", "cosh"),
    "math.log1p": ("log1pf", "log1p"),
    "math.expm1": ("expm1f", "expm1"),
    "math.cbrt": ("cbrtf", "cbrt"),
    "math.atan2": ("atan2f", "atan2"),
    "math.acosh": ("acoshf", "acosh"),
    "math.asinh": ("asinhf", "asinh"),
    "math.atanh": ("atanhf", "atanh"),
}
_UNARY_INTRINSIC = {
    "math.exp": "llvm.exp",
    "math.exp2": "llvm.exp2",
    "math.log": "llvm.log",
    "math.log2": "llvm.log2",
    "math.log10": "llvm.log10",
    "math.sqrt": "llvm.sqrt",
    "math.floor": "llvm.floor",
    "math.ceil": "llvm.ceil",
    "math.roundeven": "llvm.roundeven",
    "math.round": "llvm.round",
    "math.trunc": "llvm.trunc",
    "math.sin": "llvm.sin",
    "math.cos": "llvm.cos",
    "math.absf": "llvm.fabs",
}
_BINARY_INTRINSIC = {
    "math.powf": "llvm.pow",
    "arith.maximumf": "llvm.maximum",
    "arith.minimumf": "llvm.minimum",
    "arith.maxnumf": "llvm.maxnum",
    "arith.minnumf": "llvm.minnum",
    "math.copysign": "llvm.copysign",
}
# arith op -> the LLVM instruction it is (shared with the PTX emitter, backends/cuda/ptx.py)
FLOAT_INSTRUCTIONS = {"arith.addf": "fadd", "arith.subf": "fsub", "arith.mulf": "fmul",
                      "arith.divf": "fdiv", "arith.remf": "frem"}
INT_INSTRUCTIONS = {"arith.addi": "add", "arith.subi": "sub", "arith.muli": "mul", "arith.divsi": "sdiv",
                    "arith.divui": "udiv", "arith.remsi": "srem", "arith.remui": "urem", "arith.andi": "and",
                    "arith.ori": "or", "arith.xori": "xor", "arith.shli": "shl", "arith.shrsi": "ashr",
                    "arith.shrui": "lshr"}
# integer min/max: the predicate of an icmp + select pair
INT_MINMAX_PREDICATES = {"arith.maxsi": "sgt", "arith.minsi": "slt", "arith.maxui": "ugt", "arith.minui": "ult"}

_LLVM_OPS = {op.name: op for op in llvm.LLVM.operations}
_FLOAT_BINARY = {name: _LLVM_OPS[f"llvm.{instruction}"] for name, instruction in FLOAT_INSTRUCTIONS.items()}
_INT_BINARY = {name: _LLVM_OPS[f"llvm.{instruction}"] for name, instruction in INT_INSTRUCTIONS.items()}


@handles("arith.constant")
def _constant(lo: FunctionLowering, op: Operation) -> SSAValue:
    value = op.properties.get("value")
    if value is None:  # (not `or`: a zero IntegerAttr is falsy)
        value = op.attributes.get("value")
    type_ = llvm_type(op.results[0].type, lo.where(op))
    if isinstance(value, FloatAttr):
        return lo.const(value.value.data, type_)
    if isinstance(value, IntegerAttr):
        raw = value.value.data
        if isinstance(type_, IntegerType) and type_.width.data > 1 and raw >= 2 ** (type_.width.data - 1):
            raw -= 2 ** type_.width.data  # unsigned constant as a signless bit pattern
        return lo.const(raw, type_)
    raise lo.fail(op, f"with value {value} is not supported")


def _contracted_product(op: Operation) -> tuple[Operation, SSAValue] | None:
    """(the mulf, the addend) where ``op`` is an addf of a mulf, both ``contract``, the
    product used only there: the pair a schedule allows to round once."""
    if op.name != "arith.addf" or not _contracts(op) or not isinstance(op.results[0].type, (Float32Type, Float64Type)):
        return None
    for i, operand in enumerate(op.operands):
        mul = operand.owner
        if (isinstance(mul, Operation) and mul.name == "arith.mulf" and _contracts(mul)
                and mul.parent is op.parent and mul.results[0].has_one_use()):
            return mul, op.operands[1 - i]
    return None


def _contracts(op: Operation) -> bool:
    flags = op.properties.get("fastmath")
    return flags is not None and any(str(f) in ("contract", "fast") for f in flags.data)


@handles(*_FLOAT_BINARY)
def _float_binary(lo, op):
    # A contracted a * b + c is llvm.fmuladd, as clang emits under -ffp-contract=on: one
    # rounding wherever the target has FMA, whatever the vectorizers do later (as a
    # separate fmul + fadd, the SLP vectorizer packed a loop's scalar remainder into
    # vector multiplies and scalar adds, so those columns rounded twice and differed
    # from the vector body's: VGG-19's 1000 equal logits came out as two values).
    if op.name == "arith.mulf" and op.results[0].has_one_use():
        pair = _contracted_product(op.results[0].get_user_of_unique_use())
        if pair is not None and pair[0] is op:
            return None  # emitted by its addf, as the fmuladd
    pair = _contracted_product(op)
    if pair is not None:
        mul, addend = pair
        type_ = llvm_type(op.results[0].type)
        args = [lo.v(mul.operands[0]), lo.v(mul.operands[1]), lo.v(addend)]
        return lo.intrinsic(f"llvm.fmuladd.{type_suffix(type_)}", args, type_)
    # arith's other fastmath flags (set only where a schedule allows it) carry over to
    # LLVM unchanged
    flags = op.properties.get("fastmath")
    fast = llvm.FastMathAttr([FastMathFlag(str(f)) for f in flags.data]) if flags is not None and flags.data else None
    return lo.emit(_FLOAT_BINARY[op.name](lo.v(op.operands[0]), lo.v(op.operands[1]), fast))


@handles(*_INT_BINARY)
def _int_binary(lo, op):
    return lo.emit(_INT_BINARY[op.name](lo.v(op.operands[0]), lo.v(op.operands[1])))


@handles("arith.negf")
def _negf(lo, op):
    return lo.emit(llvm.FNegOp(lo.v(op.operands[0])))


@handles(*INT_MINMAX_PREDICATES)
def _int_minmax(lo, op):
    a, b = lo.v(op.operands[0]), lo.v(op.operands[1])
    return lo.emit(llvm.SelectOp(lo.icmp(INT_MINMAX_PREDICATES[op.name], a, b), a, b))


@handles("arith.cmpf")
def _cmpf(lo, op):
    predicate = op.properties["predicate"].value.data  # arith and llvm share the order
    if predicate in (0, 15):  # false, true: llvmlite has no such fcmp
        return lo.const(predicate // 15, i1)
    return lo.emit(llvm.FCmpOp(lo.v(op.operands[0]), lo.v(op.operands[1]), IntegerAttr(predicate, i64)))


@handles("arith.cmpi")
def _cmpi(lo, op):
    predicate = op.properties["predicate"].value.data
    return lo.icmp(ICMP_PREDICATES[predicate], lo.v(op.operands[0]), lo.v(op.operands[1]))


@handles("arith.select")
def _select(lo, op):
    return lo.emit(llvm.SelectOp(*(lo.v(o) for o in op.operands)))


def _int_width(t: Attribute) -> int:
    return 64 if isinstance(t, IndexType) else t.width.data


@handles("arith.index_cast", "arith.extsi", "arith.extui", "arith.trunci", "arith.index_castui")
def _int_cast(lo, op):
    source, target = op.operands[0].type, op.results[0].type
    value = lo.v(op.operands[0])
    src_w, dst_w = _int_width(source), _int_width(target)
    if src_w == dst_w:
        return value
    if dst_w < src_w:
        return lo.emit(llvm.TruncOp(value, llvm_type(target)))
    unsigned = op.name in ("arith.extui", "arith.index_castui") or src_w == 1
    cls = llvm.ZExtOp if unsigned else llvm.SExtOp
    return lo.emit(cls(value, llvm_type(target)))


@handles("arith.extf")
def _extf(lo, op):
    return lo.emit(llvm.FPExtOp(lo.v(op.operands[0]), llvm_type(op.results[0].type)))


@handles("arith.truncf")
def _truncf(lo, op):
    value, target = lo.v(op.operands[0]), llvm_type(op.results[0].type)
    if isinstance(target, Float16Type) and isinstance(value.type, Float64Type):
        return _f64_to_f16(lo, value)
    return lo.emit(llvm.FPTruncOp(value, target))


_FCMP_ONE = 6  # ordered and not equal (false for NaN)


def _f64_to_f16(lo, value: SSAValue) -> SSAValue:
    """f64 -> f16 without LLVM's ``__truncdfhf2`` libcall (x86 has no such
    instruction and the MCJIT process cannot resolve the helper: the call hung).

    Round to f32 with round-to-odd (truncate toward zero, then set the last bit
    when inexact), then f32 -> f16 natively: round-to-odd to 24 >= 11 + 2 bits
    makes the second rounding exact-as-once (no double-rounding error)."""
    nearest = lo.emit(llvm.FPTruncOp(value, Float32Type()))
    back = lo.emit(llvm.FPExtOp(nearest, Float64Type()))
    inexact = lo.emit(llvm.FCmpOp(back, value, IntegerAttr(_FCMP_ONE, i64)))
    # magnitudes compare as unsigned integers once the sign bit is cleared
    no_sign = lo.const(0x7FFF_FFFF_FFFF_FFFF, i64)
    back_mag = lo.emit(llvm.AndOp(lo.emit(llvm.BitcastOp(back, i64)), no_sign))
    value_mag = lo.emit(llvm.AndOp(lo.emit(llvm.BitcastOp(value, i64)), no_sign))
    rounded_away = lo.emit(llvm.AndOp(inexact, lo.icmp("ugt", back_mag, value_mag)))
    bits = lo.emit(llvm.BitcastOp(nearest, i32))
    toward_zero = lo.emit(llvm.SelectOp(rounded_away, lo.emit(llvm.SubOp(bits, lo.const(1, i32))), bits))
    odd = lo.emit(llvm.SelectOp(inexact, lo.emit(llvm.OrOp(toward_zero, lo.const(1, i32))), toward_zero))
    return lo.emit(llvm.FPTruncOp(lo.emit(llvm.BitcastOp(odd, Float32Type())), Float16Type()))


@handles("arith.bitcast")
def _bitcast(lo, op):
    return lo.emit(llvm.BitcastOp(lo.v(op.operands[0]), llvm_type(op.results[0].type)))


@handles("arith.sitofp")
def _sitofp(lo, op):
    return lo.emit(llvm.SIToFPOp(lo.v(op.operands[0]), llvm_type(op.results[0].type)))


@handles("arith.uitofp")
def _uitofp(lo, op):
    """xDSL's llvm dialect has no uitofp: widen to i64 and convert signed; for i64,
    halve (keeping the low bit for rounding), convert and double when the top bit is set."""
    value = lo.v(op.operands[0])
    target = llvm_type(op.results[0].type)
    width = _int_width(op.operands[0].type)
    if width < 64:
        return lo.emit(llvm.SIToFPOp(lo.emit(llvm.ZExtOp(value, i64)), target))
    direct = lo.emit(llvm.SIToFPOp(value, target))
    one = lo.const(1, i64)
    halved = lo.emit(llvm.OrOp(lo.emit(llvm.LShrOp(value, one)), lo.emit(llvm.AndOp(value, one))))
    as_float = lo.emit(llvm.SIToFPOp(halved, target))
    doubled = lo.emit(llvm.FAddOp(as_float, as_float))
    negative = lo.icmp("slt", value, lo.const(0, i64))
    return lo.emit(llvm.SelectOp(negative, doubled, direct))


@handles("arith.fptosi", "arith.fptoui")
def _fptoi(lo, op):
    """xDSL's llvm dialect has no fptosi/fptoui: the saturating intrinsics agree on
    every in-range value (out-of-range is undefined for the plain instructions)."""
    target = llvm_type(op.results[0].type)
    source = llvm_type(op.operands[0].type)
    sign = "s" if op.name == "arith.fptosi" else "u"
    name = f"llvm.fpto{sign}i.sat.{type_suffix(target)}.{type_suffix(source)}"
    return lo.intrinsic(name, [lo.v(op.operands[0])], target)


@handles(*_UNARY_INTRINSIC)
def _unary_intrinsic(lo, op):
    type_ = llvm_type(op.results[0].type)
    return lo.intrinsic(f"{_UNARY_INTRINSIC[op.name]}.{type_suffix(type_)}", [lo.v(op.operands[0])], type_)


@handles(*_BINARY_INTRINSIC)
def _binary_intrinsic(lo, op):
    type_ = llvm_type(op.results[0].type)
    args = [lo.v(o) for o in op.operands]
    return lo.intrinsic(f"{_BINARY_INTRINSIC[op.name]}.{type_suffix(type_)}", args, type_)


@handles("math.fma")
def _fma(lo, op):
    type_ = llvm_type(op.results[0].type)
    args = [lo.v(o) for o in op.operands]
    if isinstance(type_, Float16Type):
        # x86 codegen turns llvm.fma.f16 into a call of a half-precision libcall the JIT
        # cannot resolve (the process crashes). Computed in f64 instead: a * b is exact
        # there, and for every result in f16's range a * b + c is exact or rounds without
        # reaching an f16 halfway point, so rounding it to f16 rounds the exact value once
        # (in f32 the two roundings differ: 0.05206 * -0.994 + -2.918 is one f16 ulp off).
        # The f64 -> f16 step is _f64_to_f16's: a plain fptrunc is a libcall too.
        wide = [lo.emit(llvm.FPExtOp(a, Float64Type())) for a in args]
        return _f64_to_f16(lo, lo.intrinsic("llvm.fma.f64", wide, Float64Type()))
    return lo.intrinsic(f"llvm.fma.{type_suffix(type_)}", args, type_)


@handles("math.rsqrt")
def _rsqrt(lo, op):
    type_ = llvm_type(op.results[0].type)
    root = lo.intrinsic(f"llvm.sqrt.{type_suffix(type_)}", [lo.v(op.operands[0])], type_)
    return lo.emit(llvm.FDivOp(lo.const(1.0, type_), root))


@handles("math.absi")
def _absi(lo, op):
    type_ = llvm_type(op.results[0].type)
    return lo.intrinsic(f"llvm.abs.{type_suffix(type_)}", [lo.v(op.operands[0]), lo.const(0, i1)], type_)


@handles("math.ctlz", "math.cttz", "math.ctpop")
def _bit_count(lo, op):
    type_ = llvm_type(op.results[0].type)
    args = [lo.v(op.operands[0])]
    if op.name != "math.ctpop":
        args.append(lo.const(0, i1))  # defined result (the width) for a zero input
    return lo.intrinsic(f"llvm.{op.name[5:]}.{type_suffix(type_)}", args, type_)


@handles("arith.floordivsi", "arith.ceildivsi")
def _rounded_division(lo, op):
    """Truncating division corrected by one when the remainder is non-zero and the
    exact quotient is negative (floor) or positive (ceil)."""
    a, b = lo.v(op.operands[0]), lo.v(op.operands[1])
    type_ = llvm_type(op.results[0].type)
    quotient = lo.emit(llvm.SDivOp(a, b))
    remainder = lo.emit(llvm.SRemOp(a, b))
    zero = lo.const(0, type_)
    inexact = lo.icmp("ne", remainder, zero)
    signs_differ = lo.emit(llvm.XOrOp(lo.icmp("slt", remainder, zero), lo.icmp("slt", b, zero)))
    if op.name == "arith.floordivsi":
        adjust, delta = lo.emit(llvm.AndOp(inexact, signs_differ)), -1
    else:
        same_sign = lo.emit(llvm.XOrOp(signs_differ, lo.const(1, i1)))
        adjust, delta = lo.emit(llvm.AndOp(inexact, same_sign)), 1
    moved = lo.emit(llvm.AddOp(quotient, lo.const(delta, type_)))
    return lo.emit(llvm.SelectOp(adjust, moved, quotient))


@handles(*LIBM)
def _libm(lo, op):
    type_ = llvm_type(op.results[0].type)
    args = [lo.v(o) for o in op.operands]
    if isinstance(type_, Float16Type):  # libm has no half functions: compute in f32
        args = [lo.emit(llvm.FPExtOp(a, Float32Type())) for a in args]
        result = lo.call(LIBM[op.name][0], args, Float32Type())
        return lo.emit(llvm.FPTruncOp(result, type_))
    name = LIBM[op.name][0 if isinstance(type_, Float32Type) else 1]
    return lo.call(name, args, type_)

