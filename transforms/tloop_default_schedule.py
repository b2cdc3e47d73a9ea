"""`tloop-default-schedule`: the default schedule of every kernel (see
`dlc.lowering.schedule.defaults`): its form's schedule (matmul, conv2d forms, NCHWc
conv and pools), then outermost disjoint-output loops parallel, innermost stride-1
non-reduction loops vectorized.

``target``: a TVM-style target string (``dlc.target``), e.g.
``tloop-default-schedule{target="llvm -mcpu=skylake-avx512"}``; "llvm": the host;
"cuda": nothing (the GPU lowering schedules its kernels)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from dlc.lowering.schedule import apply_default_schedules
from dlc.lowering.schedule.defaults import MIN_PARALLEL_ITERATIONS
from dlc.lowering.schedule.defaults_forms import FormError
from dlc.target import Target, TargetError
from dlc.transforms.tloop_schedule import as_pass_error


@dataclass(frozen=True)
class TLoopDefaultSchedulePass(ModulePass):
    """Each kernel's form schedule, then safe outermost parallel / innermost vector loops."""

    name = "tloop-default-schedule"
    target: str = "llvm"
    # nests with fewer innermost iterations stay serial (waking threads costs more)
    min_parallel_iterations: int = MIN_PARALLEL_ITERATIONS

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        try:
            target = Target.from_string(self.target)
        except TargetError as err:
            raise PassFailedException(str(err)) from None
        try:
            apply_default_schedules(op, target, self.min_parallel_iterations)
        except FormError as err:
            raise as_pass_error(err) from None
