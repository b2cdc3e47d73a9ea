"""What the `tloop-*` dlc-opt passes share: run a primitive, report a failure at its loop."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import PassFailedException

from dlc.lowering.schedule import Schedule, ScheduleError


def run_primitive(module: ModuleOp, kernel: str, apply: Callable[[Schedule], object]) -> None:
    """`apply(Schedule(@kernel))`; a ScheduleError becomes a located pass failure."""
    try:
        apply(Schedule.of(module, kernel))
    except ScheduleError as err:
        raise as_pass_error(err) from None


def as_pass_error(err: ScheduleError) -> Exception:
    if err.op is not None and err.op.parent is not None:
        from dlc.diagnostics import op_error

        return op_error(err.op, str(err))
    return PassFailedException(str(err))
