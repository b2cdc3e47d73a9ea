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
generic default, and says so: its ``tloop.schedule_fallback`` attribute (``FALLBACK_ATTR``)
holds the refusal, printed with the loop-level IR and reported by the driver
(``driver.schedule_report``, ``CompiledModule.schedule_report``; ``dlc compile`` / ``dlc run``
print it as a note), never a silent change of schedule.

Schedule spaces (space.py): a form registered with ``space=`` (``@form_schedule(forms.MATMUL,
space=matmul_space)``) declares its knobs; ``space(s, target) -> Space | None`` builds the
space of one kernel (None: the schedule does not apply to it) and the schedule is called as
``schedule(s, target, config)`` with a config of that space (``space.default()``: the
hand-written heuristics). ``apply_form_schedule(kernel, target, config)`` with an explicit
config checks it against the space first and never falls back: a config the space refuses,
a kernel without a space, or one the schedule's steps refuse is a ScheduleConfigError.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import func

from dlc.dialects.tloop import ForOp
from xdsl.dialects.builtin import MemRefType, StringAttr

from dlc.lowering.kernels.forms import FORM_BUFFERS, FORM_LOOPS, form_of
from dlc.lowering.schedule.core import Schedule, ScheduleError, kernel_name, loop_name
from dlc.lowering.schedule.space import FORM_MODULES, FORM_SPACES, Config, ScheduleConfigError, Space
from dlc.registry import Registry
from dlc.target import Target

# schedule(s, target) -> bool; a form with a space: schedule(s, target, config) -> bool
FormSchedule = Callable[..., bool]
FormSpace = Callable[[Schedule, Target], "Space | None"]
FORM_SCHEDULES: Registry[FormSchedule] = Registry("kernel-form schedule", modules=FORM_MODULES)
# on a kernel whose form's schedule refused it (the generic default scheduled it): why
FALLBACK_ATTR = "tloop.schedule_fallback"
# FORM_SPACES (space.py, so that space_of needs no import of this module): form -> FormSpace


def form_schedule(*forms: str, space: FormSpace | None = None, replace: bool = False):
    """``@form_schedule(forms.MATMUL, space=matmul_space)``: register the decorated schedule
    for `forms`; with `space`, the schedule takes a config of that space as third argument."""

    def decorate(schedule: FormSchedule) -> FormSchedule:
        for form in forms:
            FORM_SCHEDULES.add(form, schedule, replace=replace)
            if space is not None:
                FORM_SPACES.add(form, space, replace=replace)
        return schedule

    return decorate


class FormError(ScheduleError):
    """A kernel does not hold what its stamped form promises (a loop or buffer renamed or
    missing): a generator / schedule mismatch, never a silent fall back."""


def form_error(kernel: func.FuncOp, form: str, missing: str) -> FormError:
    return FormError(f"kernel @{kernel_name(kernel)} of form '{form}': {missing}", kernel)


def form_space(kernel: func.FuncOp, target: Target) -> Space | None:
    """The schedule space of `kernel` (space.space_of)."""
    from dlc.lowering.schedule.space import space_of

    return space_of(kernel, target)


def apply_form_schedule(kernel: func.FuncOp, target: Target, config: Config | None = None) -> bool:
    """Run the default schedule of `kernel`'s form; True when it applied. False: no form,
    a kernel already scheduled by hand, or a shape the schedule refuses. With `config` (a
    point of the kernel's space, space.py): that schedule, or a ScheduleConfigError."""
    form = form_of(kernel)
    if form is None:
        if config is not None:
            raise ScheduleConfigError(f"kernel @{kernel_name(kernel)} has no kernel form: "
                                      "a schedule config does not apply to it")
        return False
    schedule = FORM_SCHEDULES.lookup(form)
    if schedule is None:
        raise form_error(kernel, form, "no default schedule is registered for this form")
    if any(isinstance(op, ForOp) and op.loop_kind != "serial" for op in kernel.walk()):
        if config is not None:
            raise ScheduleConfigError(f"kernel @{kernel_name(kernel)} is scheduled already: "
                                      "a schedule config does not apply to it")
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
    build_space = FORM_SPACES.lookup(form)
    s = Schedule(kernel)
    if build_space is None:
        if config is not None:
            raise ScheduleConfigError(f"kernel @{kernel_name(kernel)}: form '{form}' declares no "
                                      "schedule space: a schedule config does not apply to it")
        return _run(schedule, s, target)
    if config is None:
        return _run(schedule, s, target, None)
    where = f"kernel @{kernel_name(kernel)}: "
    space = build_space(s, target)
    if space is None:
        raise ScheduleConfigError(f"{where}the '{form}' schedule does not apply to this kernel "
                                  "(it has no schedule space): a schedule config cannot be applied")
    space.validate(config, where)
    try:
        done = schedule(s, target, dict(config))
    except FormError:
        raise
    except ScheduleError as err:
        raise ScheduleConfigError(f"{where}schedule config {config} does not apply: {err}") from None
    if not done:
        raise ScheduleConfigError(f"{where}schedule config {config} does not apply "
                                  f"(the '{form}' schedule refused the kernel)")
    return True


def _run(schedule: FormSchedule, s: Schedule, target: Target, *config) -> bool:
    """The default schedule (``config`` None: the space's default); refused shapes: False,
    with the refusal in the kernel's FALLBACK_ATTR."""
    try:
        return schedule(s, target, *config)
    except FormError:
        raise
    except ScheduleError as err:  # a shape the schedule's steps refuse: the generic default applies
        s.kernel.attributes[FALLBACK_ATTR] = StringAttr(
            f"the '{form_of(s.kernel)}' schedule refused it ({err}): generic schedule")
        return False
