"""Schedule spaces: the knobs of a kernel form's default schedule, as a declared space.

Each form schedule with a space (``@form_schedule(forms.MATMUL, space=matmul_space)`` in
defaults_forms.py) reads its choices (register tile, cache blocks, loop order, packing,
parallel loop, unroll, ...) from a config dict ``{knob: value}``; the space of one kernel is
built from its shapes and the target, and ``space.default()`` is exactly the schedule the
hand-written heuristics pick (so ``config=None`` and ``config=space.default()`` give the
same IR). A config outside the space, or one its constraint refuses (a register tile
beyond the target's vector registers, a block that is not a multiple of the tile), is a
:class:`ScheduleConfigError` naming the knob and the allowed values: never a silent
fall back to the default.

:func:`workload_key` names a kernel for tuning records (records.py): form, the shapes and
dtypes of its buffers, its fused epilogue, and the target, stable across processes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType, StringAttr

from dlc.diagnostics import DiagnosticError
from dlc.registry import Registry

Config = dict[str, Any]
_FIRST = object()  # Knob.default not given: the first choice


class ScheduleConfigError(DiagnosticError):
    """A schedule config that does not apply to a kernel (unknown knob, value outside the
    knob's choices, a combination the space's constraint refuses, or one the schedule's
    steps refuse)."""


def _show(value: Any) -> str:
    return repr(value) if isinstance(value, str) else str(value)


@dataclass(frozen=True)
class Knob:
    """One choice of a schedule: ``name``, its ``choices`` (ints, strings or bools) and the
    default's value (``default``: one of the choices; the first when not given)."""

    name: str
    choices: tuple
    default: Any = _FIRST

    def __post_init__(self) -> None:
        choices = tuple(self.choices)
        object.__setattr__(self, "choices", choices)
        if not choices:
            raise ValueError(f"knob '{self.name}' has no choices")
        if len(set(choices)) != len(choices):
            raise ValueError(f"knob '{self.name}' has repeated choices {choices}")
        for c in choices:
            if not isinstance(c, (int, str, bool)):
                raise ValueError(f"knob '{self.name}': choice {c!r} is not an int, str or bool")
        if self.default is _FIRST:
            object.__setattr__(self, "default", choices[0])
        elif not self._has(self.default):
            raise ValueError(f"knob '{self.name}': default {self.default!r} is not one of {choices}")

    def _has(self, value: Any) -> bool:
        # bools are ints in Python: True must not pass for 1 (nor 1 for True)
        return any(type(value) is type(c) and value == c for c in self.choices)

    def allowed(self) -> str:
        return ", ".join(_show(c) for c in self.choices)


# why a config is refused by a space's constraint (None: accepted)
Constraint = Callable[[Config], "str | None"]


@dataclass(frozen=True)
class Space:
    """The knobs of one kernel's form schedule. ``constraint(config)`` returns why a
    combination of choices does not apply (None when it does)."""

    form: str
    knobs: tuple[Knob, ...]
    constraint: Constraint | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "knobs", tuple(self.knobs))
        names = [k.name for k in self.knobs]
        if len(set(names)) != len(names):
            raise ValueError(f"space of '{self.form}' has repeated knobs {names}")
        problem = self.problem(self.default())
        if problem is not None:
            raise ValueError(f"space of '{self.form}': its default is not valid: {problem}")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(k.name for k in self.knobs)

    def knob(self, name: str) -> Knob:
        for k in self.knobs:
            if k.name == name:
                return k
        raise KeyError(name)

    def default(self) -> Config:
        return {k.name: k.default for k in self.knobs}

    @property
    def size(self) -> int:
        """Points of the knobs' product (the constraint may exclude some)."""
        total = 1
        for k in self.knobs:
            total *= len(k.choices)
        return total

    def problem(self, config: Config) -> str | None:
        """Why `config` is not a point of this space (None when it is)."""
        if not isinstance(config, dict):
            return f"a config is a dict of knob -> value, not {type(config).__name__}"
        unknown = [name for name in config if name not in self.names]
        if unknown:
            return (f"unknown knob '{unknown[0]}' for form '{self.form}' "
                    f"(knobs: {', '.join(self.names)})")
        for k in self.knobs:
            if k.name not in config:
                return f"knob '{k.name}' is missing (allowed: {k.allowed()})"
            if not k._has(config[k.name]):
                return f"knob '{k.name}' = {_show(config[k.name])} is not allowed (allowed: {k.allowed()})"
        if self.constraint is not None:
            return self.constraint(config)
        return None

    def valid(self, config: Config) -> bool:
        return self.problem(config) is None

    def validate(self, config: Config, where: str = "") -> None:
        """Raise ScheduleConfigError (naming the knob and its allowed values) unless
        `config` is a point of this space; `where` prefixes the message (the kernel)."""
        problem = self.problem(config)
        if problem is not None:
            raise ScheduleConfigError(f"{where}schedule config of form '{self.form}': {problem}")

    def random(self, rng, attempts: int = 1000) -> Config:
        """A random valid config (``rng``: random.Random or numpy.random.Generator)."""
        for _ in range(attempts):
            config = {k.name: k.choices[_index(rng, len(k.choices))] for k in self.knobs}
            if self.valid(config):
                return config
        return self.default()  # the constraint refuses nearly all the product: the default is valid

    def neighbors(self, config: Config) -> list[Config]:
        """The valid configs that differ from `config` in one knob, by one step in its
        choices (the next or previous value; any other value of a str or bool knob)."""
        self.validate(config)
        out = []
        for k in self.knobs:
            i = next(j for j, c in enumerate(k.choices) if type(c) is type(config[k.name]) and c == config[k.name])
            if all(isinstance(c, int) and not isinstance(c, bool) for c in k.choices):
                steps = [j for j in (i - 1, i + 1) if 0 <= j < len(k.choices)]
            else:
                steps = [j for j in range(len(k.choices)) if j != i]
            for j in steps:
                candidate = dict(config, **{k.name: k.choices[j]})
                if self.valid(candidate):
                    out.append(candidate)
        return out

    def describe(self) -> str:
        return "; ".join(f"{k.name} in {{{k.allowed()}}} (default {_show(k.default)})" for k in self.knobs)


def _index(rng, n: int) -> int:
    if hasattr(rng, "integers"):  # numpy Generator
        return int(rng.integers(n))
    return rng.randrange(n)


def int_choices(default: int, candidates, keep=lambda v: True) -> tuple[int, ...]:
    """Sorted distinct ints: `default` plus the `candidates` that `keep` accepts (a knob's
    choices, ascending so that neighbors are one step apart)."""
    values = {int(default)} | {int(c) for c in candidates if keep(int(c))}
    return tuple(sorted(values))


# ---------------------------------------------------------------------------
# spaces of kernels and workload keys
# ---------------------------------------------------------------------------


# the modules holding the form schedules (defaults_forms.FORM_SCHEDULES loads the same list)
FORM_MODULES = tuple(f"dlc.lowering.schedule.{name}" for name in
                     ("defaults_dense", "defaults_conv", "defaults_conv_grouped", "defaults_nchwc",
                      "defaults_quantized", "defaults_attention"))
# form -> space(s: Schedule, target) -> Space | None, filled by defaults_forms.form_schedule(...,
# space=...) as those modules load (here, not in defaults_forms: space_of needs no import of it)
FORM_SPACES: Registry = Registry("kernel-form schedule space", modules=FORM_MODULES)


def space_of(kernel: func.FuncOp, target) -> Space | None:
    """The schedule space of `kernel` for `target` (dlc.target.Target or string); None when
    it has no form, its form has no space or its schedule does not apply to this kernel."""
    from dlc.lowering.kernels.forms import form_of
    from dlc.lowering.schedule.core import Schedule
    from dlc.target import as_target

    form = form_of(kernel)
    build = FORM_SPACES.lookup(form) if form is not None else None
    return None if build is None else build(Schedule(kernel), as_target(target))


def _type_text(t) -> str:
    if isinstance(t, MemRefType):
        return f"{t.element_type}[{','.join(str(d) for d in t.get_shape())}]"
    return str(t)


def epilogue_signature(kernel: func.FuncOp) -> str:
    """The fused elementwise tail of `kernel` (fuse-ops' ``tloop.fused = "graph.conv2d+add+relu"``)
    as op names in order: ``add,relu`` ("" when nothing is fused)."""
    attr = kernel.attributes.get("tloop.fused")
    if not isinstance(attr, StringAttr):
        return ""
    return ",".join(attr.data.split("+")[1:])


def body_digest(kernel: func.FuncOp) -> str:
    """8 hex digits of the kernel's printed IR, its symbol name left out: what the shapes do
    not tell (strides, padding, dilation, an epilogue's constants) still tells keys apart."""
    import hashlib

    text = str(kernel).replace(f"@{kernel.sym_name.data}", "@kernel", 1)
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def workload_key(kernel: func.FuncOp, target) -> str:
    """A stable, readable key of `kernel` for tuning records: form, input buffers ->
    output buffer (dtypes and shapes), fused epilogue, a digest of the kernel's IR, and the
    target, e.g. ``matmul|f32[1,512,1024];f32[1,1024,1000]->f32[1,512,1000]|epi:add,relu|
    h:1a2b3c4d|llvm -mcpu=znver4``. The kernel's symbol is left out: the same kernel in two
    models, or two processes, has the same key."""
    from dlc.lowering.kernels.forms import form_of
    from dlc.target import as_target

    form = form_of(kernel) or "none"
    types = [_type_text(t) for t in kernel.function_type.inputs.data]
    ins, out = types[:-1], (types[-1] if types else "")
    key = f"{form}|{';'.join(ins)}->{out}"
    epi = epilogue_signature(kernel)
    if epi:
        key += f"|epi:{epi}"
    return f"{key}|h:{body_digest(kernel)}|{as_target(target)}"
