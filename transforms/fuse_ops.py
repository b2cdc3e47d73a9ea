"""`fuse-ops`: group elementwise ops with their producer (TVM-style operator fusion).

``fuse-ops{dense=true}``

Each elementwise op (unary/binary math, comparisons, clip, leaky_relu,
where) whose operand comes from a *fusable producer* joins the producer's
group when

* that operand has no other user (the intermediate tensor disappears), and
* the op's result has the producer's type (same shape and element type: the
  chain is computed in the producer's output loop, in place).

Fusable producers: conv2d, matmul (``dense=false`` leaves those two alone),
max/avg pools, reductions (sum, mean, max, min, prod) and elementwise ops, so
``conv2d -> add(bias) -> relu`` and ``sub -> exp`` become one group each, and
injective chains are fused together. The chain's other operands (a bias, a
residual) may come from anywhere before the group's last op.

A group is marked, readably, by a discardable attribute on each member::

    %y = graph.conv2d %x, %w {dlc.group = 0 : i64} : ...
    %b = graph.add %y, %bias {dlc.group = 0 : i64} : ...
    %r = graph.relu %b {dlc.group = 0 : i64} : ...

Members appear in program order; the first is the anchor, the rest its
epilogue; only the last result is used outside. The graph's meaning does not
change (the evaluator ignores the attribute); ``lower-to-loops`` turns each
group into one kernel (``lowering/fused.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from dlc.dialects.graph_base import GraphOp
from dlc.lowering.fused import GROUP_ATTR
from dlc.lowering.kernels.elementwise import scalar_compute

DENSE_PRODUCERS = ("graph.conv2d", "graph.matmul")
OTHER_PRODUCERS = ("graph.max_pool2d", "graph.avg_pool2d", "graph.reduce_sum", "graph.reduce_mean",
                   "graph.reduce_max", "graph.reduce_min", "graph.reduce_prod")


def is_elementwise(op: Operation) -> bool:
    return isinstance(op, GraphOp) and len(op.results) == 1 and scalar_compute(op) is not None


def fuse_function(fn: func.FuncOp, dense: bool, first_id: int = 0) -> int:
    """Mark the groups of ``fn``; returns the next free group id."""
    producers = set(OTHER_PRODUCERS) | (set(DENSE_PRODUCERS) if dense else set())
    group_of: dict[Operation, list[Operation]] = {}
    groups: list[list[Operation]] = []
    for op in fn.body.block.ops:
        if not is_elementwise(op) or op.attributes.get(GROUP_ATTR) is not None:
            continue
        for value in op.operands:
            producer = value.owner
            if not isinstance(producer, GraphOp) or len(producer.results) != 1:
                continue
            if not (producer.name in producers or is_elementwise(producer)):
                continue
            if value.type != op.results[0].type or not value.has_one_use():
                continue
            group = group_of.get(producer)
            if group is None:
                group = [producer]
                groups.append(group)
                group_of[producer] = group
            elif group[-1] is not producer:
                continue  # the producer is inside a group already (defensive)
            group.append(op)
            group_of[op] = group
            break
    next_id = first_id
    for group in groups:
        for member in group:
            member.attributes[GROUP_ATTR] = IntegerAttr(next_id, i64)
        next_id += 1
    return next_id


@dataclass(frozen=True)
class FuseOpsPass(ModulePass):
    """Group elementwise ops with their producers (see module docstring)."""

    name = "fuse-ops"

    dense: bool = True
    """Fuse epilogues into conv2d and matmul too."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        next_id = 0
        for fn in op.ops:
            if isinstance(fn, func.FuncOp) and fn.body.blocks and len(fn.body.blocks) == 1:
                next_id = fuse_function(fn, self.dense, next_id)
