"""Kernels of the bounded-result ops (dialects/graph/data_dependent.py):
graph.nonzero and graph.compress.

Both count first, then fill: the true extent ``n`` (the op's count result) is
needed before any element can be placed, because the valid data is the
row-major *prefix* of the true shape (element ``(d, j)`` of nonzero's
``rank x n`` result lives at flat position ``d * n + j``). The fill pass keeps
its running position in a one-element scratch cell; its stores go to
data-dependent addresses, so the schedule analysis keeps those nests serial.
The rest of the bounded buffer is zeroed, as the ops' references do.
"""

from __future__ import annotations

import math

from xdsl.dialects import func, memref
from xdsl.dialects.builtin import i64
from xdsl.ir import SSAValue

from dlc.dialects.graph_base import GraphOp
from dlc.lowering.kernels import kernel
from dlc.lowering.kernels.builder import KernelBuilder


def _zero_fill(kb: KernelBuilder, buf: SSAValue, shape: list[int], et) -> SSAValue:
    """Zero ``buf`` and return its flat row-major view."""
    flat = kb.row_major_view(buf, [math.prod(shape)], "flat")
    with kb.loop("z", math.prod(shape)) as z:
        kb.store(kb.const(0, et), flat, [z])
    return flat


def _bump(kb: KernelBuilder, cell: SSAValue, at: list) -> None:
    kb.store(kb.add(kb.load(cell, at), kb.const(1, i64), i64), cell, at)


@kernel("graph.nonzero")
def lower_nonzero(op: GraphOp, name: str) -> func.FuncOp:
    x_t = op.operands[0].type
    idx_t, count_t = (r.type for r in op.results)
    et = x_t.element_type
    shape = list(x_t.get_shape())
    rows = idx_t.get_shape()[0]
    kb = KernelBuilder(name, [x_t], [idx_t, count_t], op.name, ["x", "indices", "count"])
    indices, count = kb.outputs
    flat = _zero_fill(kb, indices, idx_t.get_shape(), i64)
    zero = kb.const(0, et)

    def is_set(ivs) -> SSAValue:
        return kb.cmp("ne", kb.load(kb.inputs[0], ivs), zero, et)

    kb.store(kb.const(0, i64), count, [])
    with kb.loops([f"c{k}" for k in range(len(shape))], shape) as ivs:
        with kb.if_(is_set(ivs)):
            _bump(kb, count, [])
    n = kb.to_index(kb.load(count, []), i64)
    slot = kb.emit(memref.AllocaOp.get(i64, shape=[1]))
    slot.name_hint = "slot"
    kb.store(kb.const(0, i64), slot, [0])
    with kb.loops([f"f{k}" for k in range(len(shape))], shape) as ivs:
        with kb.if_(is_set(ivs)):
            j = kb.to_index(kb.load(slot, [0]), i64)
            coords = list(ivs) if shape else [0]  # a 0-d input reads as shape (1,)
            for d in range(rows):
                kb.store(kb.index_to(coords[d], i64), flat, [kb.iadd(kb.imul(d, n), j)])
            _bump(kb, slot, [0])
    return kb.finish()


@kernel("graph.compress")
def lower_compress(op: GraphOp, name: str) -> func.FuncOp:
    x_t, cond_t = (o.type for o in op.operands)
    out_t, count_t = (r.type for r in op.results)
    shape = list(x_t.get_shape())
    if op.axis is None:
        pre, length, post = 1, math.prod(shape), 1
    else:
        pre, length, post = math.prod(shape[:op.axis]), shape[op.axis], math.prod(shape[op.axis + 1:])
    kept = cond_t.get_shape()[0]
    et = out_t.element_type
    kb = KernelBuilder(name, [x_t, cond_t], [out_t, count_t], op.name, ["x", "condition", "out", "count"])
    out, count = kb.outputs
    x3 = kb.row_major_view(kb.inputs[0], [pre, length, post], "x3")
    flat = _zero_fill(kb, out, out_t.get_shape(), et)
    cond_et = cond_t.element_type

    def chosen(i) -> SSAValue:
        return kb.cmp("ne", kb.load(kb.inputs[1], [i]), kb.const(0, cond_et), cond_et)

    kb.store(kb.const(0, i64), count, [])
    with kb.loop("c", kept) as i:
        with kb.if_(chosen(i)):
            _bump(kb, count, [])
    n = kb.to_index(kb.load(count, []), i64)
    slot = kb.emit(memref.AllocaOp.get(i64, shape=[1]))
    slot.name_hint = "slot"
    kb.store(kb.const(0, i64), slot, [0])
    with kb.loop("i", kept) as i:
        with kb.if_(chosen(i)):
            j = kb.to_index(kb.load(slot, [0]), i64)
            with kb.loops(["p", "q"], [pre, post]) as (p, q):
                at = kb.iadd(kb.imul(kb.iadd(kb.imul(p, n), j), post), q)
                kb.store(kb.load(x3, [p, i, q]), flat, [at])
            _bump(kb, slot, [0])
    return kb.finish()
