"""Analysed TE program -> one tensor-loop kernel (+ a host function).

The kernel takes the inputs then the outputs as memrefs; each statement is one
``tloop.for`` nest over its output indices (loops named after the TE indices,
so schedule primitives address them: ``Schedule.of(m, "kernel").split("i", 8)``;
as loop names must be unique in a kernel, a name an earlier statement took
gets the statement's tensor as suffix: ``i_E``, ``j_E``, then ``i_E3``...). A reduction that is the whole right-hand
side accumulates into the output element, initialised by a nest of its own
(loops ``i_init``...) so that the main nest is perfect (reorder/tile apply); a
nested one accumulates into a scratch buffer indexed by the indices around it.
Intermediate tensors and scratch buffers are ``memref.alloc``'d in the kernel
and freed at its end (heap, so large intermediates cannot overflow a stack).
"""

from __future__ import annotations

from xdsl.dialects import arith, func, memref
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import (
    Float32Type,
    Float64Type,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.ir import SSAValue

from dlc.frontends.te.analysis import (
    Binary,
    Cast,
    Const,
    Expr,
    Load,
    Program,
    Reduce,
    Select,
    Statement,
    Tensor,
    Unary,
    Var,
)
from dlc.lowering.kernels.builder import KernelBuilder, highest, lowest, memref_of, storage_type

_ELEMENT = {"f32": Float32Type, "f64": Float64Type}
_INDEX_CMP = {"<": "slt", "<=": "sle", ">": "sgt", ">=": "sge", "==": "eq", "!=": "ne"}
_VALUE_CMP = {"<": "lt", "<=": "le", ">": "gt", ">=": "ge", "==": "eq", "!=": "ne"}
_MATH = {"exp": xmath.ExpOp, "log": xmath.LogOp, "sqrt": xmath.SqrtOp, "tanh": xmath.TanhOp}


def element_type(dtype: str):
    if dtype in _ELEMENT:
        return _ELEMENT[dtype]()
    return IntegerType(int(dtype[1:]))


def tensor_type_of(t: Tensor) -> TensorType:
    return TensorType(element_type(t.dtype), list(t.shape))


def build_kernel(program: Program, name: str, source: str = "te") -> func.FuncOp:
    """The kernel ``@name(inputs..., outputs...)`` computing ``program``."""
    return _KernelLowering(program, name, source).build()


def build_module(program: Program, kernel_name: str = "kernel", host_name: str = "main") -> ModuleOp:
    """A loop-level module: the kernel and a host function calling it (the
    driver's loop-IR contract, so ``dlc.compile`` accepts the module)."""
    kernel = build_kernel(program, kernel_name)
    types = [memref_of(tensor_type_of(t)) for t in (*program.inputs, *program.outputs)]
    host = func.FuncOp(host_name, (types, []))
    host.attributes["tloop.host"] = UnitAttr()
    host.attributes["tloop.num_inputs"] = IntegerAttr(len(program.inputs), i64)
    for arg, t in zip(host.body.block.args, (*program.inputs, *program.outputs)):
        arg.name_hint = t.name
    host.body.block.add_ops([func.CallOp(kernel_name, list(host.body.block.args), []),
                             func.ReturnOp()])
    return ModuleOp([kernel, host])


class _KernelLowering:
    def __init__(self, program: Program, name: str, source: str):
        self.program = program
        self.kb = KernelBuilder(
            name,
            [tensor_type_of(t) for t in program.inputs],
            [tensor_type_of(t) for t in program.outputs],
            source,
            [t.name for t in (*program.inputs, *program.outputs)],
        )
        self.buffers: dict[str, SSAValue] = {}
        for t, arg in zip(program.inputs, self.kb.inputs):
            self.buffers[t.name] = arg
        for t, arg in zip(program.outputs, self.kb.outputs):
            self.buffers[t.name] = arg
        self.allocated: list[SSAValue] = []
        self.scratch_count = 0
        self.loop_names: set[str] = set()

    def _loop_name(self, name: str) -> str:
        """``name``, or ``name_<tensor>`` when an earlier statement took it (not
        ``name_1``: xDSL drops ``_<digits>`` suffixes from SSA names)."""
        candidate, k = name, 1
        while candidate in self.loop_names:
            k += 1
            candidate = f"{name}_{self.tensor_name}" + (str(k) if k > 2 else "")
        self.loop_names.add(candidate)
        return candidate

    def build(self) -> func.FuncOp:
        for t in self.program.intermediates:
            self.buffers[t.name] = self._alloc(memref_of(tensor_type_of(t)), t.name)
        for stmt in self.program.statements:
            self._statement(stmt)
        for buf in self.allocated:
            self.kb.emit(memref.DeallocOp.get(buf))
        return self.kb.finish()

    def _alloc(self, type_: MemRefType, hint: str) -> SSAValue:
        op = memref.AllocOp.get(type_.element_type, shape=type_.get_shape())
        op.results[0].name_hint = hint
        entry = self.kb.entry
        if self.allocated:  # keep allocations in creation order
            entry.insert_op_after(op, self.allocated[-1].owner)
        else:
            first = next((o for o in entry.ops if not isinstance(o, arith.ConstantOp)), None)
            if first is None:
                entry.add_op(op)
            else:
                entry.insert_op_before(op, first)
        self.allocated.append(op.results[0])
        return op.results[0]

    # -- statements ---------------------------------------------------------------
    def _statement(self, stmt: Statement) -> None:
        kb = self.kb
        self.et = element_type(stmt.tensor.dtype)
        out = self.buffers[stmt.tensor.name]
        self.tensor_name = stmt.tensor.name
        names = [v.name for v in stmt.indices]
        uppers = [v.upper for v in stmt.indices]
        if isinstance(stmt.value, Reduce):
            # The identity goes in a nest of its own (loops `<index>_init`) so the
            # main nest stays perfect and reorder/tile can move the reduction loops.
            init_names = [self._loop_name(f"{n}_init") for n in names]
            names = [self._loop_name(n) for n in names]
            with kb.loops(init_names, uppers) as ivs:
                kb.store(self._identity(stmt.value), out, list(ivs))
            with kb.loops(names, uppers) as ivs:
                self._accumulate(stmt.value, dict(zip(stmt.indices, ivs)), out, list(ivs))
            return
        names = [self._loop_name(n) for n in names]
        with kb.loops(names, uppers) as ivs:
            kb.store(self._expr(stmt.value, dict(zip(stmt.indices, ivs))), out, list(ivs))

    def _identity(self, r: Reduce) -> SSAValue:
        et = self.et
        return self.kb.const({"sum": 0, "prod": 1, "max": lowest(et), "min": highest(et)}[r.op], et)

    def _reduce_into(self, r: Reduce, env: dict, buf: SSAValue, index: list) -> None:
        """buf[index] = reduce(axes: body), accumulating in place."""
        self.kb.store(self._identity(r), buf, index)
        self._accumulate(r, env, buf, index)

    def _accumulate(self, r: Reduce, env: dict, buf: SSAValue, index: list) -> None:
        """for axes: buf[index] = combine(buf[index], body)."""
        kb, et = self.kb, self.et
        managers = [kb.loop(self._loop_name(v.name), v.upper, v.lower) for v in r.axes]
        inner = dict(env)
        for v, m in zip(r.axes, managers):
            inner[v] = m.__enter__()
        try:
            value = self._expr(r.body, inner)
            acc = kb.load(buf, index)
            combine = {"sum": kb.add, "prod": kb.mul, "max": kb.max, "min": kb.min}[r.op]
            kb.store(combine(acc, value, et), buf, index)
        finally:
            for m in reversed(managers):
                m.__exit__(None, None, None)

    # -- expressions --------------------------------------------------------------
    def _expr(self, e: Expr, env: dict):
        kb, et = self.kb, self.et
        if isinstance(e, Const):
            return int(e.value) if e.kind == "index" else kb.const(e.value, et)
        if isinstance(e, Var):
            return env[e.var]
        if isinstance(e, Cast):
            x = self._expr(e.operand, env)
            return kb.const(x, et) if isinstance(x, int) else kb.index_to(x, et)
        if isinstance(e, Load):
            index = []
            for s, clamp, size in zip(e.subscripts, e.clamp, e.tensor.shape):
                i = self._expr(s, env)
                if clamp:  # in a select branch: keep the access in bounds, the select discards it
                    i = kb.imax(kb.imin(i, size - 1), 0)
                index.append(i)
            return kb.load(self.buffers[e.tensor.name], index)
        if isinstance(e, Unary):
            x = self._expr(e.operand, env)
            if e.op == "neg":
                return kb.isub(0, x) if e.kind == "index" else kb.neg(x, et)
            if e.op == "abs":
                if isinstance(et, IntegerType):
                    negative = kb.cmp("lt", x, kb.const(0, et), et)
                    return kb.select(negative, kb.neg(x, et), x)
                return kb.emit(xmath.AbsFOp(x))
            return kb.emit(_MATH[e.op](x))
        if isinstance(e, Binary):
            return self._binary(e, env)
        if isinstance(e, Select):
            cond = self._expr(e.cond, env)
            a, b = self._expr(e.then, env), self._expr(e.other, env)
            return kb.iselect(cond, a, b) if e.kind == "index" else kb.select(cond, a, b)
        if isinstance(e, Reduce):
            scratch_t = MemRefType(storage_type(et), [v.extent for v in e.enclosing])
            self.scratch_count += 1
            scratch = self._alloc(scratch_t, f"acc{self.scratch_count}")
            index = [kb.isub(env[v], v.lower) for v in e.enclosing]
            self._reduce_into(e, env, scratch, index)
            return kb.load(scratch, index)
        raise AssertionError(type(e).__name__)

    def _binary(self, e: Binary, env: dict):
        kb, et = self.kb, self.et
        a, b = self._expr(e.lhs, env), self._expr(e.rhs, env)
        if e.op in ("and", "or"):
            return kb.emit(arith.AndIOp(a, b) if e.op == "and" else arith.OrIOp(a, b))
        if e.op in _INDEX_CMP:
            if e.lhs.kind == "index":
                return kb.icmp(_INDEX_CMP[e.op], a, b)
            return kb.cmp(_VALUE_CMP[e.op], a, b, et)
        if e.kind == "index":
            if e.op == "max":
                return kb.imax(a, b)
            if e.op == "min":
                return kb.imin(a, b)
            return {"+": kb.iadd, "-": kb.isub, "*": kb.imul}[e.op](a, b)
        fn = {"+": kb.add, "-": kb.sub, "*": kb.mul, "/": kb.div, "max": kb.max, "min": kb.min}[e.op]
        return fn(a, b, et)
