"""What every scalar arith/math op of the loop IR computes, as Python: the one table.

The slow executors of loop IR use it: ``lowering/interp.py`` (the loop-IR
executor, which inlines the expressions into the Python source it writes) and
``backends/cuda/emulator.py`` (the GPU emulator, which calls
:func:`scalar_function`). The truth is what ``lower-to-llvm`` emits;
``test/python/test_scalar_semantics.py`` compiles every op of the table through
the LLVM backend on edge-case inputs and compares bit for bit (transcendental
math within a few ulp: numpy and libm are not the same implementation).

Values: integers (signless iN, i1 as 0/1) are Python ints kept in their signed
two's complement range, wrapped after every op; ``index`` is an unbounded
Python int (static shapes never overflow i64); floats are numpy scalars of the
exact width, so f16/f32 rounding is that of compiled code.

Semantics that are not obvious (each as the LLVM lowering produces it):

* ``divsi``/``remsi`` truncate toward zero (the remainder has the dividend's
  sign); ``floordivsi``/``ceildivsi`` round down/up; ``divui``/``remui`` read
  both operands as unsigned. Division by zero raises :class:`ScalarError`
  (undefined in LLVM, a trap on x86).
* shifts read the count as unsigned; a count >= the width is poison in LLVM:
  here 0 (kernels never shift that far). ``shrsi`` shifts in sign bits.
* ``fptosi``/``fptoui`` saturate (``llvm.fpto[su]i.sat``): NaN -> 0,
  out-of-range -> the nearest representable value.
* ``sitofp``/``uitofp`` round once to nearest-even (also for i64 -> f32);
  ``sitofp`` of an i1 true is -1.0, but ``extsi`` of an i1 zero-extends (as
  lower-to-llvm's ``_int_cast`` does; arith's own rule would give -1).
* ``maximumf``/``minimumf`` propagate NaN and order -0.0 below +0.0
  (``llvm.maximum``); ``maxnumf``/``minnumf`` return the non-NaN operand
  (``llvm.maxnum``; the sign of a zero result is unspecified).
* ``math.powf`` is C's ``pow`` (``pow(-inf, 0.5)`` is +inf, where numpy says NaN);
  ``math.round`` rounds half away from zero, ``math.roundeven`` half to even;
  ``math.fma`` rounds once; ``math.rsqrt`` is ``1 / sqrt(x)`` (two roundings).
* f16 math runs in f32 and rounds back (libm has no half functions).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, IndexType, IntegerAttr, IntegerType
from xdsl.ir import Attribute, Operation

from dlc.dialects.graph_base import is_float, numpy_dtype


class ScalarError(Exception):
    """An op the table does not know, or a value it cannot compute (division by zero)."""


# -- types -------------------------------------------------------------------------

def float_type(t: Attribute) -> type:
    """The numpy scalar type of an f16/f32/f64 type."""
    if not is_float(t):
        raise ScalarError(f"unsupported float type {t}")
    return numpy_dtype(t).type


def float_ctor(t: Attribute) -> str:
    """:func:`float_type` as generated code names it (``np.float32``)."""
    return f"np.{float_type(t).__name__}"


def int_width(t: Attribute) -> int | None:
    """Bits of an integer type (``index``: 64); None for other types."""
    if isinstance(t, IntegerType):
        return t.width.data
    if isinstance(t, IndexType):
        return 64
    return None


def storage_dtype(t: Attribute) -> np.dtype:
    """The numpy dtype buffers of element type ``t`` are stored in (i1 as bool)."""
    if is_float(t):
        return numpy_dtype(t)
    if isinstance(t, IntegerType):  # signless: held signed, whatever the signedness
        w = t.width.data
        return np.dtype(np.bool_) if w == 1 else np.dtype(f"i{w // 8}")
    if isinstance(t, IndexType):
        return np.dtype(np.int64)
    raise ScalarError(f"unsupported element type {t}")


# -- runtime helpers (the namespace the expressions are evaluated in) ----------------


def wrap(x: int, w: int) -> int:
    """``x`` as an iN holds it: two's complement, i1 as 0/1."""
    if w == 1:
        return x & 1
    half = 1 << (w - 1)
    return ((x + half) & ((1 << w) - 1)) - half


def unsigned(x: int, w: int) -> int:
    return x & ((1 << w) - 1)


def _cdiv(a: int, b: int) -> int:
    if b == 0:
        raise ScalarError("integer division by zero")
    q = abs(a) // abs(b)
    return -q if (a < 0) != (b < 0) else q


def _crem(a: int, b: int) -> int:
    return a - b * _cdiv(a, b)


def _floordiv(a: int, b: int) -> int:
    if b == 0:
        raise ScalarError("integer division by zero")
    return a // b


def _ceildiv(a: int, b: int) -> int:
    if b == 0:
        raise ScalarError("integer division by zero")
    return -((-a) // b)


def _shift_count(b: int, w: int) -> int | None:
    count = unsigned(b, w)
    return count if count < w else None  # None: poison in LLVM


def _shl(a: int, b: int, w: int) -> int:
    count = _shift_count(b, w)
    return 0 if count is None else wrap(a << count, w)


def _shrs(a: int, b: int, w: int) -> int:
    count = _shift_count(b, w)
    return 0 if count is None else a >> count


def _shru(a: int, b: int, w: int) -> int:
    count = _shift_count(b, w)
    return 0 if count is None else wrap(unsigned(a, w) >> count, w)


def _ctlz(a: int, w: int) -> int:
    return w - unsigned(a, w).bit_length()


def _cttz(a: int, w: int) -> int:
    a = unsigned(a, w)
    return w if a == 0 else (a & -a).bit_length() - 1


def _ctpop(a: int, w: int) -> int:
    return bin(unsigned(a, w)).count("1")


def _fpto_sat(x, lo: int, hi: int) -> int:
    if x != x:
        return 0
    if x <= lo:
        return lo
    if x >= hi:
        return hi
    return int(x)  # truncates toward zero; in range here


def _fptosi(x, w: int) -> int:
    return wrap(_fpto_sat(x, -(1 << (w - 1)), (1 << (w - 1)) - 1), w)


def _fptoui(x, w: int) -> int:
    return wrap(_fpto_sat(x, 0, (1 << w) - 1), w)


def _int_to_float(x: int, ctor):
    """``x`` rounded once to ``ctor``'s type (nearest-even), as sitofp/uitofp do.
    A Python int above 2**53 converts to double with a rounding of its own, so it
    is first rounded to odd at 53 bits (exact in double; odd rounding makes the
    second rounding to f32/f16 the correct one)."""
    if -(1 << 53) < x < (1 << 53) or ctor is np.float64:
        return ctor(float(x))
    mag = abs(x)
    shift = mag.bit_length() - 53
    top = mag >> shift
    if mag & ((1 << shift) - 1):
        top |= 1
    return ctor(math.copysign(math.ldexp(float(top), shift), x))


def _round_away(x):
    """llvm.round: to nearest, ties away from zero (exact: x - trunc(x) is exact)."""
    t = np.trunc(x)
    if np.abs(x - t) >= type(x)(0.5):
        return t + np.copysign(type(x)(1), x)
    return t


def _maximum(a, b):
    """llvm.maximum: NaN if either is NaN; +0.0 above -0.0."""
    if a != a or b != b:
        return type(a)(np.nan)
    if a == b:
        return b if np.signbit(a) else a
    return a if a > b else b


def _minimum(a, b):
    if a != a or b != b:
        return type(a)(np.nan)
    if a == b:
        return a if np.signbit(a) else b
    return a if a < b else b


def _fma(a, b, c):
    """a * b + c rounded once (llvm.fma)."""
    ctor = type(a)
    if not (np.isfinite(a) and np.isfinite(b) and np.isfinite(c)):
        return ctor(np.float64(a) * np.float64(b) + np.float64(c))
    exact = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
    if ctor is np.float64:
        result = float(exact)  # correctly rounded
        if result == 0:
            return ctor(a * b + c)  # the sign of an exact zero follows IEEE addition
        return ctor(result)
    # round to odd at double precision (53 >= 24 + 2 bits), then to the narrow type
    near = float(exact)
    if near == 0:
        return ctor(np.float64(a) * np.float64(b) + np.float64(c))
    if Fraction(near) != exact:
        mantissa, exponent = math.frexp(near)
        if int(math.ldexp(mantissa, 53)) % 2 == 0:  # even: step to the odd neighbour toward exact
            near = math.nextafter(near, math.inf if exact > Fraction(near) else -math.inf)
    return ctor(near)


def _pow(a, b):
    """C's pow (libm, as llvm.pow calls it): numpy's power gives NaN where C99
    Annex F defines a value (pow(-inf, 0.5) is +inf), so those go to math.pow."""
    ctor = type(a)
    result = np.power(np.float64(a), np.float64(b))
    if result != result and a == a and b == b:
        try:
            result = math.pow(float(a), float(b))
        except ValueError:  # a negative base and a non-integer exponent
            result = math.nan
    return ctor(result)


def _erf(x):
    return type(x)(math.erf(float(x)))


def _bitcast(x, source: str, target: str):
    value = np.array(x, dtype=source).view(target)[()]
    return int(value) if np.dtype(target).kind in "iub" else value


HELPERS: dict[str, object] = {
    "np": np,
    "math": math,
    "inf": math.inf,  # repr() of an infinite or NaN constant
    "nan": math.nan,
    "_wrap": wrap,
    "_u": unsigned,
    "_cdiv": _cdiv,
    "_crem": _crem,
    "_floordiv": _floordiv,
    "_ceildiv": _ceildiv,
    "_shl": _shl,
    "_shrs": _shrs,
    "_shru": _shru,
    "_ctlz": _ctlz,
    "_cttz": _cttz,
    "_ctpop": _ctpop,
    "_fptosi": _fptosi,
    "_fptoui": _fptoui,
    "_i2f": _int_to_float,
    "_round_away": _round_away,
    "_maximum": _maximum,
    "_minimum": _minimum,
    "_fma": _fma,
    "_pow": _pow,
    "_erf": _erf,
    "_bitcast": _bitcast,
}


# -- the table ---------------------------------------------------------------------


class Operands:
    """What an entry of the table sees: the operand expressions (``s[0]``...) and
    the op's types, with helpers for wrapping integer results."""

    def __init__(self, op: Operation, args: Sequence[str]):
        self.op = op
        self.args = list(args)
        self.result = op.results[0].type
        self.source = op.operands[0].type if op.operands else None
        self.w = self.result.width.data if isinstance(self.result, IntegerType) else None
        self.sw = int_width(self.source) or 64

    def __getitem__(self, i: int) -> str:
        return self.args[i]

    def wrap(self, expr: str) -> str:
        """``expr`` wrapped to the result's width (index results are not wrapped)."""
        return f"_wrap({expr}, {self.w})" if self.w is not None else expr

    def u(self, i: int) -> str:
        """Operand ``i`` read as unsigned."""
        return f"_u({self.args[i]}, {self.sw})"

    @property
    def t(self) -> str:
        return float_ctor(self.result)

    def call(self, fn: str) -> str:
        """``fn`` on all operands (numpy ufuncs keep the operands' float type)."""
        return f"{fn}({', '.join(self.args)})"


Entry = Callable[[Operands], str]
TABLE: dict[str, Entry] = {}


def _infix(symbol: str) -> Entry:
    """``a <symbol> b``, wrapped for integer results (floats round by their numpy type)."""
    return lambda s: s.wrap(f"{s[0]} {symbol} {s[1]}")


def _call(fn: str, unsigned: bool = False) -> Entry:
    """``fn(a, b)`` wrapped to the result's width; ``unsigned``: on the unsigned operands."""
    return lambda s: s.wrap(f"{fn}({s.u(0)}, {s.u(1)})" if unsigned else f"{fn}({s[0]}, {s[1]})")


def _bits(fn: str) -> Entry:
    """``fn(operands..., width)``: shifts and bit counts, which need the width."""
    return lambda s: f"{fn}({', '.join(s.args)}, {s.sw})"


def _plain(fn: str) -> Entry:
    """``fn(operands...)`` with no wrapping (floats, or results that stay in range)."""
    return lambda s: s.call(fn)


def _entries(**by_name: Entry) -> None:
    for name, entry in by_name.items():
        TABLE[name.replace("__", ".")] = entry


def _ufuncs(**by_name: str) -> None:
    _entries(**{name: _plain(fn) for name, fn in by_name.items()})


_entries(
    # integers (signless; results wrapped to their width)
    arith__addi=_infix("+"), arith__subi=_infix("-"), arith__muli=_infix("*"),
    arith__andi=_infix("&"), arith__ori=_infix("|"), arith__xori=_infix("^"),
    arith__divsi=_call("_cdiv"), arith__remsi=_call("_crem"),
    arith__floordivsi=_call("_floordiv"), arith__ceildivsi=_call("_ceildiv"),
    arith__divui=_call("_cdiv", unsigned=True), arith__remui=_call("_crem", unsigned=True),
    arith__maxsi=_plain("max"), arith__minsi=_plain("min"),
    arith__maxui=_call("max", unsigned=True), arith__minui=_call("min", unsigned=True),
    arith__shli=_bits("_shl"), arith__shrsi=_bits("_shrs"), arith__shrui=_bits("_shru"),
    math__ctlz=_bits("_ctlz"), math__cttz=_bits("_cttz"), math__ctpop=_bits("_ctpop"),
    math__absi=lambda s: s.wrap(f"abs({s[0]})"),
    arith__select=lambda s: f"({s[1]} if {s[0]} else {s[2]})",
    # floats (numpy scalars of the exact width)
    arith__addf=_infix("+"), arith__subf=_infix("-"), arith__mulf=_infix("*"), arith__divf=_infix("/"),
    arith__negf=lambda s: f"-{s[0]}",
    arith__maximumf=_plain("_maximum"), arith__minimumf=_plain("_minimum"),
    math__rsqrt=lambda s: f"{s.t}(1) / np.sqrt({s[0]})",
    math__round=_plain("_round_away"), math__erf=_plain("_erf"), math__powf=_plain("_pow"),
    math__fma=_plain("_fma"),
    # casts
    arith__sitofp=lambda s: f"_i2f({'-' if s.sw == 1 else ''}{s[0]}, {s.t})",
    arith__uitofp=lambda s: f"_i2f({s.u(0)}, {s.t})",
    arith__fptosi=lambda s: f"_fptosi({s[0]}, {s.w})",
    arith__fptoui=lambda s: f"_fptoui({s[0]}, {s.w})",
    arith__extf=lambda s: f"{s.t}({s[0]})",
    arith__truncf=lambda s: f"{s.t}({s[0]})",
    # i1 extends with zeros even for extsi: lower-to-llvm's _int_cast zero-extends an i1
    arith__extsi=lambda s: s[0],
    arith__extui=lambda s: s.u(0),
    arith__trunci=lambda s: s.wrap(s[0]),
    arith__index_cast=lambda s: s.wrap(s[0]),
    arith__index_castui=lambda s: s.wrap(s[0]) if s.w is not None else s.u(0),
    arith__bitcast=lambda s: (f"_bitcast({s[0]}, '{storage_dtype(s.source).str}', "
                              f"'{storage_dtype(s.result).str}')"),
)
_ufuncs(
    arith__remf="np.fmod", arith__maxnumf="np.fmax", arith__minnumf="np.fmin",
    math__copysign="np.copysign", math__atan2="np.arctan2",
    math__exp="np.exp", math__exp2="np.exp2", math__expm1="np.expm1",
    math__log="np.log", math__log2="np.log2", math__log10="np.log10", math__log1p="np.log1p",
    math__sqrt="np.sqrt", math__cbrt="np.cbrt", math__absf="np.abs",
    math__floor="np.floor", math__ceil="np.ceil", math__trunc="np.trunc", math__roundeven="np.rint",
    math__sin="np.sin", math__cos="np.cos", math__tan="np.tan",
    math__asin="np.arcsin", math__acos="np.arccos", math__atan="np.arctan",
    math__sinh="np.sinh", math__cosh="np.cosh", math__tanh="np.tanh",
    math__asinh="np.arcsinh", math__acosh="np.arccosh", math__atanh="np.arctanh",
)

_CMPI = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_CMPF_ORDERED = {"oeq": "==", "ogt": ">", "oge": ">=", "olt": "<", "ole": "<="}
_CMPF_UNORDERED = {"ueq": "==", "ugt": ">", "uge": ">=", "ult": "<", "ule": "<="}


def _cmpi(s: Operands) -> str:
    pred = arith.CMPI_COMPARISON_OPERATIONS[s.op.predicate.value.data]
    x, y = (s.u(0), s.u(1)) if pred[0] == "u" else (s[0], s[1])
    return f"int({x} {_CMPI[pred if pred in ('eq', 'ne') else pred[1:]]} {y})"


def _cmpf(s: Operands) -> str:
    pred = arith.CMPF_COMPARISON_OPERATIONS[s.op.predicate.value.data]
    x, y = s[0], s[1]
    ordered = f"{x} == {x} and {y} == {y}"
    if pred in _CMPF_ORDERED:
        return f"int({x} {_CMPF_ORDERED[pred]} {y})"
    if pred in _CMPF_UNORDERED:
        return f"int(not ({ordered}) or {x} {_CMPF_UNORDERED[pred]} {y})"
    return {
        "false": "0", "true": "1",
        "one": f"int({ordered} and {x} != {y})", "une": f"int(not ({x} == {y}))",
        "ord": f"int({ordered})", "uno": f"int(not ({ordered}))",
    }[pred]


TABLE["arith.cmpi"] = _cmpi
TABLE["arith.cmpf"] = _cmpf


# -- entry points --------------------------------------------------------------------


def knows(name: str) -> bool:
    return name == "arith.constant" or name in TABLE


def expression(op: Operation, args: Sequence[str]) -> str:
    """Python source computing ``op`` from operand expressions ``args`` (names of
    the values), evaluated in :data:`HELPERS`."""
    if op.name == "arith.constant":
        return constant_source(op)
    entry = TABLE.get(op.name)
    if entry is None:
        raise ScalarError(f"unsupported op '{op.name}'")
    return entry(Operands(op, args))


def constant_value(op: Operation):
    """The value of an ``arith.constant`` (int in range, or numpy float)."""
    value = op.properties.get("value")
    if value is None:  # (not `or`: a zero IntegerAttr is falsy)
        value = op.attributes.get("value")
    t = op.results[0].type
    if isinstance(value, FloatAttr):
        return float_type(t)(float(value.value.data))
    if isinstance(value, IntegerAttr):
        raw = value.value.data
        return wrap(raw, t.width.data) if isinstance(t, IntegerType) else raw
    raise ScalarError(f"unsupported constant {value}")


def constant_source(op: Operation) -> str:
    value = constant_value(op)
    if isinstance(value, int):
        return repr(value)
    return f"{float_ctor(op.results[0].type)}({float(value)!r})"


def scalar_function(op: Operation) -> Callable:
    """``op`` as a Python function of its operand values (compiles a lambda: callers
    running an op many times keep the function)."""
    names = [f"x{i}" for i in range(len(op.operands))]
    return eval(f"lambda {', '.join(names)}: {expression(op, names)}", dict(HELPERS))
