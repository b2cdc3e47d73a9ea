"""graph.cast and the numpy semantics of casts to and from the narrow
(storage-only) element types: bf16, float8/float4/e8m0, 4- and 2-bit integers.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Pure

from dlc.dialects.graph_base import (
    Attrs,
    BoolAttribute,
    ElementTypeAttribute,
    EnumAttribute,
    GraphOp,
    is_float,
    is_narrow,
    numpy_dtype,
    tensor_type,
)
from dlc.dialects.graph.common import _expect_count, Types


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
    to = ElementTypeAttribute()
    saturate = BoolAttribute(True)
    round_mode = EnumAttribute("up", "down", "nearest", message="round_mode must be up, down or nearest, got '{value}'")
    NARROW_TYPES: ClassVar[bool] = True
    x = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 1)
        to = attrs.to
        numpy_dtype(to)  # supported element type?
        return [tensor_type(operand_types[0].get_shape(), to)]

    def reference(self, x: np.ndarray) -> list[np.ndarray]:
        to = self.to
        with np.errstate(all="ignore"):
            if is_narrow(to) or is_narrow(self.operands[0].type.element_type):
                return [narrow_cast_reference(
                    x, to, self.saturate, self.round_mode)]
            return [x.astype(numpy_dtype(to))]


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
