"""Indexing kernels: gather_nd, scatter_nd, scatter_elements, top_k and
reverse_sequence.

Gathers loop over the output and compute where each element comes from, as
graph.gather does (movement.py). Scatters copy ``data`` to the output, then
loop over the updates in order and combine each one into the element its index
selects (``reduction`` none | add | mul | max | min); those stores are data
dependent, so the schedule analysis never runs that nest in parallel and
duplicate indices behave as in the reference (in order; the last write wins
for ``none``).

Index rules (the graph ops' references implement the same): a negative index
counts from the end; one still out of range after that is clamped by gathers
and skips its update in scatters (an ``scf.if``), so no kernel touches memory
outside a buffer.

top_k selects, for each output slot j in turn, the best element that comes
strictly after slot j-1 in a total order (value, then lower index first, NaN
largest): k passes over the axis, no scratch buffer (the indices output holds
the running choice). That is O(k * n) per row, fine for the sizes ONNX models
use top_k on; a sort would pay off only for large k.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import i1
from xdsl.ir import SSAValue

from dlc.dialects.graph_base import GraphOp, is_float, normalize_axis
from dlc.lowering.kernels import kernel
from dlc.lowering.kernels.builder import Index, KernelBuilder


def _names(prefix: str, rank: int) -> list[str]:
    return [f"{prefix}{k}" for k in range(rank)]


def _copy(kb: KernelBuilder, src: SSAValue, dst: SSAValue, shape: Sequence[int]) -> None:
    with kb.loops(_names("c", len(shape)), shape) as ivs:
        kb.store(kb.load(src, ivs), dst, ivs)


def _inside(kb: KernelBuilder, i: Index, n: int) -> SSAValue:
    return kb.all_of([kb.icmp("sge", i, 0), kb.icmp("slt", i, n)])


def _combine(kb: KernelBuilder, reduction: str, old: SSAValue, new: SSAValue, et) -> SSAValue:
    if reduction == "add":
        return kb.add(old, new, et)
    if reduction == "mul":
        return kb.mul(old, new, et)
    if reduction == "max":
        return kb.max(old, new, et)
    if reduction == "min":
        return kb.min(old, new, et)
    return new


def _index_at(kb: KernelBuilder, indices: SSAValue, et, at: Sequence[Index]) -> SSAValue:
    return kb.to_index(kb.load(indices, at), et)


@kernel("graph.gather_nd")
def lower_gather_nd(op: GraphOp, name: str) -> func.FuncOp:
    data, indices = (o.type for o in op.operands)
    out = op.results[0].type
    kb = KernelBuilder(name, [data, indices], [out], op.name, ["data", "indices", "out"])
    d_shape, i_shape = data.get_shape(), indices.get_shape()
    b, k = op.batch_dims, i_shape[-1]
    lead = len(i_shape) - 1  # output dims that walk the index tuples
    with kb.loops(_names("d", out.get_num_dims()), out.get_shape()) as ivs:
        picked = []
        for j in range(k):
            raw = _index_at(kb, kb.inputs[1], indices.element_type, list(ivs[:lead]) + [j])
            picked.append(kb.clamp_extent(kb.wrap_negative(raw, d_shape[b + j]), d_shape[b + j]))
        src = list(ivs[:b]) + picked + list(ivs[lead:])
        kb.store(kb.load(kb.inputs[0], src), kb.outputs[0], ivs)
    return kb.finish()


def _scatter_kernel(op: GraphOp, name: str):
    """(builder, data type, indices type) of a scatter kernel whose output starts as a
    copy of ``data``."""
    data, indices, updates = (o.type for o in op.operands)
    kb = KernelBuilder(name, [data, indices, updates], [data], op.name,
                       ["data", "indices", "updates", "out"])
    _copy(kb, kb.inputs[0], kb.outputs[0], data.get_shape())
    return kb, data, indices


def _scatter_one(kb: KernelBuilder, reduction: str, src: list[Index], dst: list[Index], et) -> None:
    """out[dst] = updates[src], combined with out[dst] unless ``reduction`` is "none"."""
    new = kb.load(kb.inputs[2], src)
    if reduction != "none":
        new = _combine(kb, reduction, kb.load(kb.outputs[0], dst), new, et)
    kb.store(new, kb.outputs[0], dst)


@kernel("graph.scatter_nd")
def lower_scatter_nd(op: GraphOp, name: str) -> func.FuncOp:
    kb, data, indices = _scatter_kernel(op, name)
    d_shape, i_shape = data.get_shape(), indices.get_shape()
    b, k = op.batch_dims, i_shape[-1]
    lead = list(i_shape[:-1])
    tail = list(d_shape[b + k:])
    with kb.loops(_names("i", len(lead)) + _names("s", len(tail)), lead + tail) as ivs:
        at, rest = list(ivs[:len(lead)]), list(ivs[len(lead):])
        dst: list[Index] = list(at[:b])
        conds = []
        for j in range(k):
            pos = kb.wrap_negative(_index_at(kb, kb.inputs[1], indices.element_type, at + [j]), d_shape[b + j])
            conds.append(_inside(kb, pos, d_shape[b + j]))
            dst.append(pos)
        dst += rest
        with kb.if_(kb.all_of(conds)):
            _scatter_one(kb, op.reduction, at + rest, dst, data.element_type)
    return kb.finish()


@kernel("graph.scatter_elements")
def lower_scatter_elements(op: GraphOp, name: str) -> func.FuncOp:
    kb, data, indices = _scatter_kernel(op, name)
    d_shape, i_shape = data.get_shape(), indices.get_shape()
    axis = normalize_axis(op.axis, len(d_shape))
    n = d_shape[axis]
    with kb.loops(_names("i", len(i_shape)), i_shape) as ivs:
        pos = kb.wrap_negative(_index_at(kb, kb.inputs[1], indices.element_type, ivs), n)
        dst = list(ivs)
        dst[axis] = pos
        with kb.if_(_inside(kb, pos, n)):
            _scatter_one(kb, op.reduction, list(ivs), dst, data.element_type)
    return kb.finish()


class _Order:
    """The strict total order of top_k: better value first (NaN largest), then
    the lower index."""

    def __init__(self, kb: KernelBuilder, et, largest: bool):
        self.kb, self.et, self.largest = kb, et, largest

    def _not(self, c: SSAValue) -> SSAValue:
        return self.kb.emit(arith.XOrIOp(c, self.kb.const(True, i1)))

    def _or(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.kb.emit(arith.OrIOp(a, b))

    def before(self, a: SSAValue, ia: Index, b: SSAValue, ib: Index) -> SSAValue:
        """Does element (a at index ia) come before (b at ib)?"""
        kb, et = self.kb, self.et
        better = kb.cmp("gt" if self.largest else "lt", a, b, et)
        same = kb.cmp("eq", a, b, et)
        if is_float(et):
            a_nan, b_nan = kb.is_nan(a), kb.is_nan(b)
            nan_side = kb.all_of([a_nan, self._not(b_nan)] if self.largest else [b_nan, self._not(a_nan)])
            better = self._or(better, nan_side)
            same = self._or(same, kb.all_of([a_nan, b_nan]))
        return self._or(better, kb.all_of([same, kb.icmp("slt", ia, ib)]))


@kernel("graph.top_k")
def lower_top_k(op: GraphOp, name: str) -> func.FuncOp:
    x_t = op.operands[0].type
    values_t, indices_t = (r.type for r in op.results)
    et, it = x_t.element_type, indices_t.element_type
    shape = x_t.get_shape()
    axis = normalize_axis(op.axis, len(shape))
    k, n = op.k, shape[axis]
    order = _Order(None, et, op.largest)
    kb = KernelBuilder(name, [x_t], [values_t, indices_t], op.name, ["x", "values", "indices"])
    order.kb = kb
    kept = [d for d in range(len(shape)) if d != axis]
    values, chosen = kb.outputs

    def at(along: Index, outer: Sequence[Index]) -> list[Index]:
        by_dim = dict(zip(kept, outer))
        return [along if d == axis else by_dim[d] for d in range(len(shape))]

    with kb.loops(_names("d", len(kept)), [shape[d] for d in kept]) as outer:
        with kb.loop("j", k) as j:
            slot = at(j, outer)
            kb.store(kb.const(-1, it), chosen, slot)  # -1: no candidate yet
            with kb.loop("r", n) as r:
                cur = kb.load(kb.inputs[0], at(r, outer))
                best_raw = kb.to_index(kb.load(chosen, slot), it)
                best_i = kb.imax(best_raw, 0)
                best = kb.load(kb.inputs[0], at(best_i, outer))
                beats = order._or(kb.icmp("slt", best_raw, 0), order.before(cur, r, best, best_i))
                # candidates come strictly after the previous slot's choice (at
                # j = 0 that slot is j itself, holding -1: clamped, then ignored)
                prev_raw = kb.to_index(kb.load(chosen, at(kb.imax(kb.isub(j, 1), 0), outer)), it)
                prev_i = kb.imax(prev_raw, 0)
                prev = kb.load(kb.inputs[0], at(prev_i, outer))
                after = order._or(kb.icmp("eq", j, 0), order.before(prev, prev_i, cur, r))
                take = kb.all_of([beats, after])
                kb.store(kb.index_to(kb.iselect(take, r, best_raw), it), chosen, slot)
            pick = kb.to_index(kb.load(chosen, slot), it)
            kb.store(kb.load(kb.inputs[0], at(pick, outer)), values, slot)
    return kb.finish()


@kernel("graph.reverse_sequence")
def lower_reverse_sequence(op: GraphOp, name: str) -> func.FuncOp:
    x_t, lens_t = (o.type for o in op.operands)
    kb = KernelBuilder(name, [x_t, lens_t], [x_t], op.name, ["x", "seq_lens", "out"])
    shape = x_t.get_shape()
    batch = normalize_axis(op.batch_axis, len(shape))
    time = normalize_axis(op.time_axis, len(shape))
    steps = shape[time]
    with kb.loops(_names("d", len(shape)), shape) as ivs:
        length = kb.imin(kb.imax(_index_at(kb, kb.inputs[1], lens_t.element_type, [ivs[batch]]), 0), steps)
        t = ivs[time]
        src = list(ivs)
        src[time] = kb.iselect(kb.icmp("slt", t, length), kb.isub(kb.isub(length, 1), t), t)
        kb.store(kb.load(kb.inputs[0], src), kb.outputs[0], ivs)
    return kb.finish()
