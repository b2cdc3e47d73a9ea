"""Elementwise ops: unary math/activation ops, binary arithmetic, comparison,
logical and bitwise ops with numpy broadcasting, and graph.where.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import i1, TensorType
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Pure

from dlc.dialects.graph_base import (
    Attrs,
    broadcast_shapes,
    EnumAttribute,
    FloatAttribute,
    GraphOp,
    tensor_type,
)
from dlc.dialects.graph.common import _check_element, _expect_count, _same_element, Types
from dlc.dialects.graph import decompose
from dlc.dialects.traits import Composite, Elementwise, LayoutFree


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
        return [operand_types[0]]

    def compute(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def reference(self, x: np.ndarray) -> list[np.ndarray]:
        with np.errstate(all="ignore"):
            return [np.asarray(self.compute(x)).astype(x.dtype, copy=False)]


def _erf(x: np.ndarray) -> np.ndarray:
    # math.erf is correctly rounded; the oracle favours accuracy over speed.
    return np.vectorize(math.erf, otypes=[np.float64])(x.astype(np.float64)).astype(x.dtype)


def _unary(name: str, fn, element: str = "float", doc: str = "", extra_traits=()) -> type[UnaryOp]:
    op_name = f"graph.{name}"

    class _Op(UnaryOp):
        traits = traits_def(Elementwise(), *extra_traits)
        ELEMENT: ClassVar[str] = element

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


NegOp = _unary("neg", np.negative, "numeric", "negation -x", extra_traits=(LayoutFree(),))
AbsOp = _unary("abs", np.abs, "numeric", "absolute value", extra_traits=(LayoutFree(),))
SignOp = _unary("sign", np.sign, "numeric", "sign (-1, 0, 1)")
ExpOp = _unary("exp", np.exp)
LogOp = _unary("log", np.log, doc="natural logarithm")
SqrtOp = _unary("sqrt", np.sqrt)
RsqrtOp = _unary("rsqrt", lambda x: 1.0 / np.sqrt(x), doc="reciprocal square root")
ReciprocalOp = _unary("reciprocal", lambda x: 1.0 / x, doc="1/x",
                      extra_traits=(Composite(decompose.reciprocal),))
TanhOp = _unary("tanh", np.tanh, extra_traits=(LayoutFree(),))
SigmoidOp = _unary("sigmoid", lambda x: 1.0 / (1.0 + np.exp(-x)), doc="logistic 1/(1+exp(-x))",
                   extra_traits=(LayoutFree(),))
ReluOp = _unary("relu", lambda x: np.maximum(x, 0), "numeric", "max(x, 0)", extra_traits=(LayoutFree(),))
ErfOp = _unary("erf", _erf, doc="Gauss error function")
FloorOp = _unary("floor", np.floor)
CeilOp = _unary("ceil", np.ceil)
RoundOp = _unary("round", np.round, doc="round half to even")
SinOp = _unary("sin", np.sin)
CosOp = _unary("cos", np.cos)
# logaddexp(0, x) == log(1 + exp(x)) without overflow for large x.
SoftplusOp = _unary("softplus", lambda x: np.logaddexp(0, x), doc="log(1+exp(x))",
                    extra_traits=(Composite(decompose.softplus),))
SoftsignOp = _unary("softsign", lambda x: x / (1 + np.abs(x)), doc="x / (1 + |x|)",
                    extra_traits=(LayoutFree(),))
NotOp = _unary("not", np.logical_not, "bool", "logical not")


@irdl_op_definition
class GeluOp(UnaryOp):
    """GELU, ``x * 0.5 * (1 + erf(x / sqrt(2)))``; ``approximate = "tanh"`` selects
    the tanh form. Composite: legalize rewrites it with erf/tanh.

    ```mlir
    %y = graph.gelu %x : (tensor<4xf32>) -> tensor<4xf32>
    ```
    """

    name = "graph.gelu"
    approximate = EnumAttribute("none", "tanh", message="attribute 'approximate' must be \"none\" or \"tanh\"")
    traits = traits_def(Composite(decompose.gelu))

    def compute(self, x: np.ndarray) -> np.ndarray:
        if self.approximate == "tanh":
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

    traits = traits_def(Elementwise(), LayoutFree())
    name = "graph.clip"
    min = FloatAttribute(default=-math.inf)
    max = FloatAttribute(default=math.inf)
    ELEMENT: ClassVar[str] = "numeric"

    def compute(self, x: np.ndarray) -> np.ndarray:
        lo = self.min
        hi = self.max
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

    traits = traits_def(Elementwise(), LayoutFree())
    name = "graph.leaky_relu"
    alpha = FloatAttribute(default=0.01)

    def compute(self, x: np.ndarray) -> np.ndarray:
        alpha = np.asarray(self.alpha).astype(x.dtype)
        return np.where(x >= 0, x, alpha * x)


@irdl_op_definition
class EluOp(UnaryOp):
    """``x if x > 0 else alpha * (exp(x) - 1)`` (alpha default 1).

    ```mlir
    %y = graph.elu %x {alpha = 1.0 : f32} : (tensor<4xf32>) -> tensor<4xf32>
    ```
    """

    name = "graph.elu"
    alpha = FloatAttribute(default=1.0)
    traits = traits_def(Composite(decompose.elu), LayoutFree())

    def compute(self, x: np.ndarray) -> np.ndarray:
        alpha = self.alpha
        return np.where(x > 0, x, alpha * (np.exp(x) - 1))


@irdl_op_definition
class HardSigmoidOp(UnaryOp):
    """``clip(alpha * x + beta, 0, 1)`` (alpha 0.2, beta 0.5 by default).

    ```mlir
    %y = graph.hard_sigmoid %x {alpha = 0.2 : f32, beta = 0.5 : f32} : (tensor<4xf32>) -> tensor<4xf32>
    ```
    """

    name = "graph.hard_sigmoid"
    alpha = FloatAttribute(default=0.2)
    beta = FloatAttribute(default=0.5)
    traits = traits_def(Composite(decompose.hard_sigmoid), LayoutFree())

    def compute(self, x: np.ndarray) -> np.ndarray:
        alpha = self.alpha
        beta = self.beta
        return np.clip(alpha * x + beta, 0, 1)


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


def _binary(name: str, fn, element: str = "numeric", result_bool: bool = False, doc: str = "",
            extra_traits=()):
    op_name = f"graph.{name}"

    class _Op(BinaryOp):
        traits = traits_def(Elementwise(), *extra_traits)
        ELEMENT: ClassVar[str] = element
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


AddOp = _binary("add", np.add, doc="a + b", extra_traits=(LayoutFree(),))
SubOp = _binary("sub", np.subtract, doc="a - b", extra_traits=(LayoutFree(),))
MulOp = _binary("mul", np.multiply, doc="a * b", extra_traits=(LayoutFree(),))
DivOp = _binary("div", _int_div, doc="a / b (integers truncate toward zero)")
PowOp = _binary("pow", _int_pow, doc="a ** b")
ModOp = _binary("mod", _fmod, doc="remainder with the sign of a (C fmod)")
MaxOp = _binary("max", np.maximum, doc="elementwise maximum", extra_traits=(LayoutFree(),))
MinOp = _binary("min", np.minimum, doc="elementwise minimum", extra_traits=(LayoutFree(),))
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
    cond = operand_def(TensorType)
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure(), Elementwise())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 3)
        _check_element(operand_types[0], "bool", "condition")
        element = _same_element(operand_types[1:])
        shape = broadcast_shapes(*(t.get_shape() for t in operand_types))
        return [tensor_type(shape, element)]

    def reference(self, c: np.ndarray, a: np.ndarray, b: np.ndarray) -> list[np.ndarray]:
        return [np.where(c, a, b)]


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
