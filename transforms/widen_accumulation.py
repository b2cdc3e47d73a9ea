"""`widen-accumulation`: f16 reductions accumulate in f32.

``widen-accumulation``

The matmul, conv, pool and reduce kernels accumulate in their output
element, so an f16 op rounds to f16 after every one of its K terms; numpy and
onnx.reference (and cuBLAS/cuDNN, and TVM with ``out_dtype``) accumulate in
f32 and round once. This pass rewrites each f16 reduction op as
``cast f32 -> the op in f32 -> cast f16`` at the graph level, so every kernel
(and every schedule of it) gets the wider accumulator without knowing about
it; fold-constant then widens constant weights once, and fuse-ops folds the
narrowing cast into the kernel's epilogue.

Reduction ops are those declaring the ``WidenF16`` trait (``dialects/traits.py``):
matmul, conv2d, conv_transpose2d, avg_pool2d, avg_pool3d, reduce_sum,
reduce_mean, reduce_prod (after legalize: dense, softmax, layer_norm,
global_avg_pool... have become these). Ops without accumulation (max pools,
elementwise) keep f16. Runs after legalize.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import Float16Type, ModuleOp, f16, f32
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern

from dlc.dialects import graph as g
from dlc.dialects.graph_base import GraphOp
from dlc.dialects.traits import WidenF16


def _is_f16(value) -> bool:
    return isinstance(getattr(value.type, "element_type", None), Float16Type)


class WidenF16Accumulation(RewritePattern):
    def match_and_rewrite(self, op, rewriter: PatternRewriter) -> None:
        if not isinstance(op, GraphOp) or not op.has_trait(WidenF16) or not all(_is_f16(r) for r in op.results):
            return
        widened = [g.CastOp.make(o, to=f32) if _is_f16(o) else None for o in op.operands]
        operands = [w.results[0] if w is not None else o for w, o in zip(widened, op.operands)]
        wide_op = type(op).make(*operands, **dict(op.attributes))
        narrowed = [g.CastOp.make(r, to=f16) for r in wide_op.results]
        new_ops = [w for w in widened if w is not None] + [wide_op] + narrowed
        rewriter.replace(op, new_ops, [n.results[0] for n in narrowed])


@dataclass(frozen=True)
class WidenAccumulationPass(ModulePass):
    """f16 matmul/conv/pool/reduce ops compute in f32 (see module docstring)."""

    name = "widen-accumulation"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(WidenF16Accumulation(), apply_recursively=False).rewrite_module(op)
