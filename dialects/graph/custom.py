"""graph.custom: a user-defined op written in the tensor-expression language.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.irdl import irdl_op_definition, traits_def, var_operand_def, var_result_def
from xdsl.traits import Pure

from dlc.dialects.graph_base import Attrs, GraphOp, ShapeError
from dlc.dialects.graph.common import Types


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
