"""`tloop-split`: Split loop `loop` of kernel `kernel` by `factor` into `<loop>_outer` / `<loop>_inner`.

Thin command-line wrapper over `dlc.lowering.schedule` (the primitive and its
legality rules live there)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from dlc.lowering.schedule.passes import run_primitive


@dataclass(frozen=True)
class TLoopSplitPass(ModulePass):
    """Split loop `loop` of kernel `kernel` by `factor` into `<loop>_outer` / `<loop>_inner`."""

    name = "tloop-split"
    kernel: str
    loop: str
    factor: int

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        run_primitive(op, self.kernel, lambda s: s.split(self.loop, self.factor))
