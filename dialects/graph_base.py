"""Shared machinery of the graph dialect's ops (not a dialect itself).

Every graph op derives from :class:`GraphOp`, which gives it

* result-type inference: ``infer(operand_types, attrs)`` (a classmethod, so a
  frontend or pass builds ops with ``Op.make(*operands, **attrs)`` and never
  computes a shape by hand);
* a verifier that re-runs inference and names the rule that fails;
* one readable custom syntax shared by all ops::

      %r = graph.conv2d %x, %w {strides = array<i64: 2, 2>} : (tensor<1x3x9x9xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32>

* ``reference(*arrays)``: a numpy implementation, the test oracle and the engine
  of fold-constant (never the execution path of compiled code).

Why not xDSL's declarative ``assembly_format``: the graph dialect has ~70 ops
with optional/variadic operands and optional attributes; one hand-written
printer/parser for the common ``operands attr-dict : functional-type`` form is
shorter and gives identical round trips for all of them.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    BoolAttr,
    BytesAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    Signedness,
    StringAttr,
    TensorType,
    i1,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import IRDLOperation
from xdsl.parser import Parser
from xdsl.utils.mlir_lexer import MLIRTokenKind
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from dlc.dialects.graph_attributes import (  # re-exported: ops and passes import them from here
    Attrs,
    BoolAttribute,
    ElementTypeAttribute,
    EnumAttribute,
    FloatAttribute,
    FloatsAttribute,
    IntAttribute,
    IntsAttribute,
    OpAttribute,
    ShapeError,
    StringAttribute,
    declared_attributes,
    or_default,
)


# ---------------------------------------------------------------------------
# element types <-> numpy dtypes
# ---------------------------------------------------------------------------

_NUMPY_OF_FLOAT = {Float16Type: np.float16, Float32Type: np.float32, Float64Type: np.float64}


def is_float(t: Attribute) -> bool:
    """An arithmetic float type (f16/f32/f64); narrow floats are storage-only."""
    return isinstance(t, (Float16Type, Float32Type, Float64Type))


def is_int(t: Attribute) -> bool:
    return isinstance(t, IntegerType) and t.width.data > 1 and not is_narrow(t)


def is_bool(t: Attribute) -> bool:
    return isinstance(t, IntegerType) and t.width.data == 1


def is_unsigned(t: Attribute) -> bool:
    return isinstance(t, IntegerType) and t.signedness.data == Signedness.UNSIGNED


# Narrow element types (bf16, float8/float4/e8m0, 4- and 2-bit integers) are
# storage-only: graph.cast converts them, data-movement ops copy them, and
# every other op computes on a wider type (the ONNX importer casts to f32).
# numpy holds them as ml_dtypes arrays (1 byte per element, 2 for bf16), the
# same representation onnx.numpy_helper hands over; ml_dtypes is imported
# lazily so that modules without such types never need it.
_NARROW_FLOAT_NAMES = {
    "bf16": "bfloat16",
    "f8E4M3FN": "float8_e4m3fn",
    "f8E4M3FNUZ": "float8_e4m3fnuz",
    "f8E5M2": "float8_e5m2",
    "f8E5M2FNUZ": "float8_e5m2fnuz",
    "f8E8M0FNU": "float8_e8m0fnu",
    "f4E2M1FN": "float4_e2m1fn",
}
_NARROW_INT_NAMES = {(4, False): "int4", (4, True): "uint4", (2, False): "int2", (2, True): "uint2"}


def is_narrow(t: Attribute) -> bool:
    """A storage-only element type (see above)."""
    if isinstance(t, IntegerType):
        return t.width.data in (2, 4)
    return str(t) in _NARROW_FLOAT_NAMES


def is_narrow_float(t: Attribute) -> bool:
    return is_narrow(t) and not isinstance(t, IntegerType)


def _ml_dtypes():
    import ml_dtypes

    return ml_dtypes


def numpy_dtype(element_type: Attribute) -> np.dtype:
    """numpy dtype of a builtin element type (i1 -> bool, ui8 -> uint8, bf16 ->
    ml_dtypes.bfloat16, ...)."""
    for cls, dt in _NUMPY_OF_FLOAT.items():
        if isinstance(element_type, cls):
            return np.dtype(dt)
    if isinstance(element_type, IntegerType):
        width = element_type.width.data
        if width == 1:
            return np.dtype(np.bool_)
        if width in (8, 16, 32, 64):
            kind = "u" if is_unsigned(element_type) else "i"
            return np.dtype(f"{kind}{width // 8}")
        if width in (2, 4):
            name = _NARROW_INT_NAMES[(width, is_unsigned(element_type))]
            return np.dtype(getattr(_ml_dtypes(), name))
    name = _NARROW_FLOAT_NAMES.get(str(element_type))
    if name is not None:
        return np.dtype(getattr(_ml_dtypes(), name))
    raise ShapeError(
        f"element type {element_type} is not supported (graph tensors hold f16/f32/f64, "
        "i1, 8/16/32/64-bit integers, or the narrow types bf16, f8*, f4E2M1FN, i4/ui4/i2/ui2)"
    )


@functools.cache
def _narrow_types_by_dtype() -> dict[np.dtype, Attribute]:
    from xdsl.dialects import builtin

    ml = _ml_dtypes()
    out: dict[np.dtype, Attribute] = {}
    for type_name, dtype_name in _NARROW_FLOAT_NAMES.items():
        out[np.dtype(getattr(ml, dtype_name))] = getattr(builtin, type_name)
    for (width, unsigned), dtype_name in _NARROW_INT_NAMES.items():
        sign = Signedness.UNSIGNED if unsigned else Signedness.SIGNLESS
        out[np.dtype(getattr(ml, dtype_name))] = IntegerType(width, sign)
    return out


def element_type_of(dtype: np.dtype | type) -> Attribute:
    """Builtin element type of a numpy dtype."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return i1
    if dtype.type.__module__ == "ml_dtypes":
        narrow = _narrow_types_by_dtype().get(dtype)
        if narrow is not None:
            return narrow
    if dtype.kind == "f":
        return {2: Float16Type(), 4: Float32Type(), 8: Float64Type()}[dtype.itemsize]
    if dtype.kind in "iu":
        sign = Signedness.UNSIGNED if dtype.kind == "u" else Signedness.SIGNLESS
        return IntegerType(dtype.itemsize * 8, sign)
    raise ShapeError(f"numpy dtype {dtype} has no builtin element type")


def tensor_type(shape: Sequence[int], element_type: Attribute) -> TensorType:
    return TensorType(element_type, [int(d) for d in shape])


def tensor_type_of(array: np.ndarray) -> TensorType:
    return tensor_type(array.shape, element_type_of(array.dtype))


def dense_from_numpy(array: np.ndarray) -> DenseIntOrFPElementsAttr:
    """A dense attribute holding ``array``'s raw bytes (no Python lists)."""
    type_ = tensor_type_of(np.asarray(array))  # before: ascontiguousarray makes 0-d 1-d
    array = np.ascontiguousarray(array)
    if array.dtype == np.bool_:
        # xDSL stores i1 as one byte per element, like numpy's bool.
        data = array.astype(np.int8).tobytes()
    else:
        data = array.tobytes()
    return DenseIntOrFPElementsAttr(type_, BytesAttr(data))


def numpy_from_dense(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    """Zero-copy (read-only) numpy view of a dense attribute."""
    type_ = attr.type
    assert isinstance(type_, TensorType)
    dtype = numpy_dtype(type_.element_type)
    raw = dtype if dtype != np.bool_ else np.dtype(np.int8)
    flat = np.frombuffer(attr.data.data, dtype=raw)
    shape = tuple(type_.get_shape())
    if flat.size == 1 and int(np.prod(shape)) != 1:  # splat
        flat = np.broadcast_to(flat, (int(np.prod(shape)),))
    out = flat.reshape(shape)
    return out.astype(np.bool_) if dtype == np.bool_ else out


# ---------------------------------------------------------------------------
# attributes: Python values <-> builtin attributes
# ---------------------------------------------------------------------------


def to_attribute(value: Any) -> Attribute:
    """Convert a Python keyword argument of ``GraphOp.make`` to an attribute.

    ints -> i64, floats -> f32, bools -> i1, str -> string, int sequences ->
    ``array<i64: ...>``, float sequences -> ``array<f32: ...>``; attributes
    and types pass through.
    """
    if isinstance(value, Attribute):
        return value
    if isinstance(value, (bool, np.bool_)):
        return BoolAttr.from_bool(bool(value))
    if isinstance(value, (int, np.integer)):
        return IntegerAttr(int(value), i64)
    if isinstance(value, (float, np.floating)):
        return FloatAttr(float(value), Float32Type())
    if isinstance(value, str):
        return StringAttr(value)
    if isinstance(value, (list, tuple, np.ndarray)):
        values = list(value)
        if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values):
            return DenseArrayBase.from_list(i64, [int(v) for v in values])
        return DenseArrayBase.from_list(Float32Type(), [float(v) for v in values])
    raise TypeError(f"cannot turn {value!r} into an attribute")


# ---------------------------------------------------------------------------
# shape rules shared by several ops
# ---------------------------------------------------------------------------


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """numpy broadcasting; raises ShapeError naming the clashing dims."""
    rank = max((len(s) for s in shapes), default=0)
    out: list[int] = []
    for axis in range(rank):
        dims = {
            s[len(s) - rank + axis] for s in shapes if len(s) - rank + axis >= 0
        }
        non_one = dims - {1}
        if len(non_one) > 1:
            raise ShapeError(
                "shapes "
                + " and ".join(_shape_str(s) for s in shapes)
                + f" are not broadcast-compatible (dims {sorted(non_one)} at axis "
                f"{axis - rank})"
            )
        out.append(non_one.pop() if non_one else 1)
    return tuple(out)


def normalize_axis(axis: int, rank: int, what: str = "axis") -> int:
    """``axis`` in ``[-rank, rank)`` mapped to ``[0, rank)`` (a scalar has no axis)."""
    if not -rank <= axis < rank:
        raise ShapeError(f"{what} {axis} is out of range for rank {rank}")
    return axis % rank


def _shape_str(shape: Sequence[int]) -> str:
    return "x".join(str(d) for d in shape) if shape else "scalar"


def shape_str(t: Attribute) -> str:
    return str(t)


# ---------------------------------------------------------------------------
# the op base class
# ---------------------------------------------------------------------------


class GraphOp(IRDLOperation):
    """Base of every graph-dialect op (see module docstring)."""

    # Attributes are declared as fields (IntAttribute(default=1), ... from
    # graph_attributes), or with xDSL's attr_def for a payload attribute; the
    # verifier rejects any other name (a typo like `axiss` would otherwise be
    # ignored silently). Dialect-prefixed names (`dlc.origin`) are discardable
    # annotations of passes and always allowed.

    # Whether the op accepts narrow (storage-only) element types: casts,
    # constants and ops that only move data. Others are rejected so that no
    # kernel ever computes on the storage bits.
    NARROW_TYPES: ClassVar[bool] = False

    # -- to be provided by each op -------------------------------------------------
    @classmethod
    def infer(cls, operand_types: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        raise NotImplementedError(cls.__name__)

    def reference(self, *inputs: np.ndarray) -> list[np.ndarray]:
        raise NotImplementedError(self.name)

    # -- building ------------------------------------------------------------------
    @classmethod
    def make(cls, *operands: SSAValue | Operation | None, **attributes: Any):
        """Build the op, converting keyword arguments to attributes and inferring
        result types. ``None`` operands (absent optional operands) are dropped."""
        values = [
            o.results[0] if isinstance(o, Operation) else o for o in operands if o is not None
        ]
        attrs = {k: to_attribute(v) for k, v in attributes.items() if v is not None}
        try:
            cls.check_attribute_names(attrs)
            types = _operand_tensor_types(values)
            typed = Attrs(attrs, cls)
            result_types = cls.infer(types, typed)
            cls.check_attribute_kinds(typed)
            cls.check_narrow_types(types, result_types)
        except ShapeError as err:
            raise VerifyException(f"{cls.name}: {err}") from None
        return cls.create(operands=values, result_types=result_types, attributes=attrs)

    @property
    def attrs(self) -> Attrs:
        return Attrs(self.attributes, type(self))

    @classmethod
    def attribute_names(cls) -> tuple[str, ...]:
        """Every attribute the op understands: xDSL attr_defs, then declarations."""
        return tuple(cls.get_irdl_definition().attributes) + tuple(declared_attributes(cls))

    @classmethod
    def check_attribute_names(cls, names) -> None:
        known = cls.attribute_names()
        for name in names:
            if name not in known and "." not in name:
                raise ShapeError(f"unknown attribute '{name}' (known: {', '.join(known) or 'none'})")

    @classmethod
    def check_attribute_kinds(cls, attrs: Attrs) -> None:
        """Read every declared attribute (after ``infer``, which names the
        first broken rule): a wrong kind fails even where infer never reads it."""
        for spec in declared_attributes(cls).values():
            spec.read(attrs.raw)

    @classmethod
    def check_narrow_types(cls, operand_types, result_types) -> None:
        if cls.NARROW_TYPES:
            return
        for what, types in (("operand", operand_types), ("result", result_types)):
            for i, t in enumerate(types):
                if isinstance(t, TensorType) and is_narrow(t.element_type):
                    raise ShapeError(
                        f"{what} #{i} has the storage-only element type {t.element_type} "
                        "(only graph.cast and data-movement ops accept it; compute in f32)"
                    )

    # -- verification --------------------------------------------------------------
    def verify_(self) -> None:
        try:
            self.check_attribute_names(self.attributes)
            types = _operand_tensor_types(self.operands)
            attrs = self.attrs
            inferred = self.infer(types, attrs)
            self.check_attribute_kinds(attrs)
            self.check_narrow_types(types, inferred)
        except ShapeError as err:
            raise VerifyException(f"{self.name}: {err}") from None
        actual = [r.type for r in self.results]
        if list(inferred) != actual:
            raise VerifyException(
                f"{self.name}: result type {_types_str(actual)} does not match the "
                f"inferred type {_types_str(inferred)}"
            )

    # -- syntax: `graph.op %a, %b {attrs} : (types) -> types` ----------------------
    def print(self, printer: Printer) -> None:
        if self.operands:
            printer.print_string(" ")
            printer.print_list(self.operands, printer.print_operand)
        printer.print_op_attributes(self.attributes)
        self._print_regions(printer)
        printer.print_string(" : ")
        printer.print_function_type(
            [o.type for o in self.operands], [r.type for r in self.results]
        )

    def _print_regions(self, printer: Printer) -> None:
        for region in self.regions:
            printer.print_string(" ")
            printer.print_region(region, print_entry_block_args=True)

    @classmethod
    def parse(cls, parser: Parser):
        pos = parser.pos
        operands = []
        if parser._current_token.kind == MLIRTokenKind.PERCENT_IDENT:
            operands = parser.parse_comma_separated_list(
                parser.Delimiter.NONE, parser.parse_unresolved_operand
            )
        attributes = parser.parse_optional_attr_dict()
        regions = cls._parse_regions(parser)
        parser.parse_punctuation(":")
        func_type = parse_function_type_cached(parser)
        values = parser.resolve_operands(operands, func_type.inputs.data, pos)
        return cls.create(
            operands=values,
            result_types=list(func_type.outputs.data),
            attributes=attributes,
            regions=regions,
        )

    @classmethod
    def _parse_regions(cls, parser: Parser) -> list:
        regions = []
        while (region := parser.parse_optional_region()) is not None:
            regions.append(region)
        return regions


def _operand_tensor_types(values: Sequence[SSAValue]) -> list[TensorType]:
    """Operand types, checked to be ranked tensors of a supported element type."""
    types = []
    for i, value in enumerate(values):
        if not isinstance(value.type, TensorType):
            raise ShapeError(f"operand #{i} must be a ranked tensor, got {value.type}")
        try:
            numpy_dtype(value.type.element_type)
        except ShapeError as err:
            raise ShapeError(f"operand #{i}: {err}") from None
        types.append(value.type)
    return types


def _types_str(types: Sequence[Attribute]) -> str:
    if len(types) == 1:
        return str(types[0])
    return "(" + ", ".join(str(t) for t in types) + ")"


# ---------------------------------------------------------------------------
# parsing speed: memoize function types by their source text
# ---------------------------------------------------------------------------

# Type parsing dominates parse time for large graphs (xDSL lexes `tensor<...>`
# token by token: ~0.3 ms a type). Graph programs repeat a handful of
# signatures, so the text of each `(types) -> types` is parsed once.
_FUNCTION_TYPE_CACHE: dict[str, Attribute] = {}
_MATCHING = {"(": ")", "<": ">", "[": "]", "{": "}"}


def _function_type_extent(text: str, start: int) -> int | None:
    """End offset of a plain `(...) -> type-or-(types)` at ``start``, or None
    when the text is anything unusual (the normal parser then handles it)."""
    i = _balanced_end(text, start)
    if i is None:
        return None
    while i < len(text) and text[i] == " ":
        i += 1
    if not text.startswith("->", i):
        return None
    i += 2
    while i < len(text) and text[i] == " ":
        i += 1
    if i < len(text) and text[i] == "(":
        return _balanced_end(text, i)
    j = i
    while j < len(text) and (text[j].isalnum() or text[j] in "_."):
        j += 1
    if j < len(text) and text[j] == "<":
        return _balanced_end(text, j)
    return j if j > i else None


def _balanced_end(text: str, i: int) -> int | None:
    if i >= len(text) or text[i] not in _MATCHING:
        return None
    stack = []
    for j in range(i, min(len(text), i + 4096)):
        c = text[j]
        if c in _MATCHING:
            stack.append(_MATCHING[c])
        elif c in ")>]}":
            if c == ">" and text[j - 1] == "-":  # the `->` arrow
                continue
            if not stack or stack.pop() != c:
                return None
            if not stack:
                return j + 1
        elif c in "\n\"#":
            return None
    return None


def parse_function_type_cached(parser: Parser):
    text = parser.lexer.input.content
    start = parser.pos
    end = _function_type_extent(text, start) if isinstance(text, str) else None
    if end is None:
        return parser.parse_function_type()
    key = text[start:end]
    cached = _FUNCTION_TYPE_CACHE.get(key)
    if cached is None:
        cached = parser.parse_function_type()
        if parser.pos != end and not text[end:parser.pos].isspace():
            return cached  # our scan disagreed with the parser: don't memoize
        if len(_FUNCTION_TYPE_CACHE) > 4096:
            _FUNCTION_TYPE_CACHE.clear()
        _FUNCTION_TYPE_CACHE[key] = cached
        return cached
    parser._resume_from(end)
    return cached
