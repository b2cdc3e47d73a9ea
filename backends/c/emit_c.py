"""Portable C99 text of a planned loop-level module: one ``static`` function per kernel,
one entry function per model, the weights as ``const`` arrays.

Input: loop IR after ``plan-workspace`` (``backends/c/pipeline.py`` brings any module
there). Each kernel becomes ``static void <kernel>(...)`` under a comment naming its
graph op(s), form and the shapes it reads and writes; its loops are ``for`` loops
(parallel and vectorized loops are plain loops: no threads), its scalar code comes from
the shared C-family writer (``backends/c_expr.py``, also behind the CUDA emitter). The
host function becomes ``int dlc_<name>_run(inputs..., outputs..., void *workspace)``:
every intermediate is a pointer into the caller's workspace at the offset the planner
chose; it checks its arguments (NULL, alignment) and returns a status.

No runtime dependencies: no malloc, no threads, no OS calls; the only external symbols
are the libm functions of :data:`LIBM_FUNCTIONS` the model uses (``expand-math`` already
turned f32 exp/log/tanh/erf into polynomials), declared here (no ``<math.h>``, so a
freestanding compiler needs nothing but ``<stdint.h>``, ``<stddef.h>`` and
``<stdbool.h>``). max/min/fabs and bit casts are our own inline helpers. Do not compile
it with ``-ffast-math`` (NaN tests are written as ``x != x``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import (
    Float32Type,
    Float64Type,
    IndexType,
    IntegerType,
    MemRefType,
    ModuleOp,
)
from xdsl.ir import Attribute, SSAValue

from dlc.backends import c_expr
from dlc.backends.c_expr import byte_size, num_elements, shape_text, stored_args
from dlc.dialects.tloop import WeightOp

WORKSPACE_ATTR = "dlc.workspace"
WORKSPACE_ALIGN = 16  # the entry's alignment check; planner offsets are multiples of 64
WEIGHTS_SECTION = ".rodata.dlc_weights"

# The libm functions generated code may call (f32 names; the f64 ones drop the "f").
# Anything else the code needs is defined in the file itself.
LIBM_FUNCTIONS = (
    "expf", "logf", "sqrtf", "tanhf", "erff", "floorf", "ceilf", "rintf", "roundf", "sinf",
    "cosf", "powf", "fmaf", "exp2f", "log2f", "truncf", "acosf", "asinf", "atanf", "fmodf",
)
OWN_HELPERS = {  # MATH-table names the C target implements itself (prelude below)
    "dlc_maximumf": "dlc_maximumf", "dlc_minimumf": "dlc_minimumf", "fmaxf": "dlc_maxnumf",
    "fminf": "dlc_minnumf", "fabsf": "dlc_fabsf", "copysignf": "dlc_copysignf",
}

STATUS = {"DLC_STATUS_OK": 0, "DLC_STATUS_NULL_ARGUMENT": 1, "DLC_STATUS_MISALIGNED": 2}

PRELUDE = """\
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* An index (loop variable, offset): pointer-sized, so 32-bit on a Cortex-M. */
typedef ptrdiff_t dlc_index_t;

#if defined(__GNUC__) || defined(__clang__)
#define DLC_NANF __builtin_nanf("")
#define DLC_INFF __builtin_inff()
#else
#define DLC_NANF (0.0f / 0.0f)
#define DLC_INFF (1.0f / 0.0f)
#endif

/* Bit casts through a union (defined in C99 TC3; no memcpy, no aliasing trouble). */
static inline int32_t dlc_f32_bits(float x) { union { float f; int32_t i; } u; u.f = x; return u.i; }
static inline float dlc_bits_f32(int32_t x) { union { float f; int32_t i; } u; u.i = x; return u.f; }
static inline int64_t dlc_f64_bits(double x) { union { double f; int64_t i; } u; u.f = x; return u.i; }
static inline double dlc_bits_f64(int64_t x) { union { double f; int64_t i; } u; u.i = x; return u.f; }

/* arith.maximumf/minimumf: NaN if either is NaN, -0 < +0 (numpy's maximum/minimum). */
static inline float dlc_maximumf(float a, float b) {
  if (a != a || b != b) return a + b;
  if (a == b) return dlc_f32_bits(a) < 0 ? b : a;
  return a > b ? a : b;
}
static inline float dlc_minimumf(float a, float b) {
  if (a != a || b != b) return a + b;
  if (a == b) return dlc_f32_bits(a) < 0 ? a : b;
  return a < b ? a : b;
}
static inline double dlc_maximum(double a, double b) {
  if (a != a || b != b) return a + b;
  if (a == b) return dlc_f64_bits(a) < 0 ? b : a;
  return a > b ? a : b;
}
static inline double dlc_minimum(double a, double b) {
  if (a != a || b != b) return a + b;
  if (a == b) return dlc_f64_bits(a) < 0 ? a : b;
  return a < b ? a : b;
}
/* arith.maxnumf/minnumf (fmaxf/fminf): the other operand when one is NaN. */
static inline float dlc_maxnumf(float a, float b) { return a != a ? b : (b != b ? a : (a > b ? a : b)); }
static inline float dlc_minnumf(float a, float b) { return a != a ? b : (b != b ? a : (a < b ? a : b)); }
static inline double dlc_maxnum(double a, double b) { return a != a ? b : (b != b ? a : (a > b ? a : b)); }
static inline double dlc_minnum(double a, double b) { return a != a ? b : (b != b ? a : (a < b ? a : b)); }
static inline float dlc_fabsf(float x) { return dlc_bits_f32(dlc_f32_bits(x) & 0x7fffffff); }
static inline double dlc_fabs(double x) { return dlc_bits_f64(dlc_f64_bits(x) & 0x7fffffffffffffffLL); }
static inline float dlc_copysignf(float x, float s) {
  return dlc_bits_f32((int32_t)(((uint32_t)dlc_f32_bits(x) & 0x7fffffffu) | ((uint32_t)dlc_f32_bits(s) & 0x80000000u)));
}
static inline double dlc_copysign(double x, double s) {
  return dlc_bits_f64((int64_t)(((uint64_t)dlc_f64_bits(x) & 0x7fffffffffffffffULL) |
                                ((uint64_t)dlc_f64_bits(s) & 0x8000000000000000ULL)));
}
"""


class CEmitError(c_expr.EmitError):
    """The module holds something the C target does not support (one line naming the
    kernel and graph op)."""


def numpy_name(type_: Attribute) -> str:
    """``float32``, ``int64``, ``bool``...: a memref element type as numpy names it."""
    from dlc.dialects.graph_base import numpy_dtype

    return str(numpy_dtype(type_))


class CWriter(c_expr.FunctionWriter):
    """The shared writer for portable C99: no f16, our own helpers, libm calls recorded."""

    PREFIX = "c target"
    ERROR = CEmitError
    HALF = None

    def __init__(self, where: str, libm: set[str]):
        super().__init__(where)
        self.libm = libm

    def fresh_named(self, value: SSAValue, name: str) -> str:
        """``value`` named ``name`` (``name_1``... when taken)."""
        base, n = name, 1
        while name in self.taken:
            name, n = f"{base}_{n}", n + 1
        self.taken.add(name)
        self.names[value] = name
        return name

    def ctype(self, type_: Attribute) -> str:
        if isinstance(type_, IndexType):
            return "dlc_index_t"
        return super().ctype(type_)

    def binary(self, name: str, a: SSAValue, b: SSAValue) -> str:
        type_ = a.type
        if (name in ("arith.addi", "arith.subi", "arith.muli") and isinstance(type_, IntegerType)
                and type_.width.data in (32, 64)):
            # two's-complement wrap as in the IR (signed overflow is undefined in C)
            c = self.ctype(type_)
            return f"({c})((u{c}){self[a]} {c_expr.BINARY[name]} (u{c}){self[b]})"
        return super().binary(name, a, b)

    def float_literal(self, value: float, type_: Attribute) -> str:
        self.ctype(type_)
        return c_expr.float_literal(value, type_, nan="DLC_NANF", inf="DLC_INFF")

    def math_call(self, fname: str, type_: Attribute, args: list[str]) -> str:
        if not isinstance(type_, (Float32Type, Float64Type)):
            raise CEmitError(f"{self.PREFIX}: {self.where}: {fname} on {type_} is not supported")
        double = isinstance(type_, Float64Type)
        if fname == "rsqrtf":
            self.libm.add("sqrt" if double else "sqrtf")
            return f"{'1.0' if double else '1.0f'} / {'sqrt' if double else 'sqrtf'}({args[0]})"
        if fname in OWN_HELPERS:
            helper = OWN_HELPERS[fname]
            return f"{helper[:-1] if double else helper}({', '.join(args)})"
        if fname not in LIBM_FUNCTIONS:
            raise CEmitError(f"{self.PREFIX}: {self.where}: {fname} is not in the C target's libm list")
        name = fname[:-1] if double else fname
        self.libm.add(name)
        return f"{name}({', '.join(args)})"

    def bitcast(self, value: SSAValue, to: Attribute) -> str:
        src = value.type
        if isinstance(src, Float32Type) and isinstance(to, IntegerType):
            return f"dlc_f32_bits({self[value]})"
        if isinstance(src, IntegerType) and isinstance(to, Float32Type):
            return f"dlc_bits_f32({self[value]})"
        if isinstance(src, Float64Type) and isinstance(to, IntegerType):
            return f"dlc_f64_bits({self[value]})"
        if isinstance(src, IntegerType) and isinstance(to, Float64Type):
            return f"dlc_bits_f64({self[value]})"
        return super().bitcast(value, to)

    def is_nan(self, a: str) -> str:
        return f"({a} != {a})"

    def if_op(self, op) -> None:
        super().if_op(op)
        for result in op.results:  # -Wunused-but-set-variable
            if not result.uses:
                self.line(f"(void){self[result]};")


# --------------------------------------------------------------------------- kernels


def kernel_comment(kernel: func.FuncOp, w: CWriter) -> list[str]:
    name = kernel.sym_name.data
    fused = kernel.attributes.get("tloop.fused") or kernel.attributes.get("tloop.source")
    form = kernel.attributes.get("tloop.form")
    written = stored_args(kernel)
    args = kernel.body.block.args
    reads = [f"{w[a]} {shape_text(a.type)}" for a in args if a.index not in written]
    writes = [f"{w[a]} {shape_text(a.type)}" for a in args if a.index in written]
    head = f"// {name}: {fused.data if fused else 'kernel'}"
    if form is not None:
        head += f" (form {form.data})"
    return [head, f"// reads {', '.join(reads) or 'nothing'}; writes {', '.join(writes) or 'nothing'}"]


def emit_kernel(kernel: func.FuncOp, libm: set[str], restrict: bool = False) -> str:
    """``restrict``: no call site passes a written argument overlapping another one
    (:func:`restrict_kernels`), so every pointer parameter is ``restrict`` (the
    compiler keeps accumulators in registers)."""
    name = kernel.sym_name.data
    source = kernel.attributes.get("tloop.fused") or kernel.attributes.get("tloop.source")
    w = CWriter(f"kernel @{name}" + (f" ({source.data})" if source else ""), libm)
    written = stored_args(kernel)
    params = []
    for arg in kernel.body.block.args:
        if not isinstance(arg.type, MemRefType):
            raise CEmitError(f"c target: kernel @{name}: argument #{arg.index} is not a memref")
        const = "" if arg.index in written else "const "
        star = "*restrict " if restrict else "*"
        params.append(f"{const}{w.ctype(arg.type.element_type)} {star}{w.fresh(arg, f'arg{arg.index}')}")
    w.block(kernel.body.block)
    # -Wunused-parameter: an argument without uses, or whose only uses the writer
    # dropped (a load whose value nothing reads, e.g. a pow exponent expand-math folded)
    body = "\n".join(w.lines)
    unused = [w[arg] for arg in kernel.body.block.args if not re.search(rf"\b{re.escape(w[arg])}\b", body)]
    w.lines[:0] = [f"  (void){var};" for var in unused]
    header = kernel_comment(kernel, w)
    header.append(f"static void {name}({', '.join(params) or 'void'}) {{")
    return "\n".join(header + w.lines + ["}"])


# --------------------------------------------------------------------------- the plan


@dataclass
class PlannedBuffer:
    """One intermediate: a view of the workspace at ``offset``, used by the kernel
    calls ``first``..``last`` (their positions among the host's calls)."""

    name: str
    offset: int
    bytes: int
    shape: list[int]
    dtype: str
    first: int
    last: int
    producer: str | None = None


@dataclass
class WeightArray:
    name: str  # the weights-store name
    symbol: str  # the C array
    ctype: str
    dtype: str
    shape: list[int]
    bytes: int


@dataclass
class HostCode:
    text: str
    workspace_bytes: int
    buffers: list[PlannedBuffer] = field(default_factory=list)
    weights: list[WeightArray] = field(default_factory=list)
    kernels: list[str] = field(default_factory=list)


def emit_host(host: func.FuncOp, prefix: str, libm: set[str],
              io_names: list[tuple[str, str | None]] | None = None) -> HostCode:  # noqa: C901 - one walk
    """The entry function ``<prefix>_run`` of a planned host function; ``io_names``: the
    model's input and output (name, numpy dtype) (parameters ``in_<name>``, ``out_<name>``)."""
    name = host.sym_name.data
    w = CWriter(f"host function @{name}", libm)
    num_inputs = host.attributes["tloop.num_inputs"].value.data  # type: ignore[union-attr]
    block = host.body.block
    params, checks = [], []
    for arg in block.args:
        role = "in" if arg.index < num_inputs else "out"
        hint, dtype = io_names[arg.index] if io_names else (arg.name_hint, None)
        var = w.fresh_named(arg, f"{role}_" + re.sub(r"[^A-Za-z0-9_]", "_", hint or str(arg.index)))
        const = "const " if role == "in" else ""
        try:
            c = w.ctype(arg.type.element_type)
        except CEmitError:
            raise CEmitError(f"c target: @{name}: {role}put '{hint}' has element type {arg.type.element_type}, "
                             "which C99 has no type for") from None
        io_c = "u" + c if (dtype or numpy_name(arg.type.element_type)).startswith("uint") else c
        params.append(f"{const}{io_c} *{var}")
        if io_c != c:  # unsigned data (uintN_t *): the kernels hold integers as signed storage
            w.names[arg] = f"({const}{c} *){var}"
        checks.append(var)
    params.append("void *workspace")
    code = HostCode("", 0)
    calls = [op for op in block.ops if isinstance(op, func.CallOp)]
    step_of = {op: i for i, op in enumerate(calls)}
    root: dict[SSAValue, SSAValue] = {}  # a reshape view -> the planned buffer it reads
    body: list[str] = []
    symbols: set[str] = set()
    for op in block.ops:
        if isinstance(op, func.ReturnOp):
            continue
        if isinstance(op, memref.AllocOp):
            if WORKSPACE_ATTR not in op.attributes:
                raise CEmitError(f"c target: host function @{name}: a buffer outside the workspace "
                                 f"({op.results[0].type}) would need malloc")
            code.workspace_bytes = num_elements(op.results[0].type)
            w.names[op.results[0]] = "arena"
            body.append("uint8_t *arena = (uint8_t *)workspace;")
        elif isinstance(op, memref.DeallocOp):
            if WORKSPACE_ATTR not in op.attributes:
                raise CEmitError(f"c target: host function @{name}: unexpected memref.dealloc")
        elif isinstance(op, arith.ConstantOp):
            w.op(op)
        elif isinstance(op, memref.ViewOp):
            type_ = op.result.type
            var = w.fresh(op.result, "buf")
            offset = int(w[op.byte_shift])
            c = w.ctype(type_.element_type)
            body.append(f"{c} *{var} = ({c} *)(arena + {offset});  // {shape_text(type_)}, "
                        f"{byte_size(type_)} bytes")
            code.buffers.append(PlannedBuffer(var, offset, byte_size(type_), list(type_.get_shape()),
                                              numpy_name(type_.element_type), -1, -1))
            root[op.result] = op.result
        elif isinstance(op, memref.ReinterpretCastOp):  # a reshape view (bufferize.py): same pointer
            w.names[op.result] = w[op.source]
            if op.source in root:
                root[op.result] = root[op.source]
        elif isinstance(op, WeightOp):
            type_ = op.buffer.type
            base = f"{prefix}_w_" + re.sub(r"[^A-Za-z0-9_]", "_", op.weight_name.data)
            symbol, n = base, 1
            while symbol in symbols:
                symbol, n = f"{base}_{n}", n + 1
            symbols.add(symbol)
            w.names[op.buffer] = symbol
            code.weights.append(WeightArray(op.weight_name.data, symbol, w.ctype(type_.element_type),
                                            numpy_name(type_.element_type), list(type_.get_shape()),
                                            byte_size(type_)))
        elif isinstance(op, func.CallOp):
            callee = op.callee.string_value()
            code.kernels.append(callee)
            step = step_of[op]
            for a in op.operands:
                if a in root:
                    buf = next(b for b in code.buffers if b.name == w[root[a]])
                    buf.first = step if buf.first < 0 else buf.first
                    buf.last = step
            body.append(f"{callee}({', '.join(w[a] for a in op.operands)});")
        else:
            raise CEmitError(f"c target: host function @{name}: unsupported op '{op.name}'")
    for buf in code.buffers:  # the producer: the first call writing it
        buf.producer = code.kernels[buf.first] if buf.first >= 0 else None
    lines = [f"int {prefix}_run({', '.join(params)}) {{"]
    if checks:
        lines.append(f"  if ({' || '.join(f'{v} == NULL' for v in checks)}) return DLC_STATUS_NULL_ARGUMENT;")
    if code.workspace_bytes:
        lines.append("  if (workspace == NULL) return DLC_STATUS_NULL_ARGUMENT;")
        lines.append(f"  if ((uintptr_t)workspace % {prefix.upper()}_WORKSPACE_ALIGN != 0) "
                     "return DLC_STATUS_MISALIGNED;")
    else:
        lines.append("  (void)workspace;  // this model needs no workspace")
    for arg in block.args:  # element alignment of every input and output
        size = byte_size(MemRefType(arg.type.element_type, [1]))
        if size > 1:
            lines.append(f"  if ((uintptr_t){checks[arg.index]} % {size} != 0) return DLC_STATUS_MISALIGNED;")
    lines += ["  " + b for b in body]
    lines += ["  return DLC_STATUS_OK;", "}"]
    code.text = "\n".join(lines)
    return code


# --------------------------------------------------------------------------- weights


def weight_values(array: np.ndarray, ctype: str) -> list[str]:
    """C initializer texts of ``array``'s elements (float32 round-trips with %.9g)."""
    flat = np.ascontiguousarray(array).reshape(-1)
    if ctype in ("float", "double"):
        fmt, suffix = ("%.9g", "f") if ctype == "float" else ("%.17g", "")
        out = []
        for text in (fmt % v for v in flat.tolist()):
            if text in ("nan", "-nan"):
                out.append("DLC_NANF")
            elif text in ("inf", "-inf"):
                out.append(("-" if text[0] == "-" else "") + ("DLC_INFF" if ctype == "float" else "(double)DLC_INFF"))
            else:
                out.append(text + ("" if suffix == "" or re.search(r"[.e]", text) else ".") + suffix)
        return out
    if ctype == "bool":
        return ["1" if v else "0" for v in flat.tolist()]
    signed = flat.view({1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}[flat.dtype.itemsize])
    if ctype == "int64_t":
        return [f"{v}LL" if v != -(2**63) else "(-9223372036854775807LL - 1)" for v in signed.tolist()]
    if ctype == "int32_t":
        return [str(v) if v != -(2**31) else "(-2147483647 - 1)" for v in signed.tolist()]
    return [str(v) for v in signed.tolist()]


def emit_weight(weight: WeightArray, array: np.ndarray, per_line: int = 8) -> str:
    values = weight_values(array, weight.ctype)
    rows = [", ".join(values[i:i + per_line]) for i in range(0, len(values), per_line)]
    shape = "x".join(map(str, weight.shape)) or "scalar"
    return (f"// \"{weight.name}\": {shape} {weight.dtype}, {weight.bytes} bytes\n"
            f"const {weight.ctype} {weight.symbol}[{max(1, len(values))}] DLC_WEIGHTS = {{\n  "
            + ",\n  ".join(rows) + "\n};")


def _extent(value: SSAValue, views: dict) -> tuple[object, int, int]:
    """(base, first byte, end byte) of a host value: a workspace view's range of the
    arena, else the value itself (an input, output or weight: distinct objects)."""
    if value in views:
        return views[value]
    return (value, 0, byte_size(value.type) if isinstance(value.type, MemRefType) else 1)


def restrict_kernels(host: func.FuncOp, kernels: dict[str, func.FuncOp]) -> set[str]:
    """Kernels whose every call passes each written argument disjoint from the others
    (the plan never overlaps buffers live at one call, but this is checked, not assumed)."""
    views: dict[SSAValue, tuple[object, int, int]] = {}
    unsafe: set[str] = set()
    called: set[str] = set()
    for op in host.body.block.ops:
        if isinstance(op, memref.ViewOp) and isinstance(op.byte_shift.owner, arith.ConstantOp):
            start = op.byte_shift.owner.value.value.data  # type: ignore[union-attr]
            views[op.result] = (op.source, start, start + byte_size(op.result.type))
        elif isinstance(op, memref.ReinterpretCastOp):
            views[op.result] = _extent(op.source, views)
        elif isinstance(op, func.CallOp):
            name = op.callee.string_value()
            called.add(name)
            written = stored_args(kernels[name])
            extents = [_extent(a, views) for a in op.operands]
            for i in written:
                base, lo, hi = extents[i]
                if any(j != i and b is base and lo < h and l < hi for j, (b, l, h) in enumerate(extents)):
                    unsafe.add(name)
    return called - unsafe


def emit_module(module: ModuleOp, host: func.FuncOp, prefix: str, io_names: list[str] | None = None):
    """(kernel texts, HostCode, libm functions used) of a planned module's entry ``host``."""
    libm: set[str] = set()
    kernels = {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}
    parts = []  # the kernels first: an unsupported type or op is reported at its kernel
    called = [op.callee.string_value() for op in host.body.block.ops if isinstance(op, func.CallOp)]
    for kname in dict.fromkeys(called):
        kernel = kernels.get(kname)
        if kernel is None or kernel.is_declaration:
            raise CEmitError(f"c target: host function @{host.sym_name.data}: @{kname} is not a kernel of the module")
    safe = restrict_kernels(host, kernels)
    for kname in dict.fromkeys(called):
        parts.append(emit_kernel(kernels[kname], libm, kname in safe))
    host_code = emit_host(host, prefix, libm, io_names)
    return parts, host_code, libm
