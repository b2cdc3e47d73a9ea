"""`tloop-default-schedule`: the default schedule of every kernel (see
`dlc.lowering.schedule.defaults`): its form's schedule (matmul, conv2d forms, NCHWc
conv and pools), then outermost disjoint-output loops parallel, innermost stride-1
non-reduction loops vectorized.

``target``: a TVM-style target string (``dlc.target``), e.g.
``tloop-default-schedule{target="llvm -mcpu=skylake-avx512"}``; "llvm": the host;
"cuda": nothing (the GPU lowering schedules its kernels).

``tuning-records``: a tuning log (``tune.jsonl``, lowering/schedule/records.py); each
kernel whose workload key has a record gets its best config, the others the default. A
log for another target is refused. From Python, ``dlc.lowering.schedule.defaults.use_tuning``
passes a dict of configs instead (``dlc.compile(tuning_records=...)``)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from dlc.lowering.schedule import apply_default_schedules
from dlc.lowering.schedule.defaults import MIN_PARALLEL_ITERATIONS, Tuning
from dlc.lowering.schedule.defaults_forms import FormError
from dlc.lowering.schedule.records import TuningRecordError, best_configs, record_error_text
from dlc.lowering.schedule.space import ScheduleConfigError
from dlc.target import Target, TargetError
from dlc.transforms.tloop_schedule import as_pass_error


@dataclass(frozen=True)
class TLoopDefaultSchedulePass(ModulePass):
    """Each kernel's form schedule, then safe outermost parallel / innermost vector loops."""

    name = "tloop-default-schedule"
    target: str = "llvm"
    # nests with fewer innermost iterations stay serial (waking threads costs more)
    min_parallel_iterations: int = MIN_PARALLEL_ITERATIONS
    tuning_records: str = ""  # a tune.jsonl: its best config per workload key

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        try:
            target = Target.from_string(self.target)
        except TargetError as err:
            raise PassFailedException(str(err)) from None
        tuning = None
        if self.tuning_records:
            try:
                tuning = Tuning(best_configs(self.tuning_records, target), self.tuning_records)
            except TuningRecordError as err:
                raise PassFailedException(record_error_text(err)) from None
        try:
            apply_default_schedules(op, target, self.min_parallel_iterations, tuning)
        except FormError as err:
            raise as_pass_error(err) from None
        except ScheduleConfigError as err:
            raise PassFailedException(err.message) from None
