"""Kernels of the bounded-result ops (dialects/graph/data_dependent.py):
graph.nonzero, graph.compress, graph.unique and graph.non_max_suppression.

Both count first, then fill: the true extent ``n`` (the op's count result) is
needed before any element can be placed, because the valid data is the
row-major *prefix* of the true shape (element ``(d, j)`` of nonzero's
``rank x n`` result lives at flat position ``d * n + j``). The fill pass keeps
its running position in a one-element scratch cell; its stores go to
data-dependent addresses, so the schedule analysis keeps those nests serial.
The rest of the bounded buffer is zeroed, as the ops' references do.

unique and non_max_suppression compare all pairs (O(n^2) slice comparisons per
input, O(boxes^2) per class), with no scratch beyond O(n) cells: fine for the
sizes models apply them to (a few thousand boxes per class after a score
threshold); a sort would pay off only beyond that.
"""

from __future__ import annotations

import math

from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import i1, i64
from xdsl.ir import SSAValue

from dlc.dialects.graph_base import GraphOp, is_float
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


def _around_axis(shape: list[int], axis: int | None) -> tuple[int, int, int]:
    """(elements before, the axis' extent, elements after): ``x`` seen as [pre, n, post];
    no axis: the flattened ``x``."""
    if axis is None:
        return 1, math.prod(shape), 1
    return math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:])


def _cell(kb: KernelBuilder, et, hint: str, shape=(1,)) -> SSAValue:
    cell = kb.emit(memref.AllocaOp.get(et, shape=list(shape)))
    cell.name_hint = hint
    return cell


def _not(kb: KernelBuilder, c: SSAValue) -> SSAValue:
    return kb.emit(arith.XOrIOp(c, kb.const(True, i1)))


def _or(kb: KernelBuilder, a: SSAValue, b: SSAValue) -> SSAValue:
    return kb.emit(arith.OrIOp(a, b))


def _scalar(kb: KernelBuilder, buf: SSAValue) -> SSAValue:
    """The one element of a 1-element operand (shape [], [1], [1, 1] ...)."""
    return kb.load(buf, [0] * buf.type.get_num_dims())


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
    slot = _cell(kb, i64, "slot")
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
    pre, length, post = _around_axis(shape, op.axis)
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
    slot = _cell(kb, i64, "slot")
    kb.store(kb.const(0, i64), slot, [0])
    with kb.loop("i", kept) as i:
        with kb.if_(chosen(i)):
            j = kb.to_index(kb.load(slot, [0]), i64)
            with kb.loops(["p", "q"], [pre, post]) as (p, q):
                at = kb.iadd(kb.imul(kb.iadd(kb.imul(p, n), j), post), q)
                kb.store(kb.load(x3, [p, i, q]), flat, [at])
            _bump(kb, slot, [0])
    return kb.finish()


# ------------------------------------------------------------------ non_max_suppression


def _edges(kb: KernelBuilder, boxes: SSAValue, b, i, center: bool, et):
    """(x_min, x_max, y_min, y_max) of box i of batch b (see data_dependent.box_edges)."""
    v = [kb.load(boxes, [b, i, k]) for k in range(4)]
    if center:
        half = kb.const(0.5, et)
        hw, hh = kb.mul(v[2], half, et), kb.mul(v[3], half, et)
        return kb.sub(v[0], hw, et), kb.add(v[0], hw, et), kb.sub(v[1], hh, et), kb.add(v[1], hh, et)
    return kb.min(v[1], v[3], et), kb.max(v[1], v[3], et), kb.min(v[0], v[2], et), kb.max(v[0], v[2], et)


def _iou_above(kb: KernelBuilder, boxes, b, i, j, center: bool, threshold, et) -> SSAValue:
    """Does box i suppress box j: IoU > threshold, with onnxruntime's early outs
    (no overlap, an empty box or union) as ``false``; branch free."""
    ax0, ax1, ay0, ay1 = _edges(kb, boxes, b, i, center, et)
    bx0, bx1, by0, by1 = _edges(kb, boxes, b, j, center, et)
    ix0, ix1 = kb.max(ax0, bx0, et), kb.min(ax1, bx1, et)
    iy0, iy1 = kb.max(ay0, by0, et), kb.min(ay1, by1, et)
    zero = kb.const(0.0, et)
    inter = kb.mul(kb.sub(ix1, ix0, et), kb.sub(iy1, iy0, et), et)
    area_a = kb.mul(kb.sub(ax1, ax0, et), kb.sub(ay1, ay0, et), et)
    area_b = kb.mul(kb.sub(bx1, bx0, et), kb.sub(by1, by0, et), et)
    union = kb.sub(kb.add(area_a, area_b, et), inter, et)
    return kb.all_of([
        kb.cmp("gt", ix1, ix0, et), kb.cmp("gt", iy1, iy0, et), kb.cmp("gt", inter, zero, et),
        kb.cmp("gt", area_a, zero, et), kb.cmp("gt", area_b, zero, et), kb.cmp("gt", union, zero, et),
        kb.cmp("gt", kb.div(inter, union, et), threshold, et),
    ])


@kernel("graph.non_max_suppression")
def lower_non_max_suppression(op: GraphOp, name: str) -> func.FuncOp:
    """Per batch and class: ``boxes`` rounds, each picking the best box not yet
    considered (highest score, then lowest index) and keeping it unless a box kept
    before in the class suppresses it, until ``max_output_boxes_per_class`` are kept."""
    in_types = [o.type for o in op.operands]
    rows_t, count_t = (r.type for r in op.results)
    batches, boxes_n, _ = in_types[0].get_shape()
    classes = in_types[1].get_shape()[1]
    et = in_types[0].element_type
    names = ["boxes", "scores", "max_output_boxes_per_class", "iou_threshold", "score_threshold"]
    kb = KernelBuilder(name, in_types, [rows_t, count_t], op.name, names[:len(in_types)] + ["selected", "count"])
    boxes, scores, max_out, iou = kb.inputs[:4]
    score_min = _scalar(kb, kb.inputs[4]) if len(kb.inputs) == 5 else None
    rows, count = kb.outputs
    flat = _zero_fill(kb, rows, rows_t.get_shape(), i64)
    kb.store(kb.const(0, i64), count, [])
    limit = kb.max(_scalar(kb, max_out), kb.const(0, i64), i64)
    if op.max_selected_per_class is not None:
        limit = kb.min(limit, kb.const(op.max_selected_per_class, i64), i64)
    threshold = _scalar(kb, iou)
    done = _cell(kb, i1, "considered", [boxes_n])
    kept = _cell(kb, i64, "kept", [boxes_n])
    n_kept, best, suppressed = _cell(kb, i64, "n_kept"), _cell(kb, i64, "best"), _cell(kb, i1, "suppressed")
    with kb.loops(["b", "c"], [batches, classes]) as (b, c):
        with kb.loop("r", boxes_n) as r:
            skip = kb.const(False, i1) if score_min is None else \
                _not(kb, kb.cmp("gt", kb.load(scores, [b, c, r]), score_min, et))
            kb.store(skip, done, [r])
        kb.store(kb.const(0, i64), n_kept, [0])
        with kb.loop("step", boxes_n):
            kb.store(kb.const(-1, i64), best, [0])
            with kb.loop("r", boxes_n) as r:
                with kb.if_(_not(kb, kb.load(done, [r]))):
                    raw = kb.load(best, [0])
                    at = kb.to_index(kb.max(raw, kb.const(0, i64), i64), i64)
                    none_yet = kb.cmp("lt", raw, kb.const(0, i64), i64)
                    higher = kb.cmp("gt", kb.load(scores, [b, c, r]), kb.load(scores, [b, c, at]), et)
                    with kb.if_(_or(kb, none_yet, higher)):  # ascending r: a tie keeps the lower index
                        kb.store(kb.index_to(r, i64), best, [0])
            pick = kb.load(best, [0])
            go = kb.all_of([kb.cmp("ge", pick, kb.const(0, i64), i64),
                            kb.cmp("lt", kb.load(n_kept, [0]), limit, i64)])
            with kb.if_(go):
                i = kb.to_index(pick, i64)
                kb.store(kb.const(True, i1), done, [i])
                kb.store(kb.const(False, i1), suppressed, [0])
                kept_n = kb.to_index(kb.load(n_kept, [0]), i64)
                with kb.loop("j", boxes_n) as j:
                    with kb.if_(kb.icmp("slt", j, kept_n)):
                        other = kb.to_index(kb.load(kept, [j]), i64)
                        hit = _iou_above(kb, boxes, b, i, other, op.center_point_box, threshold, et)
                        kb.store(_or(kb, kb.load(suppressed, [0]), hit), suppressed, [0])
                with kb.if_(_not(kb, kb.load(suppressed, [0]))):
                    kb.store(pick, kept, [kept_n])
                    _bump(kb, n_kept, [0])
                    row = kb.to_index(kb.load(count, []), i64)
                    for k, value in enumerate((kb.index_to(b, i64), kb.index_to(c, i64), pick)):
                        kb.store(value, flat, [kb.iadd(kb.imul(row, 3), k)])
                    _bump(kb, count, [])
    return kb.finish()


# ------------------------------------------------------------------ unique


class _SliceOrder:
    """Unique's order on slices ``x3[p, i, q]`` over (p, q): lexicographic, NaN
    after every number and equal to NaN (data_dependent._sort_key)."""

    def __init__(self, kb: KernelBuilder, x3: SSAValue, pre: int, post: int, et):
        self.kb, self.x3, self.pre, self.post, self.et = kb, x3, pre, post, et
        self.decided, self.less = _cell(kb, i1, "decided"), _cell(kb, i1, "less")

    def _lt(self, a, b) -> SSAValue:
        kb, et = self.kb, self.et
        lt = kb.cmp("lt", a, b, et)
        if is_float(et):
            lt = _or(kb, lt, kb.all_of([_not(kb, kb.is_nan(a)), kb.is_nan(b)]))
        return lt

    def compare(self, i, j) -> tuple[SSAValue, SSAValue]:
        """(slice i < slice j, slice i == slice j)."""
        kb = self.kb
        kb.store(kb.const(False, i1), self.decided, [0])
        kb.store(kb.const(False, i1), self.less, [0])
        with kb.loops(["p", "q"], [self.pre, self.post]) as (p, q):
            with kb.if_(_not(kb, kb.load(self.decided, [0]))):
                a, b = kb.load(self.x3, [p, i, q]), kb.load(self.x3, [p, j, q])
                a_lt, b_lt = self._lt(a, b), self._lt(b, a)
                kb.store(a_lt, self.less, [0])
                kb.store(_or(kb, a_lt, b_lt), self.decided, [0])
        return kb.load(self.less, [0]), _not(kb, kb.load(self.decided, [0]))


@kernel("graph.unique")
def lower_unique(op: GraphOp, name: str) -> func.FuncOp:
    """Slice i is a first occurrence when no earlier slice equals it; its position
    among the unique slices is the number of first occurrences before it
    (``sorted = false``) or below it; every slice's inverse is the position of the
    first slice equal to it."""
    x_t = op.operands[0].type
    out_t, first_t, inverse_t, counts_t, count_t = (r.type for r in op.results)
    shape = list(x_t.get_shape())
    pre, n, post = _around_axis(shape, op.axis)
    et = x_t.element_type
    kb = KernelBuilder(name, [x_t], [out_t, first_t, inverse_t, counts_t, count_t], op.name,
                       ["x", "out", "first", "inverse", "counts", "count"])
    out, first, inverse, counts, count = kb.outputs
    x3 = kb.row_major_view(kb.inputs[0], [pre, n, post], "x3")
    flat = _zero_fill(kb, out, out_t.get_shape(), et)
    for buf in (first, counts):
        with kb.loop("z", n) as z:
            kb.store(kb.const(0, i64), buf, [z])
    order = _SliceOrder(kb, x3, pre, post, et)
    is_first = _cell(kb, i1, "is_first", [n])
    position = _cell(kb, i64, "position", [n])
    seen = _cell(kb, i1, "seen")
    with kb.loop("i", n) as i:  # first occurrences
        kb.store(kb.const(False, i1), seen, [0])
        with kb.loop("j", n) as j:
            with kb.if_(kb.all_of([kb.icmp("slt", j, i), _not(kb, kb.load(seen, [0]))])):
                _, same = order.compare(i, j)
                kb.store(same, seen, [0])
        kb.store(_not(kb, kb.load(seen, [0])), is_first, [i])
    kb.store(kb.const(0, i64), count, [])
    with kb.loop("i", n) as i:  # positions of the first occurrences
        with kb.if_(kb.load(is_first, [i])):
            kb.store(kb.const(0, i64), position, [i])
            with kb.loop("j", n) as j:
                with kb.if_(kb.all_of([kb.load(is_first, [j]), kb.icmp("ne", i, j)])):
                    if op.sorted:
                        before, _ = order.compare(j, i)
                    else:
                        before = kb.icmp("slt", j, i)
                    with kb.if_(before):
                        _bump(kb, position, [i])
            _bump(kb, count, [])
    unique_n = kb.to_index(kb.load(count, []), i64)
    rep = _cell(kb, i64, "rep")
    with kb.loop("i", n) as i:  # inverse, counts, and the unique slices themselves
        with kb.if_(kb.load(is_first, [i])):
            pos = kb.to_index(kb.load(position, [i]), i64)
            kb.store(kb.index_to(i, i64), first, [pos])
            with kb.loops(["p", "q"], [pre, post]) as (p, q):
                at = kb.iadd(kb.imul(kb.iadd(kb.imul(p, unique_n), pos), post), q)
                kb.store(kb.load(x3, [p, i, q]), flat, [at])
        kb.store(kb.index_to(i, i64), rep, [0])
        with kb.loop("j", n) as j:  # the first slice equal to slice i
            with kb.if_(kb.all_of([kb.icmp("slt", j, i), kb.load(is_first, [j])])):
                _, same = order.compare(i, j)
                with kb.if_(same):
                    kb.store(kb.index_to(j, i64), rep, [0])
        slot = kb.load(position, [kb.to_index(kb.load(rep, [0]), i64)])
        kb.store(slot, inverse, [i])
        _bump(kb, counts, [kb.to_index(slot, i64)])
    return kb.finish()
