"""rfactor: split an in-order float reduction loop into vector-wide partial results.

A reduction loop ``for r: A[i] = combine(A[i], v(r))`` (combine: ``addf``,
``maximumf``, ``minimumf`` on f32; ``A[i]`` the same element at every ``r``)
cannot be vectorized as written: the accumulation is a chain. TVM's
``rfactor`` (and numpy's pairwise sum) reorganise it into independent
partial results; here::

    part[l] = identity                                    (l < LANES)
    for ro = lb to lb + N - N % LANES step LANES:
      for l = 0 to LANES:  part[l] = combine(part[l], v(ro + l))   <- stride-1, vectorizable
    for l:  A[i] = combine(A[i], part[l])                 (lane order)
    for r = lb + N - N % LANES to ub:  A[i] = combine(A[i], v(r))  (the tail, in order)

``part`` is an ``alloca`` placed just before the loop, so it is private to
each thread when an enclosing loop runs in parallel (allocas are hoisted to
the entry of the outlined function). The max/min are exact in any order; the
sum's order changes from sequential to LANES interleaved partial sums
(deterministic, a rounding error that grows like ``N / LANES`` instead of
``N`` terms; numpy's own sum is pairwise). Applied only when every other
access in the loop body is stride-1 along ``r`` or independent of it (so the
lane loop vectorizes) and the loop has at least ``2 * LANES`` iterations.

Used by the CPU default schedule (``defaults_elementwise.py``) for softmax,
reductions along the contiguous axis (reduce_sum/mean/max/min: also what
layer_norm legalizes to) and any fused kernel with such a loop.
"""

from __future__ import annotations

from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import Float32Type, UnitAttr
from xdsl.ir import Operation, SSAValue

from dlc.dialects.tloop import ForOp
from dlc.lowering.schedule.affine import Digit, analyse
from dlc.lowering.schedule.annotate import vectorize_problem
from dlc.lowering.schedule.loop_nest import LoopHeader, body_ops, inner_loops, loop_name

LANES = 16  # one AVX-512 vector of f32 (two AVX2 vectors)
IDENTITY = {arith.AddfOp: 0.0, arith.MaximumfOp: float("-inf"), arith.MinimumfOp: float("inf")}


def rfactor_reductions(kernel: func.FuncOp, roots: list[ForOp] | None = None) -> int:
    """Apply rfactor to every eligible serial innermost loop of ``kernel`` (or only of the
    nests ``roots``); returns the count."""
    names = {loop_name(op) for op in kernel.walk() if isinstance(op, ForOp)}
    candidates = [op for root in (roots if roots is not None else [kernel]) for op in root.walk()
                  if isinstance(op, ForOp) and op.loop_kind == "serial" and not inner_loops(op)]
    return sum(_rfactor(loop, names) for loop in candidates)


def _fresh(names: set[str], wanted: str) -> str:
    name, k = wanted, 0
    while name in names:
        k += 1
        name = f"{wanted}{'abcdefghijklmnopqrstuvwxyz'[k % 26]}{k // 26 or ''}"
    names.add(name)
    return name


def _accumulation(loop: ForOp):
    """(load, store, combine) of the one ``A[i] = combine(A[i], v)`` in ``loop``, or None."""
    body = body_ops(loop)
    if any(op.regions for op in body):
        return None
    found = None
    for st in (op for op in body if isinstance(op, memref.StoreOp)):
        combine = st.value.owner
        if type(combine) not in IDENTITY or not isinstance(st.value.type, Float32Type):
            continue
        for operand in combine.operands:
            ld = operand.owner
            if (isinstance(ld, memref.LoadOp) and ld.memref is st.memref
                    and list(ld.indices) == list(st.indices) and ld.parent is st.parent
                    and ld.res.has_one_use()):
                forms = [analyse(i) for i in st.indices]
                if any(f is None or any(isinstance(k, Digit) and k.loop is loop for k in f.terms)
                       for f in forms):
                    return None  # A's element varies with the loop: not this kind of reduction
                if found is not None:
                    return None  # two accumulations: leave the loop alone
                found = (ld, st, combine)
    if found is None:
        return None
    ld, st, _ = found
    others = [op for op in body if isinstance(op, (memref.LoadOp, memref.StoreOp))
              and op.memref is st.memref and op is not ld and op is not st]
    return None if others else found


def _rfactor(loop: ForOp, names: set[str]) -> int:
    if loop.stride != 1 or loop.trip_count < 2 * LANES:
        return 0
    acc = _accumulation(loop)
    if acc is None:
        return 0
    problem = vectorize_problem(loop)
    if problem is not None and not problem.startswith("it is a reduction loop of"):
        return 0  # the lane loop would not vectorize either: keep the order
    ld, st, combine = acc
    ident = IDENTITY[type(combine)]
    name = loop_name(loop)
    main = loop.trip_count - loop.trip_count % LANES
    split = loop.lower + main
    parent = loop.parent

    part = memref.AllocaOp.get(Float32Type(), shape=[LANES])
    part.memref.name_hint = "part"
    # part[l] = identity
    ident_c = arith.ConstantOp(_f32(ident), Float32Type())
    init = LoopHeader(0, LANES, 1, "serial", _fresh(names, f"{name}_li")).make()
    _append(init, [memref.StoreOp.get(ident_c.result, part.memref, [init.induction_var])])
    # for ro: for l: the body on part[l]
    outer = LoopHeader(loop.lower, split, LANES, "serial", _fresh(names, f"{name}_ro")).make()
    lane = LoopHeader(0, LANES, 1, "serial", _fresh(names, f"{name}_l")).make()
    r = arith.AddiOp(outer.induction_var, lane.induction_var)
    r.result.name_hint = f"{name}_v"
    mapping: dict[SSAValue, SSAValue] = {loop.induction_var: r.result}
    lane_ops: list[Operation] = [r]
    for op in body_ops(loop):
        if op is ld:
            new = memref.LoadOp.get(part.memref, [lane.induction_var])
            mapping[ld.res] = new.res
        elif op is st:
            new = memref.StoreOp.get(mapping[st.value], part.memref, [lane.induction_var])
        else:
            new = op.clone(mapping)
            for old_result, new_result in zip(op.results, new.results):
                mapping[old_result] = new_result
        lane_ops.append(new)
    _append(lane, lane_ops)
    _append(outer, [lane])
    # A[i] = combine(A[i], part[l]), lanes in order
    fold = LoopHeader(0, LANES, 1, "serial", _fresh(names, f"{name}_lf")).make()
    index_map: dict[SSAValue, SSAValue] = {}
    fold_ops = _clone_slice(list(st.indices), loop, index_map)
    indices = [index_map.get(i, i) for i in st.indices]
    a = memref.LoadOp.get(st.memref, indices)
    p = memref.LoadOp.get(part.memref, [fold.induction_var])
    lhs_is_acc = combine.operands[0] is ld.res
    c = combine.clone()
    c.operands = (a.res, p.res) if lhs_is_acc else (p.res, a.res)
    _append(fold, fold_ops + [a, p, c, memref.StoreOp.get(c.results[0], st.memref, indices)])
    for op in [part, ident_c, init, outer, fold]:
        parent.insert_op_before(op, loop)
    for lane_loop in (init, lane):
        lane_loop.attributes["dlc.whole_vector"] = UnitAttr()  # no full unroll to scalars first
    if split < loop.upper:
        loop.lb = type(loop.lb)(split, loop.lb.type)
    else:
        loop.detach()
        loop.erase()
    return 1


def _f32(value: float):
    from xdsl.dialects.builtin import FloatAttr

    return FloatAttr(value, Float32Type())


def _append(loop: ForOp, ops: list[Operation]) -> None:
    block = loop.body.block
    for op in ops:
        block.insert_op_before(op, block.last_op)


def _clone_slice(values: list[SSAValue], loop: ForOp, mapping: dict[SSAValue, SSAValue]) -> list[Operation]:
    """Clones of the ops inside ``loop``'s body that compute ``values`` (pure index ops)."""
    inside = set(body_ops(loop))
    needed: list[Operation] = []

    def visit(value: SSAValue) -> None:
        op = value.owner
        if isinstance(op, Operation) and op in inside and op not in needed:
            for operand in op.operands:
                visit(operand)
            needed.append(op)

    for v in values:
        visit(v)
    order = {op: k for k, op in enumerate(body_ops(loop))}
    clones = []
    for op in sorted(needed, key=order.__getitem__):
        new = op.clone(mapping)
        for old_result, new_result in zip(op.results, new.results):
            mapping[old_result] = new_result
        clones.append(new)
    return clones
