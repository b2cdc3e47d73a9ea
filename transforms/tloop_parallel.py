"""`tloop-parallel`: Mark outermost loop `loop` of `kernel` parallel (its iterations write disjoint elements).

Thin command-line wrapper over `dlc.lowering.schedule` (the primitive and its
legality rules live there)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from dlc.lowering.schedule.passes import run_primitive


@dataclass(frozen=True)
class TLoopParallelPass(ModulePass):
    """Mark outermost loop `loop` of `kernel` parallel (its iterations write disjoint elements)."""

    name = "tloop-parallel"
    kernel: str
    loop: str

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        run_primitive(op, self.kernel, lambda s: s.parallel(self.loop))
