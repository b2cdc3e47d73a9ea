"""The `graph` dialect: typed tensor ops with shape inference (Relay's role).

Values are builtin ranked tensors (`tensor<1x3x224x224xf32>`); element types
f32 first, with f16/f64, i64/i32/i8/ui8 and i1 (bool) where the op allows.
Programs are `func.func`s of graph ops. Every op

* infers its result types (``Op.make(*operands, **attrs)``),
* verifies them, naming the rule that fails, and rejects attributes it does
  not know (``ATTRS``; dialect-prefixed ones like ``dlc.origin`` are allowed),
* prints as ``graph.op %a, %b {attrs} : (operand types) -> result types``,
* has a numpy ``reference`` used by the evaluator and fold-constant.

Defaults: NCHW data / OIHW kernel layout; ``padding`` is
``[top, left, bottom, right]`` (ONNX's begin..., end... order for 2-D).

Ops that ``legalize`` rewrites away (composite ops) are marked
``COMPOSITE = True``; the rest form the *core set* that ``lower-to-loops`` handles.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    StringAttr,
    TensorType,
    i1,
    i64,
)
from xdsl.ir import Attribute, Dialect
from xdsl.irdl import (
    attr_def,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from dlc.dialects.graph_base import (
    Attrs,
    GraphOp,
    ShapeError,
    broadcast_shapes,
    is_bool,
    is_float,
    is_int,
    is_narrow,
    normalize_axis,
    numpy_dtype,
    numpy_from_dense,
    tensor_type,
)

Types = Sequence[TensorType]


def _expect_count(types: Types, n: int | tuple[int, int]) -> None:
    lo, hi = (n, n) if isinstance(n, int) else n
    if not lo <= len(types) <= hi:
        want = str(lo) if lo == hi else f"{lo} to {hi}"
        raise ShapeError(f"expects {want} operands, got {len(types)}")


def _check_element(t: TensorType, rule: str, what: str = "operand") -> None:
    et = t.element_type
    ok = {
        "float": is_float(et),
        "int": is_int(et),
        "bool": is_bool(et),
        "numeric": is_float(et) or is_int(et),
        "any": True,
    }[rule]
    if not ok:
        kinds = {"numeric": "float or integer"}.get(rule, rule)
        raise ShapeError(f"{what} element type {et} is not {kinds} (op takes {kinds} tensors)")


def _contiguous(x: np.ndarray) -> np.ndarray:
    """C-contiguous ``x``; unlike np.ascontiguousarray, keeps a 0-d array 0-d."""
    return np.asarray(x, order="C")


def _broadcasts_to(shape: Sequence[int], target: Sequence[int]) -> bool:
    """Does ``shape`` broadcast to exactly ``target`` (numpy rules)?"""
    try:
        return broadcast_shapes(shape, target) == tuple(target)
    except ShapeError:
        return False


def _same_element(types: Types) -> Attribute:
    ets = {t.element_type for t in types}
    if len(ets) > 1:
        raise ShapeError(
            "operands must have the same element type, got "
            + ", ".join(str(t.element_type) for t in types)
        )
    return types[0].element_type


# ===========================================================================
# constants
# ===========================================================================


@irdl_op_definition
class ConstantOp(GraphOp):
    """A tensor literal held inline as a dense attribute (small constants).

    ```mlir
    %c = graph.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
    ```
    """

    name = "graph.constant"
    NARROW_TYPES: ClassVar[bool] = True
    ATTRS: ClassVar[tuple[str, ...]] = ("value",)
    value = attr_def(DenseIntOrFPElementsAttr)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 0)
        value = attrs.raw.get("value")
        if not isinstance(value, DenseIntOrFPElementsAttr):
            raise ShapeError("attribute 'value' must be a dense elements attribute")
        if not isinstance(value.type, TensorType):
            raise ShapeError(f"attribute 'value' must have a tensor type, got {value.type}")
        numpy_dtype(value.type.element_type)  # a supported element type?
        return [value.type]

    @classmethod
    def from_numpy(cls, array: np.ndarray) -> ConstantOp:
        from dlc.dialects.graph_base import dense_from_numpy

        return cls.make(value=dense_from_numpy(np.asarray(array)))

    def array(self) -> np.ndarray:
        return numpy_from_dense(self.value)

    def reference(self) -> list[np.ndarray]:
        return [self.array()]

    # Syntax `graph.constant {attrs}? dense<...> : tensor<...>` (like MLIR's
    # arith.constant): other attributes come first because the type after the
    # colon belongs to the dense attribute itself.
    def print(self, printer: Printer) -> None:
        printer.print_op_attributes(self.attributes, reserved_attr_names=("value",))
        printer.print_string(" ")
        printer.print_attribute(self.value)

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        attributes = parser.parse_optional_attr_dict()
        pos = parser.pos
        value = parser.parse_attribute()
        if not isinstance(value, DenseIntOrFPElementsAttr):
            parser.raise_error(
                "graph.constant expects a dense elements attribute like dense<...> : tensor<...>",
                pos,
            )
        return cls.create(result_types=[value.type], attributes={"value": value, **attributes})


@irdl_op_definition
class WeightOp(GraphOp):
    """A tensor held in the module's external weights store, by name.

    Large constants (model weights) live in a :class:`dlc.weights.WeightStore`
    (saved beside the IR as ``.npz``), never in Python lists or printed text.

    ```mlir
    %w = graph.weight "conv1.weight" : tensor<64x3x7x7xf32>
    ```
    """

    name = "graph.weight"
    NARROW_TYPES: ClassVar[bool] = True
    ATTRS: ClassVar[tuple[str, ...]] = ("name",)
    weight_name = attr_def(StringAttr, attr_name="name")
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        raise ShapeError("graph.weight's type comes from the weights store")

    def verify_(self) -> None:
        if self.operands:
            raise VerifyException("graph.weight: takes no operands")
        try:
            self.check_attribute_names(self.attributes)
        except ShapeError as err:
            raise VerifyException(f"graph.weight: {err}") from None
        from dlc.weights import lookup_weight

        from dlc.weights import store_of

        if store_of(self, create=False) is None:
            return  # store not attached (e.g. parsing IR alone): nothing to check
        try:
            array = lookup_weight(self, self.weight_name.data)
        except KeyError as err:
            raise VerifyException(f"graph.weight: {err}") from None
        expected = tensor_type(array.shape, self.out.type.element_type)
        if expected != self.out.type or numpy_dtype(self.out.type.element_type) != array.dtype:
            raise VerifyException(
                f"graph.weight: weight \"{self.weight_name.data}\" in the store is "
                f"{array.dtype}{list(array.shape)}, which does not match {self.out.type}"
            )

    def array(self) -> np.ndarray:
        from dlc.weights import lookup_weight

        return lookup_weight(self, self.weight_name.data)

    def reference(self) -> list[np.ndarray]:
        return [self.array()]

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string_literal(self.weight_name.data)
        printer.print_op_attributes(self.attributes, reserved_attr_names=("name",))
        printer.print_string(" : ")
        printer.print_attribute(self.out.type)

    @classmethod
    def parse(cls, parser: Parser) -> WeightOp:
        name = parser.parse_str_literal("weight name")
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        type_ = parser.parse_type()
        return cls.create(
            result_types=[type_], attributes={"name": StringAttr(name), **attributes}
        )

    @classmethod
    def make_named(cls, name: str, type_: TensorType) -> WeightOp:
        return cls.create(result_types=[type_], attributes={"name": StringAttr(name)})


# ===========================================================================
# elementwise
# ===========================================================================


class UnaryOp(GraphOp):
    """Elementwise ``out = fn(x)``; result type = operand type."""

    x = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())
    ELEMENT: ClassVar[str] = "float"

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 1)
        _check_element(operand_types[0], cls.ELEMENT)
        cls.check_attrs(attrs)
        return [operand_types[0]]

    @classmethod
    def check_attrs(cls, attrs: Attrs) -> None:
        pass

    def compute(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def reference(self, x: np.ndarray) -> list[np.ndarray]:
        with np.errstate(all="ignore"):
            return [np.asarray(self.compute(x)).astype(x.dtype, copy=False)]


def _erf(x: np.ndarray) -> np.ndarray:
    # math.erf is correctly rounded; the oracle favours accuracy over speed.
    return np.vectorize(math.erf, otypes=[np.float64])(x.astype(np.float64)).astype(x.dtype)


def _unary(name: str, fn, element: str = "float", doc: str = "") -> type[UnaryOp]:
    op_name = f"graph.{name}"

    class _Op(UnaryOp):
        ELEMENT: ClassVar[str] = element
        ATTRS: ClassVar[tuple[str, ...]] = ()

        def compute(self, x: np.ndarray) -> np.ndarray:
            return fn(x)

    _Op.__name__ = _Op.__qualname__ = "".join(p.title() for p in name.split("_")) + "Op"
    _Op.name = op_name
    t = "tensor<2x3xi1>" if element == "bool" else "tensor<2x3xf32>"
    _Op.__doc__ = (
        f"Elementwise {doc or name} ({element} tensors).\n\n"
        f"```mlir\n%y = {op_name} %x : ({t}) -> {t}\n```\n"
    )
    return irdl_op_definition(_Op)


NegOp = _unary("neg", np.negative, "numeric", "negation -x")
AbsOp = _unary("abs", np.abs, "numeric", "absolute value")
SignOp = _unary("sign", np.sign, "numeric", "sign (-1, 0, 1)")
ExpOp = _unary("exp", np.exp)
LogOp = _unary("log", np.log, doc="natural logarithm")
SqrtOp = _unary("sqrt", np.sqrt)
RsqrtOp = _unary("rsqrt", lambda x: 1.0 / np.sqrt(x), doc="reciprocal square root")
ReciprocalOp = _unary("reciprocal", lambda x: 1.0 / x, doc="1/x")
TanhOp = _unary("tanh", np.tanh)
SigmoidOp = _unary("sigmoid", lambda x: 1.0 / (1.0 + np.exp(-x)), doc="logistic 1/(1+exp(-x))")
ReluOp = _unary("relu", lambda x: np.maximum(x, 0), "numeric", "max(x, 0)")
ErfOp = _unary("erf", _erf, doc="Gauss error function")
FloorOp = _unary("floor", np.floor)
CeilOp = _unary("ceil", np.ceil)
RoundOp = _unary("round", np.round, doc="round half to even")
SinOp = _unary("sin", np.sin)
CosOp = _unary("cos", np.cos)
# logaddexp(0, x) == log(1 + exp(x)) without overflow for large x.
SoftplusOp = _unary("softplus", lambda x: np.logaddexp(0, x), doc="log(1+exp(x))")
NotOp = _unary("not", np.logical_not, "bool", "logical not")
# composite: legalize rewrites them (reciprocal -> div, softplus -> exp/log)
ReciprocalOp.COMPOSITE = True
SoftplusOp.COMPOSITE = True


@irdl_op_definition
class GeluOp(UnaryOp):
    """GELU, ``x * 0.5 * (1 + erf(x / sqrt(2)))``; ``approximate = "tanh"`` selects
    the tanh form. Composite: legalize rewrites it with erf/tanh.

    ```mlir
    %y = graph.gelu %x : (tensor<4xf32>) -> tensor<4xf32>
    ```
    """

    name = "graph.gelu"
    ATTRS: ClassVar[tuple[str, ...]] = ("approximate",)
    COMPOSITE: ClassVar[bool] = True

    @classmethod
    def check_attrs(cls, attrs: Attrs) -> None:
        if attrs.str("approximate", "none") not in ("none", "tanh"):
            raise ShapeError("attribute 'approximate' must be \"none\" or \"tanh\"")

    def compute(self, x: np.ndarray) -> np.ndarray:
        if self.attrs.str("approximate", "none") == "tanh":
            c = math.sqrt(2.0 / math.pi)
            return 0.5 * x * (1.0 + np.tanh(c * (x + 0.044715 * x**3)))
        return 0.5 * x * (1.0 + _erf(x / np.sqrt(2.0).astype(x.dtype)))


@irdl_op_definition
class ClipOp(UnaryOp):
    """Clamp to ``[min, max]`` (either may be absent).

    ```mlir
    %y = graph.clip %x {min = 0.0 : f32, max = 6.0 : f32} : (tensor<4xf32>) -> tensor<4xf32>
    ```
    """

    name = "graph.clip"
    ATTRS: ClassVar[tuple[str, ...]] = ("min", "max")
    ELEMENT: ClassVar[str] = "numeric"

    @classmethod
    def check_attrs(cls, attrs: Attrs) -> None:
        attrs.float("min", -math.inf)
        attrs.float("max", math.inf)

    def compute(self, x: np.ndarray) -> np.ndarray:
        lo = self.attrs.float("min", -math.inf)
        hi = self.attrs.float("max", math.inf)
        out = x
        if lo != -math.inf:
            out = np.maximum(out, np.asarray(lo).astype(x.dtype))
        if hi != math.inf:
            out = np.minimum(out, np.asarray(hi).astype(x.dtype))
        return out


@irdl_op_definition
class LeakyReluOp(UnaryOp):
    """``x if x >= 0 else alpha * x`` (alpha default 0.01).

    ```mlir
    %y = graph.leaky_relu %x {alpha = 0.1 : f32} : (tensor<4xf32>) -> tensor<4xf32>
    ```
    """

    name = "graph.leaky_relu"
    ATTRS: ClassVar[tuple[str, ...]] = ("alpha",)

    @classmethod
    def check_attrs(cls, attrs: Attrs) -> None:
        attrs.float("alpha", 0.01)

    def compute(self, x: np.ndarray) -> np.ndarray:
        alpha = np.asarray(self.attrs.float("alpha", 0.01)).astype(x.dtype)
        return np.where(x >= 0, x, alpha * x)


@irdl_op_definition
class EluOp(UnaryOp):
    """``x if x > 0 else alpha * (exp(x) - 1)`` (alpha default 1).

    ```mlir
    %y = graph.elu %x {alpha = 1.0 : f32} : (tensor<4xf32>) -> tensor<4xf32>
    ```
    """

    name = "graph.elu"
    ATTRS: ClassVar[tuple[str, ...]] = ("alpha",)
    COMPOSITE: ClassVar[bool] = True

    @classmethod
    def check_attrs(cls, attrs: Attrs) -> None:
        attrs.float("alpha", 1.0)

    def compute(self, x: np.ndarray) -> np.ndarray:
        alpha = self.attrs.float("alpha", 1.0)
        return np.where(x > 0, x, alpha * (np.exp(x) - 1))


@irdl_op_definition
class HardSigmoidOp(UnaryOp):
    """``clip(alpha * x + beta, 0, 1)`` (alpha 0.2, beta 0.5 by default).

    ```mlir
    %y = graph.hard_sigmoid %x {alpha = 0.2 : f32, beta = 0.5 : f32} : (tensor<4xf32>) -> tensor<4xf32>
    ```
    """

    name = "graph.hard_sigmoid"
    ATTRS: ClassVar[tuple[str, ...]] = ("alpha", "beta")
    COMPOSITE: ClassVar[bool] = True

    @classmethod
    def check_attrs(cls, attrs: Attrs) -> None:
        attrs.float("alpha", 0.2)
        attrs.float("beta", 0.5)

    def compute(self, x: np.ndarray) -> np.ndarray:
        alpha = self.attrs.float("alpha", 0.2)
        beta = self.attrs.float("beta", 0.5)
        return np.clip(alpha * x + beta, 0, 1)


@irdl_op_definition
class CastOp(GraphOp):
    """Convert element type (``to``); float->int truncates toward zero, like C.

    Narrow types (bf16, f8*, f4E2M1FN, i4/ui4/i2/ui2) follow ONNX Cast-24:
    ``saturate`` (default true) clamps float8 overflow to the largest finite
    value (``{to = f8E4M3FN, saturate = false}`` gives NaN instead);
    ``round_mode`` ("up", "down", "nearest") rounds to f8E8M0FNU.

    ```mlir
    %y = graph.cast %x {to = i32} : (tensor<4xf32>) -> tensor<4xi32>
    ```
    """

    name = "graph.cast"
    ATTRS: ClassVar[tuple[str, ...]] = ("to", "saturate", "round_mode")
    NARROW_TYPES: ClassVar[bool] = True
    x = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 1)
        to = attrs.type("to")
        numpy_dtype(to)  # supported element type?
        attrs.bool("saturate", True)
        if attrs.str("round_mode", "up") not in ("up", "down", "nearest"):
            raise ShapeError(f"round_mode must be up, down or nearest, got '{attrs.str('round_mode')}'")
        return [tensor_type(operand_types[0].get_shape(), to)]

    def reference(self, x: np.ndarray) -> list[np.ndarray]:
        to = self.attrs.type("to")
        with np.errstate(all="ignore"):
            if is_narrow(to) or is_narrow(self.operands[0].type.element_type):
                return [narrow_cast_reference(
                    x, to, self.attrs.bool("saturate", True), self.attrs.str("round_mode", "up"))]
            return [x.astype(numpy_dtype(to))]


class BinaryOp(GraphOp):
    """Elementwise binary op with numpy broadcasting; both operands share one
    element type (no implicit promotion)."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())
    ELEMENT: ClassVar[str] = "numeric"
    RESULT_BOOL: ClassVar[bool] = False

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 2)
        element = _same_element(operand_types)
        _check_element(operand_types[0], cls.ELEMENT)
        shape = broadcast_shapes(*(t.get_shape() for t in operand_types))
        return [tensor_type(shape, i1 if cls.RESULT_BOOL else element)]

    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def reference(self, a: np.ndarray, b: np.ndarray) -> list[np.ndarray]:
        with np.errstate(all="ignore"):
            out = np.asarray(self.compute(a, b))
        return [out if self.RESULT_BOOL else out.astype(a.dtype, copy=False)]


def _int_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu":  # C semantics: truncate toward zero
        safe = np.where(b == 0, 1, b)
        q = np.abs(a) // np.abs(safe)
        return np.where((a < 0) != (safe < 0), -q, q).astype(a.dtype)
    return a / b


def _int_pow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu":
        return np.power(a.astype(np.float64), b.astype(np.float64)).astype(a.dtype)
    return np.power(a, b)


def _fmod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu":
        safe = np.where(b == 0, 1, b)
        return np.fmod(a, safe)
    return np.fmod(a, b)


def _binary(name: str, fn, element: str = "numeric", result_bool: bool = False, doc: str = ""):
    op_name = f"graph.{name}"

    class _Op(BinaryOp):
        ELEMENT: ClassVar[str] = element
        ATTRS: ClassVar[tuple[str, ...]] = ()
        RESULT_BOOL: ClassVar[bool] = result_bool

        def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
            return fn(a, b)

    _Op.__name__ = _Op.__qualname__ = "".join(p.title() for p in name.split("_")) + "Op"
    _Op.name = op_name
    in_e = "i1" if element == "bool" else "f32"
    out_e = "i1" if result_bool else in_e
    _Op.__doc__ = (
        f"Elementwise {doc or name} with numpy broadcasting ({element} tensors).\n\n"
        f"```mlir\n%z = {op_name} %a, %b : (tensor<2x3x{in_e}>, tensor<3x{in_e}>) "
        f"-> tensor<2x3x{out_e}>\n```\n"
    )
    return irdl_op_definition(_Op)


AddOp = _binary("add", np.add, doc="a + b")
SubOp = _binary("sub", np.subtract, doc="a - b")
MulOp = _binary("mul", np.multiply, doc="a * b")
DivOp = _binary("div", _int_div, doc="a / b (integers truncate toward zero)")
PowOp = _binary("pow", _int_pow, doc="a ** b")
ModOp = _binary("mod", _fmod, doc="remainder with the sign of a (C fmod)")
MaxOp = _binary("max", np.maximum, doc="elementwise maximum")
MinOp = _binary("min", np.minimum, doc="elementwise minimum")
EqualOp = _binary("equal", np.equal, "any", True, "a == b")
NotEqualOp = _binary("not_equal", np.not_equal, "any", True, "a != b")
LessOp = _binary("less", np.less, "numeric", True, "a < b")
LessEqualOp = _binary("less_equal", np.less_equal, "numeric", True, "a <= b")
GreaterOp = _binary("greater", np.greater, "numeric", True, "a > b")
GreaterEqualOp = _binary("greater_equal", np.greater_equal, "numeric", True, "a >= b")
AndOp = _binary("and", np.logical_and, "bool", True, "logical and")
OrOp = _binary("or", np.logical_or, "bool", True, "logical or")
XorOp = _binary("xor", np.logical_xor, "bool", True, "logical xor")


@irdl_op_definition
class WhereOp(GraphOp):
    """``cond ? a : b`` elementwise, broadcasting all three operands.

    ```mlir
    %z = graph.where %c, %a, %b : (tensor<3xi1>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
    ```
    """

    name = "graph.where"
    ATTRS: ClassVar[tuple[str, ...]] = ()
    cond = operand_def(TensorType)
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 3)
        _check_element(operand_types[0], "bool", "condition")
        element = _same_element(operand_types[1:])
        shape = broadcast_shapes(*(t.get_shape() for t in operand_types))
        return [tensor_type(shape, element)]

    def reference(self, c: np.ndarray, a: np.ndarray, b: np.ndarray) -> list[np.ndarray]:
        return [np.where(c, a, b)]


# ===========================================================================
# linear algebra
# ===========================================================================


@irdl_op_definition
class MatmulOp(GraphOp):
    """numpy ``matmul``: batch dims broadcast; a 1-D operand is promoted to a
    matrix and the added dim removed (covers batch-matmul).

    ```mlir
    %c = graph.matmul %a, %b : (tensor<8x2x3xf32>, tensor<3x5xf32>) -> tensor<8x2x5xf32>
    ```
    """

    name = "graph.matmul"
    ATTRS: ClassVar[tuple[str, ...]] = ()
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 2)
        element = _same_element(operand_types)
        _check_element(operand_types[0], "numeric")
        a, b = (list(t.get_shape()) for t in operand_types)
        if not a or not b:
            raise ShapeError("operands must have rank >= 1 (no scalars in matmul)")
        a2 = [1] + a if len(a) == 1 else a
        b2 = b + [1] if len(b) == 1 else b
        if a2[-1] != b2[-2]:
            raise ShapeError(
                f"contraction dims differ: lhs has K={a2[-1]}, rhs has K={b2[-2]}"
            )
        batch = broadcast_shapes(a2[:-2], b2[:-2])
        shape = list(batch) + [a2[-2], b2[-1]]
        if len(a) == 1:
            shape.pop(-2)
        if len(b) == 1:
            shape.pop(-1)
        return [tensor_type(shape, element)]

    def reference(self, a: np.ndarray, b: np.ndarray) -> list[np.ndarray]:
        if a.dtype.kind == "f":
            out = np.matmul(a.astype(np.float64), b.astype(np.float64))
        else:
            out = np.matmul(a, b)
        return [out.astype(a.dtype)]


@irdl_op_definition
class DenseOp(GraphOp):
    """Fully connected layer: ``x[..., K] . w[N, K]^T (+ bias[N])`` -> ``[..., N]``.
    Composite: legalize rewrites it to transpose + matmul + add.

    ```mlir
    %y = graph.dense %x, %w, %b : (tensor<4x16xf32>, tensor<10x16xf32>, tensor<10xf32>) -> tensor<4x10xf32>
    ```
    """

    name = "graph.dense"
    ATTRS: ClassVar[tuple[str, ...]] = ()
    x = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())
    COMPOSITE: ClassVar[bool] = True

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, (2, 3))
        element = _same_element(operand_types)
        _check_element(operand_types[0], "numeric")
        x, w = (list(t.get_shape()) for t in operand_types[:2])
        if len(x) < 1 or len(w) != 2:
            raise ShapeError(
                f"weight must be 2-D [N, K] and x at least 1-D, got weight {w} and x {x}"
            )
        if x[-1] != w[1]:
            raise ShapeError(f"x has K={x[-1]} but weight [N, K] has K={w[1]}")
        shape = x[:-1] + [w[0]]
        if len(operand_types) == 3:
            bias = list(operand_types[2].get_shape())
            if not _broadcasts_to(bias, shape):
                raise ShapeError(f"bias of shape {bias} does not broadcast to {shape}")
        return [tensor_type(shape, element)]

    def reference(self, x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None):
        out = np.matmul(x.astype(np.float64), w.T.astype(np.float64))
        if b is not None:
            out = out + b
        return [out.astype(x.dtype)]


# ===========================================================================
# convolution and pooling
# ===========================================================================

_DATA_LAYOUTS = ("NCHW", "NHWC")
_KERNEL_LAYOUTS = ("OIHW", "HWIO")


def _conv_out(size: int, k: int, stride: int, pad: int, dilation: int, dim: str) -> int:
    span = dilation * (k - 1) + 1
    num = size + pad - span
    if num < 0:
        raise ShapeError(
            f"{dim}: window of extent {span} is larger than the padded input extent {size + pad}"
        )
    return num // stride + 1


def _window_attrs(attrs: Attrs, spatial: int = 2):
    strides = attrs.ints("strides", (1,) * spatial)
    dil = attrs.ints("dilations", (1,) * spatial)
    pads = attrs.ints("padding", (0,) * (2 * spatial))
    for name, v, n in (("strides", strides, spatial), ("dilations", dil, spatial), ("padding", pads, 2 * spatial)):
        if len(v) != n:
            raise ShapeError(f"attribute '{name}' must have {n} values, got {len(v)}")
    if min(strides) < 1 or min(dil) < 1:
        raise ShapeError("strides and dilations must be >= 1")
    if min(pads) < 0:
        raise ShapeError("padding must be >= 0")
    return strides, dil, pads


def _nchw(shape: Sequence[int], layout: str) -> list[int]:
    if layout == "NHWC":
        return [shape[0], shape[3], shape[1], shape[2]]
    return list(shape)


def _from_nchw(shape: Sequence[int], layout: str) -> list[int]:
    if layout == "NHWC":
        return [shape[0], shape[2], shape[3], shape[1]]
    return list(shape)


def _layout(attrs: Attrs, name: str, allowed: tuple[str, ...]) -> str:
    value = attrs.str(name, allowed[0])
    if value not in allowed:
        raise ShapeError(f"attribute '{name}' must be one of {', '.join(allowed)}, got {value}")
    return value


@irdl_op_definition
class Conv2DOp(GraphOp):
    """2-D convolution (cross-correlation). Attributes: ``strides`` [2],
    ``padding`` [top, left, bottom, right], ``dilations`` [2], ``groups``,
    ``data_layout`` (NCHW | NHWC), ``kernel_layout`` (OIHW | HWIO).

    ```mlir
    %y = graph.conv2d %x, %w {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x3x9x9xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x5x5xf32>
    ```
    """

    name = "graph.conv2d"
    ATTRS: ClassVar[tuple[str, ...]] = ("strides", "padding", "dilations", "groups", "data_layout", "kernel_layout")
    x = operand_def(TensorType)
    weight = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 2)
        element = _same_element(operand_types)
        _check_element(operand_types[0], "numeric")
        x, w = (list(t.get_shape()) for t in operand_types)
        if len(x) != 4 or len(w) != 4:
            raise ShapeError(f"input and weight must be 4-D, got ranks {len(x)} and {len(w)}")
        dl = _layout(attrs, "data_layout", _DATA_LAYOUTS)
        kl = _layout(attrs, "kernel_layout", _KERNEL_LAYOUTS)
        n, c, h, wd = _nchw(x, dl)
        o, i, kh, kw = w if kl == "OIHW" else [w[3], w[2], w[0], w[1]]
        groups = attrs.int("groups", 1)
        if groups < 1 or c % groups or o % groups:
            raise ShapeError(f"groups={groups} must divide input channels {c} and output channels {o}")
        if i * groups != c:
            raise ShapeError(
                f"weight has {i} input channels per group but input has {c} channels "
                f"with groups={groups}"
            )
        (sh, sw), (dh, dw), (pt, pl, pb, pr) = _window_attrs(attrs)
        oh = _conv_out(h, kh, sh, pt + pb, dh, "height")
        ow = _conv_out(wd, kw, sw, pl + pr, dw, "width")
        return [tensor_type(_from_nchw([n, o, oh, ow], dl), element)]

    def reference(self, x: np.ndarray, w: np.ndarray) -> list[np.ndarray]:
        a = self.attrs
        dl, kl = a.str("data_layout", "NCHW"), a.str("kernel_layout", "OIHW")
        if dl == "NHWC":
            x = x.transpose(0, 3, 1, 2)
        if kl == "HWIO":
            w = w.transpose(3, 2, 0, 1)
        (sh, sw), (dh, dw), (pt, pl, pb, pr) = _window_attrs(a)
        out = _conv2d_nchw(x, w, (sh, sw), (pt, pl, pb, pr), (dh, dw), a.int("groups", 1))
        if dl == "NHWC":
            out = out.transpose(0, 2, 3, 1)
        return [_contiguous(out)]


def _conv2d_nchw(x, w, strides, pads, dilations, groups) -> np.ndarray:
    n, c, h, wd = x.shape
    o, cpg, kh, kw = w.shape
    sh, sw = strides
    dh, dw = dilations
    acc = np.float64 if x.dtype.kind == "f" else np.int64
    xp = np.pad(x.astype(acc), ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    oh = (xp.shape[2] - dh * (kh - 1) - 1) // sh + 1
    ow = (xp.shape[3] - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, o, oh, ow), dtype=acc)
    opg = o // groups
    for g in range(groups):
        xs = xp[:, g * cpg:(g + 1) * cpg]
        ws = w[g * opg:(g + 1) * opg].astype(acc)
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i * dh: i * dh + sh * (oh - 1) + 1: sh,
                           j * dw: j * dw + sw * (ow - 1) + 1: sw]
                out[:, g * opg:(g + 1) * opg] += np.einsum("nchw,oc->nohw", patch, ws[:, :, i, j])
    return out.astype(x.dtype)


@irdl_op_definition
class ConvTranspose2DOp(GraphOp):
    """2-D transposed convolution, NCHW data, weight ``[C_in, C_out/groups, KH, KW]``.
    Output extent: ``(H-1)*stride - pad_begin - pad_end + dilation*(K-1) + output_padding + 1``.

    ```mlir
    %y = graph.conv_transpose2d %x, %w {strides = array<i64: 2, 2>} : (tensor<1x4x3x3xf32>, tensor<4x2x3x3xf32>) -> tensor<1x2x7x7xf32>
    ```
    """

    name = "graph.conv_transpose2d"
    ATTRS: ClassVar[tuple[str, ...]] = ("strides", "padding", "dilations", "groups", "output_padding")
    x = operand_def(TensorType)
    weight = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 2)
        element = _same_element(operand_types)
        _check_element(operand_types[0], "float")
        x, w = (list(t.get_shape()) for t in operand_types)
        if len(x) != 4 or len(w) != 4:
            raise ShapeError(f"input and weight must be 4-D, got ranks {len(x)} and {len(w)}")
        groups = attrs.int("groups", 1)
        if w[0] != x[1]:
            raise ShapeError(f"weight has {w[0]} input channels but input has {x[1]}")
        if groups < 1 or x[1] % groups:
            raise ShapeError(f"groups={groups} must divide input channels {x[1]}")
        (sh, sw), (dh, dw), (pt, pl, pb, pr) = _window_attrs(attrs)
        output_padding = attrs.ints("output_padding", (0, 0))
        if len(output_padding) != 2:
            raise ShapeError(f"attribute 'output_padding' must have 2 values, got {len(output_padding)}")
        oph, opw = output_padding
        for op_, s, d in ((oph, sh, dh), (opw, sw, dw)):
            if not 0 <= op_ < max(s, d):
                raise ShapeError(
                    f"output_padding {list(output_padding)} must be >= 0 and smaller than "
                    "the stride or the dilation"
                )
        oh = (x[2] - 1) * sh - pt - pb + dh * (w[2] - 1) + oph + 1
        ow = (x[3] - 1) * sw - pl - pr + dw * (w[3] - 1) + opw + 1
        if oh < 1 or ow < 1:
            raise ShapeError(f"output extent {oh}x{ow} is empty")
        return [tensor_type([x[0], w[1] * groups, oh, ow], element)]

    def reference(self, x: np.ndarray, w: np.ndarray) -> list[np.ndarray]:
        (sh, sw), (dh, dw), (pt, pl, pb, pr) = _window_attrs(self.attrs)
        groups = self.attrs.int("groups", 1)
        n, c, h, wd = x.shape
        _, opg, kh, kw = w.shape
        out_t = self.out.type.get_shape()
        full_h = (h - 1) * sh + dh * (kh - 1) + 1 + max(out_t[2] + pt + pb - ((h - 1) * sh + dh * (kh - 1) + 1), 0)
        full_w = (wd - 1) * sw + dw * (kw - 1) + 1 + max(out_t[3] + pl + pr - ((wd - 1) * sw + dw * (kw - 1) + 1), 0)
        full = np.zeros((n, opg * groups, full_h, full_w), dtype=np.float64)
        cpg = c // groups
        for g in range(groups):
            xs = x[:, g * cpg:(g + 1) * cpg].astype(np.float64)
            ws = w[g * cpg:(g + 1) * cpg].astype(np.float64)
            for i in range(kh):
                for j in range(kw):
                    contrib = np.einsum("nchw,co->nohw", xs, ws[:, :, i, j])
                    full[:, g * opg:(g + 1) * opg,
                         i * dh: i * dh + sh * (h - 1) + 1: sh,
                         j * dw: j * dw + sw * (wd - 1) + 1: sw] += contrib
        out = full[:, :, pt:pt + out_t[2], pl:pl + out_t[3]]
        return [_contiguous(out).astype(x.dtype)]


class _PoolOp(GraphOp):
    x = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 1)
        _check_element(operand_types[0], "numeric")
        x = list(operand_types[0].get_shape())
        if len(x) != 4:
            raise ShapeError(f"input must be 4-D, got rank {len(x)}")
        dl = _layout(attrs, "layout", _DATA_LAYOUTS)
        n, c, h, w = _nchw(x, dl)
        kernel = attrs.ints("kernel")
        if len(kernel) != 2 or min(kernel) < 1:
            raise ShapeError(f"attribute 'kernel' must be 2 values >= 1, got {list(kernel)}")
        kh, kw = kernel
        (sh, sw), (dh, dw), (pt, pl, pb, pr) = _window_attrs(attrs)
        if max(pt, pb) >= dh * (kh - 1) + 1 or max(pl, pr) >= dw * (kw - 1) + 1:
            raise ShapeError("padding must be smaller than the window")
        ceil = attrs.bool("ceil_mode")
        oh = _pool_out(h, kh, sh, pt, pb, dh, ceil, "height")
        ow = _pool_out(w, kw, sw, pl, pr, dw, ceil, "width")
        _check_windows_see_input(h, kh, sh, pt, dh, oh, "height")
        _check_windows_see_input(w, kw, sw, pl, dw, ow, "width")
        return [tensor_type(_from_nchw([n, c, oh, ow], dl), operand_types[0].element_type)]

    def _windows(self, x: np.ndarray, fill: float):
        """Yield (ki, kj, patch, valid-mask) over the window positions, NCHW."""
        a = self.attrs
        kh, kw = a.ints("kernel")
        (sh, sw), (dh, dw), (pt, pl, pb, pr) = _window_attrs(a)
        oh, ow = self.out.type.get_shape()[2:] if a.str("layout", "NCHW") == "NCHW" else self.out.type.get_shape()[1:3]
        extra_h = max((oh - 1) * sh + dh * (kh - 1) + 1 - (x.shape[2] + pt + pb), 0)
        extra_w = max((ow - 1) * sw + dw * (kw - 1) + 1 - (x.shape[3] + pl + pr), 0)
        pad = ((0, 0), (0, 0), (pt, pb + extra_h), (pl, pr + extra_w))
        xp = np.pad(x, pad, constant_values=fill)
        inside = np.pad(np.ones(x.shape[2:], dtype=np.int64), pad[2:])
        in_pad = np.pad(np.ones(x.shape[2:], dtype=np.int64), ((pt, pb), (pl, pr)), constant_values=1)
        in_pad = np.pad(in_pad, ((0, extra_h), (0, extra_w)))
        for i in range(kh):
            for j in range(kw):
                sl = (slice(i * dh, i * dh + sh * (oh - 1) + 1, sh), slice(j * dw, j * dw + sw * (ow - 1) + 1, sw))
                yield xp[(slice(None), slice(None)) + sl], inside[sl], in_pad[sl]

    def reference(self, x: np.ndarray) -> list[np.ndarray]:
        nhwc = self.attrs.str("layout", "NCHW") == "NHWC"
        if nhwc:
            x = x.transpose(0, 3, 1, 2)
        out = self.pool(x)
        if nhwc:
            out = out.transpose(0, 2, 3, 1)
        return [_contiguous(out).astype(x.dtype)]


def _check_windows_see_input(size, k, stride, pad_b, dil, out, dim: str) -> None:
    """A window over padding only has no max (nor a mean): reject it. With
    dilation this can happen even when padding < window extent."""
    for o in range(out):
        start = o * stride - pad_b
        if not any(0 <= start + i * dil < size for i in range(k)):
            raise ShapeError(f"{dim}: pooling window #{o} covers only padding")


def _pool_out(size, k, stride, pad_b, pad_e, dil, ceil, dim: str) -> int:
    span = dil * (k - 1) + 1
    num = size + pad_b + pad_e - span
    if num < 0:
        raise ShapeError(
            f"{dim}: window of extent {span} is larger than the padded input extent "
            f"{size + pad_b + pad_e}"
        )
    out = (-(-num // stride) if ceil else num // stride) + 1
    if ceil and (out - 1) * stride >= size + pad_b:
        out -= 1  # the last window must start inside the input or the begin padding
    return out


@irdl_op_definition
class MaxPool2DOp(_PoolOp):
    """2-D max pooling. Attributes: ``kernel`` [2] (required), ``strides``,
    ``padding`` [top, left, bottom, right], ``dilations``, ``ceil_mode``, ``layout``.

    ```mlir
    %y = graph.max_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>} : (tensor<1x8x9x9xf32>) -> tensor<1x8x4x4xf32>
    ```
    """

    name = "graph.max_pool2d"
    # count_include_pad is accepted (and means nothing) so both pools share one attribute set
    ATTRS: ClassVar[tuple[str, ...]] = (
        "kernel", "strides", "padding", "dilations", "ceil_mode", "layout", "count_include_pad"
    )

    def pool(self, x: np.ndarray) -> np.ndarray:
        lowest = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
        out = None
        for patch, _, _ in self._windows(x, lowest):
            out = patch if out is None else np.maximum(out, patch)
        return out


@irdl_op_definition
class AvgPool2DOp(_PoolOp):
    """2-D average pooling; ``count_include_pad`` counts padded zeros in the
    divisor (never the ceil-mode overhang). Attributes as max_pool2d.

    ```mlir
    %y = graph.avg_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x8x8x8xf32>) -> tensor<1x8x4x4xf32>
    ```
    """

    name = "graph.avg_pool2d"
    ATTRS: ClassVar[tuple[str, ...]] = ("kernel", "strides", "padding", "dilations", "ceil_mode", "layout", "count_include_pad")

    def pool(self, x: np.ndarray) -> np.ndarray:
        include_pad = self.attrs.bool("count_include_pad")
        total = count = None
        for patch, inside, in_pad in self._windows(x.astype(np.float64), 0.0):
            weight = in_pad if include_pad else inside
            total = patch if total is None else total + patch
            count = weight if count is None else count + weight
        return total / np.maximum(count, 1)


class _GlobalPoolOp(GraphOp):
    x = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 1)
        _check_element(operand_types[0], "numeric")
        x = list(operand_types[0].get_shape())
        if len(x) < 3:
            raise ShapeError(f"input must be N x C x spatial..., got rank {len(x)}")
        layout = _layout(attrs, "layout", _DATA_LAYOUTS)
        if layout == "NHWC":
            shape = [x[0]] + [1] * (len(x) - 2) + [x[-1]]
        else:
            shape = x[:2] + [1] * (len(x) - 2)
        return [tensor_type(shape, operand_types[0].element_type)]

    def _spatial_axes(self, rank: int) -> tuple[int, ...]:
        if self.attrs.str("layout", "NCHW") == "NHWC":
            return tuple(range(1, rank - 1))
        return tuple(range(2, rank))


@irdl_op_definition
class GlobalAvgPoolOp(_GlobalPoolOp):
    """Mean over all spatial dims, keeping them as size 1.

    ```mlir
    %y = graph.global_avg_pool %x : (tensor<1x8x7x7xf32>) -> tensor<1x8x1x1xf32>
    ```
    """

    name = "graph.global_avg_pool"
    ATTRS: ClassVar[tuple[str, ...]] = ("layout",)
    COMPOSITE: ClassVar[bool] = True

    def reference(self, x: np.ndarray) -> list[np.ndarray]:
        return [x.mean(axis=self._spatial_axes(x.ndim), keepdims=True, dtype=np.float64).astype(x.dtype)]


@irdl_op_definition
class GlobalMaxPoolOp(_GlobalPoolOp):
    """Max over all spatial dims, keeping them as size 1.

    ```mlir
    %y = graph.global_max_pool %x : (tensor<1x8x7x7xf32>) -> tensor<1x8x1x1xf32>
    ```
    """

    name = "graph.global_max_pool"
    ATTRS: ClassVar[tuple[str, ...]] = ("layout",)
    COMPOSITE: ClassVar[bool] = True

    def reference(self, x: np.ndarray) -> list[np.ndarray]:
        return [x.max(axis=self._spatial_axes(x.ndim), keepdims=True)]


# ===========================================================================
# normalization
# ===========================================================================


@irdl_op_definition
class BatchNormOp(GraphOp):
    """Inference batch norm along ``axis`` (default 1):
    ``(x - mean) / sqrt(var + epsilon) * scale + bias``. Composite.

    ```mlir
    %y = graph.batch_norm %x, %scale, %bias, %mean, %var {epsilon = 1.0e-05 : f32} : (tensor<1x8x5x5xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<1x8x5x5xf32>
    ```
    """

    name = "graph.batch_norm"
    ATTRS: ClassVar[tuple[str, ...]] = ("axis", "epsilon")
    x = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = operand_def(TensorType)
    mean = operand_def(TensorType)
    var = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())
    COMPOSITE: ClassVar[bool] = True

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 5)
        _same_element(operand_types)
        _check_element(operand_types[0], "float")
        x = operand_types[0].get_shape()
        axis = normalize_axis(attrs.int("axis", 1), len(x))
        for name, t in zip(("scale", "bias", "mean", "var"), operand_types[1:]):
            if list(t.get_shape()) != [x[axis]]:
                raise ShapeError(f"{name} must have shape [{x[axis]}] (channels), got {list(t.get_shape())}")
        return [operand_types[0]]

    def reference(self, x, scale, bias, mean, var) -> list[np.ndarray]:
        axis = normalize_axis(self.attrs.int("axis", 1), x.ndim)
        shape = [1] * x.ndim
        shape[axis] = -1
        eps = self.attrs.float("epsilon", 1e-5)
        r = lambda v: v.astype(np.float64).reshape(shape)  # noqa: E731
        out = (x - r(mean)) / np.sqrt(r(var) + eps) * r(scale) + r(bias)
        return [out.astype(x.dtype)]


@irdl_op_definition
class LayerNormOp(GraphOp):
    """Normalize over the dims from ``axis`` (default -1) to the end:
    ``(x - mean) / sqrt(var + epsilon) * scale + bias``; ``scale``/``bias``
    have the normalized shape. Composite.

    ```mlir
    %y = graph.layer_norm %x, %g, %b {axis = -1 : i64, epsilon = 1.0e-05 : f32} : (tensor<2x5x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x5x16xf32>
    ```
    """

    name = "graph.layer_norm"
    ATTRS: ClassVar[tuple[str, ...]] = ("axis", "epsilon")
    x = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())
    COMPOSITE: ClassVar[bool] = True

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 3)
        _same_element(operand_types)
        _check_element(operand_types[0], "float")
        x = list(operand_types[0].get_shape())
        axis = normalize_axis(attrs.int("axis", -1), len(x))
        norm_shape = x[axis:]
        for name, t in zip(("scale", "bias"), operand_types[1:]):
            if not _broadcasts_to(t.get_shape(), norm_shape):
                raise ShapeError(f"{name} of shape {list(t.get_shape())} does not broadcast to the normalized shape {norm_shape}")
        return [operand_types[0]]

    def reference(self, x, scale, bias) -> list[np.ndarray]:
        axis = normalize_axis(self.attrs.int("axis", -1), x.ndim)
        axes = tuple(range(axis, x.ndim))
        eps = self.attrs.float("epsilon", 1e-5)
        x64 = x.astype(np.float64)
        mean = x64.mean(axis=axes, keepdims=True)
        var = ((x64 - mean) ** 2).mean(axis=axes, keepdims=True)
        out = (x64 - mean) / np.sqrt(var + eps) * scale + bias
        return [out.astype(x.dtype)]


class _SoftmaxBase(GraphOp):
    x = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 1)
        _check_element(operand_types[0], "float")
        normalize_axis(attrs.int("axis", -1), operand_types[0].get_num_dims())
        return [operand_types[0]]

    def _log_softmax(self, x: np.ndarray) -> np.ndarray:
        axis = self.attrs.int("axis", -1)
        x64 = x.astype(np.float64)
        shifted = x64 - x64.max(axis=axis, keepdims=True)
        return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


@irdl_op_definition
class SoftmaxOp(_SoftmaxBase):
    """``exp(x) / sum(exp(x))`` along ``axis`` (default -1), max-shifted.

    ```mlir
    %y = graph.softmax %x {axis = -1 : i64} : (tensor<2x10xf32>) -> tensor<2x10xf32>
    ```
    """

    name = "graph.softmax"
    ATTRS: ClassVar[tuple[str, ...]] = ("axis",)
    COMPOSITE: ClassVar[bool] = True

    def reference(self, x: np.ndarray) -> list[np.ndarray]:
        return [np.exp(self._log_softmax(x)).astype(x.dtype)]


@irdl_op_definition
class LogSoftmaxOp(_SoftmaxBase):
    """``x - log(sum(exp(x)))`` along ``axis`` (default -1).

    ```mlir
    %y = graph.log_softmax %x {axis = 1 : i64} : (tensor<2x10xf32>) -> tensor<2x10xf32>
    ```
    """

    name = "graph.log_softmax"
    ATTRS: ClassVar[tuple[str, ...]] = ("axis",)
    COMPOSITE: ClassVar[bool] = True

    def reference(self, x: np.ndarray) -> list[np.ndarray]:
        return [self._log_softmax(x).astype(x.dtype)]


# ===========================================================================
# reductions
# ===========================================================================


def _reduce_axes(attrs: Attrs, rank: int) -> tuple[int, ...]:
    axes = attrs.ints("axes", ())
    if not axes:
        return tuple(range(rank))
    norm = tuple(sorted(normalize_axis(a, rank) for a in axes))
    if len(set(norm)) != len(norm):
        raise ShapeError(f"axes {list(axes)} repeat an axis")
    return norm


class ReduceOp(GraphOp):
    """Reduction over ``axes`` (empty or absent: all axes), ``keepdims``."""

    x = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())
    ELEMENT: ClassVar[str] = "numeric"
    NEEDS_ELEMENTS: ClassVar[bool] = False  # max/min of nothing is undefined

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 1)
        _check_element(operand_types[0], cls.ELEMENT)
        shape = list(operand_types[0].get_shape())
        axes = _reduce_axes(attrs, len(shape))
        if cls.NEEDS_ELEMENTS:
            _check_nonempty(shape, axes)
        keep = attrs.bool("keepdims")
        out = [1 if i in axes else d for i, d in enumerate(shape) if keep or i not in axes]
        return [tensor_type(out, operand_types[0].element_type)]

    def compute(self, x: np.ndarray, axes: tuple[int, ...], keep: bool) -> np.ndarray:
        raise NotImplementedError

    def reference(self, x: np.ndarray) -> list[np.ndarray]:
        axes = _reduce_axes(self.attrs, x.ndim)
        out = self.compute(x, axes, self.attrs.bool("keepdims"))
        return [np.asarray(out).astype(x.dtype)]


def _check_nonempty(shape: Sequence[int], axes: Sequence[int]) -> None:
    for a in axes:
        if shape[a] == 0:
            raise ShapeError(f"cannot reduce axis {a} of extent 0 (no elements to compare)")


def _reduce(name: str, fn, doc: str, needs_elements: bool = False):
    op_name = f"graph.{name}"

    class _Op(ReduceOp):
        NEEDS_ELEMENTS: ClassVar[bool] = needs_elements
        ATTRS: ClassVar[tuple[str, ...]] = ("axes", "keepdims")

        def compute(self, x, axes, keep):
            return fn(x, axes, keep)

    _Op.__name__ = _Op.__qualname__ = "".join(p.title() for p in name.split("_")) + "Op"
    _Op.name = op_name
    _Op.__doc__ = (
        f"{doc} over ``axes`` (all when absent), ``keepdims`` keeps them as 1.\n\n"
        f"```mlir\n%y = {op_name} %x {{axes = array<i64: 1>, keepdims = true}} : "
        f"(tensor<2x3x4xf32>) -> tensor<2x1x4xf32>\n```\n"
    )
    return irdl_op_definition(_Op)


def _acc(x):
    return x.astype(np.float64) if x.dtype.kind == "f" else x


ReduceSumOp = _reduce("reduce_sum", lambda x, a, k: _acc(x).sum(axis=a, keepdims=k), "Sum")
ReduceMeanOp = _reduce("reduce_mean", lambda x, a, k: _acc(x).mean(axis=a, keepdims=k), "Mean")
ReduceMaxOp = _reduce("reduce_max", lambda x, a, k: x.max(axis=a, keepdims=k), "Maximum", True)
ReduceMinOp = _reduce("reduce_min", lambda x, a, k: x.min(axis=a, keepdims=k), "Minimum", True)
ReduceProdOp = _reduce("reduce_prod", lambda x, a, k: _acc(x).prod(axis=a, keepdims=k), "Product")


class _ArgReduceOp(GraphOp):
    x = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 1)
        _check_element(operand_types[0], "numeric")
        shape = list(operand_types[0].get_shape())
        axis = normalize_axis(attrs.int("axis", 0), len(shape))
        _check_nonempty(shape, [axis])
        keep = attrs.bool("keepdims")
        out = [1 if i == axis else d for i, d in enumerate(shape) if keep or i != axis]
        return [tensor_type(out, i64)]

    def _arg(self, x: np.ndarray, fn) -> list[np.ndarray]:
        axis = normalize_axis(self.attrs.int("axis", 0), x.ndim)
        if self.attrs.bool("select_last_index"):
            idx = x.shape[axis] - 1 - fn(np.flip(x, axis=axis), axis=axis)
        else:
            idx = fn(x, axis=axis)
        if self.attrs.bool("keepdims"):
            idx = np.expand_dims(idx, axis)
        return [np.asarray(idx, dtype=np.int64)]


@irdl_op_definition
class ArgMaxOp(_ArgReduceOp):
    """Index (i64) of the maximum along ``axis``; first occurrence unless
    ``select_last_index``.

    ```mlir
    %i = graph.argmax %x {axis = 1 : i64} : (tensor<2x10xf32>) -> tensor<2xi64>
    ```
    """

    name = "graph.argmax"
    ATTRS: ClassVar[tuple[str, ...]] = ("axis", "keepdims", "select_last_index")

    def reference(self, x):
        return self._arg(x, np.argmax)


@irdl_op_definition
class ArgMinOp(_ArgReduceOp):
    """Index (i64) of the minimum along ``axis``.

    ```mlir
    %i = graph.argmin %x {axis = 1 : i64, keepdims = true} : (tensor<2x10xf32>) -> tensor<2x1xi64>
    ```
    """

    name = "graph.argmin"
    ATTRS: ClassVar[tuple[str, ...]] = ("axis", "keepdims", "select_last_index")

    def reference(self, x):
        return self._arg(x, np.argmin)


# ===========================================================================
# data movement
# ===========================================================================


class _MoveOp(GraphOp):
    NARROW_TYPES: ClassVar[bool] = True  # data movement copies storage bits
    x = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 1)
        shape = cls.out_shape(list(operand_types[0].get_shape()), attrs)
        return [tensor_type(shape, operand_types[0].element_type)]

    @classmethod
    def out_shape(cls, shape: list[int], attrs: Attrs) -> list[int]:
        raise NotImplementedError


@irdl_op_definition
class ReshapeOp(_MoveOp):
    """Reinterpret with a new ``shape`` of the same element count (one entry may
    be -1: inferred).

    ```mlir
    %y = graph.reshape %x {shape = array<i64: 2, -1>} : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
    ```
    """

    name = "graph.reshape"
    ATTRS: ClassVar[tuple[str, ...]] = ("shape",)

    @classmethod
    def out_shape(cls, shape, attrs):
        target = list(attrs.ints("shape"))
        total = math.prod(shape)
        if target.count(-1) > 1:
            raise ShapeError("at most one -1 in 'shape'")
        if any(d < -1 for d in target):
            raise ShapeError(f"invalid dim in shape {target}")
        if -1 in target:
            known = math.prod(d for d in target if d != -1)
            if known == 0 or total % known:
                raise ShapeError(f"cannot infer -1 in {target} for {total} elements")
            target[target.index(-1)] = total // known
        if math.prod(target) != total:
            raise ShapeError(
                f"element count changes: {shape} has {total}, {target} has {math.prod(target)}"
            )
        return target

    def reference(self, x):
        return [x.reshape(self.out.type.get_shape())]


@irdl_op_definition
class TransposeOp(_MoveOp):
    """Permute dims: ``out.shape[i] = x.shape[perm[i]]`` (default: reverse).

    ```mlir
    %y = graph.transpose %x {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
    ```
    """

    name = "graph.transpose"
    ATTRS: ClassVar[tuple[str, ...]] = ("perm",)

    @classmethod
    def out_shape(cls, shape, attrs):
        perm = attrs.ints("perm", tuple(reversed(range(len(shape)))))
        if sorted(perm) != list(range(len(shape))):
            raise ShapeError(f"perm {list(perm)} is not a permutation of 0..{len(shape) - 1}")
        return [shape[p] for p in perm]

    def reference(self, x):
        perm = self.attrs.ints("perm", tuple(reversed(range(x.ndim))))
        return [_contiguous(x.transpose(perm))]


@irdl_op_definition
class BroadcastToOp(_MoveOp):
    """Broadcast to ``shape`` with numpy rules (ONNX Expand is this after
    folding the shape: the result is the broadcast of both shapes).

    ```mlir
    %y = graph.broadcast_to %x {shape = array<i64: 4, 3>} : (tensor<1x3xf32>) -> tensor<4x3xf32>
    ```
    """

    name = "graph.broadcast_to"
    ATTRS: ClassVar[tuple[str, ...]] = ("shape",)

    @classmethod
    def out_shape(cls, shape, attrs):
        target = attrs.ints("shape")
        if min(target, default=0) < 0:
            raise ShapeError(f"shape {list(target)} has a negative dim")
        return list(broadcast_shapes(shape, target))

    def reference(self, x):
        return [_contiguous(np.broadcast_to(x, self.out.type.get_shape()))]


@irdl_op_definition
class SqueezeOp(_MoveOp):
    """Remove size-1 dims ``axes`` (absent: all size-1 dims).

    ```mlir
    %y = graph.squeeze %x {axes = array<i64: 0>} : (tensor<1x3x1xf32>) -> tensor<3x1xf32>
    ```
    """

    name = "graph.squeeze"
    ATTRS: ClassVar[tuple[str, ...]] = ("axes",)
    COMPOSITE: ClassVar[bool] = True

    @classmethod
    def out_shape(cls, shape, attrs):
        if "axes" not in attrs:
            return [d for d in shape if d != 1]
        axes = [normalize_axis(a, len(shape)) for a in attrs.ints("axes")]
        if len(set(axes)) != len(axes):
            raise ShapeError(f"axes {list(attrs.ints('axes'))} repeat an axis")
        for a in axes:
            if shape[a] != 1:
                raise ShapeError(f"cannot squeeze axis {a} of size {shape[a]}")
        return [d for i, d in enumerate(shape) if i not in axes]

    def reference(self, x):
        return [x.reshape(self.out.type.get_shape())]


@irdl_op_definition
class UnsqueezeOp(_MoveOp):
    """Insert size-1 dims at ``axes`` (positions in the output).

    ```mlir
    %y = graph.unsqueeze %x {axes = array<i64: 0, 2>} : (tensor<3x4xf32>) -> tensor<1x3x1x4xf32>
    ```
    """

    name = "graph.unsqueeze"
    ATTRS: ClassVar[tuple[str, ...]] = ("axes",)
    COMPOSITE: ClassVar[bool] = True

    @classmethod
    def out_shape(cls, shape, attrs):
        rank = len(shape) + len(attrs.ints("axes"))
        axes = sorted(normalize_axis(a, rank) for a in attrs.ints("axes"))
        if len(set(axes)) != len(axes):
            raise ShapeError("axes repeat an axis")
        out, it = [], iter(shape)
        for i in range(rank):
            out.append(1 if i in axes else next(it))
        return out

    def reference(self, x):
        return [x.reshape(self.out.type.get_shape())]


def _slice_params(shape: Sequence[int], attrs: Attrs):
    rank = len(shape)
    starts, ends = attrs.ints("starts"), attrs.ints("ends")
    axes = attrs.ints("axes", tuple(range(len(starts))))
    steps = attrs.ints("steps", (1,) * len(starts))
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ShapeError("starts, ends, axes and steps must have the same length")
    slices = [slice(None)] * rank
    seen = set()
    for s, e, a, st in zip(starts, ends, axes, steps):
        a = normalize_axis(a, rank)
        if a in seen:
            raise ShapeError(f"axes {list(axes)} repeat axis {a}")
        seen.add(a)
        if st == 0:
            raise ShapeError("slice step must not be 0")
        slices[a] = slice(s, e, st)
    return tuple(slices)


@irdl_op_definition
class SliceOp(_MoveOp):
    """Python-style strided slice: per entry of ``axes`` (default 0..n-1),
    ``starts``/``ends`` (clamped, negative counts from the end) and ``steps``
    (default 1, may be negative).

    ```mlir
    %y = graph.slice %x {starts = array<i64: 1>, ends = array<i64: 5>, axes = array<i64: 1>, steps = array<i64: 2>} : (tensor<2x7xf32>) -> tensor<2x2xf32>
    ```
    """

    name = "graph.slice"
    ATTRS: ClassVar[tuple[str, ...]] = ("starts", "ends", "axes", "steps")

    @classmethod
    def out_shape(cls, shape, attrs):
        slices = _slice_params(shape, attrs)
        return [len(range(*sl.indices(d))) for sl, d in zip(slices, shape)]

    def reference(self, x):
        return [_contiguous(x[_slice_params(x.shape, self.attrs)])]


@irdl_op_definition
class PadOp(_MoveOp):
    """Pad with ``pads`` = [begin_0.., end_0..] (2 x rank, may be negative to
    crop), ``mode`` constant | reflect | edge, constant ``value`` (default 0).

    ```mlir
    %y = graph.pad %x {pads = array<i64: 0, 1, 0, 2>, value = 0.0 : f32} : (tensor<2x3xf32>) -> tensor<2x6xf32>
    ```
    """

    name = "graph.pad"
    NARROW_TYPES: ClassVar[bool] = False  # its padding value is arithmetic
    ATTRS: ClassVar[tuple[str, ...]] = ("pads", "mode", "value")

    @classmethod
    def out_shape(cls, shape, attrs):
        pads = attrs.ints("pads")
        if len(pads) != 2 * len(shape):
            raise ShapeError(f"pads must have 2 x rank = {2 * len(shape)} values, got {len(pads)}")
        mode = attrs.str("mode", "constant")
        if mode not in ("constant", "reflect", "edge"):
            raise ShapeError(f"mode must be constant, reflect or edge, got {mode}")
        r = len(shape)
        for i, d in enumerate(shape):
            before, after = pads[i], pads[i + r]
            cropped = d + min(before, 0) + min(after, 0)
            if cropped < 0:
                raise ShapeError(f"negative pads {before}, {after} crop more than the extent {d} of axis {i}")
            grow = max(before, 0), max(after, 0)
            if mode == "reflect" and max(grow) >= max(cropped, 1):
                raise ShapeError(f"reflect pads {list(grow)} of axis {i} must be smaller than its extent {cropped}")
            if mode == "edge" and max(grow) > 0 and cropped == 0:
                raise ShapeError(f"edge mode cannot pad the empty axis {i}")
        return [d + pads[i] + pads[i + r] for i, d in enumerate(shape)]

    def reference(self, x):
        pads = self.attrs.ints("pads")
        r = x.ndim
        before, after = pads[:r], pads[r:]
        # negative pads crop first
        crop = tuple(slice(max(-b, 0), d - max(-a, 0)) for b, a, d in zip(before, after, x.shape))
        x = x[crop]
        width = [(max(b, 0), max(a, 0)) for b, a in zip(before, after)]
        mode = self.attrs.str("mode", "constant")
        if mode == "constant":
            value = self.attrs.float("value", 0.0)
            return [np.pad(x, width, constant_values=np.asarray(value).astype(x.dtype))]
        return [np.pad(x, width, mode={"reflect": "reflect", "edge": "edge"}[mode])]


@irdl_op_definition
class ConcatOp(GraphOp):
    """Join tensors along ``axis``; other dims must agree.

    ```mlir
    %y = graph.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
    ```
    """

    name = "graph.concat"
    NARROW_TYPES: ClassVar[bool] = True
    ATTRS: ClassVar[tuple[str, ...]] = ("axis",)
    inputs = var_operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        if not operand_types:
            raise ShapeError("expects at least one operand")
        element = _same_element(operand_types)
        first = list(operand_types[0].get_shape())
        axis = normalize_axis(attrs.int("axis"), len(first))
        total = 0
        for i, t in enumerate(operand_types):
            s = list(t.get_shape())
            if len(s) != len(first) or any(a != b for j, (a, b) in enumerate(zip(s, first)) if j != axis):
                raise ShapeError(
                    f"operand #{i} has shape {s}, which differs from {first} outside axis {axis}"
                )
            total += s[axis]
        first[axis] = total
        return [tensor_type(first, element)]

    def reference(self, *xs):
        return [np.concatenate(xs, axis=self.attrs.int("axis"))]


@irdl_op_definition
class SplitOp(GraphOp):
    """Split along ``axis`` into pieces of ``sizes`` (which sum to the extent).

    ```mlir
    %a, %b = graph.split %x {axis = 1 : i64, sizes = array<i64: 2, 3>} : (tensor<4x5xf32>) -> (tensor<4x2xf32>, tensor<4x3xf32>)
    ```
    """

    name = "graph.split"
    NARROW_TYPES: ClassVar[bool] = True
    ATTRS: ClassVar[tuple[str, ...]] = ("axis", "sizes")
    x = operand_def(TensorType)
    outs = var_result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 1)
        shape = list(operand_types[0].get_shape())
        axis = normalize_axis(attrs.int("axis", 0), len(shape))
        sizes = attrs.ints("sizes")
        if sum(sizes) != shape[axis] or min(sizes, default=0) < 0:
            raise ShapeError(f"sizes {list(sizes)} do not sum to the extent {shape[axis]} of axis {axis}")
        outs = []
        for s in sizes:
            piece = list(shape)
            piece[axis] = s
            outs.append(tensor_type(piece, operand_types[0].element_type))
        return outs

    def reference(self, x):
        axis = self.attrs.int("axis", 0)
        cuts = np.cumsum(self.attrs.ints("sizes"))[:-1]
        return [_contiguous(p) for p in np.split(x, cuts, axis=axis)]


@irdl_op_definition
class GatherOp(GraphOp):
    """``take`` along ``axis``: out = data.shape[:axis] + indices.shape +
    data.shape[axis+1:]; negative indices count from the end.

    ```mlir
    %y = graph.gather %emb, %ids {axis = 0 : i64} : (tensor<100x16xf32>, tensor<2x7xi64>) -> tensor<2x7x16xf32>
    ```
    """

    name = "graph.gather"
    NARROW_TYPES: ClassVar[bool] = True
    ATTRS: ClassVar[tuple[str, ...]] = ("axis",)
    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 2)
        _check_element(operand_types[1], "int", "indices")
        d = list(operand_types[0].get_shape())
        if not d:
            raise ShapeError("data must have rank >= 1")
        axis = normalize_axis(attrs.int("axis", 0), len(d))
        shape = d[:axis] + list(operand_types[1].get_shape()) + d[axis + 1:]
        return [tensor_type(shape, operand_types[0].element_type)]

    def reference(self, data, indices):
        axis = normalize_axis(self.attrs.int("axis", 0), data.ndim)
        return [np.take(data, indices.astype(np.int64), axis=axis)]


@irdl_op_definition
class ResizeOp(GraphOp):
    """Resize the trailing spatial dims of an N x C x ... tensor to ``sizes``
    (the full output shape). ``mode``: nearest | linear;
    ``coordinate_transformation_mode``: half_pixel (default) | asymmetric |
    align_corners | pytorch_half_pixel; ``nearest_mode``: round_prefer_floor
    (default) | round_prefer_ceil | floor | ceil.

    ```mlir
    %y = graph.resize %x {sizes = array<i64: 1, 3, 8, 8>, mode = "nearest"} : (tensor<1x3x4x4xf32>) -> tensor<1x3x8x8xf32>
    ```
    """

    name = "graph.resize"
    ATTRS: ClassVar[tuple[str, ...]] = ("sizes", "mode", "coordinate_transformation_mode", "nearest_mode")
    x = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 1)
        shape = list(operand_types[0].get_shape())
        sizes = list(attrs.ints("sizes"))
        if len(sizes) != len(shape) or min(sizes, default=1) < 1:
            raise ShapeError(f"sizes {sizes} must give a positive extent for each of the {len(shape)} dims")
        for axis, (d, s) in enumerate(zip(shape, sizes)):
            if d == 0 and s != 0:
                raise ShapeError(f"cannot resize axis {axis} of extent 0 (no values to sample)")
        if attrs.str("mode", "nearest") not in ("nearest", "linear"):
            raise ShapeError("mode must be nearest or linear")
        ctm = attrs.str("coordinate_transformation_mode", "half_pixel")
        if ctm not in _COORDINATE_MODES:
            raise ShapeError(f"coordinate_transformation_mode must be one of {', '.join(_COORDINATE_MODES)}, got {ctm}")
        nearest = attrs.str("nearest_mode", "round_prefer_floor")
        if nearest not in _NEAREST_MODES:
            raise ShapeError(f"nearest_mode must be one of {', '.join(_NEAREST_MODES)}, got {nearest}")
        if attrs.str("mode", "nearest") == "linear":
            _check_element(operand_types[0], "float")
        return [tensor_type(sizes, operand_types[0].element_type)]

    def reference(self, x):
        out = x
        sizes = self.attrs.ints("sizes")
        for axis, size in enumerate(sizes):
            if size != out.shape[axis] or axis >= 2:
                out = self._resize_axis(out, axis, size)
        return [out.astype(x.dtype)]

    def _resize_axis(self, x: np.ndarray, axis: int, size: int) -> np.ndarray:
        n = x.shape[axis]
        coords = resize_source_coords(
            n, size, self.attrs.str("coordinate_transformation_mode", "half_pixel")
        )
        if self.attrs.str("mode", "nearest") == "nearest":
            idx = resize_nearest_index(coords, self.attrs.str("nearest_mode", "round_prefer_floor"))
            return np.take(x, np.clip(idx, 0, n - 1), axis=axis)
        coords = np.clip(coords, 0, n - 1)
        lo = np.floor(coords).astype(np.int64)
        hi = np.minimum(lo + 1, n - 1)
        frac = coords - lo
        shape = [1] * x.ndim
        shape[axis] = size
        frac = frac.reshape(shape)
        return np.take(x, lo, axis=axis) * (1 - frac) + np.take(x, hi, axis=axis) * frac


_COORDINATE_MODES = ("half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel")
_NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def resize_source_coords(n_in: int, n_out: int, mode: str) -> np.ndarray:
    """Source coordinate of each output index (ONNX Resize's formulas)."""
    scale = n_out / n_in
    o = np.arange(n_out, dtype=np.float64)
    if mode == "asymmetric":
        return o / scale
    if mode == "align_corners":
        return o * (n_in - 1) / (n_out - 1) if n_out > 1 else np.zeros(n_out)
    if mode == "pytorch_half_pixel":
        return (o + 0.5) / scale - 0.5 if n_out > 1 else np.zeros(n_out)
    if mode == "half_pixel":
        return (o + 0.5) / scale - 0.5
    raise ShapeError(f"unknown coordinate_transformation_mode {mode}")


def resize_nearest_index(coords: np.ndarray, mode: str) -> np.ndarray:
    if mode == "round_prefer_floor":
        return np.ceil(coords - 0.5).astype(np.int64)
    if mode == "round_prefer_ceil":
        return np.floor(coords + 0.5).astype(np.int64)
    if mode == "floor":
        return np.floor(coords).astype(np.int64)
    if mode == "ceil":
        return np.ceil(coords).astype(np.int64)
    raise ShapeError(f"unknown nearest_mode {mode}")


# ===========================================================================
# control flow: region-carrying ops (if, loop, scan) and their terminator
# ===========================================================================
# Bodies are isolated from above: every value a body reads is an operand of
# the op and an argument of the body's block, so a body is a closed function
# (the evaluator runs it on an environment of its own, and expand-control-flow
# clones it without capture analysis). The ops are not in GRAPH_OPS (the
# straight-line ops every per-op test iterates); expand-control-flow rewrites
# them into straight-line graph ops before lower-to-loops.

from xdsl.irdl import region_def  # noqa: E402  (only these ops carry regions)
from xdsl.traits import HasParent, IsolatedFromAbove, IsTerminator  # noqa: E402


def _yield_types(region, what: str) -> list[TensorType]:
    block = region.blocks.first
    if block is None or len(region.blocks) != 1:
        raise ShapeError(f"{what} must have exactly one block")
    last = block.last_op
    if not isinstance(last, YieldOp):
        raise ShapeError(f"{what} must end with graph.yield")
    return [v.type for v in last.operands]


def _check_block_args(region, expected: Sequence[Attribute], what: str) -> None:
    got = [a.type for a in region.blocks.first.args] if region.blocks.first else []
    if got != list(expected):
        raise ShapeError(
            f"{what} block arguments ({', '.join(map(str, got))}) must be "
            f"({', '.join(map(str, expected))})"
        )


def _scalar_of(t: TensorType, rule: str, what: str) -> None:
    _check_element(t, rule, what)
    if math.prod(t.get_shape()) != 1:
        raise ShapeError(f"{what} must hold one element, got {t}")


class _RegionOp(GraphOp):
    """Region ops infer their results from operands, attributes and the body's
    graph.yield, so ``make`` takes the bodies and ``verify_`` checks them."""

    @classmethod
    def infer_regions(cls, operand_types: Types, attrs: Attrs, regions) -> list[TensorType]:
        raise NotImplementedError(cls.__name__)

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        raise ShapeError("needs its regions to infer result types (build it with make_with_regions)")

    @classmethod
    def make_with_regions(cls, operands, regions, **attributes):
        from dlc.dialects.graph_base import _operand_tensor_types, to_attribute

        values = [o.results[0] if hasattr(o, "results") else o for o in operands]
        attrs = {k: to_attribute(v) for k, v in attributes.items() if v is not None}
        try:
            cls.check_attribute_names(attrs)
            result_types = cls.infer_regions(_operand_tensor_types(values), Attrs(attrs), regions)
        except ShapeError as err:
            raise VerifyException(f"{cls.name}: {err}") from None
        return cls.create(operands=values, result_types=result_types, attributes=attrs,
                          regions=list(regions))

    # Syntax: `graph.loop %a, %b attributes {attrs} {body} : (types) -> types`.
    # The `attributes` keyword (as in func.func) keeps the attribute dictionary
    # apart from the region that follows it; both start with `{`.
    def print(self, printer: Printer) -> None:
        if self.operands:
            printer.print_string(" ")
            printer.print_list(self.operands, printer.print_operand)
        if self.attributes:
            printer.print_string(" attributes")
            printer.print_op_attributes(self.attributes)
        self._print_regions(printer)
        printer.print_string(" : ")
        printer.print_function_type([o.type for o in self.operands], [r.type for r in self.results])

    @classmethod
    def parse(cls, parser: Parser):
        from xdsl.utils.mlir_lexer import MLIRTokenKind

        pos = parser.pos
        operands = []
        if parser._current_token.kind == MLIRTokenKind.PERCENT_IDENT:
            operands = parser.parse_comma_separated_list(
                parser.Delimiter.NONE, parser.parse_unresolved_operand)
        attributes = {}
        if parser.parse_optional_keyword("attributes") is not None:
            attributes = parser.parse_optional_attr_dict()
        regions = cls._parse_regions(parser)
        parser.parse_punctuation(":")
        func_type = parser.parse_function_type()
        values = parser.resolve_operands(operands, func_type.inputs.data, pos)
        return cls.create(operands=values, result_types=list(func_type.outputs.data),
                          attributes=attributes, regions=regions)

    def verify_(self) -> None:
        from dlc.dialects.graph_base import _operand_tensor_types

        try:
            self.check_attribute_names(self.attributes)
            inferred = self.infer_regions(_operand_tensor_types(self.operands), self.attrs,
                                          list(self.regions))
        except ShapeError as err:
            raise VerifyException(f"{self.name}: {err}") from None
        actual = [r.type for r in self.results]
        if list(inferred) != actual:
            raise VerifyException(
                f"{self.name}: result types ({', '.join(map(str, actual))}) do not match the "
                f"inferred types ({', '.join(map(str, inferred))})"
            )


@irdl_op_definition
class IfOp(_RegionOp):
    """Run the ``then`` or the ``else`` body on the operands after the condition
    (a one-element i1 tensor); the results are what the chosen body yields.
    Both bodies take the same arguments and must yield the same types.

    ```mlir
    %r = graph.if %c, %x {
    ^bb0(%a: tensor<3xf32>):
      %n = graph.neg %a : (tensor<3xf32>) -> tensor<3xf32>
      graph.yield %n : (tensor<3xf32>) -> ()
    } {
    ^bb0(%a: tensor<3xf32>):
      graph.yield %a : (tensor<3xf32>) -> ()
    } : (tensor<i1>, tensor<3xf32>) -> tensor<3xf32>
    ```
    """

    name = "graph.if"
    ATTRS: ClassVar[tuple[str, ...]] = ()
    cond = operand_def(TensorType)
    inputs = var_operand_def(TensorType)
    outs = var_result_def(TensorType)
    then_body = region_def("single_block")
    else_body = region_def("single_block")
    traits = traits_def(IsolatedFromAbove())

    @classmethod
    def infer_regions(cls, operand_types: Types, attrs: Attrs, regions) -> list[TensorType]:
        if not operand_types:
            raise ShapeError("expects a condition operand")
        _scalar_of(operand_types[0], "bool", "condition")
        if len(regions) != 2:
            raise ShapeError(f"expects 2 regions (then, else), got {len(regions)}")
        for region, what in zip(regions, ("then body", "else body")):
            _yield_types(region, what)
            _check_block_args(region, operand_types[1:], what)
        then_types = _yield_types(regions[0], "then body")
        else_types = _yield_types(regions[1], "else body")
        if then_types != else_types:
            raise ShapeError(
                f"then body yields ({', '.join(map(str, then_types))}) but else body yields "
                f"({', '.join(map(str, else_types))}); both must yield the same types"
            )
        return then_types

    def reference_regions(self, args, evaluate_block) -> list[np.ndarray]:
        taken = self.then_body if bool(np.asarray(args[0]).reshape(-1)[0]) else self.else_body
        block = taken.blocks.first
        return evaluate_block(block, dict(zip(block.args, args[1:])))


@irdl_op_definition
class LoopOp(_RegionOp):
    """ONNX Loop with a static bound. Operands: the trip count M (one i64), the
    initial condition (one i1), ``num_carried`` loop-carried values, then values
    the body only reads. The body gets (iteration i64, condition i1, carried...,
    read-only...) and yields (next condition, next carried..., scan elements...).
    The body runs while ``i < min(M, max_iterations)`` and the condition holds.
    Results: the final carried values, then each scan element stacked into
    ``max_iterations`` rows (rows of iterations that did not run are zero; the
    static bound is what gives scan outputs a static shape).

    ```mlir
    %r, %s = graph.loop %m, %c, %x attributes {max_iterations = 4 : i64, num_carried = 1 : i64} {
    ^bb0(%i: tensor<i64>, %k: tensor<i1>, %v: tensor<3xf32>):
      %w = graph.add %v, %v : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
      graph.yield %k, %w, %w : (tensor<i1>, tensor<3xf32>, tensor<3xf32>) -> ()
    } : (tensor<i64>, tensor<i1>, tensor<3xf32>) -> (tensor<3xf32>, tensor<4x3xf32>)
    ```
    """

    name = "graph.loop"
    ATTRS: ClassVar[tuple[str, ...]] = ("num_carried", "max_iterations")
    operands_ = var_operand_def(TensorType)
    outs = var_result_def(TensorType)
    body = region_def("single_block")
    traits = traits_def(IsolatedFromAbove())

    @classmethod
    def infer_regions(cls, operand_types: Types, attrs: Attrs, regions) -> list[TensorType]:
        if len(operand_types) < 2:
            raise ShapeError("expects a trip count and a condition operand")
        _scalar_of(operand_types[0], "int", "trip count")
        _scalar_of(operand_types[1], "bool", "condition")
        carried = attrs.int("num_carried")
        bound = attrs.int("max_iterations")
        if not 0 <= carried <= len(operand_types) - 2:
            raise ShapeError(f"num_carried {carried} is out of range for {len(operand_types) - 2} values")
        if bound < 0:
            raise ShapeError(f"max_iterations {bound} must be >= 0")
        if len(regions) != 1:
            raise ShapeError(f"expects 1 region (the body), got {len(regions)}")
        scalar_i1 = TensorType(i1, [])
        _check_block_args(regions[0], [TensorType(i64, []), scalar_i1, *operand_types[2:]], "body")
        yielded = _yield_types(regions[0], "body")
        if len(yielded) < 1 + carried:
            raise ShapeError(f"body yields {len(yielded)} values, needs at least {1 + carried} "
                             "(condition, carried values)")
        _scalar_of(yielded[0], "bool", "yielded condition")
        if yielded[0] != scalar_i1:
            raise ShapeError(f"yielded condition must be {scalar_i1}, got {yielded[0]}")
        want = list(operand_types[2:2 + carried])
        if yielded[1:1 + carried] != want:
            raise ShapeError(
                f"body yields carried values ({', '.join(map(str, yielded[1:1 + carried]))}) "
                f"but they enter as ({', '.join(map(str, want))})"
            )
        scans = [TensorType(t.element_type, [bound, *t.get_shape()]) for t in yielded[1 + carried:]]
        return want + scans

    def reference_regions(self, args, evaluate_block) -> list[np.ndarray]:
        carried_n = self.attrs.int("num_carried")
        bound = self.attrs.int("max_iterations")
        trips = min(int(np.asarray(args[0]).reshape(-1)[0]), bound)
        cond = np.asarray(args[1]).reshape(())
        carried = list(args[2:2 + carried_n])
        readonly = list(args[2 + carried_n:])
        block = self.body.blocks.first
        scan_types = [r.type for r in self.results[carried_n:]]
        scans = [np.zeros(t.get_shape(), numpy_dtype(t.element_type)) for t in scan_types]
        i = 0
        while i < trips and bool(cond):
            inputs = [np.array(i, np.int64), cond, *carried, *readonly]
            outs = evaluate_block(block, dict(zip(block.args, inputs)))
            cond = np.asarray(outs[0]).reshape(())
            carried = outs[1:1 + carried_n]
            for row, value in zip(scans, outs[1 + carried_n:]):
                row[i] = value
            i += 1
        return [*carried, *scans]


@irdl_op_definition
class ScanOp(_RegionOp):
    """ONNX Scan (opset 9+). Operands: ``num_carried`` initial states, then
    ``num_scan_inputs`` scan inputs, then values the body only reads. Step t
    gives the body (states..., slice t of each scan input along its axis,
    read-only...); it yields (next states..., scan elements...). Results: the
    final states, then the scan elements stacked along their output axis.
    Optional per-input/output ``*_axes`` (default 0) and ``*_directions``
    (0 forward, 1 reverse) as in ONNX.

    ```mlir
    %s, %ys = graph.scan %init, %xs attributes {num_carried = 1 : i64, num_scan_inputs = 1 : i64} {
    ^bb0(%acc: tensor<2xf32>, %x: tensor<2xf32>):
      %n = graph.add %acc, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
      graph.yield %n, %n : (tensor<2xf32>, tensor<2xf32>) -> ()
    } : (tensor<2xf32>, tensor<5x2xf32>) -> (tensor<2xf32>, tensor<5x2xf32>)
    ```
    """

    name = "graph.scan"
    ATTRS: ClassVar[tuple[str, ...]] = (
        "num_carried", "num_scan_inputs", "scan_input_axes", "scan_input_directions",
        "scan_output_axes", "scan_output_directions")
    operands_ = var_operand_def(TensorType)
    outs = var_result_def(TensorType)
    body = region_def("single_block")
    traits = traits_def(IsolatedFromAbove())

    @staticmethod
    def layout(attrs: Attrs, operand_types: Types, num_scan_outputs: int):
        """(num_carried, num_scan_inputs, input axes, input reverse flags,
        output axes, output reverse flags, sequence length), checked."""
        carried = attrs.int("num_carried")
        n_in = attrs.int("num_scan_inputs")
        if carried < 0 or n_in < 1 or carried + n_in > len(operand_types):
            raise ShapeError(f"num_carried {carried} + num_scan_inputs {n_in} do not fit "
                             f"{len(operand_types)} operands (at least one scan input)")
        in_types = operand_types[carried:carried + n_in]
        in_axes = attrs.ints("scan_input_axes", [0] * n_in)
        in_dirs = attrs.ints("scan_input_directions", [0] * n_in)
        out_axes = attrs.ints("scan_output_axes", [0] * num_scan_outputs)
        out_dirs = attrs.ints("scan_output_directions", [0] * num_scan_outputs)
        for name, values, n in (("scan_input_axes", in_axes, n_in), ("scan_input_directions", in_dirs, n_in),
                                ("scan_output_axes", out_axes, num_scan_outputs),
                                ("scan_output_directions", out_dirs, num_scan_outputs)):
            if len(values) != n:
                raise ShapeError(f"{name} has {len(values)} entries, expected {n}")
            if "directions" in name and any(d not in (0, 1) for d in values):
                raise ShapeError(f"{name} entries must be 0 (forward) or 1 (reverse)")
        in_axes = [normalize_axis(a, len(t.get_shape()), "scan input axis")
                   for a, t in zip(in_axes, in_types)]
        lengths = {t.get_shape()[a] for a, t in zip(in_axes, in_types)}
        if len(lengths) != 1:
            raise ShapeError(f"scan inputs have different lengths {sorted(lengths)} along their axes")
        return carried, n_in, in_axes, in_dirs, list(out_axes), out_dirs, lengths.pop()

    @classmethod
    def infer_regions(cls, operand_types: Types, attrs: Attrs, regions) -> list[TensorType]:
        if len(regions) != 1:
            raise ShapeError(f"expects 1 region (the body), got {len(regions)}")
        yielded = _yield_types(regions[0], "body")
        carried = attrs.int("num_carried")
        num_out = len(yielded) - carried
        if num_out < 0:
            raise ShapeError(f"body yields {len(yielded)} values, fewer than num_carried {carried}")
        carried, n_in, in_axes, _, out_axes, _, length = cls.layout(attrs, operand_types, num_out)
        slices = []
        for t, a in zip(operand_types[carried:carried + n_in], in_axes):
            shape = list(t.get_shape())
            slices.append(TensorType(t.element_type, shape[:a] + shape[a + 1:]))
        _check_block_args(regions[0], [*operand_types[:carried], *slices,
                                       *operand_types[carried + n_in:]], "body")
        states = list(operand_types[:carried])
        if yielded[:carried] != states:
            raise ShapeError(
                f"body yields states ({', '.join(map(str, yielded[:carried]))}) but they enter "
                f"as ({', '.join(map(str, states))})"
            )
        outs = []
        for t, a in zip(yielded[carried:], out_axes):
            shape = list(t.get_shape())
            a = normalize_axis(a, len(shape) + 1, "scan output axis")
            outs.append(TensorType(t.element_type, shape[:a] + [length] + shape[a:]))
        return states + outs

    def reference_regions(self, args, evaluate_block) -> list[np.ndarray]:
        types = [np.asarray(a) for a in args]
        operand_types = [o.type for o in self.operands]
        num_out = len(self.results) - self.attrs.int("num_carried")
        carried, n_in, in_axes, in_dirs, out_axes, out_dirs, length = self.layout(
            self.attrs, operand_types, num_out)
        states = types[:carried]
        scan_inputs = types[carried:carried + n_in]
        readonly = types[carried + n_in:]
        block = self.body.blocks.first
        rows: list[list[np.ndarray]] = [[] for _ in range(num_out)]
        for t in range(length):
            slices = [np.take(x, length - 1 - t if rev else t, axis=a)
                      for x, a, rev in zip(scan_inputs, in_axes, in_dirs)]
            outs = evaluate_block(block, dict(zip(block.args, [*states, *slices, *readonly])))
            states = outs[:carried]
            for k, value in enumerate(outs[carried:]):
                rows[k].append(np.asarray(value))
        results = list(states)
        for k, (a, rev) in enumerate(zip(out_axes, out_dirs)):
            stacked = np.stack(rows[k][::-1] if rev else rows[k], axis=0)
            a = normalize_axis(a, stacked.ndim, "scan output axis")
            results.append(np.moveaxis(stacked, 0, a))
        return results


@irdl_op_definition
class YieldOp(GraphOp):
    """Terminator of graph.if / graph.loop / graph.scan bodies: their results.

    ```mlir
    graph.yield %a, %b : (tensor<3xf32>, tensor<i1>) -> ()
    ```
    """

    name = "graph.yield"
    ATTRS: ClassVar[tuple[str, ...]] = ()
    values = var_operand_def(TensorType)
    traits = traits_def(IsTerminator(), HasParent(IfOp, LoopOp, ScanOp), Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        return []


# Not in GRAPH_OPS (see the section comment); the dialect adds them.
CONTROL_FLOW_OPS: list[type[GraphOp]] = [IfOp, LoopOp, ScanOp, YieldOp]
for _op in CONTROL_FLOW_OPS:
    _op.CONTROL_FLOW = True


# ===========================================================================
# user-defined ops
# ===========================================================================


@irdl_op_definition
class CustomOp(GraphOp):
    """A user-defined op written in the tensor-expression language
    (``dlc.frontends.te``): operands bind to its ``input`` declarations in
    order (or, with none, to the tensors it reads before computing them, in
    order of first use); results are its outputs. Shapes follow the TE's
    range rules; lower-to-loops lowers it through the TE lowering.

    ```mlir
    %c = graph.custom %a, %b {te = "C[i, j] = sum(k: A[i, k] * B[k, j])"} : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
    ```
    """

    name = "graph.custom"
    ATTRS: ClassVar[tuple[str, ...]] = ("te",)
    inputs = var_operand_def(TensorType)
    outs = var_result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        from dlc.frontends.te import TEError, custom_program
        from dlc.frontends.te.lowering import tensor_type_of

        try:
            program = custom_program(attrs.str("te"), operand_types)
        except TEError as err:
            raise ShapeError(f"in te: {err}") from None
        return [tensor_type_of(t) for t in program.outputs]

    def reference(self, *inputs: np.ndarray) -> list[np.ndarray]:
        from dlc.frontends.te import custom_program
        from dlc.frontends.te.interpret import run_program

        program = custom_program(self.attrs.str("te"), [o.type for o in self.operands])
        return run_program(program, list(inputs))


# ---------------------------------------------------------------------------
# narrow element types: casts and (de)quantization (narrow-types work)
# ---------------------------------------------------------------------------

# ONNX Cast applies `saturate` to these targets (float4 always saturates).
_SATURATING_NARROW = ("f8E4M3FN", "f8E4M3FNUZ", "f8E5M2", "f8E5M2FNUZ")


def narrow_cast_reference(x: np.ndarray, to: Attribute, saturate: bool, round_mode: str) -> np.ndarray:
    """numpy (ml_dtypes) semantics of graph.cast with a narrow side, per ONNX Cast-24."""
    dtype = numpy_dtype(to)
    narrow_float_source = x.dtype.type.__module__ == "ml_dtypes" and x.dtype.kind != "V" or (
        x.dtype.type.__module__ == "ml_dtypes" and "int" not in x.dtype.name)
    if narrow_float_source and not is_float(to):
        x = x.astype(np.float32)  # narrow floats convert through f32, like the kernel
    if str(to) == "f8E8M0FNU":
        return _to_e8m0(np.asarray(x, np.float32), saturate, round_mode).view(dtype)
    if str(to) in _SATURATING_NARROW and saturate:
        import ml_dtypes

        info = ml_dtypes.finfo(dtype)
        x = np.clip(x, info.min, info.max)
    return x.astype(dtype)


def _to_e8m0(x: np.ndarray, saturate: bool, round_mode: str) -> np.ndarray:
    """Codes of float8e8m0 (onnx.numpy_helper.to_float8e8m0): the f32 exponent
    field rounded by ``round_mode``, the sign ignored, NaN/Inf -> 0xFF."""
    bits = x.view(np.uint32)
    exp = ((bits >> 23) & 0xFF).astype(np.uint16)
    special = exp == 0xFF
    if round_mode == "up":
        up = (bits & 0x7FFFFF) > 0
    elif round_mode == "nearest":
        up = ((bits & 0x400000) > 0) & (((bits & 0x3FFFFF) > 0) | (exp > 0))
    else:
        up = np.zeros(bits.shape, bool)
    if saturate:
        up &= exp != 0xFE
    code = np.where(special, 0xFF, exp + (up & ~special)).astype(np.uint8)
    return code


# ---------------------------------------------------------------------------
# indexing: gather/scatter/top-k (indexing work)
# ---------------------------------------------------------------------------

# Index semantics shared by these ops (the kernels in lowering/kernels/indexing.py
# implement the same): a negative index counts from the end of its dim; an index
# still outside the dim after that is clamped into it by the gathers (as
# graph.gather does) and makes the scatters skip that update. Either way no
# kernel reads or writes outside a buffer.

from dlc.dialects.graph_base import is_narrow  # noqa: E402

SCATTER_REDUCTIONS = ("none", "add", "mul", "max", "min")


def _scatter_reduction(attrs: Attrs, element: Attribute) -> str:
    reduction = attrs.str("reduction", "none")
    if reduction not in SCATTER_REDUCTIONS:
        raise ShapeError(f"reduction must be one of {', '.join(SCATTER_REDUCTIONS)}, got '{reduction}'")
    if reduction != "none" and (is_bool(element) or is_narrow(element)):
        raise ShapeError(f"reduction '{reduction}' needs float or integer data, got {element}")
    return reduction


def _combine(reduction: str, old, new):
    """One scatter update, as numpy (max/min propagate NaN, like arith.maximumf;
    integers wrap, like the kernels' arith ops)."""
    if reduction == "add":
        with np.errstate(over="ignore"):
            return old + new
    if reduction == "mul":
        with np.errstate(over="ignore"):
            return old * new
    if reduction == "max":
        return np.maximum(old, new)
    if reduction == "min":
        return np.minimum(old, new)
    return new


def _wrap(index: int, n: int) -> int:
    return index + n if index < 0 else index


def _clamped(indices: np.ndarray, dims: Sequence[int]) -> np.ndarray:
    """Gather addresses: negative ones wrapped, then clamped into ``dims``
    (broadcast along the last axis of ``indices``)."""
    idx = indices.astype(np.int64)
    limits = np.asarray(dims, dtype=np.int64)
    idx = np.where(idx < 0, idx + limits, idx)
    return np.clip(idx, 0, limits - 1)


def _nd_shapes(data: TensorType, indices: TensorType, batch_dims: int) -> tuple[int, list[int]]:
    """Check GatherND/ScatterND operands; (k, shape of the gathered/scattered values)."""
    _check_element(indices, "int", "indices")
    d, i = list(data.get_shape()), list(indices.get_shape())
    if not d:
        raise ShapeError("data must have rank >= 1")
    if not i:
        raise ShapeError("indices must have rank >= 1 (the last dim holds the index tuples)")
    if not 0 <= batch_dims < min(len(d), len(i)):
        raise ShapeError(
            f"batch_dims {batch_dims} must be in [0, {min(len(d), len(i))}) "
            f"(below the ranks of data {len(d)} and indices {len(i)})"
        )
    if d[:batch_dims] != i[:batch_dims]:
        raise ShapeError(
            f"the first {batch_dims} (batch) dims of data {d} and indices {i} must be equal"
        )
    k = i[-1]
    if not 1 <= k <= len(d) - batch_dims:
        raise ShapeError(
            f"index tuples have {k} entries (last dim of indices), which must be in "
            f"[1, {len(d) - batch_dims}] (data rank {len(d)} minus batch_dims {batch_dims})"
        )
    return k, i[:-1] + d[batch_dims + k:]


@irdl_op_definition
class GatherNDOp(GraphOp):
    """ONNX GatherND: the last dim of ``indices`` holds index tuples into data's
    dims after the first ``batch_dims`` (which data and indices share);
    out = indices.shape[:-1] + data.shape[batch_dims + k:]. Negative indices
    count from the end; out-of-range ones are clamped.

    ```mlir
    %y = graph.gather_nd %x, %i {batch_dims = 1 : i64} : (tensor<2x5x3xf32>, tensor<2x4x1xi64>) -> tensor<2x4x3xf32>
    ```
    """

    name = "graph.gather_nd"
    ATTRS: ClassVar[tuple[str, ...]] = ("batch_dims",)
    NARROW_TYPES: ClassVar[bool] = True  # moves storage bits only
    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 2)
        data, indices = operand_types
        _, shape = _nd_shapes(data, indices, attrs.int("batch_dims", 0))
        return [tensor_type(shape, data.element_type)]

    def reference(self, data, indices):
        b = self.attrs.int("batch_dims", 0)
        k = indices.shape[-1]
        idx = _clamped(indices, data.shape[b:b + k])
        out = np.empty(self.results[0].type.get_shape(), dtype=data.dtype)
        for batch in np.ndindex(data.shape[:b]):
            tuples = idx[batch]  # (..., k)
            out[batch] = data[batch][tuple(np.moveaxis(tuples, -1, 0))]
        return [out]


@irdl_op_definition
class ScatterNDOp(GraphOp):
    """ONNX ScatterND: out = data, then for every index tuple (the last dim of
    ``indices``, after ``batch_dims`` shared leading dims) the slice
    ``updates[...]`` is combined into ``out[tuple]`` in order with
    ``reduction`` (none | add | mul | max | min; none: the last write wins).
    updates.shape = indices.shape[:-1] + data.shape[batch_dims + k:]. Negative
    indices count from the end; an out-of-range tuple is skipped. (ONNX's
    ScatterND has no ``batch_dims``; it is here for symmetry with gather_nd.)

    ```mlir
    %y = graph.scatter_nd %x, %i, %u {reduction = "add"} : (tensor<5x3xf32>, tensor<4x1xi64>, tensor<4x3xf32>) -> tensor<5x3xf32>
    ```
    """

    name = "graph.scatter_nd"
    ATTRS: ClassVar[tuple[str, ...]] = ("reduction", "batch_dims")
    NARROW_TYPES: ClassVar[bool] = True  # with reduction none only (_scatter_reduction)
    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    updates = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 3)
        data, indices, updates = operand_types
        _scatter_reduction(attrs, data.element_type)
        _, shape = _nd_shapes(data, indices, attrs.int("batch_dims", 0))
        if list(updates.get_shape()) != shape:
            raise ShapeError(
                f"updates shape {list(updates.get_shape())} must be "
                f"indices.shape[:-1] + data.shape[batch_dims + k:] = {shape}"
            )
        if updates.element_type != data.element_type:
            raise ShapeError(f"updates element type {updates.element_type} must be data's {data.element_type}")
        return [data]

    def reference(self, data, indices, updates):
        reduction = self.attrs.str("reduction", "none")
        b = self.attrs.int("batch_dims", 0)
        dims = data.shape[b:b + indices.shape[-1]]
        out = data.copy()
        for i in np.ndindex(indices.shape[:-1]):
            pos = tuple(_wrap(int(v), n) for v, n in zip(indices[i], dims))
            if all(0 <= p < n for p, n in zip(pos, dims)):
                target = i[:b] + pos
                out[target] = _combine(reduction, out[target], updates[i])
        return [out]


@irdl_op_definition
class ScatterElementsOp(GraphOp):
    """ONNX ScatterElements (and Scatter): out = data, then for every position p
    of ``indices``, out[p with p[axis] = indices[p]] is combined with
    ``updates[p]`` in order by ``reduction`` (none | add | mul | max | min).
    indices and updates have data's rank and one shape, no larger than data
    outside ``axis``. Negative indices count from the end; out-of-range ones
    are skipped.

    ```mlir
    %y = graph.scatter_elements %x, %i, %u {axis = 1 : i64, reduction = "max"} : (tensor<3x5xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x5xf32>
    ```
    """

    name = "graph.scatter_elements"
    ATTRS: ClassVar[tuple[str, ...]] = ("axis", "reduction")
    NARROW_TYPES: ClassVar[bool] = True  # with reduction none only (_scatter_reduction)
    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    updates = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 3)
        data, indices, updates = operand_types
        _check_element(indices, "int", "indices")
        _scatter_reduction(attrs, data.element_type)
        d, i = list(data.get_shape()), list(indices.get_shape())
        if not d:
            raise ShapeError("data must have rank >= 1")
        axis = normalize_axis(attrs.int("axis", 0), len(d))
        if len(i) != len(d):
            raise ShapeError(f"indices rank {len(i)} must equal data rank {len(d)}")
        if any(n > m for a, (n, m) in enumerate(zip(i, d)) if a != axis):
            raise ShapeError(f"indices shape {i} exceeds data shape {d} outside axis {axis}")
        if list(updates.get_shape()) != i:
            raise ShapeError(
                f"updates shape {list(updates.get_shape())} must equal indices shape {i}"
            )
        if updates.element_type != data.element_type:
            raise ShapeError(f"updates element type {updates.element_type} must be data's {data.element_type}")
        return [data]

    def reference(self, data, indices, updates):
        reduction = self.attrs.str("reduction", "none")
        axis = normalize_axis(self.attrs.int("axis", 0), data.ndim)
        n = data.shape[axis]
        out = data.copy()
        for p in np.ndindex(indices.shape):
            j = _wrap(int(indices[p]), n)
            if 0 <= j < n:
                target = p[:axis] + (j,) + p[axis + 1:]
                out[target] = _combine(reduction, out[target], updates[p])
        return [out]


@irdl_op_definition
class TopKOp(GraphOp):
    """ONNX TopK with a constant ``k``: the k largest (``largest``, default
    true) or smallest elements along ``axis`` (default -1) and their i64
    indices, best first; equal values keep the lower index first and NaN
    counts as larger than every number. ``sorted = false`` is accepted (ONNX
    leaves the order open); the results are sorted either way.

    ```mlir
    %v, %i = graph.top_k %x {k = 3 : i64, axis = 1 : i64} : (tensor<2x7xf32>) -> (tensor<2x3xf32>, tensor<2x3xi64>)
    ```
    """

    name = "graph.top_k"
    ATTRS: ClassVar[tuple[str, ...]] = ("k", "axis", "largest", "sorted")
    x = operand_def(TensorType)
    values = result_def(TensorType)
    indices = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 1)
        x = operand_types[0]
        _check_element(x, "numeric")
        shape = list(x.get_shape())
        if not shape:
            raise ShapeError("input must have rank >= 1")
        axis = normalize_axis(attrs.int("axis", -1), len(shape))
        k = attrs.int("k")
        if not 0 <= k <= shape[axis]:
            raise ShapeError(f"k = {k} must be in [0, {shape[axis]}] (the extent of axis {axis})")
        shape[axis] = k
        return [tensor_type(shape, x.element_type), tensor_type(shape, i64)]

    def reference(self, x):
        axis = normalize_axis(self.attrs.int("axis", -1), x.ndim)
        k, n = self.attrs.int("k"), x.shape[axis]
        if self.attrs.bool("largest", True):
            # a stable ascending sort of the flipped axis, reversed: descending
            # with equal values in ascending original index order
            order = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
            order = n - 1 - np.flip(order, axis)
        else:
            order = np.argsort(x, axis=axis, kind="stable")
        idx = np.take(order, np.arange(k), axis=axis).astype(np.int64)
        return [np.take_along_axis(x, idx, axis=axis), idx]


@irdl_op_definition
class ReverseSequenceOp(GraphOp):
    """ONNX ReverseSequence: for each batch entry b (along ``batch_axis``,
    default 1), reverse the first ``seq_lens[b]`` elements along ``time_axis``
    (default 0); the rest are copied. Lengths are clamped into [0, time extent].

    ```mlir
    %y = graph.reverse_sequence %x, %lens {batch_axis = 0 : i64, time_axis = 1 : i64} : (tensor<3x5x2xf32>, tensor<3xi64>) -> tensor<3x5x2xf32>
    ```
    """

    name = "graph.reverse_sequence"
    ATTRS: ClassVar[tuple[str, ...]] = ("batch_axis", "time_axis")
    NARROW_TYPES: ClassVar[bool] = True  # moves storage bits only
    x = operand_def(TensorType)
    seq_lens = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 2)
        x, lens = operand_types
        _check_element(lens, "int", "seq_lens")
        shape = list(x.get_shape())
        if len(shape) < 2:
            raise ShapeError(f"input must have rank >= 2, got {len(shape)}")
        batch = normalize_axis(attrs.int("batch_axis", 1), len(shape), "batch_axis")
        time = normalize_axis(attrs.int("time_axis", 0), len(shape), "time_axis")
        if batch == time:
            raise ShapeError(f"batch_axis and time_axis must differ, both are {batch}")
        if list(lens.get_shape()) != [shape[batch]]:
            raise ShapeError(
                f"seq_lens shape {list(lens.get_shape())} must be [{shape[batch]}] "
                f"(the batch extent)"
            )
        return [x]

    def reference(self, x, seq_lens):
        batch = normalize_axis(self.attrs.int("batch_axis", 1), x.ndim)
        time = normalize_axis(self.attrs.int("time_axis", 0), x.ndim)
        lens = np.clip(seq_lens.astype(np.int64), 0, x.shape[time])
        out = x.copy()
        for b, n in enumerate(lens):
            sel = [slice(None)] * x.ndim
            sel[batch] = b
            sel[time] = slice(0, int(n))
            out[tuple(sel)] = np.flip(x[tuple(sel)], axis=time - (batch < time))
        return [out]



# ---------------------------------------------------------------------------
# more elementwise, bitwise and pooling ops (simple-ops work)
# ---------------------------------------------------------------------------


AcosOp = _unary("acos", np.arccos, doc="arc cosine (NaN outside [-1, 1])")
AsinOp = _unary("asin", np.arcsin, doc="arc sine (NaN outside [-1, 1])")
AtanOp = _unary("atan", np.arctan, doc="arc tangent")


def _int_example(op_cls: type[GraphOp], kind: str, doc: str) -> None:
    """Docstring with an integer-typed example (the factories show f32)."""
    if kind == "unary":
        example = f"%y = {op_cls.name} %x : (tensor<2x3xi32>) -> tensor<2x3xi32>"
    else:
        example = f"%z = {op_cls.name} %a, %b : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi32>"
    op_cls.__doc__ = f"{doc} (integer tensors).\n\n```mlir\n{example}\n```\n"


def _shift(a: np.ndarray, b: np.ndarray, left: bool) -> np.ndarray:
    # ONNX BitShift: a shift count outside [0, bits) gives 0, except a right
    # shift of a negative signed value, which fills with the sign (-1)
    a, b = np.broadcast_arrays(a, b)
    bits = np.iinfo(a.dtype).bits
    out_of_range = (b < 0) | (b >= bits)
    count = np.where(out_of_range, 0, b).astype(a.dtype)
    if left:
        unsigned = np.dtype(f"u{a.dtype.itemsize}")
        shifted = np.left_shift(a.view(unsigned), count.view(unsigned)).view(a.dtype)
        return np.where(out_of_range, 0, shifted).astype(a.dtype)
    fill = np.where(a < 0, -1, 0) if a.dtype.kind == "i" else np.zeros_like(a)
    return np.where(out_of_range, fill, np.right_shift(a, count)).astype(a.dtype)


BitwiseNotOp = _unary("bitwise_not", np.invert, "int")
BitwiseAndOp = _binary("bitwise_and", np.bitwise_and, "int")
BitwiseOrOp = _binary("bitwise_or", np.bitwise_or, "int")
BitwiseXorOp = _binary("bitwise_xor", np.bitwise_xor, "int")
ShiftLeftOp = _binary("shift_left", lambda a, b: _shift(a, b, True), "int")
ShiftRightOp = _binary("shift_right", lambda a, b: _shift(a, b, False), "int")
_int_example(BitwiseNotOp, "unary", "Elementwise bitwise complement ~x")
_int_example(BitwiseAndOp, "binary", "Elementwise a & b with numpy broadcasting")
_int_example(BitwiseOrOp, "binary", "Elementwise a | b with numpy broadcasting")
_int_example(BitwiseXorOp, "binary", "Elementwise a ^ b with numpy broadcasting")
_int_example(
    ShiftLeftOp, "binary",
    "Elementwise a << b with numpy broadcasting; bits shifted out are lost and a count "
    "outside [0, bit width) gives 0",
)
_int_example(
    ShiftRightOp, "binary",
    "Elementwise a >> b with numpy broadcasting, arithmetic for signed and logical for "
    "unsigned types; a count outside [0, bit width) gives 0, or -1 for a negative signed a",
)


def pool_geometry(attrs: Attrs, in_dims: Sequence[int]):
    """(kernel, strides, dilations, padding [begins.., ends..], out dims) of an
    N-D pooling window over spatial dims ``in_dims``; raises ShapeError."""
    n = len(in_dims)
    kernel = attrs.ints("kernel")
    if len(kernel) != n or min(kernel) < 1:
        raise ShapeError(f"attribute 'kernel' must be {n} values >= 1, got {list(kernel)}")
    strides, dil, pads = _window_attrs(attrs, n)
    ceil = attrs.bool("ceil_mode")
    out = []
    for i, size in enumerate(in_dims):
        if max(pads[i], pads[n + i]) >= dil[i] * (kernel[i] - 1) + 1:
            raise ShapeError("padding must be smaller than the window")
        dim = f"spatial dim {i}"
        out.append(_pool_out(size, kernel[i], strides[i], pads[i], pads[n + i], dil[i], ceil, dim))
        _check_windows_see_input(size, kernel[i], strides[i], pads[i], dil[i], out[-1], dim)
    return kernel, strides, dil, pads, out


def pool_index_steps(in_dims: Sequence[int], storage_order: int) -> list[int]:
    """Per spatial dim, the step of the flat Indices value: row-major
    (storage_order 0) or column-major (1) over the spatial dims."""
    dims = list(in_dims) if storage_order == 0 else list(reversed(in_dims))
    steps = [math.prod(dims[i + 1:]) for i in range(len(dims))]
    return steps if storage_order == 0 else list(reversed(steps))


class _PoolNdOp(GraphOp):
    """Channels-first (N, C, spatial...) pooling over any number of spatial
    dims; the 2-D ops above keep their own tuned kernels and layouts."""

    x = operand_def(TensorType)
    traits = traits_def(Pure())
    SPATIAL: ClassVar[tuple[int, ...]] = (3,)

    @classmethod
    def geometry(cls, operand_types: Types, attrs: Attrs):
        _expect_count(operand_types, 1)
        _check_element(operand_types[0], "numeric")
        x = list(operand_types[0].get_shape())
        if len(x) - 2 not in cls.SPATIAL:
            ranks = " or ".join(str(r + 2) for r in cls.SPATIAL)
            raise ShapeError(f"input must be {ranks}-D (N, C, spatial...), got rank {len(x)}")
        return x[:2], pool_geometry(attrs, x[2:])

    def windows(self, x: np.ndarray, fill: float):
        """Yield (tap offsets, patch, inside-input mask, inside-input-or-padding
        mask) per window tap; patches have the output's shape."""
        kernel, strides, dil, pads, out = pool_geometry(self.attrs, x.shape[2:])
        n = len(kernel)
        extra = [max((out[i] - 1) * strides[i] + dil[i] * (kernel[i] - 1) + 1
                     - (x.shape[2 + i] + pads[i] + pads[n + i]), 0) for i in range(n)]
        pad = [(pads[i], pads[n + i] + extra[i]) for i in range(n)]
        xp = np.pad(x, [(0, 0), (0, 0)] + pad, constant_values=fill)
        inside = np.pad(np.ones(x.shape[2:], dtype=np.int64), pad)
        # the ceil-mode overhang (extra) counts as neither input nor padding
        in_pad = np.pad(np.ones([x.shape[2 + i] + pads[i] + pads[n + i] for i in range(n)], np.int64),
                        [(0, e) for e in extra])
        for taps in np.ndindex(*kernel):
            sl = tuple(slice(t * dil[i], t * dil[i] + strides[i] * (out[i] - 1) + 1, strides[i])
                       for i, t in enumerate(taps))
            yield taps, xp[(slice(None), slice(None)) + sl], inside[sl], in_pad[sl]

    def max_and_argmax(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Window maxima and the flat (row-major) input index of the first maximum."""
        kernel, strides, dil, pads, out = pool_geometry(self.attrs, x.shape[2:])
        n = len(kernel)
        lowest = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
        # the first input tap of a window always wins (index -1 = none yet), so
        # a window of `lowest` values still points at an input element
        best = np.full(x.shape[:2] + tuple(out), lowest, dtype=x.dtype)
        index = np.full(best.shape, -1, dtype=np.int64)
        plane = np.arange(x.shape[0] * x.shape[1], dtype=np.int64).reshape(x.shape[:2] + (1,) * n)
        steps = pool_index_steps(x.shape[2:], self.attrs.int("storage_order", 0))
        for taps, patch, inside, _ in self.windows(x, lowest):
            flat = plane * math.prod(x.shape[2:])
            for i, t in enumerate(taps):
                pos = np.arange(out[i]) * strides[i] + t * dil[i] - pads[i]
                flat = flat + (pos * steps[i]).reshape((-1,) + (1,) * (n - 1 - i))
            better = ((patch > best) | (index < 0)) & (inside > 0)
            best = np.where(better, patch, best)
            index = np.where(better, flat, index)
        return best, index


def _pool_nd_doc(cls: type[GraphOp], what: str, example: str) -> None:
    cls.__doc__ = (
        f"{what} over 3 spatial dims (N, C, D, H, W). Attributes: ``kernel`` [3] "
        "(required), ``strides``, ``padding`` [begins.., ends..], ``dilations``, "
        f"``ceil_mode``, ``count_include_pad`` (average only).\n\n```mlir\n{example}\n```\n"
    )


@irdl_op_definition
class MaxPool3DOp(_PoolNdOp):
    name = "graph.max_pool3d"
    ATTRS: ClassVar[tuple[str, ...]] = ("kernel", "strides", "padding", "dilations", "ceil_mode")
    out = result_def(TensorType)

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        lead, (*_, out) = cls.geometry(operand_types, attrs)
        return [tensor_type(lead + out, operand_types[0].element_type)]

    def reference(self, x: np.ndarray) -> list[np.ndarray]:
        return [_contiguous(self.max_and_argmax(x)[0]).astype(x.dtype)]


@irdl_op_definition
class AvgPool3DOp(_PoolNdOp):
    name = "graph.avg_pool3d"
    ATTRS: ClassVar[tuple[str, ...]] = (
        "kernel", "strides", "padding", "dilations", "ceil_mode", "count_include_pad"
    )
    out = result_def(TensorType)

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        lead, (*_, out) = cls.geometry(operand_types, attrs)
        return [tensor_type(lead + out, operand_types[0].element_type)]

    def reference(self, x: np.ndarray) -> list[np.ndarray]:
        include_pad = self.attrs.bool("count_include_pad")
        total = count = 0
        for _, patch, inside, in_pad in self.windows(x.astype(np.float64), 0.0):
            total = total + patch
            count = count + (in_pad if include_pad else inside)
        return [_contiguous(total / np.maximum(count, 1)).astype(x.dtype)]


@irdl_op_definition
class MaxPoolWithIndicesOp(_PoolNdOp):
    """Max pooling over 1, 2 or 3 spatial dims (channels first) that also
    returns, per output, the flat row-major index into the whole input of the
    window's first maximum (ONNX MaxPool's Indices output); ``storage_order``
    = 1 numbers the spatial positions column-major. Other attributes as max_pool3d.

    ```mlir
    %y, %i = graph.max_pool_with_indices %x {kernel = array<i64: 2, 2>} : (tensor<1x2x5x5xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xi64>)
    ```
    """

    name = "graph.max_pool_with_indices"
    ATTRS: ClassVar[tuple[str, ...]] = (
        "kernel", "strides", "padding", "dilations", "ceil_mode", "storage_order"
    )
    SPATIAL: ClassVar[tuple[int, ...]] = (1, 2, 3)
    out = result_def(TensorType)
    indices = result_def(TensorType)

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        lead, (*_, out) = cls.geometry(operand_types, attrs)
        if attrs.int("storage_order", 0) not in (0, 1):
            raise ShapeError(f"storage_order must be 0 or 1, got {attrs.int('storage_order', 0)}")
        return [tensor_type(lead + out, operand_types[0].element_type), tensor_type(lead + out, i64)]

    def reference(self, x: np.ndarray) -> list[np.ndarray]:
        best, index = self.max_and_argmax(x)
        return [_contiguous(best).astype(x.dtype), _contiguous(index)]


_pool_nd_doc(
    MaxPool3DOp, "Max pooling",
    "%y = graph.max_pool3d %x {kernel = array<i64: 2, 2, 2>, strides = array<i64: 2, 2, 2>} "
    ": (tensor<1x3x5x6x7xf32>) -> tensor<1x3x2x3x3xf32>",
)
@irdl_op_definition
class DetOp(GraphOp):
    """Determinant of the square matrices in the last two dims (batched over
    the leading dims); the kernel uses LU with partial pivoting in f64.

    ```mlir
    %d = graph.det %x : (tensor<2x3x3xf32>) -> tensor<2xf32>
    ```
    """

    name = "graph.det"
    ATTRS: ClassVar[tuple[str, ...]] = ()
    x = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 1)
        _check_element(operand_types[0], "float")
        shape = list(operand_types[0].get_shape())
        if len(shape) < 2 or shape[-1] != shape[-2]:
            raise ShapeError(f"input must be square matrices [..., M, M], got shape {shape}")
        return [tensor_type(shape[:-2], operand_types[0].element_type)]

    def reference(self, x: np.ndarray) -> list[np.ndarray]:
        return [_contiguous(np.linalg.det(x.astype(np.float64))).astype(x.dtype)]


_pool_nd_doc(
    AvgPool3DOp, "Average pooling (``count_include_pad`` counts padded zeros, never the ceil-mode overhang)",
    "%y = graph.avg_pool3d %x {kernel = array<i64: 3, 3, 3>, padding = array<i64: 1, 1, 1, 1, 1, 1>} "
    ": (tensor<1x3x5x6x7xf32>) -> tensor<1x3x5x6x7xf32>",
)


# ---------------------------------------------------------------------------
# spatial sampling and signal ops: grid_sample, col2im, dft (spatial work)
# ---------------------------------------------------------------------------


_GRID_MODES = ("linear", "nearest", "cubic")
_GRID_PADDINGS = ("zeros", "border", "reflection")


def _spatial_choice(attrs: Attrs, name: str, default: str, choices: Sequence[str]) -> str:
    value = attrs.str(name, default)
    if value not in choices:
        raise ShapeError(f"{name} must be one of {', '.join(choices)}, got {value}")
    return value


@irdl_op_definition
class GridSampleOp(GraphOp):
    """Sample ``x`` (N x C x D1..Dr, r = 1..3) at the normalized coordinates of
    ``grid`` (N x O1..Or x r, values in [-1, 1], innermost coordinate first: x,
    then y, then z), as ONNX GridSample. ``mode``: linear (default) | nearest |
    cubic; ``padding_mode``: zeros (default) | border | reflection;
    ``align_corners``: -1 and 1 are the centers (true) or outer edges (false)
    of the corner elements. Result: N x C x O1..Or.

    ```mlir
    %y = graph.grid_sample %x, %grid {mode = "cubic", padding_mode = "border"} : (tensor<1x3x5x7xf32>, tensor<1x2x4x2xf32>) -> tensor<1x3x2x4xf32>
    ```
    """

    name = "graph.grid_sample"
    ATTRS: ClassVar[tuple[str, ...]] = ("mode", "padding_mode", "align_corners")
    x = operand_def(TensorType)
    grid = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 2)
        x_t, grid_t = operand_types
        _check_element(x_t, "float", "x")
        _check_element(grid_t, "float", "grid")
        xs, gs = list(x_t.get_shape()), list(grid_t.get_shape())
        if not 3 <= len(xs) <= 5:
            raise ShapeError(f"x must be N x C x D1..Dr with 1 <= r <= 3, got rank {len(xs)}")
        r = len(xs) - 2
        if len(gs) != r + 2 or gs[-1] != r:
            raise ShapeError(f"grid must be N x O1..O{r} x {r} for a {r}-D x, got {gs}")
        if gs[0] != xs[0]:
            raise ShapeError(f"grid batch {gs[0]} differs from x batch {xs[0]}")
        if min(xs[2:]) < 1:
            raise ShapeError(f"spatial dims of x must be >= 1, got {xs[2:]}")
        _spatial_choice(attrs, "mode", "linear", _GRID_MODES)
        _spatial_choice(attrs, "padding_mode", "zeros", _GRID_PADDINGS)
        return [tensor_type(xs[:2] + gs[1:-1], x_t.element_type)]

    def reference(self, x, grid):
        a = self.attrs
        return [grid_sample_reference(
            x, grid, a.str("mode", "linear"), a.str("padding_mode", "zeros"),
            a.bool("align_corners"))]


def grid_reflect(v: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Reflect ``v`` at the borders ``lo``/``hi`` until inside (ONNX's _gs_reflect)."""
    span = hi - lo
    if span <= 0:
        return np.full_like(v, lo)
    below = v < lo
    dist = np.where(below, lo - v, v - hi)
    flips = np.floor(dist / span)
    rest = dist - flips * span
    even = np.fmod(flips, 2) == 0
    low_side = np.where(below, even, ~even)  # ends at lo + rest, else at hi - rest
    reflected = np.where(low_side, lo + rest, hi - rest)
    return np.where((v < lo) | (v > hi), reflected, v)


def grid_cubic_weights(t: np.ndarray) -> list[np.ndarray]:
    """Keys cubic weights (alpha = -0.75) of the taps at -1, 0, 1, 2 for a fraction t."""
    A = -0.75
    w0 = ((A * (t + 1) - 5 * A) * (t + 1) + 8 * A) * (t + 1) - 4 * A
    w1 = ((A + 2) * t - (A + 3)) * t * t + 1
    w2 = ((A + 2) * (1 - t) - (A + 3)) * (1 - t) * (1 - t) + 1
    w3 = ((A * (2 - t) - 5 * A) * (2 - t) + 8 * A) * (2 - t) - 4 * A
    return [w0, w1, w2, w3]


def grid_sample_reference(x, grid, mode: str, padding: str, align_corners: bool) -> np.ndarray:
    """ONNX GridSample in f64 (numpy, vectorized over the output)."""
    import itertools

    dims = x.shape[2:]
    r = len(dims)
    g = grid.astype(np.float64)
    taps_per_dim = []  # per spatial dim: list of (index array, weight array, valid array)
    for i, d in enumerate(dims):
        n = g[..., r - 1 - i]
        c = (n + 1) / 2 * (d - 1) if align_corners else ((n + 1) * d - 1) / 2
        lo, hi = (0.0, d - 1.0) if align_corners else (-0.5, d - 0.5)
        if mode == "nearest":
            c = np.rint(c)
        outside = (c < lo) | (c > hi)
        if padding == "border":
            c = np.where(outside, np.clip(c, 0, d - 1), c)
        elif padding == "reflection":
            c = grid_reflect(c, lo, hi)
        c = np.clip(c, -8.0, d + 8.0)  # far outside: every tap is padding anyway
        base = np.floor(c)
        t = c - base
        if mode == "nearest":
            offsets, weights = [0], [np.ones_like(c)]
        elif mode == "linear":
            offsets, weights = [0, 1], [1 - t, t]
        else:
            offsets, weights = [-1, 0, 1, 2], grid_cubic_weights(t)
        taps = []
        for off, w in zip(offsets, weights):
            idx = base + off
            if padding == "reflection":
                idx = np.trunc(grid_reflect(idx, lo, hi))
            valid = (idx >= 0) & (idx <= d - 1)
            idx = np.clip(idx, 0, d - 1).astype(np.int64)
            taps.append((idx, w, valid))
        taps_per_dim.append(taps)
    batch = np.arange(x.shape[0]).reshape((-1,) + (1,) * r)
    out = np.zeros((x.shape[0],) + g.shape[1:-1] + (x.shape[1],), np.float64)
    xt = np.moveaxis(x, 1, -1).astype(np.float64)  # N x D.. x C
    for combo in itertools.product(*taps_per_dim):
        weight = np.ones(g.shape[:-1])
        valid = np.ones(g.shape[:-1], bool)
        for _, w, v in combo:
            weight = weight * w
            valid = valid & v
        values = xt[(batch,) + tuple(idx for idx, _, _ in combo)]
        if padding == "zeros":
            values = np.where(valid[..., None], values, 0.0)
        out += values * weight[..., None]
    return np.moveaxis(out, -1, 1).astype(x.dtype)


@irdl_op_definition
class DftOp(GraphOp):
    """Discrete Fourier transform of length ``length`` along ``axis`` (not the
    last dim) of a signal whose last dim is 1 (real) or 2 (real, imaginary),
    as ONNX DFT: input samples beyond ``length`` are dropped, missing ones are
    zero. ``inverse``: the inverse transform (scaled by 1/length);
    ``onesided``: forward keeps bins 0..length/2, inverse reads them as a
    Hermitian half spectrum and returns a real signal (last dim 1).

    ```mlir
    %y = graph.dft %x {axis = 1 : i64, length = 7 : i64, onesided = true} : (tensor<2x5x1xf32>) -> tensor<2x4x2xf32>
    ```
    """

    name = "graph.dft"
    ATTRS: ClassVar[tuple[str, ...]] = ("axis", "length", "inverse", "onesided")
    x = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 1)
        x_t = operand_types[0]
        _check_element(x_t, "float", "x")
        shape = list(x_t.get_shape())
        if len(shape) < 2 or shape[-1] not in (1, 2):
            raise ShapeError(f"x must have rank >= 2 and a last dim of 1 (real) or 2 (complex), got {shape}")
        axis = normalize_axis(attrs.int("axis"), len(shape))
        if axis == len(shape) - 1:
            raise ShapeError("axis must not be the last dim (it holds real/imaginary parts)")
        length = attrs.int("length")
        if length < 1:
            raise ShapeError(f"length must be >= 1, got {length}")
        inverse, onesided = attrs.bool("inverse"), attrs.bool("onesided")
        shape[axis] = length // 2 + 1 if onesided and not inverse else length
        shape[-1] = 1 if inverse and onesided else 2
        return [tensor_type(shape, x_t.element_type)]

    def reference(self, x):
        a = self.attrs
        axis = normalize_axis(a.int("axis"), x.ndim)
        length, inverse, onesided = a.int("length"), a.bool("inverse"), a.bool("onesided")
        signal = x[..., 0].astype(np.float64)
        if x.shape[-1] == 2:
            signal = signal + 1j * x[..., 1]
        if inverse and onesided:
            out = np.fft.irfft(signal, n=length, axis=axis)[..., None]
        else:
            out = (np.fft.ifft if inverse else np.fft.fft)(signal, n=length, axis=axis)
            if onesided:
                out = np.take(out, np.arange(length // 2 + 1), axis=axis)
            out = np.stack([out.real, out.imag], axis=-1)
        return [out.astype(x.dtype)]


def _spatial_extents(what: str, values: Sequence[int], r: int, lowest: int) -> None:
    if len(values) != r or min(values, default=lowest) < lowest:
        raise ShapeError(f"{what} must have {r} values >= {lowest}, got {list(values)}")


def col2im_blocks(image, block, strides, dilations, pads) -> list[int]:
    """Sliding-block positions per spatial dim (ONNX Col2Im / torch fold)."""
    r = len(image)
    return [
        (image[i] + pads[i] + pads[i + r] - (dilations[i] * (block[i] - 1) + 1)) // strides[i] + 1
        for i in range(r)
    ]


@irdl_op_definition
class Col2ImOp(GraphOp):
    """Rearrange column blocks into an image, summing overlaps (ONNX Col2Im,
    torch ``fold``): x is N x (C * prod(block_shape)) x L with L the number of
    sliding-block positions; the result is N x C x image_shape. ``pads`` is
    [begin..., end...] per spatial dim.

    ```mlir
    %y = graph.col2im %x {image_shape = array<i64: 5, 4>, block_shape = array<i64: 2, 3>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 1, 0, 1>} : (tensor<2x18x16xf32>) -> tensor<2x3x5x4xf32>
    ```
    """

    name = "graph.col2im"
    ATTRS: ClassVar[tuple[str, ...]] = ("image_shape", "block_shape", "strides", "dilations", "pads")
    x = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 1)
        x_t = operand_types[0]
        _check_element(x_t, "numeric", "x")
        shape = list(x_t.get_shape())
        if len(shape) != 3:
            raise ShapeError(f"x must be N x (C*prod(block_shape)) x L, got rank {len(shape)}")
        image, block = attrs.ints("image_shape"), attrs.ints("block_shape")
        r = len(image)
        _spatial_extents("image_shape", image, r, 1)
        _spatial_extents("block_shape", block, r, 1)
        strides, dilations = attrs.ints("strides", [1] * r), attrs.ints("dilations", [1] * r)
        pads = attrs.ints("pads", [0] * (2 * r))
        _spatial_extents("strides", strides, r, 1)
        _spatial_extents("dilations", dilations, r, 1)
        _spatial_extents("pads", pads, 2 * r, 0)
        blocks = col2im_blocks(image, block, strides, dilations, pads)
        if min(blocks) < 1:
            raise ShapeError(f"block_shape {list(block)} does not fit the padded image {list(image)}")
        per_channel = math.prod(block)
        if shape[1] % per_channel:
            raise ShapeError(f"x dim 1 ({shape[1]}) is not a multiple of prod(block_shape) = {per_channel}")
        if shape[2] != math.prod(blocks):
            raise ShapeError(f"x dim 2 ({shape[2]}) must equal the number of block positions {math.prod(blocks)} ({blocks})")
        return [tensor_type([shape[0], shape[1] // per_channel, *image], x_t.element_type)]

    def reference(self, x):
        import itertools

        a = self.attrs
        image, block = a.ints("image_shape"), a.ints("block_shape")
        r = len(image)
        strides, dilations = a.ints("strides", [1] * r), a.ints("dilations", [1] * r)
        pads = a.ints("pads", [0] * (2 * r))
        blocks = col2im_blocks(image, block, strides, dilations, pads)
        n, c = x.shape[0], x.shape[1] // math.prod(block)
        padded = [image[i] + pads[i] + pads[i + r] for i in range(r)]
        out = np.zeros([n, c, *padded], x.dtype)
        cols = x.reshape(n, c, *block, *blocks)
        for b in itertools.product(*[range(k) for k in block]):
            window = tuple(
                slice(b[i] * dilations[i], b[i] * dilations[i] + strides[i] * (blocks[i] - 1) + 1, strides[i])
                for i in range(r)
            )
            out[(slice(None), slice(None)) + window] += cols[(slice(None), slice(None)) + b]
        crop = tuple(slice(pads[i], pads[i] + image[i]) for i in range(r))
        return [_contiguous(out[(slice(None), slice(None)) + crop])]


@irdl_op_definition
class RoiAlignOp(GraphOp):
    """Region-of-interest align (ONNX RoiAlign): for each roi [x1, y1, x2, y2]
    (rois: R x 4, scaled by ``spatial_scale``) on image ``batch_indices[r]`` of
    x (N x C x H x W), an ``output_height`` x ``output_width`` grid of bins,
    each the average (``mode`` = avg) or max (max) of bilinear samples on a
    ``sampling_ratio`` x ``sampling_ratio`` grid. ``sampling_ratio`` = 0 means
    ceil(roi size / bins) samples per bin, computed per roi and capped at
    ``max_samples`` (a static loop bound; the frontend derives it from known rois).
    ``coordinate_transformation_mode``: half_pixel (default) shifts by -0.5;
    output_half_pixel does not and makes rois at least 1 x 1. Result: R x C x
    output_height x output_width.

    ```mlir
    %y = graph.roi_align %x, %rois, %ids {output_height = 2 : i64, output_width = 3 : i64, sampling_ratio = 2 : i64, mode = "max"} : (tensor<2x3x7x5xf32>, tensor<4x4xf32>, tensor<4xi64>) -> tensor<4x3x2x3xf32>
    ```
    """

    name = "graph.roi_align"
    ATTRS: ClassVar[tuple[str, ...]] = (
        "mode", "output_height", "output_width", "sampling_ratio", "max_samples",
        "spatial_scale", "coordinate_transformation_mode")
    x = operand_def(TensorType)
    rois = operand_def(TensorType)
    batch_indices = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 3)
        x_t, rois_t, ids_t = operand_types
        _check_element(x_t, "float", "x")
        _check_element(rois_t, "float", "rois")
        _check_element(ids_t, "int", "batch_indices")
        _same_element([x_t, rois_t])
        xs, rs, ids = x_t.get_shape(), rois_t.get_shape(), ids_t.get_shape()
        if len(xs) != 4:
            raise ShapeError(f"x must be N x C x H x W, got rank {len(xs)}")
        if len(rs) != 2 or rs[1] != 4:
            raise ShapeError(f"rois must be R x 4, got {list(rs)}")
        if list(ids) != [rs[0]]:
            raise ShapeError(f"batch_indices must have shape [{rs[0]}] (one per roi), got {list(ids)}")
        oh, ow = attrs.int("output_height", 1), attrs.int("output_width", 1)
        if oh < 1 or ow < 1:
            raise ShapeError(f"output_height and output_width must be >= 1, got {oh}, {ow}")
        ratio = attrs.int("sampling_ratio", 0)
        if ratio < 0:
            raise ShapeError(f"sampling_ratio must be >= 0, got {ratio}")
        if ratio == 0 and attrs.int("max_samples", 0) < 1:
            raise ShapeError("sampling_ratio = 0 (adaptive) needs max_samples >= 1 (the static loop bound)")
        _spatial_choice(attrs, "mode", "avg", ("avg", "max"))
        _spatial_choice(attrs, "coordinate_transformation_mode", "half_pixel", ("half_pixel", "output_half_pixel"))
        return [tensor_type([rs[0], xs[1], oh, ow], x_t.element_type)]

    def reference(self, x, rois, batch_indices):
        a = self.attrs
        oh, ow = a.int("output_height", 1), a.int("output_width", 1)
        out = np.zeros((rois.shape[0], x.shape[1], oh, ow), np.float64)
        for r in range(rois.shape[0]):
            (ys, yw), (xs, xw), count = roi_align_samples(
                rois[r], x.shape[2], x.shape[3], oh, ow, a.float("spatial_scale", 1.0),
                a.int("sampling_ratio", 0), a.int("max_samples", 0),
                a.str("coordinate_transformation_mode", "half_pixel") == "half_pixel")
            image = x[int(batch_indices[r])].astype(np.float64)  # C x H x W
            # terms[c, ph, pw, iy, ix, corner]
            terms = np.stack([
                image[:, ys[a_][:, :, None, None], xs[b_][None, None, :, :]]
                * (yw[a_][:, :, None, None] * xw[b_][None, None, :, :])
                for a_ in (0, 1) for b_ in (0, 1)], axis=-1)
            terms = terms.transpose(0, 1, 3, 2, 4, 5)  # c, ph, pw, iy, ix, corner
            if terms.size == 0:  # adaptive sampling with an empty roi: no samples
                out[r] = 0.0
            elif a.str("mode", "avg") == "avg":
                out[r] = terms.sum(axis=(3, 4, 5)) / count
            else:
                out[r] = terms.max(axis=5).max(axis=(3, 4))
        return [out.astype(x.dtype)]


def roi_align_samples(roi, height, width, oh, ow, scale, ratio, max_samples, half_pixel):
    """Per axis: (low/high indices, low/high weights) of every sample as
    [bins, samples] arrays, and the sample count of a bin (ONNX RoiAlign)."""
    # Coordinates are computed in the rois' precision, step by step as
    # onnxruntime does: samples on a bin edge then agree with it exactly.
    dt = roi.dtype.type
    offset = dt(0.5 if half_pixel else 0.0)
    x1, y1, x2, y2 = (dt(v) * dt(scale) - offset for v in roi)
    axes = []
    grids = []
    for start, end, bins, extent in ((y1, y2, oh, height), (x1, x2, ow, width)):
        size = dt(end - start)
        if not half_pixel:
            size = max(size, dt(1.0))
        bin_size = dt(size / dt(bins))
        grid = ratio if ratio > 0 else min(max(int(np.ceil(bin_size)), 0), max_samples)
        grids.append(grid)
        i = np.arange(bins, dtype=dt)[:, None]
        s = np.arange(max(grid, 0), dtype=dt)[None, :]
        pos = start + i * bin_size + (s + dt(0.5)) * bin_size / dt(max(grid, 1))
        outside = (pos < -1.0) | (pos > extent)
        pos = np.maximum(pos, 0.0)
        low = np.floor(pos).astype(np.int64)
        at_end = low >= extent - 1
        low = np.where(at_end, extent - 1, low)
        high = np.where(at_end, extent - 1, low + 1)
        pos = np.where(at_end, low, pos)
        frac = pos - low
        axes.append(((low, high), (np.where(outside, 0.0, 1 - frac), np.where(outside, 0.0, frac))))
    (ylh, yw), (xlh, xw) = axes
    count = max(grids[0] * grids[1], 1)
    return (ylh, yw), (xlh, xw), count


@irdl_op_definition
class DeformConv2DOp(GraphOp):
    """Deformable 2-D convolution (ONNX DeformConv): each kernel tap (i, j) of
    output (oh, ow) reads x bilinearly (zero outside) at
    ``(oh*sh - pad_top + i*dh + dy, ow*sw - pad_left + j*dw + dx)``, where
    (dy, dx) come from ``offset`` (N x offset_groups*KH*KW*2 x OH x OW), and
    is scaled by the optional ``mask`` (N x offset_groups*KH*KW x OH x OW).
    Operands: x (N x C x H x W), w (OC x C/groups x KH x KW), offset, then
    optionally mask (rank 4) and bias (OC, rank 1). ``padding`` is [top, left,
    bottom, right]. Result: N x OC x OH x OW.

    ```mlir
    %y = graph.deform_conv2d %x, %w, %off, %b {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x2x4x5xf32>, tensor<3x2x2x2xf32>, tensor<1x8x5x6xf32>, tensor<3xf32>) -> tensor<1x3x5x6xf32>
    ```
    """

    name = "graph.deform_conv2d"
    ATTRS: ClassVar[tuple[str, ...]] = ("strides", "padding", "dilations", "groups", "offset_groups")
    args = var_operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, (3, 5))
        x_t, w_t, off_t = operand_types[:3]
        for t, what in ((x_t, "x"), (w_t, "w"), (off_t, "offset")):
            _check_element(t, "float", what)
        _same_element(operand_types)
        mask_t, bias_t = deform_conv_extras(operand_types)
        xs, ws, offs = x_t.get_shape(), w_t.get_shape(), off_t.get_shape()
        if len(xs) != 4 or len(ws) != 4 or len(offs) != 4:
            raise ShapeError("x, w and offset must have rank 4 (N x C x H x W, OC x C/groups x KH x KW, N x 2*offset_groups*KH*KW x OH x OW)")
        (sh, sw), (dh, dw), (pt, pl, pb, pr) = deform_conv_window(attrs)
        groups, ogroups = attrs.int("groups", 1), attrs.int("offset_groups", 1)
        if groups < 1 or ogroups < 1 or xs[1] % groups or ws[0] % groups or xs[1] % ogroups:
            raise ShapeError(f"groups {groups} and offset_groups {ogroups} must divide the {xs[1]} input channels (and groups the {ws[0]} output channels)")
        if ws[1] * groups != xs[1]:
            raise ShapeError(f"w dim 1 ({ws[1]}) times groups ({groups}) must equal the {xs[1]} input channels")
        kh, kw = ws[2], ws[3]
        oh = (xs[2] + pt + pb - ((kh - 1) * dh + 1)) // sh + 1
        ow = (xs[3] + pl + pr - ((kw - 1) * dw + 1)) // sw + 1
        if oh < 1 or ow < 1:
            raise ShapeError(f"the kernel {kh}x{kw} does not fit the padded input {xs[2]}x{xs[3]}")
        want = [xs[0], 2 * ogroups * kh * kw, oh, ow]
        if list(offs) != want:
            raise ShapeError(f"offset must have shape {want}, got {list(offs)}")
        if mask_t is not None and list(mask_t.get_shape()) != [xs[0], ogroups * kh * kw, oh, ow]:
            raise ShapeError(f"mask must have shape {[xs[0], ogroups * kh * kw, oh, ow]}, got {list(mask_t.get_shape())}")
        if bias_t is not None and list(bias_t.get_shape()) != [ws[0]]:
            raise ShapeError(f"bias must have shape [{ws[0]}], got {list(bias_t.get_shape())}")
        return [tensor_type([xs[0], ws[0], oh, ow], x_t.element_type)]

    def reference(self, x, w, offset, *extras):
        (sh, sw), (dh, dw), (pt, pl, _, _) = deform_conv_window(self.attrs)
        groups, ogroups = self.attrs.int("groups", 1), self.attrs.int("offset_groups", 1)
        mask_t, bias_t = deform_conv_extras([o.type for o in self.operands])
        mask = extras[0] if mask_t is not None else None
        bias = extras[-1] if bias_t is not None else None
        n, c, h, wd = x.shape
        oc, cpg, kh, kw = w.shape
        _, _, oh, ow = offset.shape
        off = offset.reshape(n, ogroups, kh, kw, 2, oh, ow).astype(np.float64)
        m = np.ones((n, ogroups, kh, kw, oh, ow)) if mask is None else mask.reshape(n, ogroups, kh, kw, oh, ow)
        ys = (np.arange(oh) * sh - pt)[None, None, None, None, :, None] + (np.arange(kh) * dh)[None, None, :, None, None, None]
        xs = (np.arange(ow) * sw - pl)[None, None, None, None, None, :] + (np.arange(kw) * dw)[None, None, None, :, None, None]
        y = ys + off[:, :, :, :, 0]  # n, og, kh, kw, oh, ow
        xx = xs + off[:, :, :, :, 1]
        # bilinear samples of every input channel: cols[n, c, kh, kw, oh, ow]
        xg = x.astype(np.float64).reshape(n, ogroups, c // ogroups, h, wd)
        cols = np.zeros((n, ogroups, c // ogroups, kh, kw, oh, ow))
        y0, x0 = np.floor(y), np.floor(xx)
        for dy, dx in ((0, 0), (0, 1), (1, 0), (1, 1)):
            yi, xi = y0 + dy, x0 + dx
            weight = (1 - np.abs(y - yi)) * (1 - np.abs(xx - xi)) * m
            valid = (yi >= 0) & (yi < h) & (xi >= 0) & (xi < wd)
            yc = np.clip(yi, 0, h - 1).astype(np.int64)
            xc = np.clip(xi, 0, wd - 1).astype(np.int64)
            b = np.arange(n)[:, None, None, None, None, None]
            gi = np.arange(ogroups)[None, :, None, None, None, None]
            vals = xg[b, gi, :, yc, xc]  # n, og, kh, kw, oh, ow, c/og
            vals = np.moveaxis(vals, -1, 2)
            cols += np.where(valid[:, :, None], vals, 0.0) * weight[:, :, None]
        cols = cols.reshape(n, groups, cpg * kh * kw, oh * ow)
        wg = w.astype(np.float64).reshape(groups, oc // groups, cpg * kh * kw)
        out = np.einsum("gok,ngkp->ngop", wg, cols).reshape(n, oc, oh, ow)
        if bias is not None:
            out = out + bias.reshape(1, oc, 1, 1)
        return [out.astype(x.dtype)]


def deform_conv_extras(types: Types):
    """(mask type or None, bias type or None) of deform_conv2d's operands 4 and 5."""
    mask = bias = None
    for t in types[3:]:
        if len(t.get_shape()) == 4 and mask is None and bias is None:
            mask = t
        elif len(t.get_shape()) == 1 and bias is None:
            bias = t
        else:
            raise ShapeError("operands after offset must be an optional mask (rank 4) then an optional bias (rank 1)")
    return mask, bias


def deform_conv_window(attrs: Attrs):
    strides = attrs.ints("strides", (1, 1))
    dilations = attrs.ints("dilations", (1, 1))
    padding = attrs.ints("padding", (0, 0, 0, 0))
    if len(strides) != 2 or len(dilations) != 2 or len(padding) != 4:
        raise ShapeError("strides and dilations need 2 values, padding 4 ([top, left, bottom, right])")
    if min(strides) < 1 or min(dilations) < 1 or min(padding) < 0:
        raise ShapeError("strides and dilations must be >= 1 and padding >= 0")
    return strides, dilations, padding


# ---------------------------------------------------------------------------
# blocked-layout ops (alter-op-layout work)
# ---------------------------------------------------------------------------
# Activations in NCHW{b}c ([N, C/b, H, W, b]: b channels contiguous, one
# vector) and weights in OIHW{i}i{o}o ([O/o, I/i, KH, KW, i, o]). Channel
# counts that are not a multiple of the block are padded with zero channels
# (not a smaller block): every conv output keeps one full vector of output
# channels, and zero weights make the padded channels contribute nothing.

import re as _re

_BLOCKED_DATA = _re.compile(r"NCHW(\d+)c$")
_BLOCKED_KERNEL = _re.compile(r"OIHW(\d+)i(\d+)o$")


def _block_of(layout: str, pattern) -> tuple[int, ...] | None:
    m = pattern.match(layout)
    if m is None:
        return None
    blocks = tuple(int(g) for g in m.groups())
    if min(blocks) < 1:
        raise ShapeError(f"layout {layout}: blocks must be >= 1")
    return blocks


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


@irdl_op_definition
class LayoutTransformOp(GraphOp):
    """Re-lay out a 4-D tensor between plain and channel-blocked layouts.

    ``src``/``dst``: NCHW -> NCHW{b}c, NCHW{b}c -> NCHW, or OIHW -> OIHW{i}i{o}o
    (weights). Channels are zero-padded to a multiple of the block; going
    back to NCHW, ``channels`` (default: all, padding included) drops the
    padded ones.

    ```mlir
    %y = graph.layout_transform %x {src = "NCHW", dst = "NCHW16c"} : (tensor<1x20x5x5xf32>) -> tensor<1x2x5x5x16xf32>
    ```
    """

    name = "graph.layout_transform"
    ATTRS: ClassVar[tuple[str, ...]] = ("src", "dst", "channels")
    x = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 1)
        t = operand_types[0]
        shape = list(t.get_shape())
        src, dst = attrs.str("src"), attrs.str("dst")
        if "channels" in attrs and not (_block_of(src, _BLOCKED_DATA) and dst == "NCHW"):
            raise ShapeError("attribute 'channels' applies only to NCHW{b}c -> NCHW")
        if src in ("NCHW", "OIHW") and len(shape) != 4:
            raise ShapeError(f"{src} input must be 4-D, got rank {len(shape)}")
        if src == "NCHW" and (b := _block_of(dst, _BLOCKED_DATA)):
            n, c, h, w = shape
            return [tensor_type([n, _ceil_div(c, b[0]), h, w, b[0]], t.element_type)]
        if src == "OIHW" and (b := _block_of(dst, _BLOCKED_KERNEL)):
            o, i, kh, kw = shape
            ib, ob = b
            return [tensor_type([_ceil_div(o, ob), _ceil_div(i, ib), kh, kw, ib, ob], t.element_type)]
        if (b := _block_of(src, _BLOCKED_DATA)) and dst == "NCHW":
            if len(shape) != 5 or shape[4] != b[0]:
                raise ShapeError(f"{src} input must be 5-D with a last dim of {b[0]}, got {shape}")
            n, cb, h, w, _ = shape
            c = attrs.int("channels", cb * b[0])
            if not (cb - 1) * b[0] < c <= cb * b[0]:
                raise ShapeError(f"channels={c} does not fit {cb} blocks of {b[0]}")
            return [tensor_type([n, c, h, w], t.element_type)]
        raise ShapeError(
            f"unsupported layout change {src} -> {dst} (supported: NCHW <-> NCHW{{b}}c, "
            "OIHW -> OIHW{i}i{o}o)"
        )

    def reference(self, x: np.ndarray) -> list[np.ndarray]:
        src, dst = self.attrs.str("src"), self.attrs.str("dst")
        out_shape = self.out.type.get_shape()
        if src == "NCHW":
            n, cb, h, w, b = out_shape
            xp = np.zeros((n, cb * b, h, w), x.dtype)
            xp[:, : x.shape[1]] = x
            return [_contiguous(xp.reshape(n, cb, b, h, w).transpose(0, 1, 3, 4, 2))]
        if src == "OIHW":
            obn, ibn, kh, kw, ib, ob = out_shape
            wp = np.zeros((obn * ob, ibn * ib, kh, kw), x.dtype)
            wp[: x.shape[0], : x.shape[1]] = x
            blocked = wp.reshape(obn, ob, ibn, ib, kh, kw).transpose(0, 2, 4, 5, 3, 1)
            return [_contiguous(blocked)]
        n, cb, h, w, b = x.shape
        plain = x.transpose(0, 1, 4, 2, 3).reshape(n, cb * b, h, w)
        return [_contiguous(plain[:, : out_shape[1]])]


@irdl_op_definition
class Conv2DNCHWcOp(GraphOp):
    """2-D convolution on channel-blocked tensors (groups 1): input
    ``[N, C/ib, H, W, ib]`` (NCHW{ib}c), weight ``[O/ob, C/ib, KH, KW, ib, ob]``
    (OIHW{ib}i{ob}o), result ``[N, O/ob, OH, OW, ob]`` (NCHW{ob}c).
    Attributes as conv2d: ``strides``, ``padding`` [top, left, bottom, right],
    ``dilations``. Built by ``alter-op-layout``.

    ```mlir
    %y = graph.conv2d_nchwc %x, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x1x5x5x16xf32>, tensor<2x1x3x3x16x16xf32>) -> tensor<1x2x5x5x16xf32>
    ```
    """

    name = "graph.conv2d_nchwc"
    ATTRS: ClassVar[tuple[str, ...]] = ("strides", "padding", "dilations")
    x = operand_def(TensorType)
    weight = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 2)
        element = _same_element(operand_types)
        _check_element(operand_types[0], "float")
        x, w = (list(t.get_shape()) for t in operand_types)
        if len(x) != 5 or len(w) != 6:
            raise ShapeError(f"input must be 5-D (NCHW{{b}}c) and weight 6-D (OIHW{{i}}i{{o}}o), got ranks {len(x)} and {len(w)}")
        n, cb, h, wd, ib = x
        obn, wcb, kh, kw, wib, ob = w
        if (wcb, wib) != (cb, ib):
            raise ShapeError(
                f"weight input blocks {wcb}x{wib} do not match the input's channel blocks {cb}x{ib}"
            )
        (sh, sw), (dh, dw), (pt, pl, pb, pr) = _window_attrs(attrs)
        oh = _conv_out(h, kh, sh, pt + pb, dh, "height")
        ow = _conv_out(wd, kw, sw, pl + pr, dw, "width")
        return [tensor_type([n, obn, oh, ow, ob], element)]

    def reference(self, x: np.ndarray, w: np.ndarray) -> list[np.ndarray]:
        n, cb, h, wd, ib = x.shape
        obn, _, kh, kw, _, ob = w.shape
        plain_x = x.transpose(0, 1, 4, 2, 3).reshape(n, cb * ib, h, wd)
        plain_w = w.transpose(0, 5, 1, 4, 2, 3).reshape(obn * ob, cb * ib, kh, kw)
        strides, dil, pads = _window_attrs(self.attrs)
        out = _conv2d_nchw(plain_x, plain_w, strides, pads, dil, 1)
        _, _, oh, ow = out.shape
        return [_contiguous(out.reshape(n, obn, ob, oh, ow).transpose(0, 1, 3, 4, 2))]


def _blocked_to_plain(x: np.ndarray) -> np.ndarray:
    n, cb, h, w, b = x.shape
    return x.transpose(0, 1, 4, 2, 3).reshape(n, cb * b, h, w)


def _plain_to_blocked(x: np.ndarray, b: int) -> np.ndarray:
    n, c, h, w = x.shape
    return _contiguous(x.reshape(n, c // b, b, h, w).transpose(0, 1, 3, 4, 2))


class _PoolNCHWcOp(GraphOp):
    """A 2-D pool on NCHW{b}c: the plain pool (``PLAIN``, NCHW) of every channel."""

    PLAIN: ClassVar[type[GraphOp]]
    ATTRS: ClassVar[tuple[str, ...]] = ("kernel", "strides", "padding", "dilations", "ceil_mode",
                                        "count_include_pad")
    x = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 1)
        _check_element(operand_types[0], "float")
        shape = list(operand_types[0].get_shape())
        if len(shape) != 5:
            raise ShapeError(f"input must be 5-D (NCHW{{b}}c), got rank {len(shape)}")
        n, cb, h, w, b = shape
        et = operand_types[0].element_type
        (plain,) = cls.PLAIN.infer([tensor_type([n, cb * b, h, w], et)], attrs)
        _, _, oh, ow = plain.get_shape()
        return [tensor_type([n, cb, oh, ow, b], et)]

    def reference(self, x: np.ndarray) -> list[np.ndarray]:
        n, cb, oh, ow, b = self.out.type.get_shape()
        plain_t = tensor_type([n, cb * b, oh, ow], self.out.type.element_type)
        plain = self.PLAIN.create(result_types=[plain_t], attributes=dict(self.attributes))
        (out,) = plain.reference(_blocked_to_plain(x))
        return [_plain_to_blocked(out, b)]


@irdl_op_definition
class MaxPool2DNCHWcOp(_PoolNCHWcOp):
    """max_pool2d on a channel-blocked tensor ``[N, C/b, H, W, b]`` (NCHW{b}c);
    attributes as max_pool2d (no ``layout``). Built by ``alter-op-layout``.

    ```mlir
    %y = graph.max_pool2d_nchwc %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>} : (tensor<1x2x9x9x16xf32>) -> tensor<1x2x4x4x16xf32>
    ```
    """

    name = "graph.max_pool2d_nchwc"
    PLAIN: ClassVar[type[GraphOp]] = MaxPool2DOp


@irdl_op_definition
class AvgPool2DNCHWcOp(_PoolNCHWcOp):
    """avg_pool2d on a channel-blocked tensor ``[N, C/b, H, W, b]`` (NCHW{b}c);
    attributes as avg_pool2d (no ``layout``). Built by ``alter-op-layout``.

    ```mlir
    %y = graph.avg_pool2d_nchwc %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, count_include_pad = 1 : i64} : (tensor<1x2x8x8x16xf32>) -> tensor<1x2x4x4x16xf32>
    ```
    """

    name = "graph.avg_pool2d_nchwc"
    PLAIN: ClassVar[type[GraphOp]] = AvgPool2DOp


# ===========================================================================
# the dialect
# ===========================================================================

GRAPH_OPS: list[type[GraphOp]] = [
    obj
    for obj in list(globals().values())
    if isinstance(obj, type) and issubclass(obj, GraphOp) and "name" in obj.__dict__
    and isinstance(obj.__dict__.get("name"), str) and obj.name.startswith("graph.")
    and not getattr(obj, "CONTROL_FLOW", False)
]

Graph = Dialect("graph", GRAPH_OPS + CONTROL_FLOW_OPS, [])


def is_composite(op_type: type[GraphOp]) -> bool:
    return bool(getattr(op_type, "COMPOSITE", False))
