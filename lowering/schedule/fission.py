"""Loop fission: `distribute` (one loop per statement) and `split_range` (index-set splitting).

split_range: ``for i in [lb, ub)`` -> ``for i in [lb, at) ; for i_t in [at, ub)``
(the same body twice, inner loops of the copy renamed ``<name>_t``). The
iterations run in the same order, so it is always legal. Use: a main range
that tiles exactly (no split guards, the fast path) and a small tail with its
own schedule.

distribute: one loop per top-level statement of a loop body.

``for i { S1; S2 }`` -> ``for i { S1 }; for i_s1 { S2 }``. The inverse of
`fuse_siblings`, legal under the same rule: every buffer one statement
writes and another accesses is touched, by both, only at a dimension holding
``c * i + (same loop-invariant part)``, so equal elements mean equal
iterations and no iteration of S2 can depend on a later iteration of S1.
Typical use: separate a reduction's initialisation (``C[m, n] = 0``) from
its accumulation loop so that the accumulation nest becomes perfect and can
be reordered (register blocking puts the reduction loop outside the tile).

A statement is an effectful op (store, loop, if) with the loads and pure
ops it uses (pure ops are copied into each loop that needs them). A value
made by one statement and used by another cannot cross loops, so that is
refused, as is a load used by two statements or moved past a write to its
buffer.
"""

from __future__ import annotations

from xdsl.dialects import memref
from xdsl.ir import Operation

from dlc.dialects.tloop import ForOp
from dlc.lowering.schedule.affine import accesses
from dlc.lowering.schedule.loop_nest import (
    KernelLoops,
    LoopHeader,
    append_to_body,
    body_ops,
    is_pure_scalar,
    loop_name,
    replace_loop,
    value_name,
)
from dlc.lowering.schedule.loops import _sibling_index_dim


def _is_load(op: Operation) -> bool:
    return isinstance(op, memref.LoadOp)


def _deps(op: Operation, top: list[Operation]) -> list[Operation]:
    """Top-level pure ops and loads of the body that `op` (or ops nested in it) uses, transitively."""
    tops = {id(t): t for t in top}
    needed: dict[int, Operation] = {}
    work = [o for o in op.walk()]
    while work:
        current = work.pop()
        for operand in current.operands:
            owner = operand.owner
            if (isinstance(owner, Operation) and id(owner) in tops and id(owner) not in needed
                    and (is_pure_scalar(owner) or _is_load(owner))):
                needed[id(owner)] = owner
                work.append(owner)
    return [t for t in top if id(t) in needed]


def distribute(s: KernelLoops, loop, names: list[str] | None = None) -> list[ForOp]:
    """Split `loop` into one loop per effectful top-level statement (in order); returns them.

    The first loop keeps the name; the others are ``<name>_s1``, ``<name>_s2``...
    unless `names` gives all of them (xDSL drops a `_<digits>` suffix of a name).
    """
    loop = s.loop(loop)
    name = loop_name(loop)
    top = body_ops(loop)
    # a statement: an effectful op (store, loop, if) with the loads and pure ops it uses
    groups = [op for op in top if not is_pure_scalar(op) and not _is_load(op)]
    if len(groups) < 2:
        raise s.fail(loop, "cannot distribute: its body has fewer than two statements")
    if names is not None and len(names) != len(groups):
        raise s.fail(loop, f"distribute gives {len(groups)} loops, got {len(names)} names")
    new_names = list(names) if names else [name] + [f"{name}_s{i}" for i in range(1, len(groups))]
    for n in new_names:
        if n != name:
            s.fresh_name(n)
    # a value made by an effectful statement cannot flow into another loop; a load moves
    # with its one user, which is only right if no statement in between writes its buffer
    position = {id(op): i for i, op in enumerate(top)}
    group_ids = {id(g) for g in groups}
    users: dict[int, int] = {}
    deps = [_deps(g, top) for g in groups]  # (each walks the statement: once per statement)
    own_accesses = [accesses(g) for g in groups]
    for gi, g in enumerate(groups):
        for dep in deps[gi]:
            if not _is_load(dep):
                continue
            if users.setdefault(id(dep), gi) != gi:
                raise s.fail(loop, f"cannot distribute: a load of {value_name(dep.memref)} is used by two statements")
            for oi, other in enumerate(groups):
                if (position[id(dep)] < position[id(other)] < position[id(g)]
                        and any(a.is_store and a.buffer is dep.memref for a in own_accesses[oi])):
                    raise s.fail(loop, f"cannot distribute: {value_name(dep.memref)} is loaded before a "
                                       "statement that writes it and used after")
        for user in [g] + deps[gi]:
            for nested in user.walk():
                for operand in nested.operands:
                    owner = operand.owner
                    if isinstance(owner, Operation) and owner is not g and id(owner) in group_ids:
                        raise s.fail(loop, f"cannot distribute: '{g.name}' uses a value of '{owner.name}' "
                                           "from another statement")
    per_group = [own_accesses[gi] + [a for d in deps[gi] for a in accesses(d)] for gi in range(len(groups))]
    for i, acc_i in enumerate(per_group):
        for j in range(i + 1, len(groups)):
            acc_j = per_group[j]
            shared = [x.buffer for x in acc_i + acc_j if x.is_store]
            shared = [b for b in shared
                      if any(y.buffer is b for y in acc_i) and any(y.buffer is b for y in acc_j)]
            for buf in {id(b): b for b in shared}.values():
                forms = []
                for acc in acc_i + acc_j:
                    if acc.buffer is not buf:
                        continue
                    if acc.index is None:
                        raise s.fail(loop, f"cannot distribute: an index of {value_name(buf)} is not affine")
                    forms.append(_sibling_index_dim(acc.index, loop, loop))
                good = any(all(f[d] is not None and f[d] == forms[0][d] and f[d][0] != 0 for f in forms)
                           for d in range(len(forms[0])))
                if not good:
                    raise s.fail(loop, f"cannot distribute: {value_name(buf)} is written by one statement "
                                       "and used by another at elements of other iterations")
    header = LoopHeader.of(loop)
    new_loops = []
    for gi, (g, new_name) in enumerate(zip(groups, new_names)):
        h = LoopHeader(header.lower, header.upper, header.step, header.kind, new_name, dict(header.attributes))
        new = h.make()
        mapping = {loop.induction_var: new.induction_var}
        ops = [op.clone(mapping) for op in deps[gi] + [g]]
        append_to_body(new, ops)
        new_loops.append(new)
    replace_loop(loop, new_loops)
    return new_loops


def split_range(s: KernelLoops, loop, at: int, suffix: str = "_t") -> tuple[ForOp, ForOp]:
    """``[lb, ub)`` -> ``[lb, at)`` then ``[at, ub)``; the second loop and every loop inside it
    get `suffix` appended to their names. Returns (first, second)."""
    loop = s.loop(loop)
    if not isinstance(at, int) or not loop.lower < at < loop.upper or (at - loop.lower) % loop.stride:
        raise s.fail(loop, f"split_range point {at} must lie strictly inside {loop.lower} to {loop.upper} "
                           f"on a step-{loop.stride} iteration")
    inner = [l for l in loop.walk() if isinstance(l, ForOp)]
    for l in inner:
        s.fresh_name(loop_name(l) + suffix)
    header = LoopHeader.of(loop)
    second = LoopHeader(at, header.upper, header.step, header.kind, header.name + suffix,
                        dict(header.attributes)).make()
    mapping = {loop.induction_var: second.induction_var}
    append_to_body(second, [op.clone(mapping) for op in body_ops(loop)])
    for l in second.walk():
        if isinstance(l, ForOp) and l is not second:
            l.induction_var.name_hint = loop_name(l) + suffix
    loop.ub = type(loop.ub)(at, loop.ub.type)
    loop.parent.insert_op_after(second, loop)
    return loop, second
