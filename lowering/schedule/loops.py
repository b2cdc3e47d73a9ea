"""Loop-structure primitives: split, tile, reorder, fuse, fuse_siblings."""

from __future__ import annotations

from xdsl.dialects import arith, scf

from dlc.dialects.tloop import ForOp, YieldOp
from dlc.lowering.schedule.affine import Affine, Digit, accesses, written_buffers
from dlc.lowering.schedule.loop_nest import (
    KernelLoops,
    LoopHeader,
    append_to_body,
    body_ops,
    build_nest,
    detach_body,
    enclosing_loops,
    index_constant,
    is_pure_scalar,
    loop_name,
    make_if,
    replace_loop,
    value_name,
)


def split(s: KernelLoops, loop, factor: int, outer_name: str | None = None,
          inner_name: str | None = None) -> tuple[ForOp, ForOp]:
    """``for i`` -> ``for i_outer step f*step { for i_inner { i = i_outer + i_inner } }``.

    A factor that does not divide the trip count guards the body with
    ``scf.if i < ub``. A parallel loop keeps its kind on the outer loop; a
    vectorized/unrolled one on the inner loop.
    """
    loop = s.loop(loop)
    name = loop_name(loop)
    if not isinstance(factor, int) or factor < 1:
        raise s.fail(loop, f"split factor must be a positive integer, got {factor}")
    outer_name = s.fresh_name(outer_name or f"{name}_outer")
    inner_name = s.fresh_name(inner_name or f"{name}_inner")
    if outer_name == inner_name:
        raise s.fail(loop, f"split needs two different names, got '{outer_name}' twice")
    kind = loop.loop_kind
    outer_h = LoopHeader(loop.lower, loop.upper, loop.stride * factor,
                         "parallel" if kind == "parallel" else "serial", outer_name, dict(loop.attributes))
    inner_h = LoopHeader(0, loop.stride * factor, loop.stride,
                         kind if kind in ("vectorized", "unrolled") else "serial", inner_name)
    body = detach_body(loop)
    inner = inner_h.make()
    outer = outer_h.make([inner])
    index = arith.AddiOp(outer.induction_var, inner.induction_var)
    index.result.name_hint = name
    loop.induction_var.replace_all_uses_with(index.result)
    new_ops = [index]
    if loop.trip_count % factor != 0:
        upper = index_constant(loop.upper)
        in_range = arith.CmpiOp(index.result, upper.result, "slt")
        new_ops += [upper, in_range, make_if(in_range.result, body)]
    else:
        new_ops += body
    append_to_body(inner, new_ops)
    replace_loop(loop, [outer])
    return outer, inner


def _between(s: KernelLoops, outer: ForOp, inner: ForOp):
    """Pure ops and guard ifs between `outer` and its nested `inner`; refuses anything else."""
    if not any(l is outer for l in enclosing_loops(inner)):
        raise s.fail(inner, f"is not nested inside loop '{loop_name(outer)}'")
    pure, guards = [], []
    block = outer.body.block
    while True:
        found = None
        for op in block.ops:
            if op is inner:
                found = op
            elif isinstance(op, (YieldOp, scf.YieldOp)):
                continue
            elif (isinstance(op, scf.IfOp) and not op.results and not op.false_region.blocks
                  and any(o is inner for o in op.walk())):
                found = op
            elif is_pure_scalar(op):
                pure.append(op)
            else:
                raise s.fail(outer, f"not a perfect nest: '{op.name}' sits between loops "
                                    f"'{loop_name(outer)}' and '{loop_name(inner)}'")
        if found is None:
            raise s.fail(inner, f"is not nested directly inside loop '{loop_name(outer)}'")
        if found is inner:
            return pure, guards
        guards.append(found)
        block = found.true_region.block


def make_perfect(s: KernelLoops, band: list[ForOp]) -> None:
    """Sink the pure index ops and guards between the band's loops into the innermost body.

    Legal because those ops have no effects (sinking only recomputes them) and
    a guard's condition does not depend on the loops it is sunk through.
    """
    pure, guards = [], []
    for outer, inner in zip(band, band[1:]):
        p, g = _between(s, outer, inner)
        pure += p
        guards += g
    if not pure and not guards:
        return
    body = detach_body(band[-1])
    for op in pure:
        op.detach()
    for inner in band[1:]:
        inner.detach()
    for outer in band[:-1]:
        for op in body_ops(outer):
            op.detach()
            op.erase(safe_erase=False)
    for guard in reversed(guards):
        body = [make_if(guard.cond, body)]
    for outer, inner in zip(band, band[1:]):
        append_to_body(outer, [inner])
    append_to_body(band[-1], pure + body)


def _chain(s: KernelLoops, loops: list[ForOp]) -> list[ForOp]:
    """All loops from the outermost to the innermost of `loops`, which must lie on one path."""
    deepest = max(loops, key=lambda l: len(enclosing_loops(l)))
    path = enclosing_loops(deepest) + [deepest]
    for l in loops:
        if not any(l is p for p in path):
            raise s.fail(l, f"is not on the same loop nest path as loop '{loop_name(deepest)}'")
    start = min(next(i for i, p in enumerate(path) if p is l) for l in loops)
    return path[start:]


def check_order_kept(s: KernelLoops, band: list[ForOp], new_band: list[ForOp], what: str) -> None:
    """Refuse when a written buffer's reduction loops would change relative order."""
    for wb in written_buffers(band[0], value_name):
        if wb.problem:
            raise s.fail(band[0], f"cannot {what}: {wb.problem}, so the dependence cannot be checked")
        reduction = [l for l in band if l in wb.reduction_loops(band) or l in wb.partially_indexed(band)]
        before = [id(l) for l in band if l in reduction]
        after = [id(l) for l in new_band if l in reduction]
        if before != after:
            names = ", ".join(f"'{loop_name(l)}'" for l in reduction)
            raise s.fail(band[0], f"cannot {what}: it would change the order of the reduction loops "
                                  f"{names} updating {value_name(wb.buffer)} (floating-point "
                                  f"accumulation order would change)")


def reorder(s: KernelLoops, *loops) -> list[ForOp]:
    """Permute loops of one perfect nest: the given loops take each other's places, in order.

    Returns the new loops (in the order given). Refused when the nest is not
    perfect (an effectful op between loops) or the dependence rule of
    `dlc.lowering.schedule.affine` cannot show the permutation safe.
    """
    loops = [s.loop(l) for l in loops]
    if len(loops) < 2:
        raise s.fail(loops[0] if loops else None, "reorder needs at least two loops")
    if len({id(l) for l in loops}) != len(loops):
        raise s.fail(loops[0], "reorder got the same loop twice")
    band = _chain(s, loops)
    for outer, inner in zip(band, band[1:]):
        _between(s, outer, inner)  # check perfection before changing anything
    slots = [i for i, l in enumerate(band) if l in loops]
    new_band = list(band)
    for slot, l in zip(slots, loops):
        new_band[slot] = l
    check_order_kept(s, band, new_band, "reorder " + ", ".join(f"'{loop_name(l)}'" for l in loops))
    make_perfect(s, band)
    headers = [LoopHeader.of(l) for l in new_band]
    body = detach_body(band[-1])
    outermost, new_loops = build_nest(headers, body)
    for old, new in zip(new_band, new_loops):
        old.induction_var.replace_all_uses_with(new.induction_var)
    replace_loop(band[0], [outermost])
    return [new_loops[new_band.index(l)] for l in loops]


def tile(s: KernelLoops, loop_a, loop_b, factor_a: int, factor_b: int) -> tuple[ForOp, ForOp, ForOp, ForOp]:
    """split both loops and reorder to (a_outer, b_outer, a_inner, b_inner)."""
    a, b = s.loop(loop_a), s.loop(loop_b)
    _between(s, a, b)
    band = [a, b]
    # the reorder moves b_outer above a_inner: check it up front so a refusal changes nothing
    check_order_kept(s, band, band, "tile")
    for wb in written_buffers(a, value_name):
        red = wb.reduction_loops(band)
        if a in red and b in red:
            raise s.fail(a, f"cannot tile: loops '{loop_name(a)}' and '{loop_name(b)}' are both reduction "
                            f"loops of {value_name(wb.buffer)} (accumulation order would change)")
    for factor, loop in ((factor_a, a), (factor_b, b)):
        if not isinstance(factor, int) or factor < 1:
            raise s.fail(loop, f"tile factor must be a positive integer, got {factor}")
    with s.atomic():  # the reorder can still refuse after the splits (an index it cannot analyse)
        ao, ai = split(s, a, factor_a)
        bo, bi = split(s, b, factor_b)
        ao, bo, ai, bi = reorder(s, ao, bo, ai, bi)
    return ao, bo, ai, bi


def fuse(s: KernelLoops, outer, inner, name: str | None = None) -> ForOp:
    """Fuse a perfectly nested pair into one loop; the indices come back by div/mod.

    Iteration order is unchanged, so it is always legal.
    """
    outer, inner = s.loop(outer), s.loop(inner)
    _between(s, outer, inner)
    fused_name = s.fresh_name(name or f"{loop_name(outer)}_{loop_name(inner)}_fused")
    make_perfect(s, [outer, inner])
    count_o, count_i = outer.trip_count, inner.trip_count
    kind = "parallel" if outer.loop_kind == inner.loop_kind == "parallel" else "serial"
    fused = LoopHeader(0, count_o * count_i, 1, kind, fused_name, dict(outer.attributes)).make()
    body = detach_body(inner)
    new_ops = []
    divisor = index_constant(count_i)
    new_ops.append(divisor)
    for loop, op_type in ((outer, arith.DivUIOp), (inner, arith.RemUIOp)):
        digit = op_type(fused.induction_var, divisor.result)
        new_ops.append(digit)
        value = digit.result
        if loop.stride != 1:
            step = index_constant(loop.stride)
            mul = arith.MuliOp(value, step.result)
            new_ops += [step, mul]
            value = mul.result
        if loop.lower != 0:
            lower = index_constant(loop.lower)
            add = arith.AddiOp(value, lower.result)
            new_ops += [lower, add]
            value = add.result
        value.name_hint = loop_name(loop)
        loop.induction_var.replace_all_uses_with(value)
    append_to_body(fused, new_ops + body)
    replace_loop(outer, [fused])
    return fused


def _sibling_index_dim(acc_index, loop: ForOp, inside: ForOp):
    """Per dimension: (coef, rest key) when the dim is ``coef*iv(loop) + inner + rest`` with
    `rest` made only of values that do not change inside `inside` and `inner` (digits of
    loops inside it) spanning less than one step of ``coef*iv`` (a panel's column
    ``n * R + nr``, nr < R): equal elements then still mean equal iterations of `loop`;
    None otherwise."""
    out = []
    for dim in acc_index:
        coef = 0
        ok = True
        rest = {}
        inner = {}
        for key, c in dim.terms.items():
            if isinstance(key, Digit) and key.loop is loop and key.part == "iv":
                coef = c
            elif isinstance(key, Digit) and key.loop is not loop and inside.is_ancestor(key.loop):
                inner[key] = c
            elif isinstance(key, Digit) and key.loop is loop:
                ok = False
            else:
                rest[(id(key.loop), key.part, key.divisor) if isinstance(key, Digit) else id(key)] = c
        if inner and ok:
            lo, hi = Affine(inner).range_over({id(d.loop) for d in inner})
            ok = coef != 0 and hi - lo < abs(coef) * loop.stride
        out.append((coef, frozenset(rest.items()), dim.const) if ok else None)
    return out


def fuse_siblings(s: KernelLoops, first, second) -> ForOp:
    """Merge `second` (the loop right after `first`, same bounds) into `first`.

    Original order: every iteration of the first loop, then every iteration of
    the second. Fused: first(i); second(i). Legal when every buffer one loop
    writes and the other accesses is touched, in both loops, only at one
    dimension holding ``c * i + (same loop-invariant part)``: then equal
    elements mean equal iterations, so no later first-loop iteration can
    touch what an earlier second-loop iteration used.
    """
    a, b = s.loop(first), s.loop(second)
    if a.parent is not b.parent:
        raise s.fail(b, f"is not a sibling of loop '{loop_name(a)}'")
    between = []
    op = a.next_op
    while op is not None and op is not b:
        between.append(op)
        op = op.next_op
    if op is None:
        raise s.fail(b, f"does not come after loop '{loop_name(a)}'")
    for op in between:
        if not is_pure_scalar(op):
            raise s.fail(b, f"does not follow loop '{loop_name(a)}' directly ('{op.name}' is in between)")
    if (a.lower, a.upper, a.stride) != (b.lower, b.upper, b.stride):
        raise s.fail(b, f"bounds {b.lower} to {b.upper} step {b.stride} differ from loop "
                        f"'{loop_name(a)}' ({a.lower} to {a.upper} step {a.stride})")
    acc_a, acc_b = accesses(a), accesses(b)
    shared = []
    for x in acc_a + acc_b:
        if x.is_store and not any(x.buffer is v for v in shared):
            other = acc_b if any(x is y for y in acc_a) else acc_a
            if any(y.buffer is x.buffer for y in other):
                shared.append(x.buffer)
    for buf in shared:
        forms = []
        for acc, loop in [(x, a) for x in acc_a] + [(x, b) for x in acc_b]:
            if acc.buffer is not buf:
                continue
            if acc.index is None:
                raise s.fail(a, f"cannot fuse with '{loop_name(b)}': an index of {value_name(buf)} is not affine")
            forms.append(_sibling_index_dim(acc.index, loop, loop))
        rank = len(forms[0])
        good = any(all(f[d] is not None and f[d] == forms[0][d] and f[d][0] != 0 for f in forms)
                   for d in range(rank))
        if not good:
            raise s.fail(a, f"cannot fuse with '{loop_name(b)}': {value_name(buf)} is written by one loop "
                            f"and used by the other at elements of other iterations")
    for op in between:
        op.detach()
        a.parent.insert_op_before(op, a)
    body = detach_body(b)
    b.induction_var.replace_all_uses_with(a.induction_var)
    if a.loop_kind != b.loop_kind:
        a.kind = type(a.kind)("serial")
    append_to_body(a, body)
    b.detach()
    b.erase(safe_erase=False)
    return a
