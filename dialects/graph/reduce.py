"""Reductions over axes (sum, mean, max, min, prod) and arg_max/arg_min.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import i64, TensorType
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Pure

from dlc.dialects.graph_base import (
    Attrs,
    BoolAttribute,
    GraphOp,
    IntAttribute,
    IntsAttribute,
    normalize_axis,
    ShapeError,
    tensor_type,
)
from dlc.dialects.graph.common import _check_element, _expect_count, Types
from dlc.dialects.traits import FusionAnchor, LayoutFree, WidenF16


def _reduce_axes(attrs: Attrs, rank: int) -> tuple[int, ...]:
    axes = attrs.axes
    if not axes:
        return tuple(range(rank))
    norm = tuple(sorted(normalize_axis(a, rank) for a in axes))
    if len(set(norm)) != len(norm):
        raise ShapeError(f"axes {list(axes)} repeat an axis")
    return norm


class ReduceOp(GraphOp):
    """Reduction over ``axes`` (empty or absent: all axes), ``keepdims``."""

    x = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure(), FusionAnchor())
    ELEMENT: ClassVar[str] = "numeric"
    NEEDS_ELEMENTS: ClassVar[bool] = False  # max/min of nothing is undefined

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 1)
        _check_element(operand_types[0], cls.ELEMENT)
        shape = list(operand_types[0].get_shape())
        axes = _reduce_axes(attrs, len(shape))
        if cls.NEEDS_ELEMENTS:
            _check_nonempty(shape, axes)
        keep = attrs.keepdims
        out = [1 if i in axes else d for i, d in enumerate(shape) if keep or i not in axes]
        return [tensor_type(out, operand_types[0].element_type)]

    def compute(self, x: np.ndarray, axes: tuple[int, ...], keep: bool) -> np.ndarray:
        raise NotImplementedError

    def reference(self, x: np.ndarray) -> list[np.ndarray]:
        axes = _reduce_axes(self.attrs, x.ndim)
        out = self.compute(x, axes, self.keepdims)
        return [np.asarray(out).astype(x.dtype)]


def _check_nonempty(shape: Sequence[int], axes: Sequence[int]) -> None:
    for a in axes:
        if shape[a] == 0:
            raise ShapeError(f"cannot reduce axis {a} of extent 0 (no elements to compare)")


def _reduce(name: str, fn, doc: str, needs_elements: bool = False, extra_traits=()):
    op_name = f"graph.{name}"

    class _Op(ReduceOp):
        traits = traits_def(*extra_traits)
        NEEDS_ELEMENTS: ClassVar[bool] = needs_elements
        axes = IntsAttribute(default=())  # default: every axis
        keepdims = BoolAttribute()

        def compute(self, x, axes, keep):
            return fn(x, axes, keep)

    _Op.__name__ = _Op.__qualname__ = "".join(p.title() for p in name.split("_")) + "Op"
    _Op.name = op_name
    _Op.__doc__ = (
        f"{doc} over ``axes`` (all when absent), ``keepdims`` keeps them as 1.\n\n"
        f"```mlir\n%y = {op_name} %x {{axes = array<i64: 1>, keepdims = true}} : "
        f"(tensor<2x3x4xf32>) -> tensor<2x1x4xf32>\n```\n"
    )
    return irdl_op_definition(_Op)


def _acc(x):
    return x.astype(np.float64) if x.dtype.kind == "f" else x


ReduceSumOp = _reduce("reduce_sum", lambda x, a, k: _acc(x).sum(axis=a, keepdims=k), "Sum",
                      extra_traits=(WidenF16(), LayoutFree()))
ReduceMeanOp = _reduce("reduce_mean", lambda x, a, k: _acc(x).mean(axis=a, keepdims=k), "Mean",
                       extra_traits=(WidenF16(), LayoutFree(blocked="graph.avg_pool2d_nchwc")))
ReduceMaxOp = _reduce("reduce_max", lambda x, a, k: x.max(axis=a, keepdims=k), "Maximum", True,
                      extra_traits=(LayoutFree(blocked="graph.max_pool2d_nchwc"),))
ReduceMinOp = _reduce("reduce_min", lambda x, a, k: x.min(axis=a, keepdims=k), "Minimum", True,
                      extra_traits=(LayoutFree(),))
ReduceProdOp = _reduce("reduce_prod", lambda x, a, k: _acc(x).prod(axis=a, keepdims=k), "Product",
                       extra_traits=(WidenF16(),))


class _ArgReduceOp(GraphOp):
    axis = IntAttribute(default=0)
    keepdims = BoolAttribute()
    select_last_index = BoolAttribute()
    x = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 1)
        _check_element(operand_types[0], "numeric")
        shape = list(operand_types[0].get_shape())
        axis = normalize_axis(attrs.axis, len(shape))
        _check_nonempty(shape, [axis])
        keep = attrs.keepdims
        out = [1 if i == axis else d for i, d in enumerate(shape) if keep or i != axis]
        return [tensor_type(out, i64)]

    def _arg(self, x: np.ndarray, fn) -> list[np.ndarray]:
        axis = normalize_axis(self.axis, x.ndim)
        if self.select_last_index:
            idx = x.shape[axis] - 1 - fn(np.flip(x, axis=axis), axis=axis)
        else:
            idx = fn(x, axis=axis)
        if self.keepdims:
            idx = np.expand_dims(idx, axis)
        return [np.asarray(idx, dtype=np.int64)]


@irdl_op_definition
class ArgMaxOp(_ArgReduceOp):
    """Index (i64) of the maximum along ``axis``; first occurrence unless
    ``select_last_index``.

    ```mlir
    %i = graph.argmax %x {axis = 1 : i64} : (tensor<2x10xf32>) -> tensor<2xi64>
    ```
    """

    name = "graph.argmax"

    def reference(self, x):
        return self._arg(x, np.argmax)


@irdl_op_definition
class ArgMinOp(_ArgReduceOp):
    """Index (i64) of the minimum along ``axis``.

    ```mlir
    %i = graph.argmin %x {axis = 1 : i64, keepdims = true} : (tensor<2x10xf32>) -> tensor<2x1xi64>
    ```
    """

    name = "graph.argmin"

    def reference(self, x):
        return self._arg(x, np.argmin)
