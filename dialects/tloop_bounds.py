"""Constant loop bounds checked against buffer extents: the ``tloop.for``
verifier's check that no ``memref.load``/``memref.store`` in a loop nest
indexes past a static dimension (which at run time corrupts the heap or
segfaults: the LLVM backend addresses with ``getelementptr inbounds`` and no
bounds checks).

The rule is the simplest sound one, so that a flagged access is certainly out
of bounds (no false alarms on the code dlc generates):

* an index is checked when it is an affine function ``c0 + sum(ck * ivk)`` of
  the induction variables of enclosing ``tloop.for`` loops (``arith.constant``,
  ``addi``, ``subi``, ``muli`` by a constant, and the integer casts when the
  value provably fits the narrower type); anything else (a function argument,
  ``select``, ``divsi``, a load) is not checked;
* tloop.for bounds are constants and its loops are independent, so each
  variable takes every value of its range in combination with the others: the
  affine index's range, computed per variable, is exact, not an over-estimate;
* the access must run on every iteration: it sits directly in the loop bodies
  of a nest that sits directly in a function (no ``scf.if`` guard, as after a
  non-dividing split, nor an ``scf.for`` that may run zero times, on the way);
  a loop of zero trips makes its body dead and unchecked.
"""

from __future__ import annotations

from xdsl.dialects import func, memref
from xdsl.dialects.builtin import IndexType, IntegerAttr, IntegerType, MemRefType, ModuleOp
from xdsl.ir import BlockArgument, Operation, SSAValue

# an index: (coefficient of each induction variable, constant term)
Affine = tuple[dict[SSAValue, int], int]

_INDEX_BITS = 64
_SIGN_EXTENDING = ("arith.index_cast", "arith.extsi")
_ZERO_EXTENDING = ("arith.index_castui", "arith.extui")


def _bits(type_) -> int | None:
    if isinstance(type_, IndexType):
        return _INDEX_BITS
    if isinstance(type_, IntegerType) and type_.width.data > 1:
        return type_.width.data
    return None


class _Nest:
    """The ranges of the induction variables of a loop nest's open loops, and the
    affine form of each index value met (memoized: loop nests share indices)."""

    def __init__(self) -> None:
        self.ranges: dict[SSAValue, tuple[int, int]] = {}
        self._forms: dict[SSAValue, Affine | None] = {}

    def range_of(self, form: Affine) -> tuple[int, int]:
        coefficients, constant = form
        low = high = constant
        for var, coefficient in coefficients.items():
            first, last = self.ranges[var]
            low += min(coefficient * first, coefficient * last)
            high += max(coefficient * first, coefficient * last)
        return low, high

    def form(self, value: SSAValue) -> Affine | None:
        if value not in self._forms:
            self._forms[value] = self._form(value)
        return self._forms[value]

    def _form(self, value: SSAValue) -> Affine | None:
        if isinstance(value, BlockArgument):
            return ({value: 1}, 0) if value in self.ranges else None
        op = value.owner
        if not isinstance(op, Operation) or _bits(value.type) is None:
            return None
        if op.name == "arith.constant":
            attr = op.properties.get("value") or op.attributes.get("value")
            return ({}, attr.value.data) if isinstance(attr, IntegerAttr) else None
        if op.name in ("arith.addi", "arith.subi", "arith.muli"):
            # exact modulo 2**bits: the result is the affine value when the
            # value's range fits the type, which _fits checks where it matters
            lhs, rhs = self.form(op.operands[0]), self.form(op.operands[1])
            if lhs is None or rhs is None:
                return None
            if op.name == "arith.muli":
                if lhs[0] and rhs[0]:
                    return None  # a product of variables: not affine
                (coefficients, constant), factor = (lhs, rhs[1]) if not rhs[0] else (rhs, lhs[1])
                return {v: c * factor for v, c in coefficients.items() if c * factor}, constant * factor
            sign = 1 if op.name == "arith.addi" else -1
            coefficients = dict(lhs[0])
            for var, coefficient in rhs[0].items():
                coefficients[var] = coefficients.get(var, 0) + sign * coefficient
            return {v: c for v, c in coefficients.items() if c}, lhs[1] + sign * rhs[1]
        if op.name in _SIGN_EXTENDING + _ZERO_EXTENDING:
            source = op.operands[0]
            bits, form = _bits(source.type), self.form(source)
            if bits is None or form is None:
                return None
            return form if self.fits(form, bits, signed=op.name in _SIGN_EXTENDING) else None
        return None

    def fits(self, form: Affine, bits: int, signed: bool) -> bool:
        low, high = self.range_of(form)
        if signed:
            return -(1 << (bits - 1)) <= low and high < (1 << (bits - 1))
        return 0 <= low and high < (1 << bits)


def _runs_whenever_called(loop: Operation) -> bool:
    """The outermost loop of a nest sits directly in a function body."""
    parent = loop.parent_op()
    return isinstance(parent, (func.FuncOp, ModuleOp))


def first_out_of_bounds(loop) -> tuple[Operation, str] | None:
    """(access, message) for the first load/store in the nest of ``loop`` (an
    outermost ``tloop.for``) that certainly indexes past a static extent."""
    if not _runs_whenever_called(loop):
        return None
    return _walk(loop, _Nest())


def _walk(loop, nest: _Nest) -> tuple[Operation, str] | None:
    if loop.trip_count == 0:
        return None  # the body never runs
    nest.ranges[loop.induction_var] = (loop.lower, loop.lower + (loop.trip_count - 1) * loop.stride)
    for op in loop.body.block.ops:
        if op.name == "tloop.for":
            found = _walk(op, nest)
        elif isinstance(op, (memref.LoadOp, memref.StoreOp)):
            found = _check_access(op, nest)
        else:  # an scf.if guard, an scf.for: what it holds may not run
            found = None
        if found is not None:
            return found
    return None


def _check_access(op: memref.LoadOp | memref.StoreOp, nest: _Nest) -> tuple[Operation, str] | None:
    buffer = op.memref
    if not isinstance(buffer.type, MemRefType):
        return None
    for dim, (index, extent) in enumerate(zip(op.indices, buffer.type.get_shape())):
        form = nest.form(index)
        if extent < 0 or form is None or not _fits_index(nest, form):
            continue
        low, high = nest.range_of(form)
        if 0 <= low and high < extent:
            continue
        values = f"is {low}" if low == high else f"ranges over [{low}, {high}]"
        name = f"%{buffer.name_hint}" if buffer.name_hint else "the buffer"
        return op, (f"{op.name} index {dim} {values} but dim {dim} of {name} "
                    f"({buffer.type}) has extent {extent}")
    return None


def _fits_index(nest: _Nest, form: Affine) -> bool:
    return nest.fits(form, _INDEX_BITS, signed=True)
