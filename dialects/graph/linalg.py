"""Linear algebra: matmul, matmul_packed (a constant rhs in panels), dense (x @ w.T + b)
and det.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.irdl import irdl_op_definition, operand_def, opt_operand_def, result_def, traits_def
from xdsl.traits import Pure

from dlc.dialects.graph_base import Attrs, broadcast_shapes, GraphOp, ShapeError, tensor_type
from dlc.dialects.graph.common import (
    _broadcasts_to,
    _check_element,
    _contiguous,
    _expect_count,
    _same_element,
    Types,
)
from dlc.dialects.graph import decompose
from dlc.dialects.traits import Composite, FusionAnchor, WidenF16


@irdl_op_definition
class MatmulOp(GraphOp):
    """numpy ``matmul``: batch dims broadcast; a 1-D operand is promoted to a
    matrix and the added dim removed (covers batch-matmul).

    ```mlir
    %c = graph.matmul %a, %b : (tensor<8x2x3xf32>, tensor<3x5xf32>) -> tensor<8x2x5xf32>
    ```
    """

    name = "graph.matmul"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure(), FusionAnchor(dense=True), WidenF16())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 2)
        element = _same_element(operand_types)
        _check_element(operand_types[0], "numeric")
        a, b = (list(t.get_shape()) for t in operand_types)
        if not a or not b:
            raise ShapeError("operands must have rank >= 1 (no scalars in matmul)")
        a2 = [1] + a if len(a) == 1 else a
        b2 = b + [1] if len(b) == 1 else b
        if a2[-1] != b2[-2]:
            raise ShapeError(
                f"contraction dims differ: lhs has K={a2[-1]}, rhs has K={b2[-2]}"
            )
        batch = broadcast_shapes(a2[:-2], b2[:-2])
        shape = list(batch) + [a2[-2], b2[-1]]
        if len(a) == 1:
            shape.pop(-2)
        if len(b) == 1:
            shape.pop(-1)
        return [tensor_type(shape, element)]

    def reference(self, a: np.ndarray, b: np.ndarray) -> list[np.ndarray]:
        if a.dtype.kind == "f":
            out = np.matmul(a.astype(np.float64), b.astype(np.float64))
        else:
            out = np.matmul(a, b)
        return [out.astype(a.dtype)]


@irdl_op_definition
class MatmulPackedOp(GraphOp):
    """``a @ b`` with ``b`` ([K, N]) stored as N / R column panels ``bp[N / R, K, R]``
    (``bp[p, k, r] = b[k, p * R + r]``; TVM's ``dense_pack`` weight layout). pack-matmul-weights
    writes it for a constant ``b``: the GEMM's register tile then reads each K x R panel as
    one contiguous stream, with no packing of B at run time. ``a``'s leading dims are 1.

    ```mlir
    %c = graph.matmul_packed %a, %bp : (tensor<1x128x768xf32>, tensor<24x768x32xf32>) -> tensor<1x128x768xf32>
    ```
    """

    name = "graph.matmul_packed"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure(), FusionAnchor(dense=True))

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 2)
        element = _same_element(operand_types)
        _check_element(operand_types[0], "float")
        a, bp = (list(t.get_shape()) for t in operand_types)
        if len(a) < 2 or any(d != 1 for d in a[:-2]):
            raise ShapeError(f"lhs must be [1.., M, K] (leading dims 1), got shape {a}")
        if len(bp) != 3:
            raise ShapeError(f"rhs must be column panels [N / R, K, R], got shape {bp}")
        if a[-1] != bp[1]:
            raise ShapeError(f"contraction dims differ: lhs has K={a[-1]}, rhs panels have K={bp[1]}")
        return [tensor_type(a[:-1] + [bp[0] * bp[2]], element)]

    def reference(self, a: np.ndarray, bp: np.ndarray) -> list[np.ndarray]:
        b = bp.transpose(1, 0, 2).reshape(bp.shape[1], bp.shape[0] * bp.shape[2])
        return [np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(a.dtype)]


def pack_columns(b: np.ndarray, panel: int) -> np.ndarray:
    """``b[K, N]`` as MatmulPackedOp's panels ``[ceil(N / panel), K, panel]``; the last
    panel's columns past N are zeros."""
    k, n = b.shape
    panels = -(-n // panel)
    if panels * panel != n:
        b = np.concatenate([b, np.zeros((k, panels * panel - n), b.dtype)], axis=1)
    return np.ascontiguousarray(b.reshape(k, panels, panel).transpose(1, 0, 2))


@irdl_op_definition
class DenseOp(GraphOp):
    """Fully connected layer: ``x[..., K] . w[N, K]^T (+ bias[N])`` -> ``[..., N]``.
    Composite: legalize rewrites it to transpose + matmul + add.

    ```mlir
    %y = graph.dense %x, %w, %b : (tensor<4x16xf32>, tensor<10x16xf32>, tensor<10xf32>) -> tensor<4x10xf32>
    ```
    """

    name = "graph.dense"
    x = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure(), Composite(decompose.dense))

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, (2, 3))
        element = _same_element(operand_types)
        _check_element(operand_types[0], "numeric")
        x, w = (list(t.get_shape()) for t in operand_types[:2])
        if len(x) < 1 or len(w) != 2:
            raise ShapeError(
                f"weight must be 2-D [N, K] and x at least 1-D, got weight {w} and x {x}"
            )
        if x[-1] != w[1]:
            raise ShapeError(f"x has K={x[-1]} but weight [N, K] has K={w[1]}")
        shape = x[:-1] + [w[0]]
        if len(operand_types) == 3:
            bias = list(operand_types[2].get_shape())
            if not _broadcasts_to(bias, shape):
                raise ShapeError(f"bias of shape {bias} does not broadcast to {shape}")
        return [tensor_type(shape, element)]

    def reference(self, x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None):
        out = np.matmul(x.astype(np.float64), w.T.astype(np.float64))
        if b is not None:
            out = out + b
        return [out.astype(x.dtype)]
@irdl_op_definition
class DetOp(GraphOp):
    """Determinant of the square matrices in the last two dims (batched over
    the leading dims); the kernel uses LU with partial pivoting in f64.

    ```mlir
    %d = graph.det %x : (tensor<2x3x3xf32>) -> tensor<2xf32>
    ```
    """

    name = "graph.det"
    x = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 1)
        _check_element(operand_types[0], "float")
        shape = list(operand_types[0].get_shape())
        if len(shape) < 2 or shape[-1] != shape[-2]:
            raise ShapeError(f"input must be square matrices [..., M, M], got shape {shape}")
        return [tensor_type(shape[:-2], operand_types[0].element_type)]

    def reference(self, x: np.ndarray) -> list[np.ndarray]:
        return [_contiguous(np.linalg.det(x.astype(np.float64))).astype(x.dtype)]
