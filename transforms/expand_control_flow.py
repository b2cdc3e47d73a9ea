"""`expand-control-flow`: rewrite graph.if / graph.loop / graph.scan into
straight-line graph ops.

``expand-control-flow{max-unroll=N}``

Every trip count in the graph dialect is static (graph.loop's
``max_iterations``, graph.scan's sequence length), so bodies are cloned once
per iteration and the results threaded through:

* ``graph.if`` with a `graph.constant` condition: the taken body is inlined.
  Otherwise both bodies are inlined and each result is
  ``where(cond, then_value, else_value)`` (bodies are pure graph ops, so
  evaluating the untaken one changes nothing but time).
* ``graph.scan``: the body is cloned per step on ``slice`` rows of the scan
  inputs; scan outputs are ``concat``-ed rows (reversed for reverse directions).
* ``graph.loop``: the body is cloned ``max_iterations`` times. When the trip
  count and condition are constants and the body passes the condition
  through (or yields constant true), iterations run unmasked (only
  ``min(M, max_iterations)`` clones). Otherwise an ``active`` flag
  (``i < M and cond``, the ONNX rule) is carried: each carried value becomes
  ``where(active, new, old)`` and each scan row ``where(active, row, 0)``.

Opt-in on the CPU and CUDA targets: ``dlc.compile`` keeps the region ops and
lower-to-loops emits real host loops and branches (see lowering/bufferize.py;
the CUDA host code launches kernels from them, backends/cuda/host_code.py).
The C target (bare metal) runs this pass first; it is also a way to compare
against the compiled loops. Above ``max-unroll`` iterations (default 4096) the pass stops
with an error naming the op.

Why our own: xDSL's scf unrolling works on scf.for over index bounds, not on
tensor-valued graph regions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from dlc.dialects import graph as g
from dlc.dialects.graph_base import GraphOp, dense_from_numpy, numpy_dtype
from dlc.diagnostics import op_error


class _Builder:
    """Ops to insert before one region op, built with inferred types."""

    def __init__(self, location):
        self.ops: list[Operation] = []
        self.location = location

    def add(self, op: Operation) -> Operation:
        op.location = self.location
        self.ops.append(op)
        return op

    def __call__(self, op_type: type[GraphOp], *operands: SSAValue, **attrs) -> SSAValue:
        return self.add(op_type.make(*operands, **attrs)).results[0]

    def multi(self, op_type: type[GraphOp], *operands: SSAValue, **attrs) -> list[SSAValue]:
        return list(self.add(op_type.make(*operands, **attrs)).results)

    def const(self, array) -> SSAValue:
        return self(g.ConstantOp, value=dense_from_numpy(np.asarray(array)))

    def zeros(self, t: TensorType) -> SSAValue:
        return self.const(np.zeros(t.get_shape(), numpy_dtype(t.element_type)))

    def inline(self, block: Block, args: list[SSAValue]) -> list[SSAValue]:
        """Clone ``block``'s ops with its arguments bound to ``args``; returns
        the values its graph.yield yields."""
        mapping: dict[SSAValue, SSAValue] = dict(zip(block.args, args, strict=True))
        for op in block.ops:
            if isinstance(op, g.YieldOp):
                return [mapping.get(v, v) for v in op.operands]
            self.ops.append(op.clone(value_mapper=mapping))
        raise AssertionError("verified bodies end with graph.yield")


def _constant_value(value: SSAValue) -> np.ndarray | None:
    owner = value.owner
    return owner.array() if isinstance(owner, g.ConstantOp) else None


def _scalar(b: _Builder, value: SSAValue) -> SSAValue:
    """A one-element tensor as rank 0 (so `where` keeps the other shapes)."""
    if value.type.get_shape() == ():
        return value
    return b(g.ReshapeOp, value, shape=[])


def _row(b: _Builder, x: SSAValue, axis: int, index: int) -> SSAValue:
    shape = list(x.type.get_shape())
    piece = b(g.SliceOp, x, starts=[index], ends=[index + 1], axes=[axis], steps=[1])
    return b(g.ReshapeOp, piece, shape=shape[:axis] + shape[axis + 1:])


def _stack(b: _Builder, rows: list[SSAValue], axis: int, result: TensorType) -> SSAValue:
    shape = list(result.get_shape())
    pieces = [b(g.ReshapeOp, r, shape=shape[:axis] + [1] + shape[axis + 1:]) for r in rows]
    if not pieces:
        return b.zeros(result)
    return pieces[0] if len(pieces) == 1 else b(g.ConcatOp, *pieces, axis=axis)


def _expand_if(op: g.IfOp, b: _Builder) -> list[SSAValue]:
    args = list(op.inputs)
    known = _constant_value(op.cond)
    if known is not None:
        taken = op.then_body if bool(known.reshape(-1)[0]) else op.else_body
        return b.inline(taken.blocks.first, args)
    then_values = b.inline(op.then_body.blocks.first, args)
    else_values = b.inline(op.else_body.blocks.first, args)
    cond = _scalar(b, op.cond)
    return [t if t is e else b(g.WhereOp, cond, t, e) for t, e in zip(then_values, else_values)]


def _expand_scan(op: g.ScanOp, b: _Builder) -> list[SSAValue]:
    operand_types = [o.type for o in op.operands]
    num_out = len(op.results) - op.num_carried
    carried, n_in, in_axes, in_dirs, out_axes, out_dirs, length = g.ScanOp.layout(
        op.attrs, operand_types, num_out)
    operands = list(op.operands)
    states = operands[:carried]
    scan_inputs = operands[carried:carried + n_in]
    readonly = operands[carried + n_in:]
    rows: list[list[SSAValue]] = [[] for _ in range(num_out)]
    for t in range(length):
        slices = [_row(b, x, a, length - 1 - t if rev else t)
                  for x, a, rev in zip(scan_inputs, in_axes, in_dirs)]
        outs = b.inline(op.body.blocks.first, [*states, *slices, *readonly])
        states = outs[:carried]
        for k, value in enumerate(outs[carried:]):
            rows[k].append(value)
    results = list(states)
    for k, (axis, rev) in enumerate(zip(out_axes, out_dirs)):
        result_type = op.results[carried + k].type
        axis %= len(result_type.get_shape())
        results.append(_stack(b, rows[k][::-1] if rev else rows[k], axis, result_type))
    return results


def _passes_condition_through(op: g.LoopOp) -> bool:
    block = op.body.blocks.first
    yielded = block.last_op.operands[0]
    if yielded is block.args[1]:
        return True
    known = _constant_value(yielded)
    return known is not None and bool(known.all())


def _padded_stack(b: _Builder, rows: list[SSAValue], result: TensorType) -> SSAValue:
    """``rows`` stacked on a new axis 0, then zero rows up to ``result``'s length
    (the iterations that did not run)."""
    bound, row_shape = result.get_shape()[0], list(result.get_shape()[1:])
    if len(rows) == bound:
        return _stack(b, rows, 0, result)
    tail = b.zeros(TensorType(result.element_type, [bound - len(rows), *row_shape]))
    if not rows:
        return tail
    head = _stack(b, rows, 0, TensorType(result.element_type, [len(rows), *row_shape]))
    return b(g.ConcatOp, head, tail, axis=0)


def _expand_loop(op: g.LoopOp, b: _Builder) -> list[SSAValue]:
    carried_n = op.num_carried
    bound = op.max_iterations
    operands = list(op.operands)
    trip_value, cond = operands[0], operands[1]
    carried = operands[2:2 + carried_n]
    readonly = operands[2 + carried_n:]
    scan_types = [r.type for r in op.results[carried_n:]]
    block = op.body.blocks.first
    i64_type = np.int64

    known_trips, known_cond = _constant_value(trip_value), _constant_value(cond)
    if known_trips is not None and known_cond is not None and _passes_condition_through(op):
        trips = min(int(known_trips.reshape(-1)[0]), bound) if bool(known_cond.reshape(-1)[0]) else 0
        rows: list[list[SSAValue]] = [[] for _ in scan_types]
        cond = _scalar(b, cond)
        for i in range(max(trips, 0)):
            outs = b.inline(block, [b.const(np.array(i, i64_type)), cond, *carried, *readonly])
            cond, carried = outs[0], outs[1:1 + carried_n]
            for k, value in enumerate(outs[1 + carried_n:]):
                rows[k].append(value)
        return [*carried, *[_padded_stack(b, rows[k], t) for k, t in enumerate(scan_types)]]

    # general case: carry an `active` flag and mask every update with it
    trips = _scalar(b, trip_value)
    cond = _scalar(b, cond)
    active = b(g.AndOp, cond, b(g.LessOp, b.const(np.array(0, i64_type)), trips))
    rows = [[] for _ in scan_types]
    for i in range(bound):
        outs = b.inline(block, [b.const(np.array(i, i64_type)), cond, *carried, *readonly])
        carried = [b(g.WhereOp, active, new, old) for new, old in zip(outs[1:1 + carried_n], carried)]
        for k, value in enumerate(outs[1 + carried_n:]):
            rows[k].append(b(g.WhereOp, active, value, b.zeros(value.type)))
        cond = outs[0]
        more = b(g.LessOp, b.const(np.array(i + 1, i64_type)), trips)
        active = b(g.AndOp, active, b(g.AndOp, cond, more))
    return [*carried, *[_stack(b, rows[k], 0, t) for k, t in enumerate(scan_types)]]


_EXPANSIONS = {g.IfOp: _expand_if, g.ScanOp: _expand_scan, g.LoopOp: _expand_loop}


def _iterations(op: Operation) -> int:
    if isinstance(op, g.LoopOp):
        return op.max_iterations
    if isinstance(op, g.ScanOp):
        return g.ScanOp.layout(op.attrs, [o.type for o in op.operands],
                               len(op.results) - op.num_carried)[-1]
    return 1


def expand_one(op: Operation) -> None:
    """Replace one region op (in place) by its straight-line expansion."""
    b = _Builder(op.location)
    results = _EXPANSIONS[type(op)](op, b)
    Rewriter.insert_op(b.ops, InsertPoint.before(op))
    for old, new in zip(op.results, results, strict=True):
        old.replace_all_uses_with(new)
    Rewriter.erase_op(op)


@dataclass(frozen=True)
class ExpandControlFlowPass(ModulePass):
    """Unroll graph.if / graph.loop / graph.scan into straight-line ops."""

    name = "expand-control-flow"
    max_unroll: int = 4096

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        # Outermost first: nested region ops are cloned with their body and
        # found again by the next walk.
        while True:
            target = next((o for o in op.walk() if type(o) in _EXPANSIONS), None)
            if target is None:
                return
            count = _iterations(target)
            if count > self.max_unroll:
                raise op_error(target, f"{target.name} runs {count} iterations, more than "
                                       f"max-unroll={self.max_unroll} (raise the option to unroll it)")
            expand_one(target)
