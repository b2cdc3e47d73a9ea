"""Shared C-family emission of loop IR: the scalar-op tables, C types and literals, and
a writer of one function body (scalar arith/math, loads/stores, ``tloop.for`` loops,
``scf.if``) that both the CUDA emitter (``backends/cuda/cuda_c.py``) and the portable C99
emitter (``backends/c/emit_c.py``) extend.

What differs between them is a few hooks on :class:`FunctionWriter`: the diagnostic
prefix and exception class (``PREFIX``, ``ERROR``), the spelling of f16 (CUDA's
``__half``; C99 has none), math calls (CUDA device functions vs. a documented libm list
plus our own helpers), bit casts, stack arrays (CUDA ``__shared__``) and
:meth:`FunctionWriter.target_op` for target ops (GPU thread ids, barriers).
"""

from __future__ import annotations

import math as pymath
import re

from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import (
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    NoneAttr,
    StridedLayoutAttr,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.utils.exceptions import DiagnosticException

from dlc.dialects.tloop import ForOp, YieldOp
from dlc.lowering.memref_layout import row_major

CMPI = arith.CMPI_COMPARISON_OPERATIONS  # predicate names by number
CMPF = arith.CMPF_COMPARISON_OPERATIONS
C_OPS = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
BINARY = {
    "arith.addf": "+", "arith.subf": "-", "arith.mulf": "*", "arith.divf": "/",
    "arith.addi": "+", "arith.subi": "-", "arith.muli": "*", "arith.divsi": "/",
    "arith.remsi": "%", "arith.andi": "&", "arith.ori": "|", "arith.xori": "^",
    "arith.shli": "<<", "arith.shrsi": ">>",
}
UNSIGNED_BINARY = {"arith.divui": "/", "arith.remui": "%", "arith.shrui": ">>"}
# float function names (f32 spelling; f64 drops the trailing "f")
MATH = {
    "math.exp": "expf", "math.log": "logf", "math.sqrt": "sqrtf", "math.rsqrt": "rsqrtf",
    "math.tanh": "tanhf", "math.erf": "erff", "math.floor": "floorf", "math.ceil": "ceilf",
    "math.roundeven": "rintf", "math.round": "roundf", "math.sin": "sinf", "math.cos": "cosf",
    "math.powf": "powf", "math.absf": "fabsf", "math.fma": "fmaf", "math.exp2": "exp2f",
    "math.log2": "log2f", "math.trunc": "truncf",
    "math.acos": "acosf", "math.asin": "asinf", "math.atan": "atanf",
    "arith.maximumf": "dlc_maximumf", "arith.minimumf": "dlc_minimumf", "arith.maxnumf": "fmaxf",
    "arith.minnumf": "fminf", "arith.remf": "fmodf", "math.copysign": "copysignf",
}
SIGNED_MINMAX = {"arith.maxsi": ">", "arith.minsi": "<", "arith.maxui": ">", "arith.minui": "<"}
RESERVED = {
    "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "int", "float", "double",
    "char", "long", "short", "unsigned", "signed", "void", "bool", "auto", "const", "for",
    "if", "else", "while", "do", "return", "switch", "case", "default", "break", "continue",
    "struct", "union", "class", "new", "delete", "this", "static", "extern", "inline", "half",
    "main", "register", "volatile", "goto", "sizeof", "typedef", "template", "namespace",
    "restrict", "workspace", "status",
}


class EmitError(DiagnosticException):
    """The module holds something a C-family emitter does not support (one-line message)."""


def ctype(type_: Attribute, half: str | None = "__half", error: type[EmitError] = EmitError,
          prefix: str = "emit-cuda") -> str:
    """The C spelling of a scalar type; ``half`` is the f16 type (None: unsupported)."""
    if isinstance(type_, IndexType):
        return "int64_t"
    if isinstance(type_, IntegerType):
        width = type_.width.data
        if width == 1:
            return "bool"
        if width in (8, 16, 32, 64):
            return f"int{width}_t"
    if isinstance(type_, Float32Type):
        return "float"
    if isinstance(type_, Float64Type):
        return "double"
    if isinstance(type_, Float16Type) and half is not None:
        return half
    raise error(f"{prefix}: unsupported type {type_}")


def utype(type_: Attribute) -> str:
    """The unsigned C type of an integer/index type."""
    c = ctype(type_)
    return "bool" if c == "bool" else "u" + c


def sanitize(hint: str | None, fallback: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_]", "_", hint or fallback)
    if not name or name[0].isdigit() or name in RESERVED or name.startswith("__"):
        name = "v_" + name
    return name


def float_literal(value: float, type_: Attribute, nan: str = "NAN", inf: str = "INFINITY") -> str:
    if pymath.isnan(value):
        text = nan
    elif pymath.isinf(value):
        text = inf if value > 0 else f"-{inf}"
    else:
        text = repr(float(value))
        if "e" not in text and "." not in text:
            text += ".0"
        if isinstance(type_, (Float32Type, Float16Type)):
            text += "f"
    if isinstance(type_, Float16Type):
        return f"__float2half({text})"
    if isinstance(type_, Float64Type) and pymath.isinf(value):
        return f"(double){text}"
    return text


def int_literal(value: int, c: str) -> str:
    if c == "bool":
        return "true" if value else "false"
    if c in ("int8_t", "int16_t"):
        return f"(({c}){value})"
    text = str(value) if -(2**31) < value < 2**31 else f"{value}LL"
    return f"({text})" if value < 0 else text


def strides_of(type_: MemRefType, prefix: str = "emit-cuda", error: type[EmitError] = EmitError) -> list[int]:
    if not isinstance(type_.layout, NoneAttr) and not (
        isinstance(type_.layout, StridedLayoutAttr)
        and type_.layout.get_strides() == row_major(type_.get_shape())
    ):
        raise error(f"{prefix}: only identity-layout memrefs are supported, got {type_}")
    return row_major(type_.get_shape())


def num_elements(type_: MemRefType) -> int:
    return pymath.prod(type_.get_shape())


def byte_size(type_: MemRefType) -> int:
    elt = type_.element_type
    width = 8 if isinstance(elt, IndexType) else elt.bitwidth  # type: ignore[union-attr]
    return num_elements(type_) * max(1, width // 8)


def stored_args(kernel: func.FuncOp) -> set[int]:
    """Indices of the kernel arguments some store writes (the others are read-only)."""
    written = set()
    for op in kernel.walk():
        if isinstance(op, memref.StoreOp) and op.memref in kernel.body.block.args:
            written.add(op.memref.index)  # type: ignore[union-attr]
    return written


def shape_text(type_: MemRefType) -> str:
    """``1x16x32x32xf32``: a memref's shape as the IR spells it."""
    return "x".join(str(d) for d in type_.get_shape()) + ("x" if type_.get_shape() else "") + str(type_.element_type)


class FunctionWriter:
    """Emits one function's body; names SSA values after their name hints."""

    PREFIX = "emit-cuda"  # first word of every diagnostic
    ERROR: type[EmitError] = EmitError
    HALF: str | None = "__half"  # the f16 C type, None when the target has none

    def __init__(self, where: str):
        self.where = where
        self.lines: list[str] = []
        self.names: dict[SSAValue, str] = {}
        self.taken: set[str] = set()
        self.depth = 1

    # --- hooks -------------------------------------------------------------

    def ctype(self, type_: Attribute) -> str:
        return ctype(type_, self.HALF, self.ERROR, f"{self.PREFIX}: {self.where}")

    def target_op(self, op: Operation) -> bool:
        """Emit a target-specific op; False when ``op`` is not one."""
        return False

    def alloca(self, op: memref.AllocaOp) -> None:
        type_ = op.memref.type
        var = self.fresh(op.memref, "scratch")
        self.line(f"{self.ctype(type_.element_type)} {var}[{max(1, num_elements(type_))}];")

    def unroll_pragma(self) -> str | None:
        return None

    # --- names -------------------------------------------------------------

    def line(self, text: str) -> None:
        self.lines.append("  " * self.depth + text)

    def fresh(self, value: SSAValue, fallback: str = "t") -> str:
        temporary = value.name_hint is None  # t0, t1, ...; named values keep their names
        base = fallback if temporary else sanitize(value.name_hint, fallback)
        n = 0 if temporary else 1
        name = f"{base}0" if temporary else base
        while name in self.taken:
            name = f"{base}{n}" if temporary else f"{base}_{n}"
            n += 1
        self.taken.add(name)
        self.names[value] = name
        return name

    def __getitem__(self, value: SSAValue) -> str:
        if value not in self.names:
            raise self.ERROR(f"{self.PREFIX}: {self.where}: value used before definition")
        return self.names[value]

    def define(self, result: SSAValue, expr: str) -> None:
        if not result.uses:  # dead value (e.g. an unused thread id): nothing to emit
            return
        name = self.fresh(result)
        self.line(f"const {self.ctype(result.type)} {name} = {expr};")

    def error(self, op: Operation) -> EmitError:
        return self.ERROR(f"{self.PREFIX}: {self.where}: unsupported op '{op.name}'")

    # --- memory ------------------------------------------------------------

    def element(self, ref: SSAValue, indices) -> str:
        type_ = ref.type
        assert isinstance(type_, MemRefType)
        terms, offset = [], 0
        for i, stride in zip(indices, strides_of(type_, self.PREFIX, self.ERROR)):
            if self[i].isdigit():  # constant index: fold
                offset += int(self[i]) * stride
            else:
                terms.append(self[i] if stride == 1 else f"{self[i]} * {stride}")
        if offset or not terms:
            terms.append(str(offset))
        return f"{self[ref]}[{' + '.join(terms)}]"

    # --- blocks --------------------------------------------------------------

    def block(self, block: Block, yield_to: list[str] | None = None) -> None:
        for op in block.ops:
            if isinstance(op, (YieldOp, func.ReturnOp)):
                continue
            if isinstance(op, scf.YieldOp):
                for target, value in zip(yield_to or [], op.operands):
                    self.line(f"{target} = {self[value]};")
                continue
            self.op(op)

    def op(self, op: Operation) -> None:  # noqa: C901 - one dispatch table
        name = op.name
        if isinstance(op, arith.ConstantOp):
            value = op.value
            if isinstance(value, FloatAttr):
                self.names[op.result] = self.float_literal(value.value.data, op.result.type)
            elif isinstance(value, IntegerAttr):
                self.names[op.result] = int_literal(value.value.data, self.ctype(op.result.type))
            else:
                raise self.ERROR(f"{self.PREFIX}: {self.where}: dense constants are not supported")
            return
        if self.target_op(op):
            return
        if name in BINARY:
            a, b = op.operands
            self.define(op.results[0], self.binary(name, a, b))
        elif name in UNSIGNED_BINARY:
            a, b = op.operands
            u = utype(a.type)
            self.define(op.results[0], f"({self.ctype(a.type)})(({u}){self[a]} {UNSIGNED_BINARY[name]} ({u}){self[b]})")
        elif name in SIGNED_MINMAX:
            a, b = op.operands
            if name.endswith("ui"):
                u = utype(a.type)
                self.define(op.results[0], f"(({u}){self[a]} {SIGNED_MINMAX[name]} ({u}){self[b]}) ? {self[a]} : {self[b]}")
            else:
                self.define(op.results[0], f"({self[a]} {SIGNED_MINMAX[name]} {self[b]}) ? {self[a]} : {self[b]}")
        elif name in MATH:
            args = [self[v] for v in op.operands]
            self.define(op.results[0], self.math_call(MATH[name], op.results[0].type, args))
        elif name == "arith.negf":
            self.define(op.results[0], f"-{self[op.operands[0]]}")
        elif name == "math.absi":
            a = self[op.operands[0]]
            self.define(op.results[0], f"{a} < 0 ? -{a} : {a}")
        elif isinstance(op, arith.CmpiOp):
            self.define(op.results[0], self.cmpi(op))
        elif isinstance(op, arith.CmpfOp):
            self.define(op.results[0], self.cmpf(op))
        elif isinstance(op, arith.SelectOp):
            c, a, b = op.operands
            self.define(op.results[0], f"{self[c]} ? {self[a]} : {self[b]}")
        elif name in ("arith.index_cast", "arith.sitofp", "arith.fptosi", "arith.extsi", "arith.trunci"):
            self.define(op.results[0], self.convert(op.operands[0], op.results[0].type))
        elif name in ("arith.uitofp", "arith.extui"):
            src = op.operands[0]
            self.define(op.results[0], f"({self.ctype(op.results[0].type)})({utype(src.type)}){self[src]}")
        elif name == "arith.fptoui":
            self.define(op.results[0], f"({self.ctype(op.results[0].type)})({utype(op.results[0].type)}){self[op.operands[0]]}")
        elif name in ("arith.extf", "arith.truncf"):
            self.define(op.results[0], self.convert(op.operands[0], op.results[0].type))
        elif name == "arith.bitcast":
            self.define(op.results[0], self.bitcast(op.operands[0], op.results[0].type))
        elif isinstance(op, memref.LoadOp):
            self.define(op.results[0], self.element(op.memref, op.indices))
        elif isinstance(op, memref.StoreOp):
            self.line(f"{self.element(op.memref, op.indices)} = {self[op.value]};")
        elif isinstance(op, memref.AllocaOp):
            self.alloca(op)
        elif isinstance(op, ForOp):
            self.for_loop(op)
        elif isinstance(op, scf.IfOp):
            self.if_op(op)
        else:
            raise self.error(op)

    def binary(self, name: str, a: SSAValue, b: SSAValue) -> str:
        if name in ("arith.shli", "arith.shrsi") and isinstance(a.type, (IntegerType, IndexType)):
            # a shift's type is its left operand's: a literal (`1 << n`) would be a 32-bit
            # int however wide the IR's value (an i64 `1 << 32` came out wrong: the
            # requantize rounding term); a left shift of a negative value is undefined in
            # C, so it shifts the unsigned bits
            c = self.ctype(a.type)
            if name == "arith.shli" and c != "bool":
                return f"({c})(({utype(a.type)}){self[a]} << {self[b]})"
            return f"(({c}){self[a]}) >> {self[b]}"
        return f"{self[a]} {BINARY[name]} {self[b]}"

    def float_literal(self, value: float, type_: Attribute) -> str:
        self.ctype(type_)  # f16 on a target without it: the error names the place
        return float_literal(value, type_)

    def math_call(self, fname: str, type_: Attribute, args: list[str]) -> str:
        if isinstance(type_, Float64Type):
            fname = fname[:-1]
            if fname == "rsqrt":
                return f"1.0 / sqrt({args[0]})"
            return f"{fname}({', '.join(args)})"
        if isinstance(type_, Float16Type):
            wide = ", ".join(f"__half2float({a})" for a in args)
            return f"__float2half({fname}({wide}))"
        if not isinstance(type_, Float32Type):
            raise self.ERROR(f"{self.PREFIX}: {self.where}: {fname} on {type_} is not supported")
        return f"{fname}({', '.join(args)})"

    def convert(self, value: SSAValue, to: Attribute) -> str:
        src = value.type
        if isinstance(src, Float16Type) and not isinstance(to, Float16Type):
            return f"({self.ctype(to)})__half2float({self[value]})"
        if isinstance(to, Float16Type):
            return f"__float2half((float){self[value]})"
        return f"({self.ctype(to)}){self[value]}"

    def bitcast(self, value: SSAValue, to: Attribute) -> str:
        src = value.type
        table = {
            (Float32Type, IntegerType): "__float_as_int", (IntegerType, Float32Type): "__int_as_float",
            (Float64Type, IntegerType): "__double_as_longlong",
            (IntegerType, Float64Type): "__longlong_as_double",
            (Float16Type, IntegerType): "__half_as_short", (IntegerType, Float16Type): "__short_as_half",
        }
        for (a, b), fn in table.items():
            if isinstance(src, a) and isinstance(to, b):
                return f"({self.ctype(to)}){fn}({self[value]})"
        if isinstance(src, IntegerType) and isinstance(to, IntegerType):
            return f"({self.ctype(to)}){self[value]}"
        raise self.ERROR(f"{self.PREFIX}: {self.where}: bitcast {src} -> {to} is not supported")

    def is_nan(self, a: str) -> str:
        return f"isnan({a})"

    def cmpi(self, op: arith.CmpiOp) -> str:
        pred = CMPI[op.predicate.value.data]
        a, b = op.operands
        if pred[0] == "u":
            u = utype(a.type)
            return f"({u}){self[a]} {C_OPS[pred[1:]]} ({u}){self[b]}"
        return f"{self[a]} {C_OPS[pred[-2:]]} {self[b]}"

    def cmpf(self, op: arith.CmpfOp) -> str:
        pred = CMPF[op.predicate.value.data]
        a, b = self[op.operands[0]], self[op.operands[1]]
        if pred in ("true", "false"):
            return pred
        if pred == "ord":
            return f"!{self.is_nan(a)} && !{self.is_nan(b)}"
        if pred == "uno":
            return f"{self.is_nan(a)} || {self.is_nan(b)}"
        if pred == "one":
            return f"({a} < {b} || {a} > {b})"
        if pred == "une":
            return f"{a} != {b}"
        if pred == "ueq":
            return f"!({a} < {b} || {a} > {b})"
        rel = C_OPS[pred[1:]]
        if pred[0] == "o":
            return f"{a} {rel} {b}"
        # unordered: true when either is NaN = negation of the opposite ordered test
        opposite = {"<": ">=", "<=": ">", ">": "<=", ">=": "<"}[rel]
        return f"!({a} {opposite} {b})"

    def for_loop(self, op: ForOp) -> None:
        iv = op.induction_var
        if op.trip_count == 1:
            self.line("{")
            self.depth += 1
            if iv.uses:
                self.line(f"const {self.ctype(iv.type)} {self.fresh(iv, 'i')} = {op.lower};")
        else:
            pragma = self.unroll_pragma() if op.loop_kind == "unrolled" else None
            if pragma:
                self.line(pragma)
            name = self.fresh(iv, "i")
            step = f"{name}++" if op.stride == 1 else f"{name} += {op.stride}"
            self.line(f"for ({self.ctype(iv.type)} {name} = {op.lower}; {name} < {op.upper}; {step}) {{")
            self.depth += 1
        self.block(op.body.block)
        self.depth -= 1
        self.line("}")

    def if_op(self, op: scf.IfOp) -> None:
        targets = []
        for result in op.results:
            var = self.fresh(result, "sel")
            self.line(f"{self.ctype(result.type)} {var};")
            targets.append(var)
        self.line(f"if ({self[op.cond]}) {{")
        self.depth += 1
        self.block(op.true_region.block, targets)
        self.depth -= 1
        if op.false_region.blocks and not _only_yields(op.false_region.block):
            self.line("} else {")
            self.depth += 1
            self.block(op.false_region.block, targets)
            self.depth -= 1
        self.line("}")


def _only_yields(block: Block) -> bool:
    return all(isinstance(op, scf.YieldOp) and not op.operands for op in block.ops)
