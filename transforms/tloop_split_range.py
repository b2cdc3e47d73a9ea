"""`tloop-split-range`: Split the iteration range of loop `loop` at `at` into two loops (index-set splitting).

Thin command-line wrapper over `dlc.lowering.schedule` (the primitive lives in
lowering/schedule/fission.py)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from dlc.lowering.schedule.passes import run_primitive


@dataclass(frozen=True)
class TLoopSplitRangePass(ModulePass):
    """Split the iteration range of loop `loop` at `at`: [lb, at) then [at, ub) (loops inside renamed `<name>_t`)."""

    name = "tloop-split-range"
    kernel: str
    loop: str
    at: int

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        run_primitive(op, self.kernel, lambda s: s.split_range(self.loop, self.at))
