"""graph.custom: a user-defined op written in a custom-op language (today the
tensor-expression language of ``dlc.frontends.te``).

The dialect does not know any language itself: a language's frontend fills
``CUSTOM_LANGUAGES`` when it is imported (as MLIR's promised interfaces are
filled by the dialect that implements them), so the dialect never imports a
frontend. A ``graph.custom`` whose language is not loaded fails verification
with a message naming it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.irdl import irdl_op_definition, traits_def, var_operand_def, var_result_def
from xdsl.traits import Pure

from dlc.dialects.graph_base import Attrs, GraphOp, ShapeError, StringAttribute
from dlc.dialects.graph.common import Types
from dlc.registry import Registry


@dataclass(frozen=True)
class CustomLanguage:
    """What graph.custom needs of a language, given the program's text and the
    operand types: ``infer`` the result types (raising ShapeError with the
    language's message) and run the ``reference`` on numpy arrays."""

    infer: Callable[[str, Sequence[TensorType]], list[TensorType]]
    reference: Callable[[str, Sequence[TensorType], Sequence[np.ndarray]], list[np.ndarray]]


# language name (the attribute that holds the program) -> its hooks
CUSTOM_LANGUAGES: Registry[CustomLanguage] = Registry("custom-op language")


def custom_language(name: str) -> CustomLanguage:
    language = CUSTOM_LANGUAGES.lookup(name)
    if language is None:
        raise ShapeError(
            f"custom-op language '{name}' is not loaded (the frontend that defines it "
            "registers it when imported: dlc.frontends.te for 'te')"
        )
    return language


@irdl_op_definition
class CustomOp(GraphOp):
    """A user-defined op written in the tensor-expression language
    (``dlc.frontends.te``): operands bind to its ``input`` declarations in
    order (or, with none, to the tensors it reads before computing them, in
    order of first use); results are its outputs. Shapes follow the TE's
    range rules; lower-to-loops lowers it through the TE lowering. The
    attribute that holds the program names its language (``te``).

    ```mlir
    %c = graph.custom %a, %b {te = "C[i, j] = sum(k: A[i, k] * B[k, j])"} : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
    ```
    """

    name = "graph.custom"
    LANGUAGE: ClassVar[str] = "te"
    te = StringAttribute()
    inputs = var_operand_def(TensorType)
    outs = var_result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        text = attrs.te
        return custom_language(cls.LANGUAGE).infer(text, operand_types)

    def reference(self, *inputs: np.ndarray) -> list[np.ndarray]:
        types = [o.type for o in self.operands]
        return custom_language(self.LANGUAGE).reference(self.te, types, inputs)
