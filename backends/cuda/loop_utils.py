"""Small IR-building helpers for GPU schedules on tloop kernels.

Why our own: the schedule primitives here (flatten a perfect nest, strided
distribution of a loop over lanes, guards) build `tloop.for` + index `arith`
ops; xDSL has no loop utilities for our loop op.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import FloatAttr, IndexType, IntegerAttr, IntegerType, NoneAttr
from xdsl.ir import Attribute, Block, Operation, SSAValue

from dlc.dialects.tloop import ForOp, YieldOp

INDEX = IndexType()
SHARED_SPACE = IntegerAttr(3, IntegerType(64))  # NVVM's shared (workgroup) address space


class Inserter:
    """Appends new ops to ``block`` before ``anchor`` (or at the end)."""

    def __init__(self, block: Block, anchor: Operation | None = None):
        self.block = block
        self.anchor = anchor

    def add(self, op: Operation) -> Operation:
        if self.anchor is not None:
            self.block.insert_op_before(op, self.anchor)
        else:
            self.block.add_op(op)
        return op

    def val(self, op: Operation) -> SSAValue:
        return self.add(op).results[0]

    def index(self, value: int) -> SSAValue:
        return self.val(arith.ConstantOp(IntegerAttr(value, INDEX)))

    def _index_op(self, op_class: type[Operation], a: SSAValue, b: SSAValue | int, identity: int) -> SSAValue:
        """``a op b`` on index values; a constant ``b`` becomes an arith.constant (none when
        it is the op's identity: ``a`` itself)."""
        if isinstance(b, int):
            if b == identity:
                return a
            b = self.index(b)
        return self.val(op_class(a, b))

    def add_i(self, a: SSAValue, b: SSAValue | int) -> SSAValue:
        return self._index_op(arith.AddiOp, a, b, 0)

    def mul_i(self, a: SSAValue, b: SSAValue | int) -> SSAValue:
        return self._index_op(arith.MuliOp, a, b, 1)

    def div_i(self, a: SSAValue, b: int) -> SSAValue:
        return a if b == 1 else self.val(arith.DivUIOp(a, self.index(b)))

    def rem_i(self, a: SSAValue, b: int) -> SSAValue:
        return self.val(arith.RemUIOp(a, self.index(b)))

    def less(self, a: SSAValue, b: SSAValue | int) -> SSAValue:
        if isinstance(b, int):
            b = self.index(b)
        return self.val(arith.CmpiOp(a, b, "ult"))

    def equal(self, a: SSAValue, b: int) -> SSAValue:
        return self.val(arith.CmpiOp(a, self.index(b), "eq"))

    def both(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.val(arith.AndIOp(a, b))

    def load(self, ref: SSAValue, indices: Sequence[SSAValue]) -> SSAValue:
        return self.val(memref.LoadOp.get(ref, list(indices)))

    def store(self, value: SSAValue, ref: SSAValue, indices: Sequence[SSAValue]) -> None:
        self.add(memref.StoreOp.get(value, ref, list(indices)))

    def alloca(self, element: Attribute, shape: Sequence[int], shared: bool, name: str) -> SSAValue:
        space = SHARED_SPACE if shared else NoneAttr()
        value = self.val(memref.AllocaOp.get(element, shape=list(shape), memory_space=space))
        value.name_hint = name
        return value


def loop(trip: int, name: str, kind: str = "serial", bind: str | None = None) -> ForOp:
    """A new ``tloop.for %name = 0 to trip`` (optionally bound to a GPU axis)."""
    op = ForOp(0, trip, 1, kind)
    op.induction_var.name_hint = name
    if bind is not None:
        from dlc.backends.cuda.gpu_schedule import bind as bind_loop

        bind_loop(op, bind)
    return op


def body_inserter(op: ForOp) -> Inserter:
    return Inserter(op.body.block, op.body.block.last_op)


def guard(ins: Inserter, cond: SSAValue) -> Inserter:
    """``scf.if cond { ... }``; returns an inserter into its then-block."""
    block = Block()
    block.add_op(scf.YieldOp())
    ins.add(scf.IfOp(cond, [], [block]))
    return Inserter(block, block.last_op)


def float_const(ins: Inserter, value: float, type_: Attribute) -> SSAValue:
    if isinstance(type_, IntegerType):
        return ins.val(arith.ConstantOp(IntegerAttr(int(value), type_)))
    return ins.val(arith.ConstantOp(FloatAttr(value, type_)))


def body_ops(op: ForOp) -> list[Operation]:
    return [o for o in op.body.block.ops if not isinstance(o, YieldOp)]


def move_ops(ops: Sequence[Operation], dest: Inserter) -> None:
    for o in ops:
        o.detach()
        dest.add(o)


def is_pure_scalar(op: Operation) -> bool:
    return not op.regions and op.name.startswith(("arith.", "math."))


def perfect_nest(top: ForOp, parallel_only: bool) -> list[ForOp]:
    """The loops of the perfect nest starting at ``top``.

    A level continues the nest when its body is pure scalar ops plus exactly one
    ``tloop.for`` (pure ops can be recomputed inside the flattened loop).
    """
    nest = [top]
    while True:
        ops = body_ops(nest[-1])
        loops = [o for o in ops if isinstance(o, ForOp)]
        if len(loops) != 1 or not all(o is loops[0] or is_pure_scalar(o) for o in ops):
            return nest
        inner = loops[0]
        if parallel_only:
            from dlc.backends.cuda.gpu_schedule import is_parallel

            if not is_parallel(inner):
                return nest
        nest.append(inner)


def delinearize(ins: Inserter, flat: SSAValue, nest: Sequence[ForOp]) -> list[SSAValue]:
    """Induction values of ``nest`` for the row-major flat index ``flat``."""
    trips = [lp.trip_count for lp in nest]
    values = []
    for k, lp in enumerate(nest):
        inner = 1
        for t in trips[k + 1 :]:
            inner *= t
        v = ins.div_i(flat, inner)
        if k > 0 and trips[k] > 1:
            v = ins.rem_i(v, trips[k])
        elif k > 0:
            v = ins.index(0)
        v = ins.add_i(ins.mul_i(v, lp.stride), lp.lower)
        values.append(v)
    return values


def flatten(nest: Sequence[ForOp], kind: str = "parallel") -> ForOp:
    """Replace a perfect nest by one loop over the product of its trip counts."""
    total = 1
    for lp in nest:
        total *= lp.trip_count
    name = "_".join(lp.induction_var.name_hint or "i" for lp in nest)
    flat = loop(total, name if len(nest) > 1 else (nest[0].induction_var.name_hint or "i"), kind)
    if len(nest) == 1 and nest[0].lower == 0 and nest[0].stride == 1:
        flat.attributes |= nest[0].attributes
    ins = body_inserter(flat)
    ivs = delinearize(ins, flat.induction_var, nest)
    for lp, iv in zip(nest, ivs):
        lp.induction_var.replace_all_uses_with(iv)
    for k, lp in enumerate(nest):
        inner = nest[k + 1] if k + 1 < len(nest) else None
        move_ops([o for o in body_ops(lp) if o is not inner], ins)
    return replace_with(nest[0], flat)


def strided(target: ForOp, lane: SSAValue, lanes: int, name: str) -> ForOp:
    """Distribute the iterations of ``target`` (lb 0, step 1) cyclically over ``lanes``.

    ``target`` becomes ``for s = 0 to ceil(n/lanes) { i = s*lanes + lane; if i < n {...} }``
    in place; returns the new serial loop.
    """
    n = target.trip_count
    trips = -(-n // lanes)
    outer = loop(trips, name)
    ins = body_inserter(outer)
    idx = ins.add_i(ins.mul_i(outer.induction_var, lanes), lane) if trips > 1 else lane
    idx = ins.add_i(ins.mul_i(idx, target.stride), target.lower)
    inner = ins if trips * lanes == n else guard(ins, ins.less(idx, target.upper))
    target.induction_var.replace_all_uses_with(idx)
    move_ops(body_ops(target), inner)
    return replace_with(target, outer)


def replace_with(old: ForOp, new: ForOp) -> ForOp:
    """Put ``new`` where ``old`` was and erase ``old`` (its body already moved); returns ``new``."""
    parent = old.parent_block()
    assert parent is not None
    parent.insert_op_before(new, old)
    old.detach()
    old.erase()
    return new


def defined_outside(value: SSAValue, region_op: Operation) -> bool:
    owner = value.owner
    op = owner.parent_op() if isinstance(owner, Block) else owner
    while op is not None:
        if op is region_op:
            return False
        op = op.parent_op()
    return True
