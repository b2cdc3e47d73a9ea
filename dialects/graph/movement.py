"""Data movement: reshape, transpose, broadcast, squeeze/unsqueeze, slice,
pad, concat and split (ops that copy elements without computing on them).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import Pure

from dlc.dialects.graph_base import (
    Attrs,
    broadcast_shapes,
    EnumAttribute,
    FloatAttribute,
    GraphOp,
    IntAttribute,
    IntsAttribute,
    normalize_axis,
    or_default,
    ShapeError,
    tensor_type,
)
from dlc.dialects.graph.common import _contiguous, _expect_count, _same_element, Types
from dlc.dialects.graph import decompose
from dlc.dialects.traits import Composite, ViewLike


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
    shape = IntsAttribute()
    traits = traits_def(Pure(), ViewLike())

    @classmethod
    def out_shape(cls, shape, attrs):
        target = list(attrs.shape)
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
    perm = IntsAttribute(optional=True)  # default: the dims reversed

    @classmethod
    def out_shape(cls, shape, attrs):
        perm = or_default(attrs.perm, tuple(reversed(range(len(shape)))))
        if sorted(perm) != list(range(len(shape))):
            raise ShapeError(f"perm {list(perm)} is not a permutation of 0..{len(shape) - 1}")
        return [shape[p] for p in perm]

    def reference(self, x):
        perm = or_default(self.perm, tuple(reversed(range(x.ndim))))
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
    shape = IntsAttribute()

    @classmethod
    def out_shape(cls, shape, attrs):
        target = attrs.shape
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
    axes = IntsAttribute(optional=True)  # default: every dim of extent 1
    traits = traits_def(Composite(decompose.to_reshape), ViewLike())

    @classmethod
    def out_shape(cls, shape, attrs):
        if attrs.axes is None:
            return [d for d in shape if d != 1]
        axes = [normalize_axis(a, len(shape)) for a in attrs.axes]
        if len(set(axes)) != len(axes):
            raise ShapeError(f"axes {list(attrs.axes)} repeat an axis")
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
    axes = IntsAttribute()
    traits = traits_def(Composite(decompose.to_reshape), ViewLike())

    @classmethod
    def out_shape(cls, shape, attrs):
        rank = len(shape) + len(attrs.axes)
        axes = sorted(normalize_axis(a, rank) for a in attrs.axes)
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
    starts, ends = attrs.starts, attrs.ends
    axes = or_default(attrs.axes, tuple(range(len(starts))))
    steps = or_default(attrs.steps, (1,) * len(starts))
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
    starts = IntsAttribute()
    ends = IntsAttribute()
    axes = IntsAttribute(optional=True)  # default: 0, 1, ... per start
    steps = IntsAttribute(optional=True)  # default: 1 per start

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
    pads = IntsAttribute()
    mode = EnumAttribute("constant", "reflect", "edge", message="mode must be constant, reflect or edge, got {value}")
    value = FloatAttribute(default=0.0)

    @classmethod
    def out_shape(cls, shape, attrs):
        pads = attrs.pads
        if len(pads) != 2 * len(shape):
            raise ShapeError(f"pads must have 2 x rank = {2 * len(shape)} values, got {len(pads)}")
        mode = attrs.mode  # checked by its declaration
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
        pads = self.pads
        r = x.ndim
        before, after = pads[:r], pads[r:]
        # negative pads crop first
        crop = tuple(slice(max(-b, 0), d - max(-a, 0)) for b, a, d in zip(before, after, x.shape))
        x = x[crop]
        width = [(max(b, 0), max(a, 0)) for b, a in zip(before, after)]
        mode = self.mode
        if mode == "constant":
            value = self.value
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
    axis = IntAttribute()
    inputs = var_operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        if not operand_types:
            raise ShapeError("expects at least one operand")
        element = _same_element(operand_types)
        first = list(operand_types[0].get_shape())
        axis = normalize_axis(attrs.axis, len(first))
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
        return [np.concatenate(xs, axis=self.axis)]


@irdl_op_definition
class SplitOp(GraphOp):
    """Split along ``axis`` into pieces of ``sizes`` (which sum to the extent).

    ```mlir
    %a, %b = graph.split %x {axis = 1 : i64, sizes = array<i64: 2, 3>} : (tensor<4x5xf32>) -> (tensor<4x2xf32>, tensor<4x3xf32>)
    ```
    """

    name = "graph.split"
    NARROW_TYPES: ClassVar[bool] = True
    axis = IntAttribute(default=0)
    sizes = IntsAttribute()
    x = operand_def(TensorType)
    outs = var_result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 1)
        shape = list(operand_types[0].get_shape())
        axis = normalize_axis(attrs.axis, len(shape))
        sizes = attrs.sizes
        if sum(sizes) != shape[axis] or min(sizes, default=0) < 0:
            raise ShapeError(f"sizes {list(sizes)} do not sum to the extent {shape[axis]} of axis {axis}")
        outs = []
        for s in sizes:
            piece = list(shape)
            piece[axis] = s
            outs.append(tensor_type(piece, operand_types[0].element_type))
        return outs

    def reference(self, x):
        axis = self.axis
        cuts = np.cumsum(self.sizes)[:-1]
        return [_contiguous(p) for p in np.split(x, cuts, axis=axis)]
