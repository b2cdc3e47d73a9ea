"""A small executor for the loop-level IR, for tests: kernels -> Python source -> exec.

Why not xDSL's Interpreter: it has no `tloop.for`, and its math/arith coverage
is partial (no tanh/erf/rsqrt/fma...). Translating a kernel to straight Python
(one line per op, numpy scalars for exact f32/int semantics) is small and about
50x faster than interpreting op by op, so execution tests can use real shapes.
It is a test oracle only; compiled execution is the LLVM backend's job.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerType,
    MemRefType,
    ModuleOp,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

CMPI = {"eq": "==", "ne": "!=", "slt": "<", "sle": "<=", "sgt": ">", "sge": ">=",
        "ult": "<", "ule": "<=", "ugt": ">", "uge": ">="}
CMPF_ORDERED = {"oeq": "==", "ogt": ">", "oge": ">=", "olt": "<", "ole": "<=", "one": "!="}
CMPF_UNORDERED = {"ueq": "==", "ugt": ">", "uge": ">=", "ult": "<", "ule": "<=", "une": "!="}

BINARY = {
    "arith.addf": "({a} + {b})", "arith.subf": "({a} - {b})", "arith.mulf": "({a} * {b})",
    "arith.divf": "({a} / {b})", "arith.remf": "np.fmod({a}, {b})",
    "arith.maximumf": "np.maximum({a}, {b})", "arith.minimumf": "np.minimum({a}, {b})",
    "arith.addi": "({a} + {b})", "arith.subi": "({a} - {b})", "arith.muli": "({a} * {b})",
    "arith.divsi": "_divsi({a}, {b})", "arith.remsi": "_remsi({a}, {b})",
    "arith.divui": "({a} // {b})", "arith.remui": "({a} % {b})",
    "arith.maxsi": "max({a}, {b})", "arith.minsi": "min({a}, {b})",
    "arith.andi": "({a} & {b})", "arith.ori": "({a} | {b})", "arith.xori": "({a} ^ {b})",
    "math.powf": "np.power({a}, {b})",
}
UNARY = {
    "arith.negf": "(-{a})", "math.exp": "np.exp({a})", "math.log": "np.log({a})",
    "math.sqrt": "np.sqrt({a})", "math.rsqrt": "({t}(1) / np.sqrt({a}))", "math.tanh": "np.tanh({a})",
    "math.erf": "{t}(math.erf({a}))", "math.floor": "np.floor({a})", "math.ceil": "np.ceil({a})",
    "math.roundeven": "np.rint({a})", "math.round": "_round({a})", "math.sin": "np.sin({a})",
    "math.cos": "np.cos({a})", "math.absf": "np.abs({a})", "math.absi": "abs({a})",
}
CASTS = {"arith.index_cast", "arith.sitofp", "arith.uitofp", "arith.fptosi", "arith.fptoui",
         "arith.extf", "arith.truncf", "arith.extsi", "arith.extui", "arith.trunci"}


def _divsi(a, b):
    q = abs(int(a)) // abs(int(b))
    return type(a)(q if (a >= 0) == (b >= 0) else -q)


def _remsi(a, b):
    return type(a)(int(a) - int(b) * int(_divsi(int(a), int(b))))


def _round(x):
    return type(x)(np.sign(x) * np.floor(np.abs(x) + type(x)(0.5)))


def numpy_type(t: Attribute):
    if isinstance(t, IndexType):
        return int
    if isinstance(t, Float32Type):
        return np.float32
    if isinstance(t, Float64Type):
        return np.float64
    if isinstance(t, Float16Type):
        return np.float16
    if isinstance(t, IntegerType):
        w = t.width.data
        return np.bool_ if w == 1 else {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}[w]
    raise NotImplementedError(f"tloop_exec: no numpy type for {t}")


class _Emitter:
    def __init__(self) -> None:
        self.names: dict[SSAValue, str] = {}
        self.lines: list[str] = []
        self.consts: dict[str, object] = {}

    def name(self, v: SSAValue) -> str:
        if v not in self.names:
            self.names[v] = f"v{len(self.names)}"
        return self.names[v]

    def emit(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)

    def block(self, block: Block, depth: int, results: Sequence[SSAValue] = ()) -> None:
        start = len(self.lines)
        for op in block.ops:
            self.op(op, depth, results)
        if len(self.lines) == start:
            self.emit(depth, "pass")

    def index(self, op_indices) -> str:
        idx = ", ".join(self.name(i) for i in op_indices)
        return f"[{idx}]" if idx else "[()]"

    def op(self, op: Operation, d: int, results: Sequence[SSAValue]) -> None:
        n = op.name
        r = self.name(op.results[0]) if op.results else None
        ops = [self.name(o) for o in op.operands]
        if n == "tloop.for":
            iv = self.name(op.body.block.args[0])
            self.emit(d, f"for {iv} in range({op.lower}, {op.upper}, {op.stride}):")
            self.block(op.body.block, d + 1)
        elif n in ("tloop.yield", "func.return"):
            if n == "func.return":
                self.emit(d, "return")
        elif n == "scf.yield":
            for res, val in zip(results, ops):
                self.emit(d, f"{self.name(res)} = {val}")
        elif n == "scf.if":
            self.emit(d, f"if {ops[0]}:")
            self.block(op.true_region.block, d + 1, op.results)
            if op.false_region.blocks:
                self.emit(d, "else:")
                self.block(op.false_region.block, d + 1, op.results)
        elif n == "arith.constant":
            key = f"c{len(self.consts)}"
            self.consts[key] = numpy_type(op.results[0].type)(op.value.value.data)
            self.emit(d, f"{r} = {key}")
        elif n in BINARY:
            self.emit(d, f"{r} = " + BINARY[n].format(a=ops[0], b=ops[1]))
        elif n in UNARY:
            t = numpy_type(op.results[0].type).__name__
            self.consts.setdefault(t, numpy_type(op.results[0].type))
            self.emit(d, f"{r} = " + UNARY[n].format(a=ops[0], t=t))
        elif n == "math.fma":
            self.emit(d, f"{r} = {ops[0]} * {ops[1]} + {ops[2]}")
        elif n in ("arith.cmpi", "arith.cmpf"):
            pred = (arith.CMPI_COMPARISON_OPERATIONS if n == "arith.cmpi"
                    else arith.CMPF_COMPARISON_OPERATIONS)[op.predicate.value.data]
            a, b = ops
            if pred in CMPI and n == "arith.cmpi":
                self.emit(d, f"{r} = bool({a} {CMPI[pred]} {b})")
            elif pred in CMPF_ORDERED:
                self.emit(d, f"{r} = bool({a} {CMPF_ORDERED[pred]} {b})")
            elif pred in CMPF_UNORDERED:
                self.emit(d, f"{r} = bool(np.isnan({a}) or np.isnan({b}) or {a} {CMPF_UNORDERED[pred]} {b})")
            else:
                self.emit(d, f"{r} = bool({dict(false='False', true='True', ord=f'not (np.isnan({a}) or np.isnan({b}))', uno=f'np.isnan({a}) or np.isnan({b})')[pred]})")
        elif n == "arith.select":
            self.emit(d, f"{r} = {ops[1]} if {ops[0]} else {ops[2]}")
        elif n in CASTS:
            t = numpy_type(op.results[0].type)
            self.consts.setdefault(t.__name__, t)
            self.emit(d, f"{r} = {t.__name__}({ops[0]})")
        elif n == "arith.bitcast":
            t = numpy_type(op.results[0].type)
            self.consts.setdefault(t.__name__, t)
            self.emit(d, f"{r} = np.array({ops[0]}).view({t.__name__})[()]")
        elif n == "memref.load":
            self.emit(d, f"{r} = {ops[0]}{self.index(op.operands[1:])}")
        elif n == "memref.store":
            self.emit(d, f"{ops[1]}{self.index(op.operands[2:])} = {ops[0]}")
        elif n in ("memref.alloc", "memref.alloca"):
            t: MemRefType = op.results[0].type
            key = f"t{len(self.consts)}"
            self.consts[key] = (tuple(t.get_shape()), numpy_type(t.element_type))
            self.emit(d, f"{r} = _scratch(*{key})")
        elif n == "memref.dealloc":
            pass
        elif n == "tloop.weight":
            self.emit(d, f"{r} = _weights[{op.weight_name.data!r}]")
        elif n == "func.call":
            args = ", ".join(ops)
            self.emit(d, f"_funcs[{op.callee.root_reference.data!r}]({args})")
        else:
            raise NotImplementedError(f"tloop_exec: unsupported op {n}")


def _scratch(shape, dtype):
    """Fresh scratch memory holds garbage (NaN / a sentinel) so reads before writes show up."""
    if np.issubdtype(dtype, np.floating):
        return np.full(shape, np.nan, dtype)
    return np.full(shape, 77, dtype)


def compile_module(module: ModuleOp, weights: Mapping[str, np.ndarray] | None = None) -> dict:
    """Every func.func in `module` as a Python callable taking numpy arrays (mutated in place)."""
    funcs: dict[str, object] = {}
    env = {"np": np, "math": math, "_divsi": _divsi, "_remsi": _remsi, "_round": _round,
           "_scratch": _scratch, "_funcs": funcs, "_weights": dict(weights or {}), "int": int}
    for f in module.ops:
        if not isinstance(f, func.FuncOp) or f.is_declaration:
            continue
        em = _Emitter()
        args = ", ".join(em.name(a) for a in f.body.block.args)
        em.emit(0, f"def kernel({args}):")
        em.block(f.body.block, 1)
        src = "\n".join(em.lines)
        scope = dict(env) | em.consts
        exec(compile(src, f"<tloop {f.sym_name.data}>", "exec"), scope)
        funcs[f.sym_name.data] = scope["kernel"]
    return funcs


def run_kernel(module: ModuleOp, name: str, arrays: Sequence[np.ndarray], weights=None) -> list[np.ndarray]:
    """Run kernel/host `@name` on copies of `arrays`; returns the arrays after the call."""
    copies = [np.array(a, copy=True) for a in arrays]
    with np.errstate(all="ignore"):
        compile_module(module, weights)[name](*copies)
    return copies
