"""The BYOC registries: targets, their pattern tables, support predicates and codegens.

A target module (``dlc.backends.dnnl``, a test file...) fills them with decorators::

    @dlc.byoc.pattern_table("dnnl")
    def patterns():
        return [("conv2d_relu", is_op("graph.relu")(is_op("graph.conv2d")(wildcard(), is_constant())), None)]

    @dlc.byoc.supports("dnnl", "graph.conv2d")
    def conv(op):  # True, or a str: the reason it is not supported (shown by -v)
        return True if op.groups == 1 else "grouped conv2d"

    @dlc.byoc.codegen("dnnl")
    def generate(partition: func.FuncOp, ctx: CodegenContext) -> ExternalKernel: ...

Targets are found by name: ``register_target_module("dnnl", "dlc.backends.dnnl")``
names the module that registers a target, imported the first time the target is
asked for (like passes.py's lazy passes). A target is *known* when it has a
registered module or any registration. ``UnknownTargetError`` names the known ones.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Union

import numpy as np

from dlc.diagnostics import DiagnosticError

if TYPE_CHECKING:
    from xdsl.dialects import func
    from xdsl.ir import Operation

    from dlc.byoc.patterns import Match, Pattern
    from dlc.target import Target

# a pattern table entry: (name, pattern, check or None); check(match: dlc.byoc.Match) -> bool | str
PatternCheck = Callable[["Match"], Union[bool, str]]
PatternEntry = tuple[str, "Pattern", "PatternCheck | None"]
Predicate = Callable[["Operation"], Union[bool, str]]

# attributes the passes write (the contract)
COMPOSITE_ATTR = "dlc.composite"  # "<target>.<pattern>" on composite functions and inlined ops
COMPOSITE_ID_ATTR = "dlc.composite_id"  # which composite an inlined op belonged to (per partition)
ANNOTATION_ATTR = "dlc.target_annotation"  # the target an op / composite call goes to
NOTE_ATTR = "dlc.byoc_note"  # why an op stays with dlc (annotate-target)
REGION_ATTR = "dlc.region"  # merge-compiler-regions: the region id of an annotated op
CODEGEN_ATTR = "dlc.codegen"  # "<target>" on a partition function
CONSTANT_ARG_ATTR = "dlc.constant"  # arg attr: a lifted constant
EXTERNAL_ATTR = "dlc.external"  # "<target>" on the external kernel's declaration (loop level)
REPORT_ATTR = "dlc.byoc_report"  # module attr: lines of the partition report


class UnknownTargetError(DiagnosticError):
    """A BYOC target nobody registered."""


class CodegenError(DiagnosticError):
    """A codegen cannot handle a partition: the message names the target and the op."""


@dataclass
class ExternalKernel:
    """What a codegen returns for one partition (see docs/architecture.md "BYOC").

    ``sources``: (file name, C text) compiled by dlc with the target's C compiler
    (-O3 -fPIC -std=c11 and ``include_dirs``); the object is linked into the JIT's
    private library and into the exported .so with ``-L library_dirs -l libraries``
    and ``-Wl,-rpath`` for ``runtime_library_dirs``; ``preload``: shared libraries
    loaded RTLD_GLOBAL into the JIT process first. ABI of ``symbol``:
    ``int32_t symbol(void *arg0, ..., void *argN, void *out0, ...)`` (the partition's
    arguments in order, constants included, then one caller-allocated buffer per
    result); 0 = success."""

    symbol: str
    sources: list[tuple[str, str]] = field(default_factory=list)
    include_dirs: list[str] = field(default_factory=list)
    library_dirs: list[str] = field(default_factory=list)
    libraries: list[str] = field(default_factory=list)
    runtime_library_dirs: list[str] = field(default_factory=list)
    preload: list[str] = field(default_factory=list)
    report: str = ""
    target_name: str = ""  # filled by dlc: the BYOC target that produced it


@dataclass
class CodegenContext:
    """What a codegen may ask about its partition."""

    target: Target
    symbol: str
    partition: func.FuncOp
    constants: dict[int, np.ndarray]  # argument index -> value (the dlc.constant arguments)
    byoc_target: str = ""

    def constant(self, i: int) -> np.ndarray | None:
        """The value of argument ``i`` when it is a lifted ``dlc.constant``, else None."""
        return self.constants.get(i)


@dataclass
class ByocTarget:
    name: str
    patterns: list[PatternEntry] = field(default_factory=list)
    pattern_tables: list[Callable[[], Sequence[PatternEntry]]] = field(default_factory=list)
    predicates: dict[str, Predicate] = field(default_factory=dict)
    codegen: Callable | None = None


_MODULES: dict[str, str] = {
    "c": "dlc.backends.byoc_c",
    "dnnl": "dlc.backends.dnnl",
}
_TARGETS: dict[str, ByocTarget] = {}
_LOADED: set[str] = set()


def register_target_module(name: str, module: str) -> None:
    """``name`` is registered by importing ``module`` (lazily, on first use)."""
    _MODULES[name] = module
    _LOADED.discard(name)


def _entry(name: str) -> ByocTarget:
    return _TARGETS.setdefault(name, ByocTarget(name))


def known_targets() -> list[str]:
    return sorted(set(_MODULES) | set(_TARGETS))


def get_target(name: str) -> ByocTarget:
    """The registered target ``name`` (its module imported first); UnknownTargetError if none."""
    if name in _MODULES and name not in _LOADED:
        _LOADED.add(name)
        try:
            importlib.import_module(_MODULES[name])
        except ImportError as err:
            raise UnknownTargetError(
                f"BYOC target '{name}': its module {_MODULES[name]} cannot be imported ({err})") from None
    if name not in _TARGETS:
        raise UnknownTargetError(
            f"unknown BYOC target '{name}' (known: {', '.join(known_targets()) or 'none'})")
    return _TARGETS[name]


def check_targets(names: Sequence[str]) -> list[str]:
    """``names`` with each checked to be a known target (UnknownTargetError otherwise)."""
    for name in names:
        get_target(name)
    return list(names)


# -- decorators ------------------------------------------------------------------------


def pattern_table(target: str, patterns: Sequence[PatternEntry] | None = None):
    """Register ``target``'s patterns, highest priority first: as a decorator of a
    function returning the list (called when the table is first read), or directly
    ``pattern_table("c", [(name, pattern, check), ...])``. ``check(match)`` may refuse
    a match (False, or a reason string)."""
    entry = _entry(target)
    if patterns is not None:
        entry.patterns.extend(_checked_entries(target, patterns))
        return None

    def decorate(fn):
        entry.pattern_tables.append(fn)
        return fn
    return decorate


def _checked_entries(target: str, entries) -> list[PatternEntry]:
    out = []
    for item in entries:
        if len(item) == 2:
            item = (*item, None)
        name, pattern, check = item
        if not isinstance(name, str) or not name:
            raise ValueError(f"BYOC target '{target}': a pattern needs a name, got {name!r}")
        out.append((name, pattern, check))
    return out


def patterns_of(target: str) -> list[PatternEntry]:
    """``target``'s pattern table in priority order (decorated tables read once)."""
    entry = get_target(target)
    while entry.pattern_tables:
        entry.patterns.extend(_checked_entries(target, entry.pattern_tables.pop(0)()))
    return list(entry.patterns)


def supports(target: str, *op_names: str):
    """Decorator: ``pred(op) -> bool | str`` says whether ``target`` takes an op of each
    of ``op_names`` (a str is the reason it does not). A composite's name
    (``"<target>.<pattern>"``) may have one too (default: accepted)."""
    def decorate(fn: Predicate) -> Predicate:
        entry = _entry(target)
        for name in op_names:
            if name in entry.predicates and entry.predicates[name] is not fn:
                raise ValueError(f"BYOC target '{target}': a support predicate for '{name}' is registered twice")
            entry.predicates[name] = fn
        return fn
    return decorate


def predicate_of(target: str, op_name: str) -> Predicate | None:
    return get_target(target).predicates.get(op_name)


def codegen(target: str):
    """Decorator: ``fn(partition, ctx) -> ExternalKernel`` compiles ``target``'s partitions."""
    def decorate(fn):
        entry = _entry(target)
        if entry.codegen is not None and entry.codegen is not fn:
            raise ValueError(f"BYOC target '{target}' has a codegen already")
        entry.codegen = fn
        return fn
    return decorate


def codegen_of(target: str):
    fn = get_target(target).codegen
    if fn is None:
        raise UnknownTargetError(f"BYOC target '{target}' has no codegen registered")
    return fn


def unregister(target: str) -> None:
    """Forget ``target`` (tests that define a target of their own)."""
    _TARGETS.pop(target, None)
    _MODULES.pop(target, None)
    _LOADED.discard(target)
