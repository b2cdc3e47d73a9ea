"""Narrow element types in the ONNX importer.

bf16, float8, float4 and 4/2-bit integers are storage-only in the graph
dialect: graph.cast converts them and data-movement ops copy them. This
module holds what the converters need around that rule:

* ``compute_in_f32``: any other op whose inputs include bf16 (Attention,
  Einsum, Celu, OneHot, Range, Compress...) is converted on f32 copies of its
  bf16 inputs and its f32 results are cast back to bf16, like TVM's BF16
  legalization. The importer calls it for every node (``_convert_node``).
* helpers of QuantizeLinear / DequantizeLinear (ops_loss.py) for narrow
  zero-point / output types.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.dialects.builtin import bf16, f32

from dlc.dialects import graph as g
from dlc.dialects.graph_base import is_narrow

# Ops whose converters handle narrow inputs themselves: casts and quantization,
# and data movement (the graph dialect accepts narrow types there).
NARROW_NATIVE = frozenset({
    "Cast", "CastLike", "QuantizeLinear", "DequantizeLinear",
    "Identity", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Concat", "Split",
    "Slice", "Gather", "Expand", "Shape", "Size", "Compress",
})


def as_compute_type(ctx, t):
    """``t`` itself, or an f32 copy when its element type is narrow."""
    if t is None or not is_narrow(t.element_type):
        return t
    return ctx.emit(g.CastOp, t, to=f32)


def compute_in_f32(node, ctx, convert: Callable) -> list:
    """Run ``convert(node, ctx)`` on f32 copies of bf16 inputs; cast f32 results back."""
    if node.op_type in NARROW_NATIVE or not any(
        t is not None and str(t.element_type) == "bf16" for t in node.inputs
    ):
        return convert(node, ctx)
    node.inputs = [
        as_compute_type(ctx, t) if t is not None and str(t.element_type) == "bf16" else t
        for t in node.inputs
    ]
    outs = convert(node, ctx)
    return [t if t is None or t.element_type != f32 else _cast_back(ctx, t) for t in outs]


def _cast_back(ctx, t):
    """``t`` rounded to bf16. A result with a run-time extent (Unique's values) keeps it:
    a cast maps the bounded buffer element by element, so its prefix stays the data."""
    extent, t.extent = t.extent, None
    try:
        out = ctx.emit(g.CastOp, t, to=bf16)
    finally:
        t.extent = extent
    out.extent = extent
    return out


def expand_in_f32(proto, label, inputs, ctx, values, base_dir, opset, expand: Callable) -> None:
    """Expand a function op (Attention...) on f32 copies of its bf16 inputs,
    so the whole body computes in f32 and only its results round to bf16."""
    if not any(t is not None and str(t.element_type) == "bf16" for t in inputs):
        expand(proto, label, inputs, ctx, values, base_dir, opset)
        return
    inputs = [as_compute_type(ctx, t) if t is not None and str(t.element_type) == "bf16" else t
              for t in inputs]
    expand(proto, label, inputs, ctx, values, base_dir, opset)
    for name in proto.output:
        t = values.get(name)
        if name and t is not None and t.element_type == f32:
            values[name] = ctx.emit(g.CastOp, t, to=bf16)


def integer_range(dtype: np.dtype):
    """``iinfo`` of an integer dtype, narrow ones included."""
    if dtype.type.__module__ == "ml_dtypes":
        import ml_dtypes

        return ml_dtypes.iinfo(dtype)
    return np.iinfo(dtype)


def quantize_to_narrow_float(ctx, node, x, scale, zero_point, out_type):
    """QuantizeLinear to float8/float4: cast(x / scale + zero_point), the cast
    rounding to nearest even and saturating per the node's ``saturate``."""
    from dlc.frontends.onnx.ops_loss import _per_axis

    scale = as_compute_type(ctx, scale)
    xf = x if x.element_type == scale.element_type else ctx.emit(g.CastOp, x, to=scale.element_type)
    y = ctx.emit(g.DivOp, xf, _per_axis(ctx, node, scale, x))
    if zero_point is not None:
        zp = ctx.emit(g.CastOp, _per_axis(ctx, node, zero_point, x), to=scale.element_type)
        y = ctx.emit(g.AddOp, y, zp)
    attrs = {} if node.attr("saturate", 1) else {"saturate": False}
    return ctx.emit(g.CastOp, y, to=out_type, **attrs)


def expand_blocks(ctx, node, param, x):
    """A blocked-quantization scale / zero point (``block_size`` B along
    ``axis``; param dim = ceil(dim / B)) repeated B times along the axis and
    cut to x's shape: reshape, broadcast_to, reshape, slice."""
    from dlc.frontends.onnx.ops_shape import reshape

    block = int(node.attr("block_size"))
    axis = ctx.axis(node.attr("axis", 1), x.rank)
    if param.rank != x.rank or block <= 0 or -(-x.shape[axis] // block) != param.shape[axis]:
        raise ctx.error(
            f"block_size {block} along axis {axis} needs a scale of rank {x.rank} with "
            f"{-(-x.shape[axis] // max(block, 1))} blocks, got shape {list(param.shape)}")
    shape = list(param.shape)
    split = shape[:axis + 1] + [1] + shape[axis + 1:]
    repeated = shape[:axis + 1] + [block] + shape[axis + 1:]
    y = ctx.emit(g.BroadcastToOp, reshape(ctx, param, split), shape=repeated)
    merged = shape[:axis] + [shape[axis] * block] + shape[axis + 1:]
    y = reshape(ctx, y, merged)
    if merged[axis] != x.shape[axis]:
        y = ctx.emit(g.SliceOp, y, starts=[0], ends=[x.shape[axis]], axes=[axis], steps=[1])
    return y
