"""The op facts passes ask about are traits on the ops (dlc/dialects/traits.py).

Each set of ops holding a trait is pinned against the name list the pass kept
before the trait existed (hard-coded here on purpose: equal sets mean the
passes behave as they did), and every Elementwise op's kernel really has the
scalar body fuse-ops chains into another kernel, so the trait and the kernel
library cannot drift apart.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from xdsl.dialects.builtin import TensorType, f32, i1, i32
from xdsl.ir import Block

from dlc.dialects import graph as g
from xdsl.traits import ConstantLike

from dlc.dialects.traits import Composite, Elementwise, FusionAnchor, LayoutFree, ViewLike, WidenF16
from dlc.lowering.kernels.elementwise import elementwise_kernel, scalar_compute

# -- the lists the passes used before ------------------------------------------------

# fuse-ops: elementwise <=> lowering.kernels.elementwise.scalar_compute(op) is not None
OLD_ELEMENTWISE = {
    "graph.abs", "graph.acos", "graph.add", "graph.and", "graph.asin", "graph.atan",
    "graph.bitwise_and", "graph.bitwise_not", "graph.bitwise_or", "graph.bitwise_xor",
    "graph.ceil", "graph.clip", "graph.cos", "graph.div", "graph.equal", "graph.erf",
    "graph.exp", "graph.floor", "graph.greater", "graph.greater_equal", "graph.leaky_relu",
    "graph.less", "graph.less_equal", "graph.log", "graph.max", "graph.min", "graph.mod",
    "graph.mul", "graph.neg", "graph.not", "graph.not_equal", "graph.or", "graph.pow",
    "graph.reciprocal", "graph.relu", "graph.round", "graph.rsqrt", "graph.shift_left",
    "graph.shift_right", "graph.sigmoid", "graph.sign", "graph.sin", "graph.softplus",
    "graph.sqrt", "graph.sub", "graph.tanh", "graph.where", "graph.xor",
}
# Ops added after the traits: each one joins the sets of the traits it declares,
# so this file must be updated with every new op (docs/adding-an-op.md).
ADDED_ELEMENTWISE = {"graph.softsign"}
ADDED_LAYOUT_FREE_UNARY = ("graph.softsign",)
ADDED_LAYOUT_FREE_BINARY = ("graph.qadd",)  # int8 residuals of a blocked chain
# fuse-ops
DENSE_PRODUCERS = ("graph.conv2d", "graph.matmul", "graph.conv2d_nchwc", "graph.depthwise_conv2d_nchwc",
                   "graph.matmul_packed")
OTHER_PRODUCERS = ("graph.max_pool2d", "graph.avg_pool2d", "graph.reduce_sum", "graph.reduce_mean",
                   "graph.reduce_max", "graph.reduce_min", "graph.reduce_prod",
                   "graph.max_pool2d_nchwc", "graph.avg_pool2d_nchwc")
# widen-accumulation
WIDENED = (
    "graph.matmul", "graph.conv2d", "graph.conv_transpose2d", "graph.avg_pool2d",
    "graph.avg_pool3d", "graph.reduce_sum", "graph.reduce_mean", "graph.reduce_prod",
)
# alter-op-layout
LAYOUT_FREE_UNARY = ("graph.relu", "graph.clip", "graph.leaky_relu", "graph.sigmoid", "graph.tanh",
                     "graph.hard_sigmoid", "graph.elu", "graph.abs", "graph.neg")
LAYOUT_FREE_BINARY = ("graph.add", "graph.sub", "graph.mul", "graph.max", "graph.min")
SPATIAL_REDUCTIONS = ("graph.reduce_mean", "graph.reduce_max", "graph.reduce_sum", "graph.reduce_min")
BLOCKED_POOLS = {"graph.max_pool2d": "graph.max_pool2d_nchwc", "graph.avg_pool2d": "graph.avg_pool2d_nchwc"}
GLOBAL_POOLS = {"graph.reduce_max": "graph.max_pool2d_nchwc", "graph.reduce_mean": "graph.avg_pool2d_nchwc"}
# legalize (classes marked COMPOSITE = True)
OLD_COMPOSITE = {
    "graph.reciprocal", "graph.softplus", "graph.gelu", "graph.elu", "graph.hard_sigmoid",
    "graph.dense", "graph.global_avg_pool", "graph.global_max_pool", "graph.batch_norm",
    "graph.layer_norm", "graph.softmax", "graph.log_softmax", "graph.squeeze", "graph.unsqueeze",
    "graph.attention",  # written out by legalize (GPU); fuse-attention forms it again on the CPU
}
# bufferize (_VIEW_OPS: the result is a view of the operand's buffer)
OLD_VIEWS = {"graph.reshape", "graph.squeeze", "graph.unsqueeze"}
# lower-to-loops and bufferize (constants need no kernel; they become tloop.weight)
OLD_CONSTANTS = {"graph.constant", "graph.weight"}

OPS = {op.name: op for op in g.GRAPH_OPS}


def holding(trait) -> set[str]:
    return {op.name for op in g.GRAPH_OPS if op.has_trait(trait)}


def test_elementwise_is_the_old_set():
    assert holding(Elementwise) == OLD_ELEMENTWISE | ADDED_ELEMENTWISE


def test_fusion_anchors_are_the_old_producers():
    dense = {op.name for op in g.GRAPH_OPS if (t := op.get_trait(FusionAnchor)) and t.dense}
    other = {op.name for op in g.GRAPH_OPS if (t := op.get_trait(FusionAnchor)) and not t.dense}
    assert dense == set(DENSE_PRODUCERS)
    assert other == set(OTHER_PRODUCERS)


def test_widen_f16_is_the_old_set():
    assert holding(WidenF16) == set(WIDENED)


def test_layout_free_is_the_old_sets():
    def free(op):
        return op.get_trait(LayoutFree)

    reductions = [op for op in g.GRAPH_OPS if free(op) and issubclass(op, g.ReduceOp)]
    others = [op for op in g.GRAPH_OPS if free(op) and not issubclass(op, g.ReduceOp)]
    assert {op.name for op in others if free(op).blocked is None} == set(LAYOUT_FREE_UNARY + LAYOUT_FREE_BINARY + ADDED_LAYOUT_FREE_UNARY
                                                                           + ADDED_LAYOUT_FREE_BINARY)
    assert {op.name: free(op).blocked for op in others if free(op).blocked} == BLOCKED_POOLS
    assert {op.name for op in reductions} == set(SPATIAL_REDUCTIONS)
    assert {op.name: free(op).blocked for op in reductions if free(op).blocked} == GLOBAL_POOLS
    for name in (*BLOCKED_POOLS.values(), *GLOBAL_POOLS.values()):
        assert name in OPS  # alter-op-layout builds these by name


def test_composite_is_the_old_set():
    assert holding(Composite) == OLD_COMPOSITE
    assert {op.name for op in g.GRAPH_OPS if g.is_composite(op)} == OLD_COMPOSITE


def test_view_like_is_the_old_set():
    assert holding(ViewLike) == OLD_VIEWS


def test_constant_like_is_the_old_set():
    assert holding(ConstantLike) == OLD_CONSTANTS


def _build(op_cls):
    """One instance of ``op_cls`` on [2, 3] tensors of the first element types it accepts."""
    n = len(op_cls.get_irdl_definition().operands)
    for types in ([f32] * n, [i32] * n, [i1] * n, [i1] + [f32] * (n - 1)):
        block = Block(arg_types=[TensorType(t, [2, 3]) for t in types])
        try:
            return op_cls.make(*block.args)
        except Exception:  # noqa: BLE001 - try the next element types
            continue
    raise AssertionError(f"cannot build {op_cls.name} for the test")


@pytest.mark.parametrize("name", sorted(holding(Elementwise)))
def test_every_elementwise_op_has_a_scalar_body(name):
    op = _build(OPS[name])
    compute = scalar_compute(op)
    assert compute is not None
    kernel = elementwise_kernel(op, "k", compute)  # the body really emits
    kernel.verify()


def test_no_op_without_the_trait_has_a_scalar_body():
    # scalar_compute dispatches on the op name before it reads operands or attributes
    operand = SimpleNamespace(type=TensorType(f32, [2]))
    with_body = []
    for op in g.GRAPH_OPS:
        if op.has_trait(Elementwise):
            continue
        try:
            body = scalar_compute(SimpleNamespace(name=op.name, operands=[operand] * 3))
        except AttributeError:  # it went on to read the op's attributes: it has a body
            body = "a body"
        if body is not None:
            with_body.append(op.name)
    assert with_body == []


def test_traits_compare_by_value():
    assert FusionAnchor(dense=True) == FusionAnchor(dense=True) != FusionAnchor()
    assert g.AddOp.get_trait(LayoutFree) == LayoutFree()
    assert g.GeluOp.get_trait(Composite).decompose.__module__ == "dlc.dialects.graph.decompose"
