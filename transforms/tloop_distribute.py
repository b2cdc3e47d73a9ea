"""`tloop-distribute`: Split loop `loop` of kernel `kernel` into one loop per statement (loop fission).

Thin command-line wrapper over `dlc.lowering.schedule` (the primitive and its
legality rules live there: lowering/schedule/fission.py)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from dlc.lowering.schedule.passes import run_primitive


@dataclass(frozen=True)
class TLoopDistributePass(ModulePass):
    """Split loop `loop` of kernel `kernel` into one loop per statement (loop fission)."""

    name = "tloop-distribute"
    kernel: str
    loop: str

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        run_primitive(op, self.kernel, lambda s: s.distribute(self.loop))
