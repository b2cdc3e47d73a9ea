"""Ops whose output length depends on the data: nonzero, compress, unique and
non_max_suppression.

Their result types are *bounded*: each result of ``bounded_results()`` has, at
one dim, the largest extent it can take (nonzero: the input's element count;
compress: the kept axis' length; unique: the slices along the axis;
non_max_suppression: batches x classes x the boxes a class may keep), and the
op's last result, a ``tensor<i64>``, holds the extent the run produced. The
valid elements are the first ``prod(true shape)`` of a bounded buffer,
row-major in the true shape (a *prefix*), so the runtime returns them without a
copy (runtime/native.py, "Run-time extents"); the rest of the buffer is zero.
The ONNX importer lets such a result be a graph output only
(frontends/onnx/ops_data_dependent.py); consumers need symbolic shapes.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, TensorType, i64
from xdsl.irdl import irdl_op_definition, operand_def, opt_operand_def, result_def, traits_def
from xdsl.traits import Pure

from dlc.dialects.graph_base import (
    Attrs,
    BoolAttribute,
    GraphOp,
    IntAttribute,
    ShapeError,
    is_bool,
    is_float,
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


def function_extents(fn) -> list[tuple[int, int, int]]:
    """(bounded result, dim, count result) of each ``dlc.extent_of`` on ``fn``'s results."""
    if fn.res_attrs is None:
        return []
    found = []
    for count, attrs in enumerate(fn.res_attrs.data):
        extent = read_extent_of(attrs)
        if extent is not None:
            found.append((extent[0], extent[1], count))
    return found


def true_shaped(values: list[np.ndarray], extents: list[tuple[int, int, int]]) -> list[np.ndarray]:
    """A function's results as its caller sees them: each bounded one cut to its
    extent (the prefix view), the counts dropped (what runtime/native.py returns)."""
    cut = list(values)
    for result, dim, count in extents:
        bound = values[result].shape
        shape = bound[:dim] + (int(values[count]),) + bound[dim + 1:]
        cut[result] = values[result].reshape(-1)[:math.prod(shape)].reshape(shape)
    hidden = {count for _, _, count in extents}
    return [v for k, v in enumerate(cut) if k not in hidden]


class BoundedResultOp(GraphOp):
    """The results of ``bounded_results()`` are bounded; the last result is their run-time extent."""

    NARROW_TYPES: ClassVar[bool] = False

    def bounded_results(self) -> list[tuple[int, int]]:
        """(result index, the dim the run-time extent sizes) of each bounded result."""
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

    def bounded_results(self) -> list[tuple[int, int]]:
        return [(0, 1)]

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

    def bounded_results(self) -> list[tuple[int, int]]:
        return [(0, 0 if self.axis is None else self.axis)]

    def reference(self, x, condition):
        bound = self.results[0].type.get_shape()
        kept = condition[:bound[self.bounded_results()[0][1]]].astype(bool)
        data = x.reshape(-1) if self.axis is None else x
        axis = 0 if self.axis is None else self.axis
        found = np.compress(kept, np.take(data, np.arange(len(kept)), axis=axis), axis=axis)
        return [as_prefix(found, bound), np.array(int(kept.sum()), np.int64)]


@irdl_op_definition
class UniqueOp(BoundedResultOp):
    """ONNX Unique: the distinct slices of ``x`` along ``axis`` (no ``axis``: the
    distinct elements of the flattened ``x``), ascending (``sorted``; slices
    compare lexicographically, NaN largest and equal to NaN) or in order of first
    occurrence. Results: the unique slices, the index of each one's first
    occurrence, for every slice of ``x`` the index of its unique slice
    (``inverse``, not bounded), each one's occurrence count, and the count of
    unique slices. The unique slices, first indices and counts are bounded by
    the number of slices.

    ```mlir
    %y, %first, %inverse, %counts, %n = graph.unique %x {axis = 0 : i64} : (tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<i64>)
    ```
    """

    name = "graph.unique"
    axis = IntAttribute(optional=True)
    sorted = BoolAttribute(default=True)
    x = operand_def(TensorType)
    out = result_def(TensorType)
    first = result_def(TensorType)
    inverse = result_def(TensorType)
    counts = result_def(TensorType)
    count = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 1)
        x = operand_types[0]
        _check_element(x, "any")
        shape = list(x.get_shape())
        if attrs.axis is None:
            shape = [math.prod(shape)]
        else:
            axis = normalize_axis(attrs.axis, len(shape))
            if attrs.axis != axis:
                raise ShapeError(f"axis {attrs.axis} must be normalized to [0, {len(shape)})")
        attrs.sorted
        n = shape[0 if attrs.axis is None else attrs.axis]
        return [tensor_type(shape, x.element_type)] + [tensor_type([n], i64) for _ in range(3)] \
            + [tensor_type([], i64)]

    def bounded_results(self) -> list[tuple[int, int]]:
        return [(0, 0 if self.axis is None else self.axis), (1, 0), (3, 0)]

    def reference(self, x):
        data = x.reshape(-1) if self.axis is None else x
        axis = 0 if self.axis is None else self.axis
        slices = np.moveaxis(data, axis, 0).reshape(data.shape[axis], -1)
        n = slices.shape[0]
        key = [tuple(_sort_key(v) for v in row) for row in slices]
        first_of: dict = {}
        for i, k in enumerate(key):
            first_of.setdefault(k, i)
        firsts = sorted(first_of.values(), key=lambda i: key[i]) if self.sorted else sorted(first_of.values())
        position = {key[i]: p for p, i in enumerate(firsts)}
        inverse = np.array([position[k] for k in key], np.int64)
        counts = np.bincount(inverse, minlength=len(firsts)).astype(np.int64) if n else np.zeros(0, np.int64)
        found = np.take(data, np.array(firsts, np.int64), axis=axis)
        bound = self.results[0].type.get_shape()
        return [as_prefix(found, bound), as_prefix(np.array(firsts, np.int64), [n]), inverse,
                as_prefix(counts, [n]), np.array(len(firsts), np.int64)]


def _sort_key(value):
    """Unique's total order on elements: NaN after every number, NaNs equal."""
    v = value.item()
    return (1, 0.0) if isinstance(v, float) and math.isnan(v) else (0, v)


@irdl_op_definition
class NonMaxSuppressionOp(BoundedResultOp):
    """ONNX NonMaxSuppression: per batch and class, boxes in descending score
    order (a tie: the lower index first) whose score is above
    ``score_threshold`` (when given) are kept unless their IoU with a box
    already kept in that class exceeds ``iou_threshold``, at most
    ``max_output_boxes_per_class`` of them (a negative one keeps none). Boxes are
    ``[y1, x1, y2, x2]`` corners in either order, or with ``center_point_box``
    ``[x_center, y_center, width, height]``. Result: ``[batch, class, box]``
    rows, bounded by batches x classes x ``min(boxes, max_selected_per_class)``
    (the attribute: a known upper bound on ``max_output_boxes_per_class``;
    absent: the box count), and the number of rows.

    ```mlir
    %rows, %n = graph.non_max_suppression %boxes, %scores, %max, %iou {max_selected_per_class = 3 : i64} : (tensor<1x6x4xf32>, tensor<1x2x6xf32>, tensor<1xi64>, tensor<1xf32>) -> (tensor<6x3xi64>, tensor<i64>)
    ```
    """

    name = "graph.non_max_suppression"
    center_point_box = BoolAttribute(default=False)
    max_selected_per_class = IntAttribute(optional=True)
    boxes = operand_def(TensorType)
    scores = operand_def(TensorType)
    max_output_boxes_per_class = operand_def(TensorType)
    iou_threshold = operand_def(TensorType)
    score_threshold = opt_operand_def(TensorType)
    selected = result_def(TensorType)
    count = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, (4, 5))
        boxes, scores, max_out, iou = operand_types[:4]
        b_shape, s_shape = list(boxes.get_shape()), list(scores.get_shape())
        if len(b_shape) != 3 or b_shape[2] != 4:
            raise ShapeError(f"boxes must be [batches, boxes, 4], got {b_shape}")
        if len(s_shape) != 3 or s_shape[0] != b_shape[0] or s_shape[2] != b_shape[1]:
            raise ShapeError(f"scores must be [batches, classes, boxes] = [{b_shape[0]}, C, {b_shape[1]}], "
                             f"got {s_shape}")
        if not is_float(boxes.element_type) or scores.element_type != boxes.element_type:
            raise ShapeError(f"boxes and scores must have one float element type, got "
                             f"{boxes.element_type} and {scores.element_type}")
        if max_out.element_type != i64 or math.prod(max_out.get_shape()) != 1:
            raise ShapeError(f"max_output_boxes_per_class must be one i64, got {max_out}")
        for what, t in zip(("iou_threshold", "score_threshold"), operand_types[3:]):
            if t.element_type != boxes.element_type or math.prod(t.get_shape()) != 1:
                raise ShapeError(f"{what} must be one {boxes.element_type}, got {t}")
        per_class = b_shape[1]
        if attrs.max_selected_per_class is not None:
            if attrs.max_selected_per_class < 0:
                raise ShapeError(f"max_selected_per_class must be >= 0, got {attrs.max_selected_per_class}")
            per_class = min(per_class, attrs.max_selected_per_class)
        attrs.center_point_box
        return [tensor_type([b_shape[0] * s_shape[1] * per_class, 3], i64), tensor_type([], i64)]

    def bounded_results(self) -> list[tuple[int, int]]:
        return [(0, 0)]

    def reference(self, boxes, scores, max_output_boxes_per_class, iou_threshold, score_threshold=None):
        limit = max(int(max_output_boxes_per_class.reshape(-1)[0]), 0)
        if self.max_selected_per_class is not None:
            limit = min(limit, self.max_selected_per_class)
        iou = iou_threshold.reshape(-1)[0]
        rows = []
        for b in range(boxes.shape[0]):
            for c in range(scores.shape[1]):
                s = scores[b, c]
                order = [i for i in sorted(range(len(s)), key=lambda i: (-s[i], i))
                         if score_threshold is None or s[i] > score_threshold.reshape(-1)[0]]
                kept: list[int] = []
                for i in order:
                    if len(kept) >= limit:
                        break
                    if not any(_iou_above(boxes[b, i], boxes[b, j], self.center_point_box, iou) for j in kept):
                        kept.append(i)
                        rows.append((b, c, i))
        found = np.array(rows, np.int64).reshape(-1, 3)
        return [as_prefix(found, self.results[0].type.get_shape()), np.array(len(rows), np.int64)]


def box_edges(box, center_point_box: bool):
    """(x_min, x_max, y_min, y_max) of a box, in its element type."""
    if center_point_box:
        half_w, half_h = box[2] / 2, box[3] / 2
        return box[0] - half_w, box[0] + half_w, box[1] - half_h, box[1] + half_h
    return min(box[1], box[3]), max(box[1], box[3]), min(box[0], box[2]), max(box[0], box[2])


def _iou_above(a, b, center_point_box: bool, threshold) -> bool:
    """onnxruntime's suppress test: IoU > threshold; no overlap or an empty box never suppresses."""
    ax0, ax1, ay0, ay1 = box_edges(a, center_point_box)
    bx0, bx1, by0, by1 = box_edges(b, center_point_box)
    ix0, ix1, iy0, iy1 = max(ax0, bx0), min(ax1, bx1), max(ay0, by0), min(ay1, by1)
    if ix1 <= ix0 or iy1 <= iy0:
        return False
    inter = (ix1 - ix0) * (iy1 - iy0)
    area_a, area_b = (ax1 - ax0) * (ay1 - ay0), (bx1 - bx0) * (by1 - by0)
    union = area_a + area_b - inter
    if inter <= 0 or area_a <= 0 or area_b <= 0 or union <= 0:
        return False
    return inter / union > threshold
