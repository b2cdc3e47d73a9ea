"""Converters for ONNX data-movement and shape ops (Reshape, Slice, Pad, Resize,
Shape, Range, Tile, DepthToSpace, Constant...).

Ops whose output shape depends on an input's value read it at compile time
(``ctx.const_ints``): an initializer, a Constant node, or a value folded from
static shapes (``Shape`` of a static tensor is a constant)."""

from __future__ import annotations

import math

import numpy as np

from dlc.dialects import graph as g
from dlc.dialects.graph_base import element_type_of, numpy_dtype
from dlc.frontends.onnx.errors import OnnxImportError
from dlc.frontends.onnx.importer import (
    CONSTANT_OF_SHAPE_LIMIT,
    FOLD_ELEMENT_LIMIT,
    ImportContext,
    Node,
    Tensor,
    graph_element_type,
)
from dlc.frontends.onnx.registry import converts


def splat(x: Tensor) -> np.ndarray | None:
    """``x``'s one value (0-d) when it is a known splat held as a stride-0 view
    (``ConstantOfShape``), else None."""
    c = x.const
    if c is None or c.ndim == 0 or c.size == 0 or any(st != 0 for st in c.strides):
        return None
    return c.reshape(-1)[:1].reshape(())


def splat_constant(ctx: ImportContext, value: np.ndarray, shape, name: str = "") -> Tensor:
    """A known splat of ``shape``: a read-only stride-0 view, no memory held at compile
    time; a transposed or reshaped splat stays one (``splat``), and it is filled once
    when it becomes a weight (``materialize``), not per call."""
    return ctx.constant(np.broadcast_to(value, tuple(int(d) for d in shape)), name=name)


def reshape(ctx: ImportContext, x: Tensor, shape) -> Tensor:
    shape = [int(d) for d in shape]
    if list(x.shape) == shape:
        return x
    value = splat(x)
    if value is not None and math.prod(shape) == math.prod(x.shape) and min(shape) >= 0:
        return splat_constant(ctx, value, shape, x.name)
    return ctx.emit(g.ReshapeOp, x, shape=shape)


def transpose(ctx: ImportContext, x: Tensor, perm) -> Tensor:
    perm = [int(p) for p in perm]
    if perm == list(range(len(perm))):
        return x
    value = splat(x)
    if value is not None and sorted(perm) == list(range(x.rank)):
        return splat_constant(ctx, value, [x.shape[p] for p in perm], x.name)
    return ctx.emit(g.TransposeOp, x, perm=perm)


def _axes(node: Node, ctx: ImportContext, input_index: int, attr_opset: int, what="axes"):
    """``axes`` from the attribute (before ``attr_opset``) or from an input."""
    if node.opset < attr_opset:
        value = node.attr(what)
        return None if value is None else [int(a) for a in value]
    t = node.input(input_index)
    return None if t is None else ctx.const_ints(t, what)


@converts("Identity")
def convert_identity(node: Node, ctx: ImportContext):
    return [node.input(0)]


@converts("Dropout")
def convert_dropout(node: Node, ctx: ImportContext):
    x = node.input(0)
    training = node.input(2)
    if training is not None and bool(np.asarray(ctx.const_of(training, "training_mode")).reshape(-1)[0]):
        # training with ratio 0 keeps everything (deterministic); any other
        # ratio draws a random mask, which a compiled program cannot reproduce
        ratio_t = node.input(1)
        ratio = 0.5 if ratio_t is None else float(np.asarray(ctx.const_of(ratio_t, "ratio")).reshape(-1)[0])
        if ratio != 0.0:
            raise ctx.error(f"training_mode=true with ratio {ratio} (random mask) is not supported")
    outs = [x]
    if node.num_outputs > 1:
        outs.append(ctx.constant(np.ones(x.shape, dtype=np.bool_), name=node.proto.output[1]))
    return outs


@converts("Constant")
def convert_constant(node: Node, ctx: ImportContext):
    for key in ("value", "value_float", "value_floats", "value_int", "value_ints"):
        if key in node.attrs:
            value = node.attrs[key]
            if key in ("value_float", "value_floats"):
                array = np.asarray(value, dtype=np.float32)
            elif key in ("value_int", "value_ints"):
                array = np.asarray(value, dtype=np.int64)
            else:
                array = np.asarray(value)
            return [ctx.constant(array, name=node.proto.output[0])]
    kinds = ", ".join(sorted(node.attrs)) or "none"
    raise ctx.error(f"unsupported constant kind (attributes: {kinds})")


@converts("ConstantOfShape")
def convert_constant_of_shape(node: Node, ctx: ImportContext):
    shape = ctx.const_ints(node.input(0), "shape")
    if any(d < 0 for d in shape):
        raise ctx.error(f"shape {shape} has a negative dim")
    value = node.attr("value")
    fill = np.zeros(1, dtype=np.float32) if value is None else np.asarray(value).reshape(-1)
    if fill.size != 1:
        raise ctx.error(f"attribute 'value' must hold one element, got {fill.size}")
    if math.prod(shape) > CONSTANT_OF_SHAPE_LIMIT:  # too big to hold at compile time: filled at run time
        return [ctx.emit(g.BroadcastToOp, ctx.constant(fill.reshape(())), shape=shape)]
    return [splat_constant(ctx, fill[:1].reshape(()), shape, node.proto.output[0])]


@converts("Shape")
def convert_shape(node: Node, ctx: ImportContext):
    shape = list(node.input(0).shape)
    rank = len(shape)
    start = node.attr("start", 0)
    end = node.attr("end", rank)
    start = min(max(start + rank if start < 0 else start, 0), rank)
    end = min(max(end + rank if end < 0 else end, 0), rank)
    return [ctx.constant(np.asarray(shape[start:end], dtype=np.int64), name=node.proto.output[0])]


@converts("Size")
def convert_size(node: Node, ctx: ImportContext):
    size = math.prod(node.input(0).shape)
    return [ctx.constant(np.asarray(size, dtype=np.int64), name=node.proto.output[0])]


@converts("EyeLike")
def convert_eye_like(node: Node, ctx: ImportContext):
    x = node.input(0)
    if x.rank != 2:
        raise ctx.error(f"input must be 2-D, got rank {x.rank}")
    dtype = x.dtype
    if "dtype" in node.attrs:
        dtype = numpy_dtype(graph_element_type(node.attr("dtype"), node.where))
    eye = np.eye(x.shape[0], x.shape[1], k=node.attr("k", 0), dtype=dtype)
    return [ctx.constant(eye, name=node.proto.output[0])]


def _range_scalar(ctx: ImportContext, value, name: str):
    array = np.asarray(value)
    if array.size != 1:
        raise ctx.error(f"{name} must be a scalar or a 1-element tensor, got shape {list(array.shape)}")
    return array.reshape(())[()]


@converts("Range")
def convert_range(node: Node, ctx: ImportContext):
    # exporters (e.g. AffineGrid's function body) pass 1-element tensors of shape [1]
    start, limit, delta = (
        _range_scalar(ctx, ctx.const_of(node.input(i), name), name)
        for i, name in enumerate(("start", "limit", "delta"))
    )
    dtype = np.asarray(start).dtype
    if delta == 0:
        raise ctx.error("delta is 0 (Range needs a non-zero step)")
    if not all(np.isfinite(v) for v in (start, limit, delta)):
        raise ctx.error(f"start {start}, limit {limit} and delta {delta} must be finite")
    count = max(int(np.ceil((limit - start) / delta)), 0)
    if count > FOLD_ELEMENT_LIMIT:
        raise ctx.error(f"Range of {count} elements exceeds the {FOLD_ELEMENT_LIMIT}-element limit "
                        "of compile-time values")
    values = (start + np.arange(count) * delta).astype(dtype)
    return [ctx.constant(values, name=node.proto.output[0])]


@converts("Reshape")
def convert_reshape(node: Node, ctx: ImportContext):
    x = node.input(0)
    if node.opset < 5:
        target = [int(d) for d in node.attr("shape")]
    else:
        target = ctx.const_ints(node.input(1), "shape")
    allow_zero = node.attr("allowzero", 0)
    if not allow_zero:
        for i, d in enumerate(target):
            if d == 0:
                if i >= x.rank:
                    raise ctx.error(f"shape {target} copies dim {i} (0) but the input has rank {x.rank}")
                target[i] = x.shape[i]
    return [reshape(ctx, x, target) if target != list(x.shape) else x]


@converts("Flatten")
def convert_flatten(node: Node, ctx: ImportContext):
    x = node.input(0)
    axis = node.attr("axis", 1)
    if axis < 0:
        axis += x.rank
    if not 0 <= axis <= x.rank:
        raise ctx.error(f"axis {node.attr('axis')} is out of range for rank {x.rank}")
    return [reshape(ctx, x, [math.prod(x.shape[:axis]), math.prod(x.shape[axis:])])]


@converts("Transpose")
def convert_transpose(node: Node, ctx: ImportContext):
    x = node.input(0)
    perm = node.attr("perm", list(reversed(range(x.rank))))
    if len(perm) != x.rank:
        raise ctx.error(f"perm {list(perm)} has {len(perm)} entries but the input has rank {x.rank}")
    return [transpose(ctx, x, ctx.axes(perm, x.rank, "perm"))]


@converts("Concat")
def convert_concat(node: Node, ctx: ImportContext):
    inputs = [t for t in node.inputs if t is not None]
    return [ctx.emit(g.ConcatOp, *inputs, axis=ctx.axis(node.required("axis"), inputs[0].rank))]


@converts("Split")
def convert_split(node: Node, ctx: ImportContext):
    x = node.input(0)
    axis = ctx.axis(node.attr("axis", 0), x.rank)
    if node.opset < 13:
        sizes = node.attr("split")
    else:
        sizes = None if node.input(1) is None else ctx.const_ints(node.input(1), "split")
    extent = x.shape[axis]
    count = len(node.proto.output)
    if sizes is None:
        pieces = node.attr("num_outputs", count)
        if not 1 <= pieces <= max(extent, 1) or pieces != count:
            raise ctx.error(f"num_outputs {pieces} must equal the node's {count} outputs and be in "
                            f"[1, {extent}] (the extent of axis {axis})")
        chunk = -(-extent // pieces)  # the last piece may be smaller (opset 18)
        sizes = [min(chunk, extent - i * chunk) for i in range(pieces)]
    outs = ctx.emit_multi(g.SplitOp, x, axis=axis, sizes=[int(s) for s in sizes])
    return outs


@converts("Slice")
def convert_slice(node: Node, ctx: ImportContext):
    x = node.input(0)
    if node.opset < 10:
        starts, ends = node.attr("starts"), node.attr("ends")
        axes = node.attr("axes")
        steps = None
    else:
        starts = ctx.const_ints(node.input(1), "starts")
        ends = ctx.const_ints(node.input(2), "ends")
        axes = None if node.input(3) is None else ctx.const_ints(node.input(3), "axes")
        steps = None if node.input(4) is None else ctx.const_ints(node.input(4), "steps")
    axes = list(range(len(starts))) if axes is None else ctx.axes(axes, x.rank)
    steps = [1] * len(starts) if steps is None else list(steps)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ctx.error(f"starts, ends, axes and steps must have one entry per sliced axis, got "
                        f"{len(starts)}, {len(ends)}, {len(axes)} and {len(steps)}")
    if 0 in steps:
        raise ctx.error(f"steps {steps} hold 0 (a step must be non-zero)")
    return [ctx.emit(g.SliceOp, x, starts=list(starts), ends=list(ends), axes=axes, steps=steps)]


@converts("Pad")
def convert_pad(node: Node, ctx: ImportContext):
    x = node.input(0)
    mode = node.attr("mode", "constant")
    if mode not in ("constant", "reflect", "edge", "wrap"):
        raise ctx.error(f"pad mode '{mode}' is not supported (constant, reflect, edge, wrap are)")
    if node.opset < 11:
        pads = list(node.attr("pads" if node.opset >= 2 else "paddings"))
        value = float(node.attr("value", 0.0))
    else:
        pads = ctx.const_ints(node.input(1), "pads")
        cv = node.input(2)
        value = 0.0 if cv is None else float(np.asarray(ctx.const_of(cv, "constant_value")).reshape(-1)[0])
        axes_t = node.input(3)
        if axes_t is not None:
            axes = ctx.axes(ctx.const_ints(axes_t, "axes"), x.rank)
            if len(pads) != 2 * len(axes):
                raise ctx.error(f"pads {pads} must hold 2 values per axis in axes {axes}")
            full = [0] * (2 * x.rank)
            for i, a in enumerate(axes):
                full[a] = pads[i]
                full[a + x.rank] = pads[i + len(axes)]
            pads = full
    if mode == "wrap":
        return [_pad_wrap(ctx, x, pads)]
    attrs = {"pads": pads, "mode": mode}
    if mode == "constant" and value != 0.0:
        attrs["value"] = value
    return [ctx.emit(g.PadOp, x, **attrs)]


def _pad_wrap(ctx: ImportContext, x: Tensor, pads) -> Tensor:
    """Circular padding: per axis, the input's last ``begin`` and first ``end``
    elements are concatenated around it (negative pads crop first)."""
    y = x
    rank = x.rank
    for a in range(rank):
        begin, end = pads[a], pads[a + rank]
        n = y.shape[a]
        if begin < 0 or end < 0:
            y = _slice_axis(ctx, y, a, max(-begin, 0), n - max(-end, 0))
            n = y.shape[a]
            begin, end = max(begin, 0), max(end, 0)
        if begin > n or end > n:
            raise ctx.error(f"wrap padding of {max(begin, end)} exceeds the extent {n} of axis {a}")
        parts = []
        if begin:
            parts.append(_slice_axis(ctx, y, a, n - begin, n))
        parts.append(y)
        if end:
            parts.append(_slice_axis(ctx, y, a, 0, end))
        if len(parts) > 1:
            y = ctx.emit(g.ConcatOp, *parts, axis=a)
    return y


def _slice_axis(ctx: ImportContext, x: Tensor, axis: int, start: int, stop: int) -> Tensor:
    return ctx.emit(g.SliceOp, x, starts=[start], ends=[stop], axes=[axis], steps=[1])


@converts("Gather")
def convert_gather(node: Node, ctx: ImportContext):
    data = node.input(0)
    axis = ctx.axis(node.attr("axis", 0), data.rank)
    ctx.check_indices(node.input(1), data.shape[axis], "indices", f"axis {axis} of 'data'")
    return [ctx.emit(g.GatherOp, data, node.input(1), axis=axis)]


@converts("Expand")
def convert_expand(node: Node, ctx: ImportContext):
    shape = ctx.const_ints(node.input(1), "shape")
    return [ctx.emit(g.BroadcastToOp, node.input(0), shape=shape)]


@converts("Squeeze")
def convert_squeeze(node: Node, ctx: ImportContext):
    axes = _axes(node, ctx, 1, 13)
    x = node.input(0)
    if axes is None:
        return [ctx.emit(g.SqueezeOp, x)]
    return [ctx.emit(g.SqueezeOp, x, axes=ctx.axes(axes, x.rank))]


@converts("Unsqueeze")
def convert_unsqueeze(node: Node, ctx: ImportContext):
    axes = _axes(node, ctx, 1, 13)
    if axes is None:
        raise ctx.error("missing 'axes'")
    return [ctx.emit(g.UnsqueezeOp, node.input(0), axes=ctx.axes(axes, node.input(0).rank + len(axes)))]


@converts("Tile")
def convert_tile(node: Node, ctx: ImportContext):
    # x[d0, d1..] -> reshape [1, d0, 1, d1..] -> broadcast [r0, d0, r1, d1..] -> reshape [r0*d0..]
    x = node.input(0)
    repeats = ctx.const_ints(node.input(1), "repeats")
    if len(repeats) != x.rank:
        raise ctx.error(f"repeats has {len(repeats)} values but the input has rank {x.rank}")
    interleaved = [v for d in x.shape for v in (1, d)]
    target = [v for r, d in zip(repeats, x.shape) for v in (r, d)]
    y = reshape(ctx, x, interleaved)
    y = ctx.emit(g.BroadcastToOp, y, shape=target)
    return [reshape(ctx, y, [r * d for r, d in zip(repeats, x.shape)])]


@converts("DepthToSpace")
def convert_depth_to_space(node: Node, ctx: ImportContext):
    x = node.input(0)
    b = int(node.required("blocksize"))
    if b < 1:
        raise ctx.error(f"blocksize must be >= 1, got {b}")
    if x.rank != 4 or x.shape[1] % (b * b):
        raise ctx.error(f"input must be 4-D with channels divisible by blocksize^2={b * b}, got {list(x.shape)}")
    n, c, h, w = x.shape
    if node.attr("mode", "DCR") not in ("DCR", "CRD"):
        raise ctx.error(f"attribute 'mode' is '{node.attr('mode')}' (known: DCR, CRD)")
    if node.attr("mode", "DCR") == "DCR":
        y = reshape(ctx, x, [n, b, b, c // (b * b), h, w])
        y = transpose(ctx, y, [0, 3, 4, 1, 5, 2])
    else:
        y = reshape(ctx, x, [n, c // (b * b), b, b, h, w])
        y = transpose(ctx, y, [0, 1, 4, 2, 5, 3])
    return [reshape(ctx, y, [n, c // (b * b), h * b, w * b])]


@converts("SpaceToDepth")
def convert_space_to_depth(node: Node, ctx: ImportContext):
    x = node.input(0)
    b = int(node.required("blocksize"))
    if b < 1:
        raise ctx.error(f"blocksize must be >= 1, got {b}")
    if x.rank != 4 or x.shape[2] % b or x.shape[3] % b:
        raise ctx.error(f"input must be 4-D with H and W divisible by blocksize={b}, got {list(x.shape)}")
    n, c, h, w = x.shape
    y = reshape(ctx, x, [n, c, h // b, b, w // b, b])
    crd = node.attr("mode", "DCR") == "CRD"
    y = transpose(ctx, y, [0, 1, 3, 5, 2, 4] if crd else [0, 3, 5, 1, 2, 4])
    return [reshape(ctx, y, [n, c * b * b, h // b, w // b])]


_RESIZE_COORDS = ("half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel")
_RESIZE_ALL_COORDS = (*_RESIZE_COORDS, "half_pixel_symmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize")
_RESIZE_MODES = ("nearest", "linear", "cubic")
_RESIZE_NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def _resize(ctx: ImportContext, x: Tensor, sizes, mode: str, coords: str, nearest_mode: str):
    if mode not in ("nearest", "linear"):
        raise ctx.error(f"resize mode '{mode}' is not supported (nearest, linear are)")
    if coords not in _RESIZE_COORDS:
        raise ctx.error(f"coordinate_transformation_mode '{coords}' is not supported")
    attrs = {"sizes": [int(s) for s in sizes], "mode": mode,
             "coordinate_transformation_mode": coords}
    if mode == "nearest":
        attrs["nearest_mode"] = nearest_mode
    return ctx.emit(g.ResizeOp, x, **attrs)


@converts("Resize")
def convert_resize(node: Node, ctx: ImportContext):
    x = node.input(0)
    mode = node.attr("mode", "nearest")
    if mode == "bilinear":
        mode = "linear"
    policy = node.attr("keep_aspect_ratio_policy", "stretch")
    if policy not in ("stretch", "not_larger", "not_smaller"):
        raise ctx.error(f"unknown keep_aspect_ratio_policy '{policy}'")
    if node.opset < 11:
        scales_t, sizes_t, roi_t = node.input(1), None, None
        coords, nearest_mode = "asymmetric", "floor"
    else:
        roi_t, scales_t, sizes_t = node.input(1), node.input(2), node.input(3)
        coords = node.attr("coordinate_transformation_mode", "half_pixel")
        nearest_mode = node.attr("nearest_mode", "round_prefer_floor")
    for what, value, known in (("mode", mode, _RESIZE_MODES), ("coordinate_transformation_mode", coords,
                                                                   _RESIZE_ALL_COORDS),
                               ("nearest_mode", nearest_mode, _RESIZE_NEAREST)):
        if value not in known:
            raise ctx.error(f"attribute '{what}' is '{value}' (known: {', '.join(known)})")
    axes = node.attr("axes")
    axes = list(range(x.rank)) if axes is None else ctx.axes(axes, x.rank)
    empty = [a for a in axes if x.shape[a] == 0]
    if empty:
        raise ctx.error(f"input dim {empty[0]} is 0: an empty axis cannot be resized")
    sizes = list(x.shape)
    scales = aspect = None
    if sizes_t is not None and (sizes_t.const is None or sizes_t.const.size):
        given = ctx.const_ints(sizes_t, "sizes")
        if len(given) != len(axes) or min(given) <= 0:
            raise ctx.error(f"sizes {given} must hold one positive size per resized axis ({len(axes)})")
        for a, s in zip(axes, given):
            sizes[a] = s
        if policy != "stretch":
            # one scale for all `axes` (the smallest or largest asked for), and
            # sizes rounded half up from it, as the ONNX reference does
            pick = (min if policy == "not_larger" else max)(axes, key=lambda a: sizes[a] / x.shape[a])
            aspect = (sizes[pick], x.shape[pick])
            scale = sizes[pick] / x.shape[pick]
            scales = [scale if a in axes else 1.0 for a in range(x.rank)]
            sizes = [int(scale * x.shape[a] + 0.5) if a in axes else x.shape[a] for a in range(x.rank)]
    elif scales_t is not None:
        scales = [1.0] * x.rank
        given = np.asarray(ctx.const_of(scales_t, "scales"), np.float64).reshape(-1)
        if len(given) != len(axes) or not all(np.isfinite(given)) or min(given) <= 0:
            raise ctx.error(f"scales {given.tolist()} must hold one positive finite scale per resized "
                            f"axis ({len(axes)})")
        for a, s in zip(axes, given):
            scales[a] = float(s)
            sizes[a] = int(math.floor(x.shape[a] * s))
    else:
        raise ctx.error("needs 'scales' or 'sizes'")
    # graph.resize derives each axis' scale as out/in; an explicit scale that
    # differs, and the modes it lacks, go through per-axis interpolation matrices
    inexact = scales is not None and any(
        abs(s - n / d) > 1e-9 for s, n, d in zip(scales, sizes, x.shape) if d)
    special = (mode == "cubic" or node.attr("antialias", 0) or node.attr("exclude_outside", 0)
               or coords not in _RESIZE_COORDS)
    if node.opset >= 11 and (inexact or special):
        roi = None
        if coords == "tf_crop_and_resize":
            roi = np.asarray(ctx.const_of(roi_t, "roi"), np.float64).reshape(-1)
            if len(roi) == 2 * len(axes) and len(axes) != x.rank:  # roi over `axes` only
                full = [0.0] * x.rank + [1.0] * x.rank
                for i, a in enumerate(axes):
                    full[a], full[a + x.rank] = roi[i], roi[i + len(axes)]
                roi = np.asarray(full)
        return [_resize_by_matrices(node, ctx, x, sizes, scales, roi, aspect)]
    return [_resize(ctx, x, sizes, mode, coords, nearest_mode)]


def _resize_by_matrices(node: Node, ctx: ImportContext, x: Tensor, sizes, scales, roi,
                        aspect=None) -> Tensor:
    """Resize as one matrix product per resized axis: every ONNX Resize mode is
    separable and linear in the input, so axis a maps through W_a [n_in, n_out],
    computed at import by onnx's reference Resize on an identity matrix.
    Positions outside a tf_crop_and_resize roi get extrapolation_value."""
    if x.dtype.kind != "f":
        raise ctx.error(f"this Resize configuration needs a float input, got {x.dtype}")
    extrapolation = float(node.attr("extrapolation_value", 0.0))
    y = x
    for a in range(x.rank):
        scale = None if scales is None else scales[a]
        axis_roi = None if roi is None else (roi[a], roi[a + x.rank])
        same = sizes[a] == x.shape[a] and (scale is None or scale == 1.0)
        if same and (axis_roi is None or tuple(axis_roi) == (0.0, 1.0)):
            continue
        if x.shape[a] * sizes[a] > FOLD_ELEMENT_LIMIT:
            raise ctx.error(f"resizing axis {a} from {x.shape[a]} to {sizes[a]} needs a {x.shape[a]}x{sizes[a]} "
                            f"interpolation matrix, over the {FOLD_ELEMENT_LIMIT}-element limit")
        weights = _resize_weights(node, x.shape[a], sizes[a], scale, axis_roi, 0.0, aspect=aspect)
        perm = [d for d in range(x.rank) if d != a] + [a]
        inverse = [perm.index(d) for d in range(x.rank)]
        moved = ctx.emit(g.MatmulOp, transpose(ctx, y, perm), ctx.constant(weights.astype(x.dtype)))
        if axis_roi is not None and extrapolation != 0.0:
            outside = _resize_weights(node, x.shape[a], sizes[a], scale, axis_roi, 1.0, zero_input=True)
            with np.errstate(invalid="ignore"):  # 0 * inf inside the roi: masked to 0 below
                fill = np.where(outside[0] != 0, outside[0] * extrapolation, 0.0)
            moved = ctx.emit(g.AddOp, moved, ctx.constant(fill.astype(x.dtype)))
        y = transpose(ctx, moved, inverse)
    return y


def _resize_weights(node: Node, n_in: int, n_out: int, scale, roi, extrapolation: float,
                    zero_input: bool = False, aspect=None) -> np.ndarray:
    """[n_in, n_out]: row i is the resize of the unit vector e_i (onnx's reference).

    ``aspect`` = (size, in) of the axis that fixed a keep_aspect_ratio_policy
    scale: the reference gets it as an extra axis of constant input (so its
    scale and half-up rounded size come out as for the real node)."""
    if aspect is not None:
        return _resize_weights_keeping_aspect(node, n_in, n_out, aspect)
    import onnx
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator

    keep = ("mode", "coordinate_transformation_mode", "cubic_coeff_a", "exclude_outside",
            "nearest_mode", "antialias")
    attrs = {k: v for k, v in node.attrs.items() if k in keep}
    if roi is not None:
        attrs["extrapolation_value"] = extrapolation
    inputs = [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [n_in, n_in])]
    inits = [helper.make_tensor("roi", TensorProto.DOUBLE, [4],
                                [0.0, roi[0], 1.0, roi[1]] if roi is not None else [0, 0, 1, 1])]
    if scale is not None:
        inits.append(helper.make_tensor("scales", TensorProto.FLOAT, [2], [1.0, scale]))
        names = ["x", "roi", "scales"]
    else:
        inits.append(helper.make_tensor("sizes", TensorProto.INT64, [2], [n_in, n_out]))
        names = ["x", "roi", "", "sizes"]
    resize = helper.make_node("Resize", names, ["y"], **attrs)
    graph = helper.make_graph([resize], "w", inputs, [helper.make_tensor_value_info("y", TensorProto.DOUBLE, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", max(node.opset, 11))])
    feed = np.zeros((n_in, n_in)) if zero_input else np.eye(n_in)
    (out,) = ReferenceEvaluator(model).run(None, {"x": feed})
    if out.shape != (n_in, n_out):
        raise OnnxImportError(f"{node.where}: resize weights have shape {out.shape}, expected {(n_in, n_out)}")
    return np.asarray(out, dtype=np.float64)


def _resize_weights_keeping_aspect(node: Node, n_in: int, n_out: int, aspect) -> np.ndarray:
    import math as _math

    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator

    keep = ("mode", "coordinate_transformation_mode", "cubic_coeff_a", "exclude_outside",
            "nearest_mode", "antialias", "keep_aspect_ratio_policy")
    attrs = {k: v for k, v in node.attrs.items() if k in keep}
    common = _math.gcd(*aspect)
    size, extent = aspect[0] // common, aspect[1] // common  # same ratio, smaller extra axis
    # the real axis asks for a size whose ratio lies on the policy's far side
    # of the extra axis' ratio, so that the extra axis decides the scale
    exact = n_in * size / extent
    asked = _math.ceil(exact) if attrs["keep_aspect_ratio_policy"] == "not_larger" else _math.floor(exact)
    inits = [helper.make_tensor("sizes", TensorProto.INT64, [2], [asked, size])]
    resize = helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], axes=[1, 2], **attrs)
    inputs = [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [n_in, n_in, extent])]
    graph = helper.make_graph([resize], "w", inputs, [helper.make_tensor_value_info("y", TensorProto.DOUBLE, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", max(node.opset, 18))])
    feed = np.repeat(np.eye(n_in)[:, :, None], extent, axis=2)
    (out,) = ReferenceEvaluator(model).run(None, {"x": feed})
    if out.shape[:2] != (n_in, n_out):
        raise OnnxImportError(f"{node.where}: resize weights have shape {out.shape[:2]}, expected {(n_in, n_out)}")
    return np.asarray(out[:, :, 0], dtype=np.float64)


@converts("Upsample")
def convert_upsample(node: Node, ctx: ImportContext):
    x = node.input(0)
    if node.opset < 9:
        scales = node.attr("scales")
    else:
        scales = np.asarray(ctx.const_of(node.input(1), "scales")).reshape(-1)
    sizes = [int(math.floor(d * s)) for d, s in zip(x.shape, scales)]
    mode = node.attr("mode", "nearest")
    return [_resize(ctx, x, sizes, "linear" if mode in ("linear", "bilinear") else mode,
                    "asymmetric", "floor")]


@converts("Trilu")
def convert_trilu(node: Node, ctx: ImportContext):
    # a compile-time mask over the last two dims selects the triangle
    x = node.input(0)
    k = 0 if node.input(1) is None else int(ctx.const_scalar(node.input(1), "k"))
    if x.rank < 2:
        raise ctx.error(f"input must have rank >= 2, got {x.rank}")
    n, m = x.shape[-2:]
    mask = np.triu(np.ones((n, m), dtype=np.bool_), k) if node.attr("upper", 1) \
        else np.tril(np.ones((n, m), dtype=np.bool_), k)
    zero = ctx.constant(np.zeros((), dtype=x.dtype))
    return [ctx.emit(g.WhereOp, ctx.constant(mask), x, zero)]


def _running_mask(n: int, exclusive: bool, reverse: bool) -> np.ndarray:
    """T[i, j]: input i contributes to running output j."""
    i, j = np.indices((n, n))
    if reverse:
        return (i > j) if exclusive else (i >= j)
    return (i < j) if exclusive else (i <= j)


def _cumulative(node: Node, ctx: ImportContext, x: Tensor):
    """(the 0/1 running mask over the axis, the permutation moving the axis last, its
    inverse) of a CumSum / CumProd node."""
    axis = ctx.axis(ctx.const_scalar(node.input(1), "axis"), x.rank)
    if x.shape[axis] ** 2 > FOLD_ELEMENT_LIMIT:
        raise ctx.error(f"{node.op_type} along axis {axis} of {x.shape[axis]} elements needs a "
                        f"{x.shape[axis]}x{x.shape[axis]} mask, over the {FOLD_ELEMENT_LIMIT}-element limit")
    tri = _running_mask(x.shape[axis], node.attr("exclusive", 0), node.attr("reverse", 0))
    perm = [d for d in range(x.rank) if d != axis] + [axis]
    return tri, perm, [perm.index(d) for d in range(x.rank)]


@converts("CumSum")
def convert_cumsum(node: Node, ctx: ImportContext):
    # a running sum is a product with a triangular 0/1 matrix along the axis:
    # move the axis last, y = x @ T, move it back
    x = node.input(0)
    tri, perm, inverse = _cumulative(node, ctx, x)
    y = ctx.emit(g.MatmulOp, transpose(ctx, x, perm), ctx.constant(tri.astype(x.dtype)))
    return [transpose(ctx, y, inverse)]


@converts("CumProd")
def convert_cumprod(node: Node, ctx: ImportContext):
    # out[.., j] = prod over i of (T[i, j] ? x[.., i] : 1): a masked product
    # over an added input axis (exact, n x n elements per row)
    x = node.input(0)
    tri, perm, inverse = _cumulative(node, ctx, x)
    moved = ctx.emit(g.UnsqueezeOp, transpose(ctx, x, perm), axes=[x.rank - 1])  # [.., 1, n_in]
    mask = ctx.constant(tri.T.copy())  # [n_out, n_in]
    factors = ctx.emit(g.WhereOp, mask, moved, ctx.constant(np.ones((), dtype=x.dtype)))
    y = ctx.emit(g.ReduceProdOp, factors, axes=[x.rank], keepdims=False)
    return [transpose(ctx, y, inverse)]


@converts("OneHot")
def convert_one_hot(node: Node, ctx: ImportContext):
    # indices == iota along the new axis, selecting off/on values
    indices, values = node.input(0), node.input(2)
    depth = int(ctx.const_scalar(node.input(1), "depth"))
    if depth < 1:
        raise ctx.error(f"depth must be >= 1, got {depth}")
    off_on = np.asarray(ctx.const_of(values, "values")).reshape(-1)
    rank = indices.rank + 1
    axis = ctx.axis(node.attr("axis", -1), rank)
    idx = indices if indices.dtype == np.int64 else ctx.emit(g.CastOp, indices, to=element_type_of(np.int64))
    # negative indices count from the end; out-of-range ones match no position
    negative = ctx.emit(g.LessOp, idx, ctx.constant(np.int64(0)))
    idx = ctx.emit(g.WhereOp, negative, ctx.emit(g.AddOp, idx, ctx.constant(np.int64(depth))), idx)
    idx = ctx.emit(g.UnsqueezeOp, idx, axes=[axis])
    shape = [1] * rank
    shape[axis] = depth
    iota = ctx.constant(np.arange(depth, dtype=np.int64).reshape(shape))
    hot = ctx.emit(g.EqualOp, idx, iota)
    on, off = ctx.constant(off_on[1:2].reshape(())), ctx.constant(off_on[0:1].reshape(()))
    return [ctx.emit(g.WhereOp, hot, on, off)]


@converts("CenterCropPad")
def convert_center_crop_pad(node: Node, ctx: ImportContext):
    x = node.input(0)
    target = ctx.const_ints(node.input(1), "shape")
    axes = ctx.axes(node.attr("axes", list(range(x.rank))), x.rank)
    starts, ends, pads = [], [], [0] * (2 * x.rank)
    for a, want in zip(axes, target):
        have = x.shape[a]
        if want < have:  # crop, the extra element at the end
            begin = (have - want) // 2
            starts.append(begin)
            ends.append(begin + want)
        else:
            starts.append(0)
            ends.append(have)
            pads[a] = (want - have) // 2
            pads[a + x.rank] = want - have - pads[a]
    y = ctx.emit(g.SliceOp, x, starts=starts, ends=ends, axes=axes, steps=[1] * len(axes))
    if any(pads):
        y = ctx.emit(g.PadOp, y, pads=pads, mode="constant")
    return [y]


@converts("GatherElements")
def convert_gather_elements(node: Node, ctx: ImportContext):
    data = node.input(0)
    axis = ctx.axis(node.attr("axis", 0), data.rank)
    ctx.check_indices(node.input(1), data.shape[axis], "indices", f"axis {axis} of 'data'")
    return [gather_elements(ctx, data, node.input(1), axis)]


def gather_elements(ctx: ImportContext, data: Tensor, indices: Tensor, axis: int) -> Tensor:
    """out[.., i, ..] = data[.., indices[.., i, ..], ..] along axis, as a one-hot
    selection: where(indices == iota, data, 0) summed over the data axis (exact:
    every sum adds one element to zeros)."""
    axis = axis + data.rank if axis < 0 else axis
    if indices.rank != data.rank or not 0 <= axis < data.rank:
        raise ctx.error(f"indices rank {indices.rank} must equal data rank {data.rank} and axis {axis} be inside it")
    n = data.shape[axis]
    other = [a for a in range(data.rank) if a != axis]
    if any(indices.shape[a] > data.shape[a] for a in other):
        raise ctx.error(f"indices shape {list(indices.shape)} exceeds data shape {list(data.shape)} outside axis {axis}")
    if any(indices.shape[a] != data.shape[a] for a in other):
        data = ctx.emit(g.SliceOp, data, starts=[0] * len(other), ends=[indices.shape[a] for a in other],
                        axes=other, steps=[1] * len(other))
    n_t = ctx.constant(n, like=indices)
    wrapped = ctx.emit(g.WhereOp, ctx.emit(g.LessOp, indices, ctx.constant(0, like=indices)),
                       ctx.emit(g.AddOp, indices, n_t), indices)
    shape = [1] * (data.rank + 1)
    shape[axis + 1] = n
    iota = ctx.constant(np.arange(n, dtype=indices.dtype).reshape(shape))
    hot = ctx.emit(g.EqualOp, ctx.emit(g.UnsqueezeOp, wrapped, axes=[axis + 1]), iota)
    spread = ctx.emit(g.UnsqueezeOp, data, axes=[axis])
    picked = ctx.emit(g.WhereOp, hot, spread, ctx.constant(np.zeros((), dtype=data.dtype)))
    return ctx.emit(g.ReduceSumOp, picked, axes=[axis + 1], keepdims=False)
