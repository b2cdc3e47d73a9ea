"""Declarative patterns over graph-dialect ops (in the spirit of TVM's dataflow patterns).

    conv = is_op("graph.conv2d")(wildcard(), is_constant())
    conv_bias = conv.optional(lambda p: is_op("graph.add")(p, is_constant()))
    act = conv_bias.optional(lambda p: is_op("graph.relu")(p) | is_op("graph.clip")(p))

A pattern is matched at a *root* op (the last op of the match, its output) and
walks the operands upwards. Leaves (``wildcard()``, ``is_constant()``, ``is_input()``)
match values that stay *inputs* of the composite; ops matched by ``is_op`` are
*absorbed* into it. Standard rule: an absorbed op other than the root whose result
is used outside the match does not match (it would have to be computed twice).

``p.has_attr(groups=1)``, ``p.has_type(element="f32", rank=4)``, ``p.check(fn)``
(``fn(op) -> bool``), ``a | b`` (first that matches), ``p.optional(f)`` (``f(p) | p``).
The same pattern object used twice in one pattern must match the same value.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.traits import ConstantLike


@dataclass
class Match:
    """One match: ``root`` (its output op), ``ops`` (absorbed, in program order) and
    ``inputs`` (the leaf values, in first-match order; constants included)."""

    root: Operation
    ops: list[Operation] = field(default_factory=list)
    inputs: list[SSAValue] = field(default_factory=list)
    bound: dict[int, SSAValue] = field(default_factory=dict)  # id(pattern) -> value


class Pattern:
    """Base: ``match(value, state)`` returns True and records into ``state``."""

    def __call__(self, *args: Pattern) -> Pattern:
        raise TypeError(f"{self!r} takes no operand patterns (only is_op(...) does)")

    def __or__(self, other: Pattern) -> Pattern:
        return AltPattern(self, other)

    def optional(self, wrap: Callable[[Pattern], Pattern]) -> Pattern:
        """``wrap(self)`` when that matches, else ``self`` (e.g. an optional relu after it)."""
        return AltPattern(wrap(self), self)

    def has_attr(self, **attrs) -> Pattern:
        return CheckPattern(self, _attr_check(attrs), f"has_attr({attrs})")

    def has_type(self, element: str | None = None, rank: int | None = None,
                 shape: Sequence[int] | None = None) -> Pattern:
        return CheckPattern(self, _type_check(element, rank, shape), "has_type")

    def check(self, fn: Callable[[Operation], bool], what: str = "check") -> Pattern:
        """``fn(op)`` on the matched op (for a leaf: the value's defining op, or None)."""
        return CheckPattern(self, lambda v: bool(fn(_owner(v))), what)

    # -- matching --------------------------------------------------------------------
    def _match(self, value: SSAValue, m: Match) -> bool:
        raise NotImplementedError

    def match_value(self, value: SSAValue, m: Match) -> bool:
        key = id(self)
        if key in m.bound:
            return m.bound[key] is value
        snapshot = (len(m.ops), len(m.inputs), dict(m.bound))
        if self._match(value, m):
            m.bound[key] = value
            return True
        del m.ops[snapshot[0]:], m.inputs[snapshot[1]:]
        m.bound = snapshot[2]
        return False


def _owner(value: SSAValue) -> Operation | None:
    return value.owner if isinstance(value.owner, Operation) else None


def _attr_value(op: Operation, name: str):
    """A graph op's declared attribute as its Python value (default applied), else the
    raw attribute's ``data`` (None when absent)."""
    declared = getattr(type(op), "attribute_names", None)
    if declared is not None and name in declared() and hasattr(op, name):
        value = getattr(op, name)
    else:
        value = op.attributes.get(name)
    return getattr(value, "data", value)


def _attr_check(attrs: dict) -> Callable[[SSAValue], bool]:
    def check(value: SSAValue) -> bool:
        op = _owner(value)
        if op is None:
            return False
        for name, want in attrs.items():
            have = _attr_value(op, name)
            if isinstance(want, (list, tuple)):
                if not isinstance(have, (list, tuple)) or tuple(have) != tuple(want):
                    return False
            elif have is None or have != want:
                return False
        return True
    return check


def _type_check(element, rank, shape) -> Callable[[SSAValue], bool]:
    def check(value: SSAValue) -> bool:
        t = value.type
        if not isinstance(t, TensorType):
            return False
        if element is not None and str(t.element_type) != element:
            return False
        if rank is not None and len(t.get_shape()) != rank:
            return False
        return shape is None or tuple(t.get_shape()) == tuple(shape)
    return check


class WildcardPattern(Pattern):
    def _match(self, value, m):
        m.inputs.append(value)
        return True

    def __repr__(self):
        return "wildcard()"


class ConstantPattern(Pattern):
    """A value defined by a ConstantLike op (graph.constant, graph.weight)."""

    def _match(self, value, m):
        op = _owner(value)
        if op is None or not op.has_trait(ConstantLike):
            return False
        m.inputs.append(value)
        return True

    def __repr__(self):
        return "is_constant()"


class InputPattern(Pattern):
    """A value that is not a constant (a function argument or another op's result)."""

    def _match(self, value, m):
        op = _owner(value)
        if op is not None and op.has_trait(ConstantLike):
            return False
        m.inputs.append(value)
        return True

    def __repr__(self):
        return "is_input()"


class OpPattern(Pattern):
    """``is_op("graph.add")``: an op of that name; ``(...)`` gives its operand patterns
    (without them, any operands, all of which become inputs)."""

    def __init__(self, name: str, operands: Sequence[Pattern] | None = None):
        self.name = name
        self.operands = None if operands is None else list(operands)

    def __call__(self, *args: Pattern) -> Pattern:
        return OpPattern(self.name, args)

    def _match(self, value, m):
        op = _owner(value)
        if op is None or op.name != self.name or op.has_trait(ConstantLike):
            return False
        if op in m.ops:
            return False
        if self.operands is not None and len(self.operands) != len(op.operands):
            return False
        m.ops.append(op)
        patterns = self.operands or [WildcardPattern() for _ in op.operands]
        return all(p.match_value(v, m) for p, v in zip(patterns, op.operands))

    def __repr__(self):
        inner = "" if self.operands is None else "(" + ", ".join(map(repr, self.operands)) + ")"
        return f"is_op({self.name!r}){inner}"


class AltPattern(Pattern):
    def __init__(self, first: Pattern, second: Pattern):
        self.first, self.second = first, second

    def _match(self, value, m):
        return self.first.match_value(value, m) or self.second.match_value(value, m)

    def __repr__(self):
        return f"({self.first!r} | {self.second!r})"


class CheckPattern(Pattern):
    def __init__(self, inner: Pattern, check: Callable[[SSAValue], bool], what: str):
        self.inner, self.check_fn, self.what = inner, check, what

    def __call__(self, *args: Pattern) -> Pattern:
        return CheckPattern(self.inner(*args), self.check_fn, self.what)

    def _match(self, value, m):
        return self.check_fn(value) and self.inner.match_value(value, m)

    def __repr__(self):
        return f"{self.inner!r}.{self.what}"


def is_op(name: str) -> OpPattern:
    return OpPattern(name)


def wildcard() -> Pattern:
    return WildcardPattern()


def is_constant() -> Pattern:
    return ConstantPattern()


def is_input() -> Pattern:
    return InputPattern()


def match(pattern: Pattern, root: Operation) -> Match | None:
    """The match of ``pattern`` with its output at ``root`` (root's first result), or None.
    Absorbed ops other than the root must have no use outside the match."""
    if not root.results:
        return None
    m = Match(root)
    if not pattern.match_value(root.results[0], m) or not m.ops or m.ops[0] is not root:
        return None
    absorbed = set(m.ops)
    for op in m.ops:
        if op is root:
            continue
        if any(use.operation not in absorbed for r in op.results for use in r.uses):
            return None
    if len(root.results) != 1:
        return None
    block = root.parent_block()
    if any(op.parent_block() is not block for op in m.ops):
        return None
    order = {op: i for i, op in enumerate(block.ops)} if block is not None else {}
    m.ops.sort(key=lambda op: order.get(op, 0))
    # inputs defined by absorbed ops are not inputs (a pattern may name a value twice)
    seen: list[SSAValue] = []
    for v in m.inputs:
        if v not in seen and _owner(v) not in absorbed:
            seen.append(v)
    m.inputs = seen
    return m
