"""Ops whose output length depends on the data: nonzero and compress.

Their result types are *bounded*: result 0 has, at one dim (``bounded_dim``),
the largest extent it can take (nonzero: the input's element count; compress:
the kept axis' length), and the op's last result, a ``tensor<i64>``, holds the
extent the run produced. The valid elements are the first ``prod(true shape)``
of result 0's buffer, row-major in the true shape (a *prefix*), so the runtime
returns them without a copy (runtime/native.py, "run-time extents"); the rest
of the buffer is zero. The ONNX importer lets such a result be a graph output
only (frontends/onnx/ops_data_dependent.py); consumers need issue 13's
symbolic shapes.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, TensorType, i64
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Pure

from dlc.dialects.graph_base import (
    Attrs,
    GraphOp,
    IntAttribute,
    ShapeError,
    is_bool,
    normalize_axis,
    tensor_type,
)
from dlc.dialects.graph.common import _check_element, _expect_count, Types


# On a function result holding a run-time extent: ``{result = k, dim = d}``, the
# result (k) whose dim d it sizes. The runtime returns result k cut to that
# extent and hides this one (driver.entry_extents, runtime/native.py).
EXTENT_OF_ATTR = "dlc.extent_of"


def extent_of_attr(result: int, dim: int) -> DictionaryAttr:
    return DictionaryAttr({"result": IntegerAttr(result, i64), "dim": IntegerAttr(dim, i64)})


def read_extent_of(attrs: DictionaryAttr) -> tuple[int, int] | None:
    """(result, dim) of a result's ``dlc.extent_of``, or None."""
    value = attrs.data.get(EXTENT_OF_ATTR)
    if not isinstance(value, DictionaryAttr):
        return None
    result, dim = value.data.get("result"), value.data.get("dim")
    if not isinstance(result, IntegerAttr) or not isinstance(dim, IntegerAttr):
        raise ValueError(f"{EXTENT_OF_ATTR} must be {{result = <int>, dim = <int>}}, got {value}")
    return result.value.data, dim.value.data


class BoundedResultOp(GraphOp):
    """Result 0 is bounded at ``bounded_dim()``; the last result is its run-time extent."""

    NARROW_TYPES: ClassVar[bool] = False

    def bounded_dim(self) -> int:
        raise NotImplementedError(self.name)


def as_prefix(valid: np.ndarray, bound_shape) -> np.ndarray:
    """``valid`` (the true result) laid into a zeroed buffer of ``bound_shape`` as its prefix."""
    out = np.zeros(math.prod(bound_shape), valid.dtype)
    out[:valid.size] = valid.reshape(-1)
    return out.reshape(bound_shape)


@irdl_op_definition
class NonZeroOp(BoundedResultOp):
    """ONNX NonZero: the indices of the nonzero elements, one row per input dim,
    in row-major order of the elements. Result 0 is bounded by the element
    count (``tensor<rank x numel x i64>``), ``count`` is the number found.

    ```mlir
    %idx, %n = graph.nonzero %x : (tensor<3x4xf32>) -> (tensor<2x12xi64>, tensor<i64>)
    ```
    """

    name = "graph.nonzero"
    x = operand_def(TensorType)
    indices = result_def(TensorType)
    count = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 1)
        x = operand_types[0]
        _check_element(x, "any")
        shape = x.get_shape()
        return [tensor_type([max(len(shape), 1), math.prod(shape)], i64), tensor_type([], i64)]

    def bounded_dim(self) -> int:
        return 1

    def reference(self, x):
        found = np.array(np.nonzero(x if x.ndim else x.reshape(1)), np.int64)
        bound = self.results[0].type.get_shape()
        return [as_prefix(found, bound), np.array(found.shape[1], np.int64)]


@irdl_op_definition
class CompressOp(BoundedResultOp):
    """ONNX Compress: the slices of ``x`` along ``axis`` whose ``condition``
    entry is true (no ``axis``: the elements of the flattened ``x``); a
    condition shorter than the axis drops the slices past its end (a longer
    one is an error, as in onnxruntime). Result 0 is
    bounded by the axis' kept length, ``count`` is the number of slices kept.

    ```mlir
    %y, %n = graph.compress %x, %c {axis = 1 : i64} : (tensor<3x5xf32>, tensor<4xi1>) -> (tensor<3x4xf32>, tensor<i64>)
    ```
    """

    name = "graph.compress"
    NARROW_TYPES: ClassVar[bool] = True  # moves elements only (bf16, f8 kept as stored)
    axis = IntAttribute(optional=True)
    x = operand_def(TensorType)
    condition = operand_def(TensorType)
    out = result_def(TensorType)
    count = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 2)
        x, cond = operand_types
        _check_element(x, "any")
        if not is_bool(cond.element_type) or len(cond.get_shape()) != 1:
            raise ShapeError(f"condition must be a 1-D i1 tensor, got {cond}")
        length = cond.get_shape()[0]
        shape = list(x.get_shape())
        if attrs.axis is None:
            shape, axis, what = [math.prod(shape)], 0, "the elements of x"
        else:
            axis = normalize_axis(attrs.axis, len(shape))
            if attrs.axis != axis:
                raise ShapeError(f"axis {attrs.axis} must be normalized to [0, {len(shape)})")
            what = f"axis {axis} of x"
        if length > shape[axis]:
            raise ShapeError(f"condition has {length} entries, more than the {shape[axis]} of {what}")
        shape[axis] = length
        return [tensor_type(shape, x.element_type), tensor_type([], i64)]

    def bounded_dim(self) -> int:
        return 0 if self.axis is None else self.axis

    def reference(self, x, condition):
        bound = self.results[0].type.get_shape()
        kept = condition[:bound[self.bounded_dim()]].astype(bool)
        data = x.reshape(-1) if self.axis is None else x
        axis = 0 if self.axis is None else self.axis
        found = np.compress(kept, np.take(data, np.arange(len(kept)), axis=axis), axis=axis)
        return [as_prefix(found, bound), np.array(int(kept.sum()), np.int64)]
