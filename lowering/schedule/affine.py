"""Index analysis and the dependence rules the schedule primitives use.

An index value is analysed as an affine form over *loop digits*: a loop's
induction variable, or ``iv / D`` and ``iv % D`` of a normalised loop (what
`fuse` produces). Values defined outside every loop are opaque symbols
(constant during the nest). Anything else (a loaded index, a non-constant
multiply) is "not analysable", and the rules below then refuse.

The dependence rule (used by reorder, parallel, vectorize, fuse_siblings):
for every buffer *written* inside the region (scratch allocated inside it is
private and ignored), take the dimensions in which all accesses to it use the
same affine index (at least one); that partial index must be injective in the
digits of the region's loops (mixed-radix check). Then two iterations touch the
same element only if they agree on every loop those dimensions depend on: the remaining loops are that buffer's
*reduction loops*, whose relative order must be kept (floating-point
accumulation is not associative), and which cannot run in parallel.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import BlockArgument, Operation, SSAValue

from dlc.dialects.tloop import ForOp


@dataclass(frozen=True, eq=True)
class Digit:
    """One varying quantity of a loop nest: ``iv`` or ``iv / divisor`` or ``iv % divisor``."""

    loop: ForOp
    part: str = "iv"  # iv | div | mod
    divisor: int = 1

    def __hash__(self) -> int:
        return hash((id(self.loop), self.part, self.divisor))

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Digit) and other.loop is self.loop and other.part == self.part
                and other.divisor == self.divisor)

    @property
    def scale(self) -> int:
        """Distance between consecutive values."""
        return self.loop.stride if self.part == "iv" else 1

    @property
    def count(self) -> int:
        """Number of distinct values."""
        t = self.loop.trip_count
        if self.part == "div":
            return -(-t // self.divisor)
        if self.part == "mod":
            return min(t, self.divisor)
        return t

    @property
    def minimum(self) -> int:
        return self.loop.lower if self.part == "iv" else 0


@dataclass
class Affine:
    """``const + sum(coef * key)``; a key is a Digit or an opaque loop-invariant SSAValue."""

    terms: dict = field(default_factory=dict)
    const: int = 0

    def __add__(self, other: Affine) -> Affine:
        terms = dict(self.terms)
        for k, c in other.terms.items():
            terms[k] = terms.get(k, 0) + c
            if terms[k] == 0:
                del terms[k]
        return Affine(terms, self.const + other.const)

    def scaled(self, factor: int) -> Affine:
        if factor == 0:
            return Affine()
        return Affine({k: c * factor for k, c in self.terms.items()}, self.const * factor)

    def key(self) -> tuple:
        return (frozenset((id(k.loop), k.part, k.divisor, c) if isinstance(k, Digit) else (id(k), c)
                          for k, c in self.terms.items()), self.const)

    def digits(self) -> dict[Digit, int]:
        return {k: c for k, c in self.terms.items() if isinstance(k, Digit) and k.count > 1}

    def loops(self) -> list[ForOp]:
        seen: list[ForOp] = []
        for d in self.digits():
            if not any(d.loop is s for s in seen):
                seen.append(d.loop)
        return seen

    def range_over(self, digits_of: set) -> tuple[int, int]:
        """Min and max of the constant plus the digits of loops in `digits_of` (ids)."""
        lo = hi = self.const
        for d, c in self.terms.items():
            if isinstance(d, Digit) and id(d.loop) in digits_of:
                a = c * d.minimum
                b = c * (d.minimum + d.scale * (d.count - 1))
                lo += min(a, b)
                hi += max(a, b)
        return lo, hi


def constant_value(value: SSAValue) -> int | None:
    op = value.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


def _inside_any_loop(value: SSAValue) -> bool:
    op = value.owner
    if isinstance(value, BlockArgument):
        op = value.block.parent_op()
        if isinstance(op, ForOp):
            return True
    while op is not None:
        if isinstance(op, ForOp):
            return True
        op = op.parent_op()
    return False


def analyse(value: SSAValue) -> Affine | None:
    """The affine form of an index value, or None when it is not analysable."""
    if isinstance(value, BlockArgument) and isinstance(value.block.parent_op(), ForOp):
        return Affine({Digit(value.block.parent_op()): 1})
    c = constant_value(value)
    if c is not None:
        return Affine({}, c)
    op = value.owner
    if isinstance(op, (arith.AddiOp, arith.SubiOp)):
        a, b = analyse(op.lhs), analyse(op.rhs)
        if a is None or b is None:
            return None
        return a + (b if isinstance(op, arith.AddiOp) else b.scaled(-1))
    if isinstance(op, arith.MuliOp):
        a, b = analyse(op.lhs), analyse(op.rhs)
        if a is None or b is None:
            return None
        if not a.terms:
            return b.scaled(a.const)
        if not b.terms:
            return a.scaled(b.const)
        return None
    if isinstance(op, (arith.DivUIOp, arith.RemUIOp, arith.DivSIOp, arith.RemSIOp)):
        a, d = analyse(op.lhs), constant_value(op.rhs)
        if a is None or d is None or d <= 0:
            return None
        if not a.terms:
            return Affine({}, int(a.const / d) if isinstance(op, (arith.DivSIOp, arith.DivUIOp))
                          else a.const - d * int(a.const / d))
        (digit, coef), = a.terms.items() if len(a.terms) == 1 else ((None, 0),)
        if (isinstance(digit, Digit) and digit.part == "iv" and coef == 1 and a.const == 0
                and digit.loop.lower == 0 and digit.loop.stride == 1):
            part = "div" if isinstance(op, (arith.DivUIOp, arith.DivSIOp)) else "mod"
            return Affine({Digit(digit.loop, part, d): 1})
        return None
    if isinstance(op, arith.IndexCastOp):
        return analyse(op.input)
    if not _inside_any_loop(value):
        return Affine({value: 1})
    return None


def injective(index: list[Affine], varying: set | None = None) -> bool:
    """True if distinct digit values always give distinct indices (sufficient check).

    Only digits of loops in `varying` (ids; default all) count: the others are
    fixed while the region runs.
    """
    used: set = set()
    for dim in index:
        digits = {d: c for d, c in dim.digits().items() if varying is None or id(d.loop) in varying}
        if any(d in used for d in digits):
            return False
        used |= set(digits)
        spans = sorted((abs(c) * d.scale, d.count) for d, c in digits.items())
        reach = 0
        for stride, count in spans:
            if stride <= reach:
                return False
            reach += stride * (count - 1)
    return True


@dataclass
class Access:
    op: Operation
    buffer: SSAValue
    is_store: bool
    index: list[Affine] | None


def accesses(root: Operation) -> list[Access]:
    out = []
    for op in root.walk():
        if isinstance(op, memref.LoadOp):
            idx = [analyse(i) for i in op.indices]
            out.append(Access(op, op.memref, False, None if any(i is None for i in idx) else idx))
        elif isinstance(op, memref.StoreOp):
            idx = [analyse(i) for i in op.indices]
            out.append(Access(op, op.memref, True, None if any(i is None for i in idx) else idx))
    return out


def _is_private(buffer: SSAValue, root: Operation) -> bool:
    owner = buffer.owner
    if not isinstance(owner, (memref.AllocaOp, memref.AllocOp)):
        return False
    while owner is not None:
        if owner is root:
            return True
        owner = owner.parent_op()
    return False


@dataclass
class WrittenBuffer:
    """A buffer written in a region: its common index, or why there is none."""

    buffer: SSAValue
    index: list[Affine] | None
    problem: str | None

    def reduction_loops(self, band: list[ForOp]) -> list[ForOp]:
        indexed = {id(l) for dim in self.index for l in dim.loops()}
        # a loop with one iteration does not vary: it cannot repeat an element
        return [l for l in band if id(l) not in indexed and l.trip_count > 1]

    def partially_indexed(self, band: list[ForOp]) -> list[ForOp]:
        """Loops indexed through only one of their div/mod digits (neither reduction nor not)."""
        out = []
        for loop in band:
            present = {d for dim in self.index for d in dim.digits() if d.loop is loop}
            for d in present:
                if d.part == "iv":
                    continue
                other = Digit(loop, "mod" if d.part == "div" else "div", d.divisor)
                if other.count > 1 and other not in present:
                    out.append(loop)
                    break
        return out


def written_buffers(root: Operation, buffer_name) -> list[WrittenBuffer]:
    """Every non-private buffer stored to inside `root`, checked against the dependence rule."""
    all_acc = accesses(root)
    result = []
    seen: list[SSAValue] = []
    for acc in all_acc:
        if not acc.is_store or any(acc.buffer is s for s in seen) or _is_private(acc.buffer, root):
            continue
        seen.append(acc.buffer)
        mine = [a for a in all_acc if a.buffer is acc.buffer]
        name = buffer_name(acc.buffer)
        if any(a.index is None for a in mine):
            result.append(WrittenBuffer(acc.buffer, None, f"an index of {name} is not affine in the loops"))
            continue
        # only the dimensions where every access agrees tell iterations apart
        # (e.g. after unrolling, accesses differ by constants in one dimension)
        rank = len(mine[0].index)
        common = [d for d in range(rank) if len({a.index[d].key() for a in mine}) == 1]
        if rank and not common:
            result.append(WrittenBuffer(acc.buffer, None, f"{name} is accessed at different indices"))
            continue
        index = [mine[0].index[d] for d in common]
        varying = {id(op) for op in root.walk() if isinstance(op, ForOp)}
        if not injective(index, varying):
            result.append(WrittenBuffer(acc.buffer, None, f"the index of {name} may repeat across iterations"))
            continue
        result.append(WrittenBuffer(acc.buffer, index, None))
    return result


def block_partitioned(loop: ForOp, buffer: SSAValue) -> bool:
    """Whether each iteration of `loop` touches its own block of `buffer`, also where the
    accesses inside have no common index (a GEMM's main tiles and its row tail inside each
    column block; a conv's main tiles and column tail under one channel-block loop).

    Every access (load or store) splits, per dimension, into a part in `loop`'s digits and
    a rest in the loops inside it. The parts in `loop` must be the same for all accesses,
    at most one digit ``c * D`` per dimension, together injective over `loop`'s iterations
    (a fused loop's div and mod digits both used); the rest in a dimension with such a digit
    must stay within ``[0, c * step(D))``, the block of one digit value."""
    mine = [a for a in accesses(loop) if a.buffer is buffer]
    if not mine or any(a.index is None for a in mine):
        return False
    inner = {id(op) for op in loop.walk() if isinstance(op, ForOp) and op is not loop}
    keys = None
    for a in mine:
        own_index, key = [], []
        for form in a.index:
            own = {k: c for k, c in form.terms.items() if isinstance(k, Digit) and k.loop is loop}
            rest = Affine({k: c for k, c in form.terms.items() if k not in own}, form.const)
            if len(own) > 1 or any(not isinstance(k, Digit) or id(k.loop) not in inner for k in rest.terms):
                return False
            if own:
                (digit, coef), = own.items()
                lo, hi = rest.range_over(inner)
                if coef <= 0 or lo < 0 or hi >= coef * digit.scale:
                    return False
            own_index.append(Affine(dict(own)))
            key.append(Affine(dict(own)).key())
        if keys is None:
            keys = key
            if not injective(own_index, {id(loop)}):
                return False
            used = {d for dim in own_index for d in dim.digits()}
            for d in used:  # one of a fused loop's digits alone repeats across iterations
                if d.part != "iv" and Digit(loop, "mod" if d.part == "div" else "div", d.divisor) not in used \
                        and Digit(loop, "mod" if d.part == "div" else "div", d.divisor).count > 1:
                    return False
            if not used:
                return False
        elif key != keys:
            return False
    return True
