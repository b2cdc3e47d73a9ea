"""Converters: views and reshapes, concatenation and splitting, slicing and
indexing, padding, tuple access."""

from __future__ import annotations

from dlc.dialects import graph as g
from dlc.dialects.graph_base import normalize_axis
from dlc.frontends.torch.importer import ImportContext
from dlc.frontends.torch.registry import converts

# torch writes "to the end" as the largest int64
_INT64_MAX = (1 << 63) - 1


def _reshape(cx: ImportContext, x, shape) -> object:
    x = cx.tensor(x)
    shape = [int(d) for d in shape]
    if shape == cx.shape(x):
        return x
    return cx.emit(g.ReshapeOp, x, shape=shape)


@converts("aten.view", "aten.reshape", "aten._unsafe_view", "aten.view_copy", "aten._reshape_alias")
def _view(cx, a):
    return _reshape(cx, a["self"], a["size"] if "size" in a else a["shape"])


@converts("aten.view_as", "aten.reshape_as")
def _view_as(cx, a):
    return _reshape(cx, a["self"], cx.shape(cx.tensor(a["other"])))


@converts("aten.flatten")
def _flatten(cx, a):
    x = cx.tensor(a["self"])
    shape = cx.shape(x)
    if not shape:
        return _reshape(cx, x, [1])
    start = normalize_axis(a.get("start_dim", 0), len(shape))
    end = normalize_axis(a.get("end_dim", -1), len(shape))
    return _reshape(cx, x, shape[:start] + [-1] + shape[end + 1:])


@converts("aten.unflatten")
def _unflatten(cx, a):
    x = cx.tensor(a["self"])
    shape = cx.shape(x)
    dim = normalize_axis(a["dim"], len(shape))
    return _reshape(cx, x, shape[:dim] + list(a["sizes"]) + shape[dim + 1:])


@converts("aten.permute", "aten.permute_copy")
def _permute(cx, a):
    x = cx.tensor(a["self"])
    rank = len(cx.shape(x))
    return cx.emit(g.TransposeOp, x, perm=[normalize_axis(d, rank) for d in a["dims"]])


@converts("aten.transpose", "aten.swapaxes")
def _transpose(cx, a):
    x = cx.tensor(a["self"])
    rank = len(cx.shape(x))
    if rank == 0:
        return x
    d0, d1 = normalize_axis(a["dim0"] if "dim0" in a else a["axis0"], rank), \
        normalize_axis(a["dim1"] if "dim1" in a else a["axis1"], rank)
    perm = list(range(rank))
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return x if d0 == d1 else cx.emit(g.TransposeOp, x, perm=perm)


@converts("aten.t", "aten.numpy_T")
def _t(cx, a):
    x = cx.tensor(a["self"])
    return x if len(cx.shape(x)) < 2 else cx.emit(g.TransposeOp, x, perm=[1, 0])


@converts("aten.expand", "aten.expand_copy")
def _expand(cx, a):
    x = cx.tensor(a["self"])
    size = [int(d) for d in a["size"]]
    shape = cx.shape(x)
    offset = len(size) - len(shape)
    target = [shape[i - offset] if d == -1 else d for i, d in enumerate(size)]
    return x if target == shape else cx.emit(g.BroadcastToOp, x, shape=target)


@converts("aten.expand_as")
def _expand_as(cx, a):
    x = cx.tensor(a["self"])
    target = cx.shape(cx.tensor(a["other"]))
    return x if target == cx.shape(x) else cx.emit(g.BroadcastToOp, x, shape=target)


@converts("aten.unsqueeze")
def _unsqueeze(cx, a):
    x = cx.tensor(a["self"])
    return cx.emit(g.UnsqueezeOp, x, axes=[normalize_axis(a["dim"], len(cx.shape(x)) + 1)])


@converts("aten.squeeze")
def _squeeze(cx, a):
    x = cx.tensor(a["self"])
    shape = cx.shape(x)
    dim = a.get("dim")
    if dim is None:
        axes = [i for i, d in enumerate(shape) if d == 1]
    else:
        dims = [dim] if isinstance(dim, int) else list(dim)
        # torch ignores dims that are not of size 1
        axes = [normalize_axis(d, len(shape)) for d in dims if shape and shape[d] == 1]
    return cx.emit(g.SqueezeOp, x, axes=axes) if axes else x


@converts("aten.cat", "aten.concat", "aten.concatenate")
def _cat(cx, a):
    tensors = [cx.tensor(t) for t in a["tensors"]]
    # torch skips 1-D empty tensors in cat (legacy behaviour)
    tensors = [t for t in tensors if cx.shape(t) != [0]] or tensors[:1]
    tensors = cx.promoted(*tensors) if len(tensors) > 1 else tensors
    if len(tensors) == 1:
        return tensors[0]
    return cx.emit(g.ConcatOp, *tensors, axis=a["dim"])


@converts("aten.stack")
def _stack(cx, a):
    tensors = [cx.tensor(t) for t in a["tensors"]]
    rank = len(cx.shape(tensors[0])) + 1
    dim = normalize_axis(a.get("dim", 0), rank)
    pieces = [cx.emit(g.UnsqueezeOp, t, axes=[dim]) for t in tensors]
    pieces = cx.promoted(*pieces) if len(pieces) > 1 else pieces
    return pieces[0] if len(pieces) == 1 else cx.emit(g.ConcatOp, *pieces, axis=dim)


def _split(cx: ImportContext, x, sizes: list[int], dim: int) -> list:
    x = cx.tensor(x)
    if len(sizes) == 1:
        return [x]
    return cx.emit_multi(g.SplitOp, x, axis=dim, sizes=sizes)


@converts("aten.split", "aten.split_with_sizes", "aten.split_copy", "aten.split_with_sizes_copy")
def _split_op(cx, a):
    x = cx.tensor(a["self"])
    shape = cx.shape(x)
    dim = normalize_axis(a.get("dim", 0), len(shape))
    size = a.get("split_size", a.get("split_sizes"))
    if isinstance(size, int):
        extent = shape[dim]
        sizes = [min(size, extent - s) for s in range(0, extent, size)] or [0]
    else:
        sizes = [int(s) for s in size]
    return _split(cx, x, sizes, dim)


@converts("aten.chunk")
def _chunk(cx, a):
    x = cx.tensor(a["self"])
    shape = cx.shape(x)
    dim = normalize_axis(a.get("dim", 0), len(shape))
    extent, chunks = shape[dim], int(a["chunks"])
    size = -(-extent // chunks)
    sizes = [min(size, extent - s) for s in range(0, extent, size)] if size else [0]
    return _split(cx, x, sizes, dim)


@converts("aten.unbind")
def _unbind(cx, a):
    x = cx.tensor(a["self"])
    dim = normalize_axis(a.get("dim", 0), len(cx.shape(x)))
    pieces = _split(cx, x, [1] * cx.shape(x)[dim], dim)
    return [cx.emit(g.SqueezeOp, p, axes=[dim]) for p in pieces]


def _slice(cx: ImportContext, x, dim: int, start, end, step: int):
    shape = cx.shape(x)
    dim = normalize_axis(dim, len(shape))
    start = 0 if start is None else int(start)
    end = shape[dim] if end is None or end >= _INT64_MAX else int(end)
    if step == 1 and start in (0, -shape[dim]) and end >= shape[dim]:
        return x
    return cx.emit(g.SliceOp, x, starts=[start], ends=[end], axes=[dim], steps=[int(step)])


@converts("aten.slice", "aten.slice_copy")
def _slice_op(cx, a):
    return _slice(cx, cx.tensor(a["self"]), a.get("dim", 0), a.get("start"), a.get("end"),
                  a.get("step", 1) or 1)


@converts("aten.narrow")
def _narrow(cx, a):
    start = int(a["start"])
    return _slice(cx, cx.tensor(a["self"]), a["dim"], start, start + int(a["length"]), 1)


@converts("aten.select", "aten.select_copy")
def _select(cx, a):
    x = cx.tensor(a["self"])
    shape = cx.shape(x)
    dim = normalize_axis(a["dim"], len(shape))
    index = int(a["index"])
    if not -shape[dim] <= index < shape[dim]:
        raise cx.error(f"index {index} is out of range for dim {dim} of size {shape[dim]}")
    index %= shape[dim]
    piece = cx.emit(g.SliceOp, x, starts=[index], ends=[index + 1], axes=[dim])
    return cx.emit(g.SqueezeOp, piece, axes=[dim])


@converts("aten.index_select")
def _index_select(cx, a):
    x = cx.tensor(a["self"])
    return cx.emit(g.GatherOp, x, cx.tensor(a["index"]), axis=a["dim"])


@converts("aten.index")
def _index(cx, a):
    """``x[..., idx, ...]`` with one index tensor (a gather along its dim)."""
    x = cx.tensor(a["self"])
    indices = list(a["indices"])
    present = [i for i, t in enumerate(indices) if t is not None]
    if len(present) != 1:
        raise cx.error(f"indexing with {len(present)} index tensors is not supported "
                       "(one index tensor, others ':')")
    dim = present[0]
    index = cx.tensor(indices[dim])
    if cx.dtype(index).kind == "b":
        raise cx.error("boolean-mask indexing has a data-dependent shape; not supported")
    return cx.emit(g.GatherOp, x, index, axis=dim)


@converts("aten.flip")
def _flip(cx, a):
    x = cx.tensor(a["self"])
    shape = cx.shape(x)
    dims = [normalize_axis(d, len(shape)) for d in a["dims"]]
    if not dims:
        return x
    return cx.emit(g.SliceOp, x, starts=[-1] * len(dims), ends=[-_INT64_MAX] * len(dims), axes=dims,
                   steps=[-1] * len(dims))


@converts("aten.repeat")
def _repeat(cx, a):
    """Tile: view each dim d as [1, d], broadcast to [r, d], merge back."""
    x = cx.tensor(a["self"])
    reps = [int(r) for r in a["repeats"]]
    shape = [1] * (len(reps) - len(cx.shape(x))) + cx.shape(x)
    interleaved = [v for d in shape for v in (1, d)]
    target = [v for r, d in zip(reps, shape) for v in (r, d)]
    spread = cx.emit(g.BroadcastToOp, _reshape(cx, x, interleaved), shape=target)
    return _reshape(cx, spread, [r * d for r, d in zip(reps, shape)])


def _torch_pads(cx: ImportContext, x, pad) -> list[int]:
    """torch's (last_begin, last_end, prev_begin, ...) -> graph [begin..., end...]."""
    rank = len(cx.shape(x))
    pad = [int(p) for p in pad]
    if len(pad) % 2 or len(pad) // 2 > rank:
        raise cx.error(f"pad {pad} must have an even length of at most 2 x rank")
    begins, ends = [0] * rank, [0] * rank
    for i in range(len(pad) // 2):
        begins[rank - 1 - i], ends[rank - 1 - i] = pad[2 * i], pad[2 * i + 1]
    return begins + ends


@converts("aten.constant_pad_nd")
def _constant_pad(cx, a):
    x = cx.tensor(a["self"])
    return cx.emit(g.PadOp, x, pads=_torch_pads(cx, x, a["pad"]), value=float(a.get("value", 0) or 0))


@converts("aten.pad")
def _pad(cx, a):
    x = cx.tensor(a["self"])
    mode = {"constant": "constant", "reflect": "reflect", "replicate": "edge"}.get(a.get("mode", "constant"))
    if mode is None:
        raise cx.error(f"pad mode '{a.get('mode')}' is not supported (constant, reflect, replicate)")
    attrs = {"value": float(a.get("value") or 0)} if mode == "constant" else {}
    return cx.emit(g.PadOp, x, pads=_torch_pads(cx, x, a["pad"]), mode=mode, **attrs)


@converts("aten.reflection_pad1d", "aten.reflection_pad2d", "aten.replication_pad1d",
          "aten.replication_pad2d")
def _reflect_pad(cx, a):
    x = cx.tensor(a["self"])
    mode = "reflect" if "reflection" in cx.node.target._schema.name else "edge"
    return cx.emit(g.PadOp, x, pads=_torch_pads(cx, x, a["padding"]), mode=mode)


@converts("getitem")
def _getitem(cx, a):
    container, index = a["args"]
    if not isinstance(container, (list, tuple)):
        raise cx.error(f"getitem on a {type(container).__name__}")
    return container[index]


# ---------------------------------------------------------------------------
# scatter forms of indexed assignment (``y[:, 0] = v`` after functionalization)
# ---------------------------------------------------------------------------


@converts("aten.fill")
def _fill(cx, a):
    x = cx.tensor(a["self"])
    value = cx.cast(cx.tensor(a["value"], dtype=cx.dtype(x)), cx.dtype(x))
    return cx.emit(g.BroadcastToOp, value, shape=cx.shape(x))


def _replace_range(cx: ImportContext, x, src, dim: int, start: int, end: int):
    """``x`` with positions [start, end) of ``dim`` replaced by ``src`` (concat of 3 pieces)."""
    extent = cx.shape(x)[dim]
    src = cx.cast(cx.tensor(src), cx.dtype(x))
    pieces = []
    if start > 0:
        pieces.append(cx.emit(g.SliceOp, x, starts=[0], ends=[start], axes=[dim]))
    pieces.append(src)
    if end < extent:
        pieces.append(cx.emit(g.SliceOp, x, starts=[end], ends=[extent], axes=[dim]))
    return pieces[0] if len(pieces) == 1 else cx.emit(g.ConcatOp, *pieces, axis=dim)


@converts("aten.select_scatter")
def _select_scatter(cx, a):
    x = cx.tensor(a["self"])
    shape = cx.shape(x)
    dim = normalize_axis(a["dim"], len(shape))
    index = int(a["index"]) % shape[dim]
    src = cx.emit(g.UnsqueezeOp, cx.tensor(a["src"]), axes=[dim])
    return _replace_range(cx, x, src, dim, index, index + 1)


@converts("aten.slice_scatter")
def _slice_scatter(cx, a):
    x = cx.tensor(a["self"])
    shape = cx.shape(x)
    dim = normalize_axis(a.get("dim", 0), len(shape))
    start, end, step = a.get("start"), a.get("end"), a.get("step", 1) or 1
    start, end, _ = slice(start, None if end is None or end >= _INT64_MAX else end).indices(shape[dim])
    if step != 1:
        raise cx.error("slice assignment with a step other than 1 is not supported")
    return _replace_range(cx, x, a["src"], dim, start, max(end, start))
