"""What the schedule primitives share: errors, loop lookup, band rebuilding.

The primitive modules (loops, annotate, fission, cache, producer) build on this
module only; `Schedule` (core.py) sits on top of them and exposes each primitive
as a method.

Loops are addressed by kernel symbol + induction-variable name hint (unique
within a kernel by the loop-level IR contract). xDSL has no loop-nest utilities
for our own ``tloop.for`` (its scf/affine helpers work on other ops), hence
these few helpers.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from dlc.dialects.tloop import KERNEL_ATTR, ForOp, YieldOp


class ScheduleError(Exception):
    """A schedule primitive's precondition failed; the message names kernel and loop.

    ``op`` is the loop (or kernel) at fault, so tools can point at its source line.
    """

    def __init__(self, message: str, op: Operation | None = None):
        super().__init__(message)
        self.op = op


def kernel_name(kernel: func.FuncOp) -> str:
    return kernel.sym_name.data


def find_kernel(module: ModuleOp, name: str) -> func.FuncOp:
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == name:
            if KERNEL_ATTR not in op.attributes:
                raise ScheduleError(f"@{name} is not a kernel (no '{KERNEL_ATTR}' attribute)", op)
            return op
    kernels = [op.sym_name.data for op in module.ops
               if isinstance(op, func.FuncOp) and KERNEL_ATTR in op.attributes]
    raise ScheduleError(f"no kernel named @{name} (kernels: {', '.join('@' + k for k in kernels) or 'none'})")


def loop_name(loop: ForOp) -> str:
    return loop.induction_var.name_hint or "?"


def enclosing_loops(op: Operation) -> list[ForOp]:
    """tloop.for ops around `op`, outermost first."""
    out = []
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, func.FuncOp):
        if isinstance(parent, ForOp):
            out.append(parent)
        parent = parent.parent_op()
    return out[::-1]


def inner_loops(loop: ForOp) -> list[ForOp]:
    return [op for op in for_ops(loop) if op is not loop]


def for_ops(root: Operation) -> list[ForOp]:
    """The loops in `root` (itself included), in ``root.walk()`` order. Why not walk: the
    schedules ask for a kernel's loops thousands of times (ResNet-50: 1800), and this visits
    only the ops with regions' blocks, without xDSL's generator per op, region and block."""
    out: list[ForOp] = []

    def visit(op: Operation) -> None:
        if isinstance(op, ForOp):
            out.append(op)
        for region in op.regions:
            for block in region.blocks:
                for child in block.ops:
                    if child.regions:
                        visit(child)

    visit(root)
    return out


def body_ops(loop: ForOp) -> list[Operation]:
    """The loop body without its terminator."""
    return [op for op in loop.body.block.ops if not isinstance(op, YieldOp)]


def is_pure_scalar(op: Operation) -> bool:
    """An op that only computes a value (safe to duplicate or move into a loop)."""
    return (op.dialect_name() in ("arith", "math") and not op.regions and len(op.results) == 1)


def index_constant(value: int, name: str | None = None) -> arith.ConstantOp:
    c = arith.ConstantOp(IntegerAttr(value, IndexType()))
    if name:
        c.result.name_hint = name
    return c


@dataclass
class LoopHeader:
    """Everything that defines a loop except its body."""

    lower: int
    upper: int
    step: int
    kind: str
    name: str
    attributes: dict = field(default_factory=dict)

    @staticmethod
    def of(loop: ForOp) -> LoopHeader:
        return LoopHeader(loop.lower, loop.upper, loop.stride, loop.loop_kind, loop_name(loop),
                          dict(loop.attributes))

    def make(self, ops: Iterable[Operation] = ()) -> ForOp:
        block = Block(arg_types=[IndexType()])
        block.args[0].name_hint = self.name
        block.add_ops(list(ops))
        loop = ForOp(self.lower, self.upper, self.step, self.kind, Region(block))
        loop.attributes |= self.attributes
        return loop

    @property
    def trip_count(self) -> int:
        return max(0, -(-(self.upper - self.lower) // self.step))


def build_nest(headers: Sequence[LoopHeader], inner_ops: Sequence[Operation]) -> tuple[ForOp, list[ForOp]]:
    """A perfect nest with `inner_ops` (detached) as the innermost body."""
    loops: list[ForOp] = []
    current: list[Operation] = list(inner_ops)
    for header in reversed(headers):
        loop = header.make(current)
        loops.append(loop)
        current = [loop]
    loops.reverse()
    return loops[0], loops


def detach_body(loop: ForOp) -> list[Operation]:
    ops = body_ops(loop)
    for op in ops:
        op.detach()
    return ops


class KernelLoops:
    """One kernel function and its loops, addressed by name: what every primitive
    takes as its first argument (`Schedule` derives from it and adds the primitives).

    Every primitive accepts a loop as a `ForOp` or its induction-variable name.
    """

    def __init__(self, kernel: func.FuncOp):
        if KERNEL_ATTR not in kernel.attributes:
            raise ScheduleError(f"@{kernel_name(kernel)} is not a kernel (no '{KERNEL_ATTR}' attribute)")
        self.kernel = kernel

    @property
    def name(self) -> str:
        return kernel_name(self.kernel)

    def loops(self) -> list[ForOp]:
        return for_ops(self.kernel)

    def loop(self, loop: ForOp | str) -> ForOp:
        if isinstance(loop, ForOp):
            if loop.get_toplevel_object() is not self.kernel.get_toplevel_object() or not self._owns(loop):
                raise ScheduleError(f"@{self.name}, loop '{loop_name(loop)}': is not in this kernel", self.kernel)
            return loop
        found = [op for op in self.loops() if loop_name(op) == loop]
        if not found:
            names = ", ".join(f"'{loop_name(op)}'" for op in self.loops())
            raise ScheduleError(f"@{self.name}: no loop named '{loop}' (loops: {names or 'none'})")
        if len(found) > 1:
            raise ScheduleError(f"@{self.name}: loop name '{loop}' is not unique")
        return found[0]

    def _owns(self, loop: ForOp) -> bool:
        parent = loop.parent_op()
        while parent is not None:
            if parent is self.kernel:
                return True
            parent = parent.parent_op()
        return False

    @contextmanager
    def atomic(self):
        """Undo everything done inside the block if a ScheduleError escapes it.

        For primitives made of several steps (tile = split, split, reorder) whose
        last step may refuse: the kernel body is restored from a copy (loop
        handles taken inside the block are then stale).
        """
        backup = self.kernel.body.clone()
        try:
            yield
        except ScheduleError:
            region = self.kernel.body
            while region.blocks:
                block = region.detach_block(0)
                block.erase(safe_erase=False)
            backup.move_blocks(region)
            raise

    def fail(self, loop: ForOp | str | None, message: str) -> ScheduleError:
        where = f"@{self.name}" if loop is None else f"@{self.name}, loop '{loop if isinstance(loop, str) else loop_name(loop)}'"
        return ScheduleError(f"{where}: {message}", loop if isinstance(loop, ForOp) else self.kernel)

    def fresh_name(self, wanted: str) -> str:
        """`wanted` if no loop uses it, else a clear error (names must stay unique)."""
        taken = {loop_name(op) for op in self.loops()}
        if wanted in taken:
            raise ScheduleError(f"@{self.name}: loop name '{wanted}' is already used")
        return wanted


def value_name(value: SSAValue) -> str:
    """How diagnostics name a buffer: its SSA name, or the kernel argument position."""
    if value.name_hint:
        return f"%{value.name_hint}"
    from xdsl.ir import BlockArgument

    if isinstance(value, BlockArgument):
        return f"argument #{value.index}"
    return f"the buffer of {value.owner.name}"


def append_to_body(loop: ForOp, ops: Sequence[Operation]) -> None:
    """Insert `ops` at the end of the loop body (before the terminator)."""
    block = loop.body.block
    for op in ops:
        block.insert_op_before(op, block.last_op)


def replace_loop(old: ForOp, new_ops: Sequence[Operation]) -> None:
    """Put `new_ops` where `old` was and erase `old` (its body must be detached or dead)."""
    Rewriter.insert_op(list(new_ops), InsertPoint.before(old))
    old.detach()
    old.erase(safe_erase=False)


def make_if(cond: SSAValue, ops: Sequence[Operation]) -> scf.IfOp:
    """`scf.if %cond { ops }` with no results and no else region."""
    block = Block(list(ops) + [scf.YieldOp()])
    return scf.IfOp(cond, [], Region(block), Region())
