"""The loop-IR executor: a slow, exact oracle for the output of lower-to-loops.

Runs a module of ``tloop.host`` / ``tloop.kernel`` functions on numpy arrays by
translating every `func.func` into Python source (nested ``for`` loops over
numpy scalars) and ``exec``-ing it. Tests use it to check kernels and host
functions before (and independently of) the LLVM backend; test/python/tloop_exec.py
calls single kernels through it.

Why not xDSL's ``Interpreter``: in 0.75 it lacks most of the ops the loop-IR
contract uses (math has only exp/sqrt/log; no divf, negf, casts, unsigned ops,
maxsi...), and it boxes every scalar in an attribute, ~100x slower than this.

Semantics: every arith/math op computes what ``lowering/scalar_semantics.py``
says (the one table, shared with the CUDA emulator and checked against the LLVM
lowering): integers are Python ints kept in their signed two's complement range
(i1 as 0/1); floats are numpy scalars of the exact width, so f32 rounding
matches compiled code. Every load/store is bounds checked and ``memref.alloc``
fills new buffers with a sentinel (NaN / 0x5A bytes), so a missing guard or an
unwritten output shows up in tests.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects import func, memref, scf
from xdsl.dialects.builtin import IntegerType, MemRefType, ModuleOp
from xdsl.ir import Block, Operation, SSAValue

from dlc.dialects import tloop
from dlc.lowering.scalar_semantics import HELPERS, ScalarError, expression, storage_dtype


class InterpError(ScalarError):
    """The loop IR cannot be run (unsupported op, bad input, out-of-bounds access)."""


_HELPERS = dict(HELPERS)


def _alloc(shape, dtype):
    if dtype.kind == "f":
        return np.full(shape, np.nan, dtype=dtype)
    if dtype.kind == "b":
        return np.zeros(shape, dtype=dtype)
    return np.full(shape, 0x5A, dtype=dtype)


_HELPERS["_alloc"] = _alloc


def _view(buffer, shape):
    view = buffer.view()  # never a copy: writes through the view must reach the buffer
    view.shape = shape
    return view


_HELPERS["_view"] = _view


# -- translation -------------------------------------------------------------------


class _FunctionWriter:
    def __init__(self, fn: func.FuncOp, weights):
        self.fn = fn
        self.lines: list[str] = []
        self.names: dict[SSAValue, str] = {}
        self.weights = weights

    def name(self, v: SSAValue) -> str:
        if v not in self.names:
            self.names[v] = f"v{len(self.names)}"
        return self.names[v]

    def line(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)

    def write(self) -> str:
        args = ", ".join(self.name(a) for a in self.fn.body.block.args)
        self.line(0, f"def {_py_name(self.fn.sym_name.data)}({args}):")
        self.block(self.fn.body.block, 1)
        self.line(1, "return None")
        return "\n".join(self.lines)

    def block(self, block: Block, depth: int) -> None:
        for op in block.ops:
            self.op(op, depth)

    def op(self, op: Operation, d: int) -> None:
        n = self.name
        r = n(op.results[0]) if op.results else None
        ops = [n(o) for o in op.operands]
        if isinstance(op, tloop.ForOp):
            self.line(d, f"for {n(op.induction_var)} in range({op.lower}, {op.upper}, {op.stride}):")
            self.line(d + 1, "pass")
            self.block(op.body.block, d + 1)
            return
        if isinstance(op, (tloop.YieldOp,)):
            return
        if isinstance(op, scf.IfOp):
            for res in op.results:
                self.line(d, f"{n(res)} = None")
            self.line(d, f"if {ops[0]}:")
            self._if_branch(op, op.true_region.block, d + 1)
            if op.false_region.blocks:
                self.line(d, "else:")
                self._if_branch(op, op.false_region.block, d + 1)
            return
        if isinstance(op, func.ReturnOp):
            self.line(d, "return None")
            return
        if isinstance(op, func.CallOp):
            self.line(d, f"{_py_name(op.callee.root_reference.data)}({', '.join(ops)})")
            return
        if isinstance(op, tloop.WeightOp):
            self.line(d, f"{r} = _weights[{op.weight_name.data!r}]")
            return
        if isinstance(op, memref.LoadOp):
            self.line(d, f"{r} = {self._access(op.memref, ops[1:], load=True)}")
            return
        if isinstance(op, memref.StoreOp):
            value = ops[0]
            et = op.memref.type.element_type
            if isinstance(et, IntegerType) and et.width.data == 1:
                value = f"bool({value})"
            self.line(d, f"{self._access(op.memref, ops[2:], load=False)} = {value}")
            return
        if isinstance(op, (memref.AllocOp, memref.AllocaOp)):
            t = op.results[0].type
            self.line(d, f"{r} = _alloc({tuple(t.get_shape())}, np.dtype('{storage_dtype(t.element_type).str}'))")
            return
        if isinstance(op, memref.DeallocOp):
            return
        if isinstance(op, memref.ReinterpretCastOp):  # a reshape view (bufferize.py): shares data
            self.line(d, f"{r} = _view({ops[0]}, {tuple(op.result.type.get_shape())})")
            return
        expr = self.scalar(op, ops)
        self.line(d, f"{r} = {expr}")

    def _if_branch(self, op: scf.IfOp, block: Block, d: int) -> None:
        self.line(d, "pass")
        for inner in block.ops:
            if isinstance(inner, scf.YieldOp):
                for res, val in zip(op.results, inner.operands):
                    self.line(d, f"{self.name(res)} = {self.name(val)}")
            else:
                self.op(inner, d)

    def _access(self, buf: SSAValue, idx: list[str], load: bool) -> str:
        t = buf.type
        assert isinstance(t, MemRefType)
        shape = t.get_shape()
        b = self.name(buf)
        checks = " and ".join(f"0 <= {i} < {s}" for i, s in zip(idx, shape))
        index = "(" + "".join(f"{i}," for i in idx) + ")"
        if checks:
            # bounds check as an expression so it lives on the same line
            index = f"({index} if {checks} else _oob({b!r}, {index}, {tuple(shape)}))"
        access = f"{b}[{index}]"
        if load:
            et = t.element_type
            if isinstance(et, IntegerType):
                return f"int({access})"
            return access
        return access

    def scalar(self, op: Operation, a: list[str]) -> str:
        try:
            return expression(op, a)
        except ScalarError as err:
            raise InterpError(f"interp: {err}") from None


def _py_name(symbol: str) -> str:
    return "F_" + "".join(c if c.isalnum() else "_" for c in symbol)


def _oob(name, index, shape):
    raise InterpError(f"out-of-bounds access {name}{list(index)} in a buffer of shape {list(shape)}")


_HELPERS["_oob"] = _oob


class LoopProgram:
    """A translated module: call ``run(inputs)`` for a host function."""

    def __init__(self, module: ModuleOp, weights=None):
        from dlc.weights import store_of

        self.module = module
        store = weights if weights is not None else store_of(module)
        self.namespace: dict = dict(_HELPERS)
        self.namespace["_weights"] = _ReadOnlyWeights(store)
        self.sources: dict[str, str] = {}
        self.functions: dict[str, func.FuncOp] = {}
        for op in module.ops:
            if isinstance(op, func.FuncOp) and not op.is_declaration:
                src = _FunctionWriter(op, store).write()
                self.sources[op.sym_name.data] = src
                self.functions[op.sym_name.data] = op
        code = "\n\n".join(self.sources.values())
        exec(compile(code, "<loop-ir>", "exec"), self.namespace)

    def call(self, name: str, buffers: Sequence[np.ndarray]) -> None:
        """Run function ``@name`` on ``buffers`` (its arguments, written in place)."""
        try:
            with np.errstate(all="ignore"):
                self.namespace[_py_name(name)](*buffers)
        except InterpError:
            raise
        except ScalarError as err:  # e.g. an integer division by zero
            raise InterpError(f"@{name}: {err}") from None

    def run(self, inputs: Sequence[np.ndarray], entry: str | None = None) -> list[np.ndarray]:
        """Run host function ``entry`` (default @main or the only host) on
        ``inputs``; returns freshly allocated outputs (storage dtypes)."""
        fn = self._host(entry)
        n_in = fn.attributes["tloop.num_inputs"].value.data
        args = fn.body.block.args
        if len(inputs) != n_in:
            raise InterpError(f"@{fn.sym_name.data} takes {n_in} inputs, got {len(inputs)}")
        buffers = []
        for arg, x in zip(args[:n_in], inputs):
            t = arg.type
            x = np.asarray(x)
            x = x if x.flags.c_contiguous else x.copy()
            dt = storage_dtype(t.element_type)
            if x.shape != tuple(t.get_shape()):
                raise InterpError(f"input #{len(buffers)} has shape {x.shape}, expected {t.get_shape()}")
            buffers.append(x.view(dt) if x.dtype.itemsize == dt.itemsize and x.dtype.kind in "iub" and dt.kind in "iub" else x.astype(dt))
        outputs = [_alloc(tuple(a.type.get_shape()), storage_dtype(a.type.element_type)) for a in args[n_in:]]
        self.call(fn.sym_name.data, buffers + outputs)
        return outputs

    def _host(self, entry: str | None) -> func.FuncOp:
        hosts = [f for f in self.functions.values() if "tloop.host" in f.attributes]
        if entry is not None:
            for f in hosts:
                if f.sym_name.data == entry:
                    return f
            raise InterpError(f"no host function @{entry}")
        for f in hosts:
            if f.sym_name.data == "main":
                return f
        if not hosts:
            raise InterpError("the module has no tloop.host function")
        return hosts[0]


class _ReadOnlyWeights:
    def __init__(self, store):
        self.store = store
        self.cache: dict[str, np.ndarray] = {}

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self.cache:
            if self.store is None or name not in self.store:
                raise InterpError(f"weight \"{name}\" is not in the weights store")
            arr = np.asarray(self.store[name])
            if arr.dtype.kind == "u":
                arr = arr.view(f"i{arr.dtype.itemsize}")
            arr = arr.view()
            arr.flags.writeable = False
            self.cache[name] = arr
        return self.cache[name]


def run(module: ModuleOp, inputs: Sequence[np.ndarray], entry: str | None = None) -> list[np.ndarray]:
    """Translate and run ``module``'s host function (see :class:`LoopProgram`)."""
    return LoopProgram(module).run(inputs, entry)
