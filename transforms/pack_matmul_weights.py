"""pack-matmul-weights: a matmul whose rhs is a constant matrix reads it pre-packed.

``graph.matmul %a, %w`` with ``%w`` a constant ``[K, N]`` (a weight or a constant) becomes
``graph.matmul_packed %a, %wp`` with ``%wp = [ceil(N / R), K, R]``: the R-column panels the
blocked GEMM's register tile reads (TVM's ``dense_pack`` weight layout, onnxruntime's
prepacked MatMul B), packed once here at compile time. Without it the GEMM copies B into
that layout on every call: 10-20% of a transformer's or an LSTM's 64-197-row products on
this kind of host (onnxruntime's MatMul with a constant B against one with B as an input,
1 thread: 128 x 3072 x 768 252 against 211 GFLOP/s).

Rewritten only where it pays and the packed schedule applies: f32, at least ``min-rows``
rows (fewer: the matrix-vector schedule streams B row-major as it is; a's leading dims
count: a batch ``[B, M, K]`` becomes one ``[B * M, K]`` product between two reshapes, which
are views), N a multiple of R (``panel``: the target's register tile width,
``Target.matmul_register_tile``; by default the host's) or at least MIN_PANELS panels (the
last one zero-padded, its extra columns cut off the product by a graph.slice: the LSTM LM's
1000-word head, 31 panels and 8 columns). Other matmuls are left alone. A weight used by several
matmuls is packed once; the plain weight is dropped from the store when nothing else
reads it.

```
%w = graph.weight "fc.w" : tensor<768x3072xf32>
%y = graph.matmul %x, %w : (tensor<1x128x768xf32>, tensor<768x3072xf32>) -> tensor<1x128x3072xf32>
  ->
%wp = graph.weight "fc.w.packed32" : tensor<96x768x32xf32>
%y = graph.matmul_packed %x, %wp : (tensor<1x128x768xf32>, tensor<96x768x32xf32>) -> tensor<1x128x3072xf32>
```
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from dlc.dialects import graph as g
from dlc.dialects.graph.linalg import pack_columns
from dlc.dialects.graph_base import tensor_type
from dlc.target import Target
from dlc.transforms.fold_constant import weight_names
from dlc.weights import store_of


# N % R columns left over: the last panel zero-padded, its extra columns sliced off the
# product (a copy of the output); only with at least this many panels (a narrow product keeps
# the plain schedule's narrow tiles rather than compute up to R - 1 zero columns)
MIN_PANELS = 4


def _constant(value: SSAValue) -> Operation | None:
    owner = value.owner
    return owner if isinstance(owner, (g.WeightOp, g.ConstantOp)) else None


def packable(op: g.MatmulOp, panel: int, min_rows: int) -> bool:
    """Whether pack-matmul-weights rewrites `op` (see module docstring)."""
    a_t, b_t = (v.type for v in op.operands)
    if not (isinstance(a_t, TensorType) and isinstance(b_t, TensorType)) or _constant(op.operands[1]) is None:
        return False
    a, b = a_t.get_shape(), b_t.get_shape()
    if str(a_t.element_type) != "f32" or str(b_t.element_type) != "f32":
        return False
    if len(a) < 2 or len(b) != 2:
        return False
    rows = math.prod(a[:-1])
    whole = b[1] % panel == 0 and b[1] >= panel
    return rows >= min_rows and b[0] >= 2 and (whole or b[1] >= MIN_PANELS * panel)


@dataclass(frozen=True)
class PackMatmulWeightsPass(ModulePass):
    """Constant matmul rhs matrices in column panels (see module docstring)."""

    name = "pack-matmul-weights"

    panel: int = 0
    """Columns per panel (R): the register tile's width; 0: the host's
    (``Target.host().matmul_register_tile``)."""

    min_rows: int = 4
    """Fewer rows of the product: left alone (the matrix-vector schedule)."""

    def __post_init__(self) -> None:
        if self.panel < 0:
            raise ValueError(f"panel must be >= 0, got {self.panel}")
        if self.min_rows < 1:
            raise ValueError(f"min-rows must be >= 1, got {self.min_rows}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        panel = self.panel or Target.host().matmul_register_tile[1]
        matmuls = [mm for mm in op.walk() if isinstance(mm, g.MatmulOp)
                   and packable(mm, panel, self.min_rows)]
        if not matmuls:
            return
        store = store_of(op)
        names_before = weight_names(op)
        packed: dict[object, str] = {}  # source constant (weight name or op) -> packed weight
        for mm in matmuls:
            source = _constant(mm.operands[1])
            key = source.weight_name.data if isinstance(source, g.WeightOp) else source
            if key not in packed:
                base = source.weight_name.data if isinstance(source, g.WeightOp) else "const"
                packed[key] = store.add(f"{base}.packed{panel}", pack_columns(source.array(), panel))
            k, n = mm.operands[1].type.get_shape()
            wp_type = tensor_type([-(-n // panel), k, panel], mm.operands[1].type.element_type)
            weight = g.WeightOp.make_named(packed[key], wp_type)
            weight.location = source.location
            Rewriter.insert_op(weight, InsertPoint.before(mm))
            lhs = mm.operands[0]
            *lead, rows, _ = lhs.type.get_shape()
            if any(d != 1 for d in lead):  # a batch of rows: one [B * M, K] product (views)
                flat = g.ReshapeOp.make(lhs, shape=[math.prod(lead) * rows, k])
                Rewriter.insert_op(flat, InsertPoint.before(mm))
                lhs = flat.results[0]
            new = g.MatmulPackedOp.make(lhs, weight.results[0])
            new.location = mm.location
            if n % panel:  # the zero columns of the last panel cut off
                Rewriter.insert_op(new, InsertPoint.before(mm))
                rank = len(new.results[0].type.get_shape())
                new = g.SliceOp.make(new.results[0], starts=[0], ends=[n], axes=[rank - 1])
            if lhs is not mm.operands[0]:
                Rewriter.insert_op(new, InsertPoint.before(mm))
                new = g.ReshapeOp.make(new.results[0], shape=list(mm.results[0].type.get_shape()))
            new.results[0].name_hint = mm.results[0].name_hint
            Rewriter.replace_op(mm, new)
            if not source.results[0].uses:
                Rewriter.erase_op(source)
        for name in names_before - weight_names(op):
            store.remove(name)
