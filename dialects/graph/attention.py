"""Attention: scaled dot-product attention with the head split/merge folded in.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.irdl import irdl_op_definition, operand_def, opt_operand_def, result_def, traits_def
from xdsl.traits import Pure

from dlc.dialects.graph_attributes import FloatAttribute, IntsAttribute
from dlc.dialects.graph_base import Attrs, GraphOp, ShapeError, tensor_type
from dlc.dialects.graph.common import _broadcasts_to, _check_element, _expect_count, _same_element, Types
from dlc.dialects.graph import decompose
from dlc.dialects.traits import Composite

IDENTITY = (0, 1, 2, 3)


def logical_shape(shape, perm) -> list[int]:
    """The (batch, heads, rows, features) shape a rank-4 operand is read as:
    ``transpose(operand, perm)``."""
    return [shape[p] for p in perm]


@irdl_op_definition
class AttentionOp(GraphOp):
    """Scaled dot-product attention, one softmax row per query:
    ``out = transpose(softmax(Q K^T * scale (+ mask), -1) V, out_perm)`` where
    ``Q = transpose(q, q_perm)`` is read as (batch, heads, Sq, Dh), ``K =
    transpose(k, k_perm)`` as (batch, heads, Sk, Dh), ``V = transpose(v, v_perm)``
    as (batch, heads, Sk, Dv); the optional ``mask`` (additive, e.g. causal)
    broadcasts to (batch, heads, Sq, Sk). The perms are the head split and merge
    transposes folded in: no transposed copy exists. Composite: legalize writes it
    out as transposes, matmuls, a scale, the mask add and a softmax (the GPU path);
    the CPU pipeline forms it with ``fuse-attention`` after legalize, and it runs as
    one kernel (``lowering/kernels/attention.py``, online softmax).

    ```mlir
    %o = graph.attention %q, %k, %v, %m {scale = 0.5 : f32, q_perm = array<i64: 0, 2, 1, 3>, k_perm = array<i64: 0, 2, 1, 3>, v_perm = array<i64: 0, 2, 1, 3>, out_perm = array<i64: 0, 2, 1, 3>} : (tensor<1x5x2x4xf32>, tensor<1x5x2x4xf32>, tensor<1x5x2x4xf32>, tensor<1x1x5x5xf32>) -> tensor<1x5x2x4xf32>
    ```
    """

    name = "graph.attention"
    q = operand_def(TensorType)
    k = operand_def(TensorType)
    v = operand_def(TensorType)
    mask = opt_operand_def(TensorType)
    out = result_def(TensorType)
    scale = FloatAttribute()
    q_perm = IntsAttribute(default=IDENTITY)
    k_perm = IntsAttribute(default=IDENTITY)
    v_perm = IntsAttribute(default=IDENTITY)
    out_perm = IntsAttribute(default=IDENTITY)
    traits = traits_def(Pure(), Composite(decompose.attention))

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, (3, 4))
        element = _same_element(operand_types)
        _check_element(operand_types[0], "float")
        logical = []
        for what, t in zip(("q", "k", "v"), operand_types[:3]):
            shape = list(t.get_shape())
            if len(shape) != 4:
                raise ShapeError(f"{what} must have rank 4 (batch, heads, rows, features in some order), got {shape}")
            perm = tuple(getattr(attrs, f"{what}_perm"))
            if sorted(perm) != [0, 1, 2, 3]:
                raise ShapeError(f"{what}_perm must be a permutation of 0..3, got {list(perm)}")
            logical.append(logical_shape(shape, perm))
        out_perm = tuple(attrs.out_perm)
        if sorted(out_perm) != [0, 1, 2, 3]:
            raise ShapeError(f"out_perm must be a permutation of 0..3, got {list(out_perm)}")
        (b, h, sq, dh), (kb, kh, sk, kd), (vb, vh, vs, dv) = logical
        if (b, h) != (kb, kh) or (b, h) != (vb, vh):
            raise ShapeError(f"q, k and v must agree on (batch, heads), got {(b, h)}, {(kb, kh)}, {(vb, vh)}")
        if dh != kd:
            raise ShapeError(f"q and k must agree on the head size, got {dh} and {kd}")
        if sk != vs:
            raise ShapeError(f"k and v must agree on the key count, got {sk} and {vs}")
        if len(operand_types) == 4:
            mask = list(operand_types[3].get_shape())
            if not _broadcasts_to(mask, [b, h, sq, sk]):
                raise ShapeError(f"mask of shape {mask} does not broadcast to the scores {[b, h, sq, sk]}")
        return [tensor_type(logical_shape([b, h, sq, dv], out_perm), element)]

    def reference(self, q, k, v, mask=None) -> list[np.ndarray]:
        ql, kl, vl = (np.transpose(x.astype(np.float64), p)
                      for x, p in ((q, self.q_perm), (k, self.k_perm), (v, self.v_perm)))
        s = np.matmul(ql, np.swapaxes(kl, -1, -2)) * self.scale
        if mask is not None:
            s = s + mask
        s = np.exp(s - s.max(axis=-1, keepdims=True))
        out = np.matmul(s / s.sum(axis=-1, keepdims=True), vl)
        return [np.ascontiguousarray(np.transpose(out, self.out_perm)).astype(q.dtype)]
