"""`tloop-reorder`: Permute loops of one perfect nest of `kernel` into the order `order` (e.g. order=i,k,j).

Thin command-line wrapper over `dlc.lowering.schedule` (the primitive and its
legality rules live there)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from dlc.lowering.schedule.passes import run_primitive


@dataclass(frozen=True)
class TLoopReorderPass(ModulePass):
    """Permute loops of one perfect nest of `kernel` into the order `order` (e.g. order=i,k,j)."""

    name = "tloop-reorder"
    kernel: str
    order: tuple[str, ...]

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        run_primitive(op, self.kernel, lambda s: s.reorder(*self.order))
