"""`tloop-unroll`: Mark loop `loop` of `kernel` unrolled; with expand=true replace it by copies of its body.

Thin command-line wrapper over `dlc.lowering.schedule` (the primitive and its
legality rules live there)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from dlc.lowering.schedule.passes import run_primitive


@dataclass(frozen=True)
class TLoopUnrollPass(ModulePass):
    """Mark loop `loop` of `kernel` unrolled; with expand=true replace it by copies of its body."""

    name = "tloop-unroll"
    kernel: str
    loop: str
    expand: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        run_primitive(op, self.kernel, lambda s: s.unroll(self.loop, self.expand))
