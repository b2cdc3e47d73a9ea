"""Converters for ONNX indexing ops: GatherND, ScatterND, ScatterElements,
Scatter, TensorScatter, TopK, ReverseSequence and MaxUnpool.

GatherND, ScatterND, ScatterElements (Scatter is its opset-9 name), TopK and
ReverseSequence map to graph ops of their own. TensorScatter and MaxUnpool are
scatter_elements with computed indices:

* TensorScatter writes ``update`` into ``past_cache`` at positions
  ``write_indices[b] + s`` along ``axis`` (modulo the cache length in circular
  mode), i.e. scatter_elements with those positions broadcast to update's shape;
* MaxUnpool writes each X element at its flat index into a zero tensor of the
  shape MaxPool had before pooling (ONNX's inferred shape), then pads to
  ``output_shape`` at the end when one is given.
"""

from __future__ import annotations

import math

import numpy as np

from dlc.dialects import graph as g
from dlc.dialects.graph_base import element_type_of
from dlc.frontends.onnx.importer import FOLD_ELEMENT_LIMIT, ImportContext, Node
from dlc.frontends.onnx.ops_nn import check_window
from dlc.frontends.onnx.ops_shape import reshape
from dlc.frontends.onnx.registry import converts


@converts("GatherND")
def convert_gather_nd(node: Node, ctx: ImportContext):
    _check_nd_indices(node, ctx)
    return [ctx.emit(g.GatherNDOp, node.input(0), node.input(1), batch_dims=node.attr("batch_dims", 0))]


def _reduction(node: Node) -> str | None:
    reduction = node.attr("reduction", "none")
    return None if reduction == "none" else reduction


@converts("ScatterND")
def convert_scatter_nd(node: Node, ctx: ImportContext):
    _check_nd_indices(node, ctx)
    return [ctx.emit(g.ScatterNDOp, node.input(0), node.input(1), node.input(2), reduction=_reduction(node))]


@converts("ScatterElements", "Scatter")
def convert_scatter_elements(node: Node, ctx: ImportContext):
    data = node.input(0)
    axis = ctx.axis(node.attr("axis", 0), data.rank)
    ctx.check_indices(node.input(1), data.shape[axis], "indices", f"axis {axis} of 'data'")
    return [ctx.emit(g.ScatterElementsOp, data, node.input(1), node.input(2),
                     axis=axis, reduction=_reduction(node))]


def _check_nd_indices(node: Node, ctx: ImportContext) -> None:
    """Compile-time GatherND / ScatterND indices: each last-axis entry k in range of data dim batch_dims + k."""
    data, indices = node.input(0), node.input(1)
    if indices is None or indices.const is None or indices.rank == 0:
        return
    batch = int(node.attr("batch_dims", 0))
    depth = indices.shape[-1]
    if batch + depth > data.rank:
        raise ctx.error(f"indices' last dim {depth} plus batch_dims {batch} exceeds data rank {data.rank}")
    tuples = np.asarray(indices.const).reshape(-1, depth) if depth else np.zeros((0, 0), np.int64)
    for k in range(depth):
        n = data.shape[batch + k]
        col = tuples[:, k]
        bad = col[(col < -n) | (col >= n)]
        if bad.size:
            raise ctx.error(f"index {int(bad[0])} in input 'indices' ('{indices.name}') is out of range "
                            f"for axis {batch + k} of 'data' of size {n} (valid: {-n} to {n - 1})")


@converts("TopK")
def convert_top_k(node: Node, ctx: ImportContext):
    x = node.input(0)
    if node.opset < 10:
        k = int(node.required("k"))
    else:
        ks = ctx.const_ints(node.input(1), "K")
        if len(ks) != 1:
            raise ctx.error(f"K must hold one value, got {len(ks)}")
        k = ks[0]
    values, indices = ctx.emit_multi(g.TopKOp, x, k=k, axis=ctx.axis(node.attr("axis", -1), x.rank),
                                     largest=bool(node.attr("largest", 1)), sorted=bool(node.attr("sorted", 1)))
    return [values, indices]


@converts("ReverseSequence")
def convert_reverse_sequence(node: Node, ctx: ImportContext):
    return [ctx.emit(g.ReverseSequenceOp, node.input(0), node.input(1),
                     batch_axis=node.attr("batch_axis", 1), time_axis=node.attr("time_axis", 0))]


@converts("TensorScatter")
def convert_tensor_scatter(node: Node, ctx: ImportContext):
    cache, update, write_indices = node.input(0), node.input(1), node.input(2)
    rank = cache.rank
    axis = node.attr("axis", -2)
    if rank < 2:
        raise ctx.error(f"past_cache must have rank >= 2, got {rank}")
    axis = ctx.axis(axis, rank)
    if axis == 0:
        raise ctx.error("axis must not be 0 (the batch axis)")
    mode = node.attr("mode", "linear")
    if mode not in ("linear", "circular"):
        raise ctx.error(f"mode must be linear or circular, got '{mode}'")
    if update.rank != rank or any(a != b for i, (a, b) in enumerate(zip(cache.shape, update.shape)) if i != axis):
        raise ctx.error(f"update shape {list(update.shape)} must equal past_cache shape {list(cache.shape)} "
                        f"outside axis {axis}")
    batch, length, steps = cache.shape[0], cache.shape[axis], update.shape[axis]
    # positions[b, .., s, ..] = write_indices[b] + s, broadcast to update's shape
    along = [1] * rank
    along[axis] = steps
    offsets = ctx.constant(np.arange(steps, dtype=np.int64).reshape(along))
    if write_indices is None:
        positions = offsets
    else:
        starts = write_indices
        if starts.dtype != np.int64:
            starts = ctx.emit(g.CastOp, starts, to=element_type_of(np.int64))
        starts = reshape(ctx, starts, [batch] + [1] * (rank - 1))
        positions = ctx.emit(g.AddOp, starts, offsets)
    if mode == "circular":
        # a non-negative remainder (write_indices are >= 0; fmod keeps the sign)
        positions = ctx.emit(g.ModOp, positions, ctx.constant(np.int64(length)))
    if list(positions.shape) != list(update.shape):
        positions = ctx.emit(g.BroadcastToOp, positions, shape=list(update.shape))
    return [ctx.emit(g.ScatterElementsOp, cache, positions, update, axis=axis)]


@converts("MaxUnpool")
def convert_max_unpool(node: Node, ctx: ImportContext):
    x, indices = node.input(0), node.input(1)
    kernel = [int(k) for k in node.required("kernel_shape")]
    spatial = len(kernel)
    if x.rank != spatial + 2:
        raise ctx.error(f"X has rank {x.rank}, expected {spatial + 2} for kernel_shape {kernel}")
    strides = [int(s) for s in node.attr("strides", [1] * spatial)]
    pads = [int(p) for p in node.attr("pads", [0] * (2 * spatial))]
    check_window(ctx, spatial, x.shape[2:], kernel_shape=kernel, strides=strides, pads=pads)
    inferred = list(x.shape[:2]) + [
        (x.shape[2 + d] - 1) * strides[d] - (pads[d] + pads[spatial + d]) + kernel[d] for d in range(spatial)
    ]
    target = inferred
    if node.input(2) is not None:
        target = ctx.const_ints(node.input(2), "output_shape")
        if len(target) != x.rank or any(t < i for t, i in zip(target, inferred)):
            raise ctx.error(f"output_shape {target} must have rank {x.rank} and be at least the "
                            f"unpooled shape {inferred}")
    if list(indices.shape) != list(x.shape):
        raise ctx.error(f"indices shape {list(indices.shape)} must equal X shape {list(x.shape)}")
    size = math.prod(inferred)
    if min(inferred) < 1:
        raise ctx.error(f"the unpooled shape {inferred} (from strides, pads and kernel_shape) is empty or negative")
    zeros = ctx.constant(np.zeros((), dtype=x.dtype))
    zeros = ctx.emit(g.BroadcastToOp, zeros, shape=[size]) if size > FOLD_ELEMENT_LIMIT else \
        ctx.constant(np.zeros((size,), dtype=x.dtype))
    count = math.prod(x.shape)
    flat = ctx.emit(g.ScatterElementsOp, zeros, reshape(ctx, indices, [count]), reshape(ctx, x, [count]), axis=0)
    y = reshape(ctx, flat, inferred)
    if target != inferred:
        pads_out = [0] * x.rank + [t - i for t, i in zip(target, inferred)]
        y = ctx.emit(g.PadOp, y, pads=pads_out, mode="constant")
    return [y]
