"""apply_default_schedules: a simple, safe default for every kernel.

For now: the outermost loop of each loop nest is marked parallel when it has
at least 2 iterations, the nest does enough work to pay for waking threads,
and its iterations write disjoint elements; the
innermost loop is marked vectorized when its accesses are stride-1 and it is
not a reduction loop. Whenever a check cannot prove a change safe, nothing
is changed. Before it, a kernel stamped with a form (``tloop.form``: matmul, the
conv2d forms, NCHWc conv and pools; lowering/kernels/forms.py) gets that form's
schedule from the one registry ``defaults_forms.FORM_SCHEDULES``; the target
(``dlc.target.Target``) it plans for is an argument, never the build machine.

Tuning (records.py): with a :class:`Tuning` (workload key -> config, e.g. the best records of
a ``tune.jsonl``), each kernel whose :func:`space.workload_key` has a config gets its form's
schedule with that config (a config that does not apply is a ScheduleConfigError, never
the default in silence); the others get the default. ``tuning.note()`` counts them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from dlc.dialects.tloop import KERNEL_ATTR
from dlc.lowering.schedule.defaults_elementwise import MIN_PARALLEL_ITERATIONS, schedule_generic
from dlc.lowering.schedule.defaults_forms import apply_form_schedule
from dlc.lowering.schedule.defaults_nchwc import mark_block_vectors
from dlc.target import Target, as_target

__all__ = ["MIN_PARALLEL_ITERATIONS", "Tuning", "apply_default_schedules", "report_kernels", "use_tuning"]

# ``(i, n)`` before the i-th of n kernels is scheduled (a progress display: dlc.compile)
_ON_KERNEL: ContextVar[Callable[[int, int], None] | None] = ContextVar("dlc_schedule_progress", default=None)


@contextmanager
def report_kernels(callback: Callable[[int, int], None]) -> Iterator[None]:
    """Inside this block, :func:`apply_default_schedules` calls ``callback(i, n)`` per kernel."""
    token = _ON_KERNEL.set(callback)
    try:
        yield
    finally:
        _ON_KERNEL.reset(token)


@dataclass
class Tuning:
    """Schedule configs by workload key (``configs``; from ``source``, e.g. the records'
    path), and what applying them did: ``tuned`` of ``tunable`` kernels (those with a
    schedule space) got a config, the others their default."""

    configs: dict[str, dict]
    source: str = "tuning records"
    tunable: int = 0
    tuned: int = 0
    keys: list[str] = field(default_factory=list)  # the keys applied, in kernel order

    def note(self) -> str:
        return (f"tuning: {self.tuned} of {self.tunable} kernels from {self.source}, "
                f"{self.tunable - self.tuned} default")


# the Tuning that apply_default_schedules uses when none is passed (dlc.compile's tuning_records)
_TUNING: ContextVar[Tuning | None] = ContextVar("dlc_schedule_tuning", default=None)


@contextmanager
def use_tuning(tuning: Tuning | None) -> Iterator[Tuning | None]:
    """Inside this block, :func:`apply_default_schedules` applies `tuning`'s configs."""
    token = _TUNING.set(tuning)
    try:
        yield tuning
    finally:
        _TUNING.reset(token)


def apply_default_schedules(
    module: ModuleOp, target: Target | str | None = None, min_parallel_iterations: int = MIN_PARALLEL_ITERATIONS,
    tuning: Tuning | None = None,
) -> ModuleOp:
    """Schedule every kernel of `module` for `target` (a Target, a target string, None:
    the host): its form's schedule (kernels/forms.py -> defaults_forms.py), then the
    generic one. A kernel whose form's loops are missing raises FormError. `tuning`
    (default: the one of :func:`use_tuning`): configs by workload key, applied where a
    kernel's key has one."""
    target = as_target(target)
    if target.kind != "llvm":
        return module  # GPU schedules are the GPU lowering's business
    tuning = tuning if tuning is not None else _TUNING.get()
    kernels = [k for k in module.ops if isinstance(k, func.FuncOp) and KERNEL_ATTR in k.attributes]
    on_kernel = _ON_KERNEL.get()
    for i, kernel in enumerate(kernels):
        if on_kernel is not None:
            on_kernel(i, len(kernels))
        config = _tuned_config(kernel, target, tuning) if tuning is not None else None
        apply_form_schedule(kernel, target, config)  # matmul, conv2d forms, NCHWc conv / pools
        # everything else, and nests a dense schedule left alone (fused epilogues)
        schedule_generic(kernel, min_parallel_iterations)
        mark_block_vectors(kernel)  # loops over NCHW{b}c channel blocks: one vector each
    return module


def _tuned_config(kernel: func.FuncOp, target: Target, tuning: Tuning) -> dict | None:
    """`kernel`'s config in `tuning` (None: its default), counting it in the note."""
    from dlc.lowering.schedule.space import space_of, workload_key

    if space_of(kernel, target) is None:
        return None
    tuning.tunable += 1
    key = workload_key(kernel, target)
    config = tuning.configs.get(key)
    if config is not None:
        tuning.tuned += 1
        tuning.keys.append(key)
    return config
