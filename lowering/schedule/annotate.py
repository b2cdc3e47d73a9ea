"""Loop-kind primitives: parallel, vectorize, unroll (annotations the backends honour)."""

from __future__ import annotations

from xdsl.dialects import memref
from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Block

from dlc.dialects.tloop import ForOp
from dlc.lowering.schedule.affine import Digit, accesses, block_partitioned, written_buffers
from dlc.lowering.schedule.loop_nest import (
    KernelLoops,
    body_ops,
    enclosing_loops,
    index_constant,
    inner_loops,
    loop_name,
    replace_loop,
    value_name,
)


def _set_kind(loop: ForOp, kind: str) -> ForOp:
    loop.kind = StringAttr(kind)
    return loop


def parallel_problem(loop: ForOp) -> str | None:
    """Why iterations of `loop` may not write disjoint elements (None: they do)."""
    for wb in written_buffers(loop, value_name):
        name = value_name(wb.buffer)
        shared = wb.problem or loop in wb.reduction_loops([loop]) or loop in wb.partially_indexed([loop])
        if not shared or block_partitioned(loop, wb.buffer):
            continue
        if isinstance(wb.buffer.owner, (memref.AllocaOp, memref.AllocOp)):
            return (f"scratch buffer {name} is shared by all its iterations "
                    f"(scratch must be private to an iteration: mark the loop parallel before cache_read/cache_write)")
        if wb.problem:
            return f"cannot prove its iterations write disjoint elements: {wb.problem}"
        return f"its iterations update the same elements of {name} (a reduction over it)"
    return None


def parallel(s: KernelLoops, loop) -> ForOp:
    """Mark an outermost loop parallel when its iterations write disjoint elements."""
    loop = s.loop(loop)
    outer = enclosing_loops(loop)
    if outer:
        raise s.fail(loop, f"only an outermost loop can be parallel (it is inside loop '{loop_name(outer[0])}')")
    problem = parallel_problem(loop)
    if problem:
        raise s.fail(loop, f"cannot be parallel: {problem}")
    return _set_kind(loop, "parallel")


def vectorize_problem(loop: ForOp) -> str | None:
    """Why `loop` cannot be vectorized (None: it can)."""
    if inner_loops(loop):
        return f"only an innermost loop can be vectorized (it contains loop '{loop_name(inner_loops(loop)[0])}')"
    if loop.stride != 1:
        return f"step {loop.stride} is not 1"
    for acc in accesses(loop):
        name = value_name(acc.buffer)
        index = acc.index
        if index is None and not acc.is_store:
            # a load whose non-affine indices (a clamped padding row) do not vary with
            # `loop` is no gather: treat them as constants here
            index = _invariant_read_index(acc.op, loop)
        if index is None:
            return f"an index of {name} is not affine in the loops (a gather/scatter)"
        for d, dim in enumerate(index):
            mine = {k: c for k, c in dim.terms.items() if isinstance(k, Digit) and k.loop is loop}
            if not mine:
                continue
            if d != len(index) - 1 or list(mine.values()) != [1] or next(iter(mine)).part != "iv":
                return f"the access to {name} is not stride-1 along it"
    for wb in written_buffers(loop, value_name):
        if wb.problem:
            return wb.problem
        if loop in wb.reduction_loops([loop]):
            return (f"it is a reduction loop of {value_name(wb.buffer)} "
                    f"(vectorizing would reorder the accumulation)")
    return None


def _invariant_read_index(load, loop: ForOp):
    """Affine forms of a load's indices, a non-analysable one independent of `loop`
    counting as a constant; None when a non-analysable one depends on `loop`."""
    from dlc.lowering.schedule.affine import Affine, analyse

    def varies(value) -> bool:
        if value is loop.induction_var:
            return True
        owner = value.owner
        return (not isinstance(owner, Block) and loop.is_ancestor(owner)
                and any(varies(v) for v in owner.operands))

    out = []
    for value in load.indices:
        form = analyse(value)
        if form is None:
            if varies(value):
                return None
            form = Affine()
        out.append(form)
    return out


def vectorize(s: KernelLoops, loop) -> ForOp:
    """Mark an innermost loop with stride-1 (or loop-invariant) accesses vectorized."""
    loop = s.loop(loop)
    problem = vectorize_problem(loop)
    if problem:
        raise s.fail(loop, f"cannot be vectorized: {problem}")
    return _set_kind(loop, "vectorized")


MAX_EXPAND = 64


def unroll(s: KernelLoops, loop, expand: bool = False) -> ForOp | None:
    """Mark `loop` unrolled; with ``expand``, replace it by copies of its body (returns None).

    Expansion needs a trip count of at most MAX_EXPAND and, unless the trip
    count is 1, a body without loops (copies would duplicate loop names).
    """
    loop = s.loop(loop)
    if not expand:
        return _set_kind(loop, "unrolled")
    if loop.trip_count > MAX_EXPAND:
        raise s.fail(loop, f"cannot expand: trip count {loop.trip_count} is above {MAX_EXPAND}")
    if inner_loops(loop) and loop.trip_count > 1:
        raise s.fail(loop, f"cannot expand: its body contains loop '{loop_name(inner_loops(loop)[0])}'")
    copies = []
    for value in range(loop.lower, loop.upper, loop.stride):
        iv = index_constant(value)
        mapping = {loop.induction_var: iv.result}
        copies.append(iv)
        copies += [op.clone(mapping) for op in body_ops(loop)]
    replace_loop(loop, copies)
    return None
