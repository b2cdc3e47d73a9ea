"""Kernel form -> its default schedule (the schedule side of kernels/forms.py).

``FORM_SCHEDULES`` maps each form a generator stamps (``tloop.form``) to
``schedule(s: Schedule, target: Target) -> bool``; the modules below register
their schedules when the table is first read. :func:`apply_form_schedule` is
the one dispatcher: it checks the loops the form promises (``FORM_LOOPS``) and
and buffers (``FORM_BUFFERS``) and raises :class:`FormError` naming kernel, form and
what is missing, instead of
dropping the kernel to the generic schedule. A schedule that finds the form's
contract broken (a buffer it needs absent) raises FormError too. Other
ScheduleErrors are shapes a schedule's steps refuse: the kernel keeps the
generic default, as a schedule returning False does.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import func

from dlc.dialects.tloop import ForOp
from xdsl.dialects.builtin import MemRefType

from dlc.lowering.kernels.forms import FORM_BUFFERS, FORM_LOOPS, form_of
from dlc.lowering.schedule.core import Schedule, ScheduleError, kernel_name, loop_name
from dlc.registry import Registry
from dlc.target import Target

FormSchedule = Callable[[Schedule, Target], bool]
FORM_SCHEDULES: Registry[FormSchedule] = Registry(
    "kernel-form schedule",
    modules=[f"dlc.lowering.schedule.{name}" for name in
             ("defaults_dense", "defaults_conv", "defaults_conv_grouped", "defaults_nchwc",
              "defaults_quantized")],
)
form_schedule = FORM_SCHEDULES.register  # @form_schedule(forms.MATMUL)


class FormError(ScheduleError):
    """A kernel does not hold what its stamped form promises (a loop or buffer renamed or
    missing): a generator / schedule mismatch, never a silent fall back."""


def form_error(kernel: func.FuncOp, form: str, missing: str) -> FormError:
    return FormError(f"kernel @{kernel_name(kernel)} of form '{form}': {missing}", kernel)


def apply_form_schedule(kernel: func.FuncOp, target: Target) -> bool:
    """Run the default schedule of `kernel`'s form; True when it applied. False: no form,
    a kernel already scheduled by hand, or a shape the schedule refuses."""
    form = form_of(kernel)
    if form is None:
        return False
    schedule = FORM_SCHEDULES.lookup(form)
    if schedule is None:
        raise form_error(kernel, form, "no default schedule is registered for this form")
    if any(isinstance(op, ForOp) and op.loop_kind != "serial" for op in kernel.walk()):
        return False  # already scheduled by hand
    names = {loop_name(op) for op in kernel.walk() if isinstance(op, ForOp)}
    missing = [name for name in FORM_LOOPS[form] if name not in names]
    if missing:
        raise form_error(kernel, form, f"no loop named {', '.join(repr(m) for m in missing)} "
                                       "(its schedule addresses the form's loops by name)")
    buffers = {v.name_hint for v in kernel.body.block.args} | {
        v.name_hint for op in kernel.walk() for v in op.results if isinstance(v.type, MemRefType)}
    missing = [name for name in FORM_BUFFERS[form] if name not in buffers]
    if missing:
        raise form_error(kernel, form, f"no buffer named {', '.join('%' + m for m in missing)} "
                                       "(its schedule addresses the form's buffers by name)")
    try:
        return schedule(Schedule(kernel), target)
    except FormError:
        raise
    except ScheduleError:
        return False  # a shape the schedule's steps refuse: the generic default applies
