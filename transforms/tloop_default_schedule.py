"""`tloop-default-schedule`: the safe default schedule of every kernel (see
`dlc.lowering.schedule.defaults`): outermost disjoint-output loops parallel,
innermost stride-1 non-reduction loops vectorized."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from dlc.lowering.schedule import apply_default_schedules
from dlc.lowering.schedule.defaults import MIN_PARALLEL_ITERATIONS


@dataclass(frozen=True)
class TLoopDefaultSchedulePass(ModulePass):
    """Mark safe outermost loops parallel and innermost stride-1 loops vectorized, in every kernel."""

    name = "tloop-default-schedule"
    target: str = "llvm"
    # nests with fewer innermost iterations stay serial (waking threads costs more)
    min_parallel_iterations: int = MIN_PARALLEL_ITERATIONS

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        apply_default_schedules(op, self.target, self.min_parallel_iterations)
