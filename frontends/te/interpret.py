"""numpy interpreter of an analysed TE program: the test oracle and
``graph.custom``'s reference (never the execution path of compiled code).

Each statement is evaluated on a broadcast grid with one numpy axis per index
(output indices, then reduction axes): an index is an ``arange`` along its
axis, an access is numpy advanced indexing, a reduction reduces its axes with
``keepdims``. Subscripts the analysis marked for clamping are clipped, like
the compiled code does.
"""

from __future__ import annotations

import numpy as np

from dlc.frontends.te.analysis import (
    DTYPES,
    Binary,
    Cast,
    Const,
    Load,
    Program,
    Reduce,
    Select,
    Statement,
    Unary,
    Var,
)

_CMP = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
        "==": np.equal, "!=": np.not_equal}
_REDUCE = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}
_UNARY = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt, "tanh": np.tanh, "abs": np.abs}


def run_program(program: Program, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """The program's outputs on ``inputs`` (in declaration order)."""
    if len(inputs) != len(program.inputs):
        raise ValueError(f"expected {len(program.inputs)} inputs, got {len(inputs)}")
    values: dict[str, np.ndarray] = {}
    for t, x in zip(program.inputs, inputs):
        x = np.asarray(x)
        if x.shape != t.shape:
            raise ValueError(f"input '{t.name}' must have shape {t.shape}, got {x.shape}")
        values[t.name] = x.astype(DTYPES[t.dtype], copy=False)
    for stmt in program.statements:
        values[stmt.tensor.name] = _statement(stmt, values)
    return [values[t.name] for t in program.outputs]


def _statement(stmt: Statement, values: dict[str, np.ndarray]) -> np.ndarray:
    dtype = np.dtype(DTYPES[stmt.tensor.dtype])
    axis_of = {v: k for k, v in enumerate(stmt.variables)}
    rank = len(stmt.variables)

    def grid(v) -> np.ndarray:
        shape = [1] * rank
        shape[axis_of[v]] = v.extent
        return np.arange(v.lower, v.upper, dtype=np.int64).reshape(shape)

    def ev(e):
        if isinstance(e, Const):
            return np.int64(e.value) if e.kind == "index" else dtype.type(e.value)
        if isinstance(e, Var):
            return grid(e.var)
        if isinstance(e, Cast):
            return np.asarray(ev(e.operand)).astype(dtype)
        if isinstance(e, Load):
            subs = []
            for s, clamp, size in zip(e.subscripts, e.clamp, e.tensor.shape):
                i = np.asarray(ev(s), dtype=np.int64)
                subs.append(np.clip(i, 0, size - 1) if clamp else i)
            array = values[e.tensor.name]
            if not subs:
                return array[()]
            return array[tuple(np.broadcast_arrays(*subs))]
        if isinstance(e, Unary):
            x = ev(e.operand)
            if e.op == "neg":
                return -x
            with np.errstate(all="ignore"):
                return _UNARY[e.op](x).astype(dtype, copy=False) if e.kind == "value" else _UNARY[e.op](x)
        if isinstance(e, Binary):
            a, b = ev(e.lhs), ev(e.rhs)
            if e.op in _CMP:
                return _CMP[e.op](a, b)
            if e.op == "and":
                return np.logical_and(a, b)
            if e.op == "or":
                return np.logical_or(a, b)
            if e.op == "max":
                return np.maximum(a, b)
            if e.op == "min":
                return np.minimum(a, b)
            if e.op == "/" and dtype.kind != "f":
                # C integer division (toward zero); a zero divisor counts as 1, like the kernels
                b = np.where(b == 0, 1, b)
                return (np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b))).astype(dtype)
            with np.errstate(all="ignore"):
                out = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide}[e.op](a, b)
            return out.astype(dtype, copy=False) if e.kind == "value" else out
        if isinstance(e, Select):
            return np.where(ev(e.cond), ev(e.then), ev(e.other))
        if isinstance(e, Reduce):
            body = np.asarray(ev(e.body), dtype=dtype)
            shape = [1] * rank
            for k, n in enumerate(body.shape if body.ndim else ()):
                shape[k] = n
            axes = tuple(axis_of[v] for v in e.axes)
            for v in e.axes:
                shape[axis_of[v]] = v.extent
            body = np.broadcast_to(body.reshape(body.shape if body.ndim else [1] * rank), shape)
            return _REDUCE[e.op](body, axis=axes, keepdims=True).astype(dtype, copy=False)
        raise AssertionError(type(e).__name__)

    out = np.asarray(ev(stmt.value), dtype=dtype)
    n_out = len(stmt.indices)
    if out.ndim:
        out = out.reshape(out.shape[:n_out])  # reduction axes are size 1 here
    full = tuple(v.extent for v in stmt.indices)
    return np.array(np.broadcast_to(out, full), dtype=dtype)  # a copy; keeps 0-d arrays 0-d
