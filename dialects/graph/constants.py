"""Constant tensors: inline literals (graph.constant) and named weights (graph.weight).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, DenseResourceAttr, StringAttr, TensorType
from xdsl.irdl import attr_def, irdl_op_definition, result_def, traits_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import ConstantLike, Pure
from xdsl.utils.exceptions import VerifyException

from dlc.dialects.graph_base import (
    Attrs,
    GraphOp,
    numpy_dtype,
    numpy_from_dense,
    ShapeError,
    tensor_type,
)
from dlc.dialects.graph.common import _expect_count, Types


def _is_elided(value) -> bool:
    from dlc.weights import ELIDED_KEY

    return isinstance(value, DenseResourceAttr) and value.resource_handle.data == ELIDED_KEY


@irdl_op_definition
class ConstantOp(GraphOp):
    """A tensor literal held inline as a dense attribute (small constants).

    ```mlir
    %c = graph.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
    ```
    """

    name = "graph.constant"
    NARROW_TYPES: ClassVar[bool] = True
    # (or dense_resource<__elided__>: text printed with --elide-constants, no data)
    value = attr_def(DenseIntOrFPElementsAttr | DenseResourceAttr)
    out = result_def(TensorType)
    traits = traits_def(Pure(), ConstantLike())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 0)
        value = attrs.raw.get("value")
        if not isinstance(value, DenseIntOrFPElementsAttr) and not _is_elided(value):
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
        if _is_elided(self.value):
            from dlc.weights import ElidedWeightError

            raise ElidedWeightError(
                "graph.constant: its value was elided from the text (dense_resource<__elided__>, "
                "printed with --elide-constants); it has no data")
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
        if not isinstance(value, DenseIntOrFPElementsAttr) and not _is_elided(value):
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
    weight_name = attr_def(StringAttr, attr_name="name")
    out = result_def(TensorType)
    traits = traits_def(Pure(), ConstantLike())

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

        store = store_of(self, create=False)
        if store is None or store.is_elided(self.weight_name.data):
            return  # no store attached (e.g. parsing IR alone) or no data in the text: nothing to check
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
