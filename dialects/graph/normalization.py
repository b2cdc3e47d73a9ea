"""Normalization: batch_norm, layer_norm, softmax and log_softmax.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Pure

from dlc.dialects.graph_base import (
    Attrs,
    FloatAttribute,
    GraphOp,
    IntAttribute,
    normalize_axis,
    ShapeError,
)
from dlc.dialects.graph.common import (
    _broadcasts_to,
    _check_element,
    _expect_count,
    _same_element,
    Types,
)
from dlc.dialects.graph import decompose
from dlc.dialects.traits import Composite


@irdl_op_definition
class BatchNormOp(GraphOp):
    """Inference batch norm along ``axis`` (default 1):
    ``(x - mean) / sqrt(var + epsilon) * scale + bias``. Composite.

    ```mlir
    %y = graph.batch_norm %x, %scale, %bias, %mean, %var {epsilon = 1.0e-05 : f32} : (tensor<1x8x5x5xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<1x8x5x5xf32>
    ```
    """

    name = "graph.batch_norm"
    axis = IntAttribute(default=1)
    epsilon = FloatAttribute(default=1e-5)
    x = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = operand_def(TensorType)
    mean = operand_def(TensorType)
    var = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure(), Composite(decompose.batch_norm))

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 5)
        _same_element(operand_types)
        _check_element(operand_types[0], "float")
        x = operand_types[0].get_shape()
        axis = normalize_axis(attrs.axis, len(x))
        for name, t in zip(("scale", "bias", "mean", "var"), operand_types[1:]):
            if list(t.get_shape()) != [x[axis]]:
                raise ShapeError(f"{name} must have shape [{x[axis]}] (channels), got {list(t.get_shape())}")
        return [operand_types[0]]

    def reference(self, x, scale, bias, mean, var) -> list[np.ndarray]:
        axis = normalize_axis(self.axis, x.ndim)
        shape = [1] * x.ndim
        shape[axis] = -1
        eps = self.epsilon
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
    axis = IntAttribute(default=-1)
    epsilon = FloatAttribute(default=1e-5)
    x = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure(), Composite(decompose.layer_norm))

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 3)
        _same_element(operand_types)
        _check_element(operand_types[0], "float")
        x = list(operand_types[0].get_shape())
        axis = normalize_axis(attrs.axis, len(x))
        norm_shape = x[axis:]
        for name, t in zip(("scale", "bias"), operand_types[1:]):
            if not _broadcasts_to(t.get_shape(), norm_shape):
                raise ShapeError(f"{name} of shape {list(t.get_shape())} does not broadcast to the normalized shape {norm_shape}")
        return [operand_types[0]]

    def reference(self, x, scale, bias) -> list[np.ndarray]:
        axis = normalize_axis(self.axis, x.ndim)
        axes = tuple(range(axis, x.ndim))
        eps = self.epsilon
        x64 = x.astype(np.float64)
        mean = x64.mean(axis=axes, keepdims=True)
        var = ((x64 - mean) ** 2).mean(axis=axes, keepdims=True)
        out = (x64 - mean) / np.sqrt(var + eps) * scale + bias
        return [out.astype(x.dtype)]


class _SoftmaxBase(GraphOp):
    axis = IntAttribute(default=-1)
    x = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 1)
        _check_element(operand_types[0], "float")
        normalize_axis(attrs.axis, operand_types[0].get_num_dims())
        return [operand_types[0]]

    def _log_softmax(self, x: np.ndarray) -> np.ndarray:
        axis = self.axis
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
    traits = traits_def(Composite(decompose.softmax))

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
    traits = traits_def(Composite(decompose.log_softmax))

    def reference(self, x: np.ndarray) -> list[np.ndarray]:
        return [self._log_softmax(x).astype(x.dtype)]
