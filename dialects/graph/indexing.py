"""Indexing: gather, gather_nd, scatter_nd, scatter_elements, top_k and
reverse_sequence.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import i64, TensorType
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Pure

from dlc.dialects.graph_base import (
    Attrs,
    BoolAttribute,
    EnumAttribute,
    GraphOp,
    IntAttribute,
    is_bool,
    is_narrow,
    normalize_axis,
    ShapeError,
    tensor_type,
)
from dlc.dialects.graph.common import _check_element, _expect_count, Types


class _GatherOp(GraphOp):
    """out = elements of ``data`` picked by ``indices``: storage bits only move."""

    NARROW_TYPES: ClassVar[bool] = True
    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())


class _ScatterOp(GraphOp):
    """out = ``data`` with ``updates`` written (or combined by ``reduction``) where
    ``indices`` point; narrow types with reduction none only (_scatter_reduction)."""

    NARROW_TYPES: ClassVar[bool] = True
    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    updates = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())


@irdl_op_definition
class GatherOp(_GatherOp):
    """``take`` along ``axis``: out = data.shape[:axis] + indices.shape +
    data.shape[axis+1:]; negative indices count from the end.

    ```mlir
    %y = graph.gather %emb, %ids {axis = 0 : i64} : (tensor<100x16xf32>, tensor<2x7xi64>) -> tensor<2x7x16xf32>
    ```
    """

    name = "graph.gather"
    axis = IntAttribute(default=0)

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 2)
        _check_element(operand_types[1], "int", "indices")
        d = list(operand_types[0].get_shape())
        if not d:
            raise ShapeError("data must have rank >= 1")
        axis = normalize_axis(attrs.axis, len(d))
        shape = d[:axis] + list(operand_types[1].get_shape()) + d[axis + 1:]
        return [tensor_type(shape, operand_types[0].element_type)]

    def reference(self, data, indices):
        axis = normalize_axis(self.axis, data.ndim)
        return [np.take(data, indices.astype(np.int64), axis=axis)]


# Index semantics shared by these ops (the kernels in lowering/kernels/indexing.py
# implement the same): a negative index counts from the end of its dim; an index
# still outside the dim after that is clamped into it by the gathers (as
# graph.gather does) and makes the scatters skip that update. Either way no
# kernel reads or writes outside a buffer.


SCATTER_REDUCTIONS = ("none", "add", "mul", "max", "min")
_REDUCTION_CHOICE = "{name} must be one of {choices}, got '{value}'"


def _scatter_reduction(attrs: Attrs, element: Attribute) -> str:
    reduction = attrs.reduction
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
class GatherNDOp(_GatherOp):
    """ONNX GatherND: the last dim of ``indices`` holds index tuples into data's
    dims after the first ``batch_dims`` (which data and indices share);
    out = indices.shape[:-1] + data.shape[batch_dims + k:]. Negative indices
    count from the end; out-of-range ones are clamped.

    ```mlir
    %y = graph.gather_nd %x, %i {batch_dims = 1 : i64} : (tensor<2x5x3xf32>, tensor<2x4x1xi64>) -> tensor<2x4x3xf32>
    ```
    """

    name = "graph.gather_nd"
    batch_dims = IntAttribute(default=0)

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 2)
        data, indices = operand_types
        _, shape = _nd_shapes(data, indices, attrs.batch_dims)
        return [tensor_type(shape, data.element_type)]

    def reference(self, data, indices):
        b = self.batch_dims
        k = indices.shape[-1]
        idx = _clamped(indices, data.shape[b:b + k])
        out = np.empty(self.results[0].type.get_shape(), dtype=data.dtype)
        for batch in np.ndindex(data.shape[:b]):
            tuples = idx[batch]  # (..., k)
            out[batch] = data[batch][tuple(np.moveaxis(tuples, -1, 0))]
        return [out]


@irdl_op_definition
class ScatterNDOp(_ScatterOp):
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
    reduction = EnumAttribute(*SCATTER_REDUCTIONS, message=_REDUCTION_CHOICE)
    batch_dims = IntAttribute(default=0)

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 3)
        data, indices, updates = operand_types
        _scatter_reduction(attrs, data.element_type)
        _, shape = _nd_shapes(data, indices, attrs.batch_dims)
        if list(updates.get_shape()) != shape:
            raise ShapeError(
                f"updates shape {list(updates.get_shape())} must be "
                f"indices.shape[:-1] + data.shape[batch_dims + k:] = {shape}"
            )
        if updates.element_type != data.element_type:
            raise ShapeError(f"updates element type {updates.element_type} must be data's {data.element_type}")
        return [data]

    def reference(self, data, indices, updates):
        reduction = self.reduction
        b = self.batch_dims
        dims = data.shape[b:b + indices.shape[-1]]
        out = data.copy()
        for i in np.ndindex(indices.shape[:-1]):
            pos = tuple(_wrap(int(v), n) for v, n in zip(indices[i], dims))
            if all(0 <= p < n for p, n in zip(pos, dims)):
                target = i[:b] + pos
                out[target] = _combine(reduction, out[target], updates[i])
        return [out]


@irdl_op_definition
class ScatterElementsOp(_ScatterOp):
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
    axis = IntAttribute(default=0)
    reduction = EnumAttribute(*SCATTER_REDUCTIONS, message=_REDUCTION_CHOICE)

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 3)
        data, indices, updates = operand_types
        _check_element(indices, "int", "indices")
        _scatter_reduction(attrs, data.element_type)
        d, i = list(data.get_shape()), list(indices.get_shape())
        if not d:
            raise ShapeError("data must have rank >= 1")
        axis = normalize_axis(attrs.axis, len(d))
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
        reduction = self.reduction
        axis = normalize_axis(self.axis, data.ndim)
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
    k = IntAttribute()
    axis = IntAttribute(default=-1)
    largest = BoolAttribute(True)
    sorted = BoolAttribute(True)  # results are sorted either way
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
        axis = normalize_axis(attrs.axis, len(shape))
        k = attrs.k
        if not 0 <= k <= shape[axis]:
            raise ShapeError(f"k = {k} must be in [0, {shape[axis]}] (the extent of axis {axis})")
        shape[axis] = k
        return [tensor_type(shape, x.element_type), tensor_type(shape, i64)]

    def reference(self, x):
        axis = normalize_axis(self.axis, x.ndim)
        k, n = self.k, x.shape[axis]
        if self.largest:
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
    batch_axis = IntAttribute(default=1)
    time_axis = IntAttribute(default=0)
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
        batch = normalize_axis(attrs.batch_axis, len(shape), "batch_axis")
        time = normalize_axis(attrs.time_axis, len(shape), "time_axis")
        if batch == time:
            raise ShapeError(f"batch_axis and time_axis must differ, both are {batch}")
        if list(lens.get_shape()) != [shape[batch]]:
            raise ShapeError(
                f"seq_lens shape {list(lens.get_shape())} must be [{shape[batch]}] "
                f"(the batch extent)"
            )
        return [x]

    def reference(self, x, seq_lens):
        batch = normalize_axis(self.batch_axis, x.ndim)
        time = normalize_axis(self.time_axis, x.ndim)
        lens = np.clip(seq_lens.astype(np.int64), 0, x.shape[time])
        out = x.copy()
        for b, n in enumerate(lens):
            sel = [slice(None)] * x.ndim
            sel[batch] = b
            sel[time] = slice(0, int(n))
            out[tuple(sel)] = np.flip(x[tuple(sel)], axis=time - (batch < time))
        return [out]
