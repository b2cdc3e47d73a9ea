"""Typed attributes of graph ops, declared once on the op (MLIR ODS's role).

An op declares each attribute it understands as a class field::

    class Conv2DOp(GraphOp):
        strides = IntsAttribute(optional=True)      # absent: the reader decides
        padding = IntsAttribute(default=(0, 0, 0, 0))
        groups = IntAttribute(default=1)
        data_layout = EnumAttribute("NCHW", "NHWC")  # default: the first choice

A declaration gives

* the accessor ``op.groups``: the Python value (``int``, ``float``, ``bool``,
  ``str``, a tuple, or the type attribute) with the default applied;
* the same on the :class:`Attrs` view that ``infer`` receives, which runs before
  an op exists: ``attrs.groups``;
* the kind check, with the messages the lit tests pin ("attribute 'groups' must
  be an integer like 1 : i64, got ...") and, for enums, the allowed choices;
* the verifier's list of known attribute names (unknown ones are rejected).

Defaults are never written into the attribute dictionary: the printed form of
an op is exactly what was parsed or built.

A declaration is a ``property`` subclass, the kind of field xDSL's
``irdl_op_definition`` accepts on an op class besides its own ``attr_def``
(whose accessors return attributes, not values, and whose checks have other
messages); ``attr_def`` stays for the two ops whose attribute is a payload
(graph.constant's ``value``, graph.weight's ``name``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from xdsl.dialects.builtin import DenseArrayBase, FloatAttr, IntegerAttr, IntegerType, StringAttr
from xdsl.ir import Attribute, TypeAttribute


class ShapeError(Exception):
    """An op's operands/attributes break a typing rule; the message names it."""


REQUIRED: Any = type("Required", (), {"__repr__": lambda self: "REQUIRED"})()

_KIND_NAMES = {
    DenseArrayBase: "an integer array like array<i64: 1, 2>",
    IntegerAttr: "an integer like 1 : i64",
    FloatAttr: "a number like 1.0 : f32",
    StringAttr: 'a string like "abc"',
    TypeAttribute: "a type like f32",
}


def _wrong_kind(name: str, kind: type, attr: Attribute) -> ShapeError:
    return ShapeError(f"attribute '{name}' must be {_KIND_NAMES[kind]}, got {attr}")


class OpAttribute(property):
    """One declared attribute of a graph op (see the module docstring).

    ``default``: the value of an absent attribute; ``REQUIRED`` (the default)
    makes it mandatory. ``optional=True``: absent reads as ``None`` (for
    defaults that depend on the operands, like a window's rank). ``name``: the
    attribute's name in the IR when it differs from the field's.
    """

    ACCEPTS: ClassVar[tuple[type, ...]]  # attribute classes of this kind

    def __init__(self, default: Any = REQUIRED, *, optional: bool = False, name: str | None = None,
                 doc: str | None = None):
        super().__init__(self._read_op, doc=doc)
        if optional:
            default = None
        self.default = tuple(default) if isinstance(default, list) else default
        self.ir_name = name
        self.field = name

    def __set_name__(self, owner: type, field: str) -> None:
        self.field = field
        if self.ir_name is None:
            self.ir_name = field

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def _read_op(self, op) -> Any:
        return self.read(op.attributes)

    def read(self, raw: Mapping[str, Attribute]) -> Any:
        """The attribute's Python value in ``raw`` (an attribute dictionary)."""
        attr = raw.get(self.ir_name)
        if attr is None:
            if self.default is REQUIRED:
                raise ShapeError(f"missing attribute '{self.ir_name}'")
            return self.default
        if not isinstance(attr, self.ACCEPTS):
            raise _wrong_kind(self.ir_name, self.ACCEPTS[0], attr)
        return self.convert(attr)

    def convert(self, attr: Attribute) -> Any:
        raise NotImplementedError(type(self).__name__)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.ir_name!r}, default={self.default!r})"


class IntAttribute(OpAttribute):
    """An integer (``1 : i64``)."""

    ACCEPTS = (IntegerAttr,)

    def convert(self, attr: IntegerAttr) -> int:
        return int(attr.value.data)


class FloatAttribute(OpAttribute):
    """A number (``0.5 : f32``; an integer attribute is accepted too)."""

    ACCEPTS = (FloatAttr, IntegerAttr)

    def convert(self, attr) -> float:
        return float(attr.value.data)


class BoolAttribute(OpAttribute):
    """A flag (``true``, or any integer: nonzero is true); absent is False
    unless a default is given."""

    ACCEPTS = (IntegerAttr,)

    def __init__(self, default: bool = False, **kwargs: Any):
        super().__init__(default, **kwargs)

    def convert(self, attr: IntegerAttr) -> bool:
        return bool(attr.value.data)


class StringAttribute(OpAttribute):
    """A string (``"abc"``)."""

    ACCEPTS = (StringAttr,)

    def convert(self, attr: StringAttr) -> str:
        return attr.data


class EnumAttribute(StringAttribute):
    """A string out of fixed ``choices``; the default is the first choice
    unless given. ``message`` formats the error for another value (fields
    ``name``, ``choices``, ``value``)."""

    MESSAGE = "attribute '{name}' must be one of {choices}, got {value}"

    def __init__(self, *choices: str, default: Any = None, message: str | None = None, **kwargs: Any):
        super().__init__(choices[0] if default is None else default, **kwargs)
        self.choices = choices
        self.message = message or self.MESSAGE

    def convert(self, attr: StringAttr) -> str:
        value = attr.data
        if value not in self.choices:
            raise ShapeError(self.message.format(
                name=self.ir_name, choices=", ".join(self.choices), value=value))
        return value


class IntsAttribute(OpAttribute):
    """An integer array (``array<i64: 1, 2>``), read as a tuple of ints."""

    ACCEPTS = (DenseArrayBase,)

    def convert(self, attr: DenseArrayBase) -> tuple[int, ...]:
        if not isinstance(attr.elt_type, IntegerType):
            raise _wrong_kind(self.ir_name, DenseArrayBase, attr)
        return tuple(int(v) for v in attr.get_values())


class FloatsAttribute(OpAttribute):
    """A number array (``array<f32: 0.5, 1.0>``), read as a tuple of floats."""

    ACCEPTS = (DenseArrayBase,)

    def convert(self, attr: DenseArrayBase) -> tuple[float, ...]:
        return tuple(float(v) for v in attr.get_values())


class ElementTypeAttribute(OpAttribute):
    """A type (``f32``), read as the type attribute itself."""

    ACCEPTS = (TypeAttribute,)

    def convert(self, attr: Attribute) -> Attribute:
        return attr


def declared_attributes(op_type: type) -> dict[str, OpAttribute]:
    """The op's declarations by IR name, bases first, in declaration order."""
    cached = op_type.__dict__.get("_declared_attributes")
    if cached is not None:
        return cached
    out: dict[str, OpAttribute] = {}
    for klass in reversed(op_type.__mro__):
        for value in vars(klass).values():
            if isinstance(value, OpAttribute):
                out.pop(value.ir_name, None)
                out[value.ir_name] = value
    type.__setattr__(op_type, "_declared_attributes", out)
    return out


def or_default(value: Any, default: Any) -> Any:
    """``value`` (an optional attribute's reading), or ``default`` when the op
    has no such attribute: for defaults that depend on the operands."""
    return default if value is None else value


class Attrs:
    """Read access to an attribute dictionary, typed by the op's declarations:
    ``attrs.groups`` reads the declared ``groups`` with its default.

    The string-keyed readers (``attrs.int("groups", 1)``) predate the
    declarations; they remain for code that reads an attribute of an op type it
    does not know.
    """

    def __init__(self, attributes: Mapping[str, Attribute], op_type: type | None = None):
        self.raw = attributes
        self.op_type = op_type

    def __contains__(self, name: str) -> bool:
        return name in self.raw

    def __getattr__(self, field: str) -> Any:
        op_type = self.__dict__.get("op_type")  # (not self.op_type: no recursion before __init__)
        spec = getattr(op_type, field, None) if op_type is not None else None
        if not isinstance(spec, OpAttribute):
            owner = op_type.__name__ if op_type is not None else "an untyped Attrs"
            raise AttributeError(f"{owner} declares no attribute '{field}'")
        return spec.read(self.raw)

    def _get(self, name: str, default: Any, kinds: tuple[type, ...]) -> Any:
        attr = self.raw.get(name)
        if attr is None:
            if default is REQUIRED:
                raise ShapeError(f"missing attribute '{name}'")
            return default
        if not isinstance(attr, kinds):
            raise _wrong_kind(name, kinds[0], attr)
        return attr

    def ints(self, name: str, default: Any = None) -> tuple[int, ...]:
        attr = self._get(name, REQUIRED if default is None else _MISSING, (DenseArrayBase,))
        if attr is _MISSING:
            return tuple(default)
        if not isinstance(attr.elt_type, IntegerType):
            raise _wrong_kind(name, DenseArrayBase, attr)
        return tuple(int(v) for v in attr.get_values())

    def floats(self, name: str, default: Any = None) -> tuple[float, ...]:
        attr = self._get(name, REQUIRED if default is None else _MISSING, (DenseArrayBase,))
        if attr is _MISSING:
            return tuple(default)
        return tuple(float(v) for v in attr.get_values())

    def int(self, name: str, default: Any = None) -> int:
        attr = self._get(name, REQUIRED if default is None else _MISSING, (IntegerAttr,))
        return default if attr is _MISSING else int(attr.value.data)

    def float(self, name: str, default: Any = None) -> float:
        attr = self._get(name, REQUIRED if default is None else _MISSING, (FloatAttr, IntegerAttr))
        return default if attr is _MISSING else float(attr.value.data)

    def str(self, name: str, default: Any = None) -> str:
        attr = self._get(name, REQUIRED if default is None else _MISSING, (StringAttr,))
        return default if attr is _MISSING else attr.data

    def bool(self, name: str, default: bool = False) -> bool:
        attr = self._get(name, _MISSING, (IntegerAttr,))
        return default if attr is _MISSING else bool(attr.value.data)

    def type(self, name: str) -> Attribute:
        return self._get(name, REQUIRED, (TypeAttribute,))


_MISSING = object()
