"""`tloop-fuse-siblings`: Merge loop `second` into the adjacent loop `first` (same bounds) when no dependence prevents it.

Thin command-line wrapper over `dlc.lowering.schedule` (the primitive and its
legality rules live there)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from dlc.lowering.schedule.passes import run_primitive


@dataclass(frozen=True)
class TLoopFuseSiblingsPass(ModulePass):
    """Merge loop `second` into the adjacent loop `first` (same bounds) when no dependence prevents it."""

    name = "tloop-fuse-siblings"
    kernel: str
    first: str
    second: str

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        run_primitive(op, self.kernel, lambda s: s.fuse_siblings(self.first, self.second))
