"""`tloop-vectorize`: Mark innermost loop `loop` of `kernel` vectorized (stride-1 accesses, no reduction).

Thin command-line wrapper over `dlc.lowering.schedule` (the primitive and its
legality rules live there)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from dlc.lowering.schedule.passes import run_primitive


@dataclass(frozen=True)
class TLoopVectorizePass(ModulePass):
    """Mark innermost loop `loop` of `kernel` vectorized (stride-1 accesses, no reduction)."""

    name = "tloop-vectorize"
    kernel: str
    loop: str

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        run_primitive(op, self.kernel, lambda s: s.vectorize(self.loop))
