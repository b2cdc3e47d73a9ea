"""Pooling kernels: max_pool2d, avg_pool2d, global_avg_pool, global_max_pool,
and the channels-first N-D max_pool3d, avg_pool3d, max_pool_with_indices.

On the CPU (``lower-to-loops{flat-conv=true}``, which the driver sets), NCHW
max/avg_pool2d run with the output-column loop innermost and the window
unrolled inside it (``_pool_rows``: border / interior segments of rows and
columns, vectorizable over columns even at stride 2, bit-identical results);
NHWC ones and the GPU lowering keep window loops ``%kh %kw`` inside the output loops ``%n %c %oh %ow``;
positions outside the input (padding, ceil-mode overhang) load at a clamped
index and select the identity instead (lowest for max, 0 for sums): no branch
in the window loop. avg_pool2d divides by the number of counted positions, which depends
only on (oh, ow) and factors into a row count times a column count: both are
static per output index, so the kernel picks them with a short chain of
``arith.select`` over runs of equal values (no division-by-window loop).
"""

from __future__ import annotations

import math

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import UnitAttr, f64, i64
from xdsl.ir import Attribute, SSAValue

from dlc.dialects.graph import GlobalMaxPoolOp, _window_attrs
from dlc.dialects.graph_base import GraphOp, is_float
from dlc.lowering.kernels import kernel
from dlc.lowering.kernels.builder import Index, KernelBuilder, lowest
from dlc.lowering.kernels.forms import KernelOptions
from dlc.lowering.schedule.defaults_elementwise import STRIDED_VECTOR_ATTR


def _index(layout: str, n, c, h, w):
    return [n, h, w, c] if layout == "NHWC" else [n, c, h, w]


def _counts(out: int, k: int, stride: int, dil: int, pad: int, lo: int, hi: int) -> list[int]:
    """Per output index: how many window taps land in [lo, hi) (input coords)."""
    return [
        sum(1 for t in range(k) if lo <= o * stride - pad + t * dil < hi) for o in range(out)
    ]


def static_table(kb: KernelBuilder, iv: SSAValue, values: list[float], et: Attribute) -> SSAValue:
    """values[iv] as a select chain over runs of equal values."""
    runs: list[tuple[int, float]] = []  # (end exclusive, value)
    for i, v in enumerate(values):
        if runs and runs[-1][1] == v:
            runs[-1] = (i + 1, v)
        else:
            runs.append((i + 1, v))
    result = kb.const(runs[-1][1], et)
    for end, v in reversed(runs[:-1]):
        result = kb.select(kb.icmp("slt", iv, end), kb.const(v, et), result)
    return result


def _pool(op: GraphOp, name: str, is_max: bool, options: KernelOptions) -> func.FuncOp:
    x_t, out_t = op.operands[0].type, op.results[0].type
    et = out_t.element_type
    a = op.attrs
    layout = a.layout
    kh, kw = a.kernel
    (sh, sw), (dh, dw), (pt, pl, pb, pr) = _window_attrs(a)
    xs, os_ = x_t.get_shape(), out_t.get_shape()
    n, c, h, w = (xs[0], xs[3], xs[1], xs[2]) if layout == "NHWC" else xs
    oh, ow = (os_[1], os_[2]) if layout == "NHWC" else (os_[2], os_[3])

    kb = KernelBuilder(name, [x_t], [out_t], op.name, ["x", "out"])
    identity_value = lowest(et) if is_max else 0
    # the CPU kernel forms (lower-to-loops{flat-conv}): the GPU lowering maps the output
    # loops n, c, oh, ow to threads, so it keeps the per-element form (one thread per output)
    if layout == "NCHW" and options.flat_conv:
        _pool_rows(kb, a, et, is_max, (n, c, h, w), (oh, ow), (kh, kw), (sh, sw), (dh, dw), (pt, pl, pb, pr))
        return kb.finish()
    with kb.loops(["n", "c", "oh", "ow"], [n, c, oh, ow]) as (iv_n, iv_c, iv_oh, iv_ow):
        out_idx = _index(layout, iv_n, iv_c, iv_oh, iv_ow)
        kb.store(kb.const(identity_value, et), kb.outputs[0], out_idx)
        with kb.loops(["kh", "kw"], [kh, kw]) as (iv_kh, iv_kw):
            ih, iw, inside = kb.window_tap((iv_oh, iv_ow), (iv_kh, iv_kw), strides=(sh, sw), dilations=(dh, dw),
                                           pads=(pt, pl), in_hw=(h, w), out_hw=(oh, ow), kernel=(kh, kw))
            # outside taps contribute the identity (lowest for max, 0 for sum)
            identity = kb.const(identity_value, et)
            xv = kb.load_or(kb.inputs[0], _index(layout, iv_n, iv_c, ih, iw), inside, identity)
            acc = kb.load(kb.outputs[0], out_idx)
            kb.store(kb.max(acc, xv, et) if is_max else kb.add(acc, xv, et), kb.outputs[0], out_idx)
        if not is_max:
            _average(kb, a, et, iv_oh, iv_ow, (h, w), (oh, ow), (kh, kw), (sh, sw), (dh, dw),
                     (pt, pl, pb, pr), out_idx)
        kb.apply_epilogue(out_idx)  # fused elementwise ops (fuse-ops)
    return kb.finish()


def _average(kb: KernelBuilder, a, et, iv_oh, iv_ow, hw, ohw, k, stride, dil, pads, out_idx) -> None:
    """Divide the window sum at ``out_idx`` by its count of counted positions (``_mean``)."""
    total = kb.load(kb.outputs[0], out_idx)
    kb.store(_mean(kb, a, et, total, iv_oh, iv_ow, hw, ohw, k, stride, dil, pads), kb.outputs[0], out_idx)


def _interior_columns(ow: int, kw: int, sw: int, dw: int, pl: int, w: int) -> tuple[int, int]:
    """[first, end) of the output columns whose every window tap lies inside the input."""
    first = -(-pl // sw)
    end = min(ow, (w - 1 + pl - (kw - 1) * dw) // sw + 1)
    first = min(first, ow)
    return first, max(first, end)


MAX_UNROLLED_TAPS = 64  # windows up to this many taps are unrolled into the column loop


def _segments(out: int, k: int, stride: int, dil: int, pad: int, size: int) -> list[tuple[int, int]]:
    """The output indices split into [begin border, interior, end border) runs (non-empty ones)."""
    first, end = _interior_columns(out, k, stride, dil, pad, size)
    return [(lo, hi) for lo, hi in ((0, first), (first, end), (end, out)) if hi > lo]


def _pool_rows(kb: KernelBuilder, a, et: Attribute, is_max: bool, nchw, ohw, k, stride, dil, pads) -> None:
    """NCHW pools, the output-column loop innermost; windows of at most
    MAX_UNROLLED_TAPS taps are unrolled inside it (the accumulator stays in a
    register, each output is stored once)::

        for n, c:  for oh in row segment:  for ow in column segment:
            acc = identity;  acc = max/add(acc, x[tap]) for each (kh, kw) in order
            out[oh, ow] = epilogue(acc (/ count for avg))

    Rows and columns split into border and interior segments: only border
    segments clamp their indices and select the identity for padded taps; the
    interior's input index is affine (stride ``sw`` along ``ow``: a strided loop is
    tagged ``STRIDED_VECTOR_ATTR`` so that the default schedule vectorizes it;
    LLVM loads it as interleaved vectors).
    Each output takes its taps in (kh, kw) order from the same identity, so
    results equal those of the per-element loop bit for bit. Larger windows
    keep one pass over the output row per tap (``_pool_row_passes``)."""
    n, c, h, w = nchw
    (oh, ow), (kh, kw), (sh, sw), (dh, dw), (pt, pl, pb, pr) = ohw, k, stride, dil, pads
    if kh * kw > MAX_UNROLLED_TAPS:
        _pool_row_passes(kb, a, et, is_max, nchw, ohw, k, stride, dil, pads)
        return
    identity = kb.const(lowest(et) if is_max else 0, et)
    rows = _segments(oh, kh, sh, dh, pt, h)
    cols = _segments(ow, kw, sw, dw, pl, w)
    with kb.loops(["n", "c"], [n, c]) as (iv_n, iv_c):
        for row_lo, row_hi in rows:
            with kb.loop("oh", row_hi, row_lo) as iv_oh:
                # row index and in-input condition per kh (clamps only where they can fail)
                taps_h = []
                for t in range(kh):
                    ih = kb.iadd(kb.imul(iv_oh, sh), t * dh - pt)
                    taps_h.append(kb.clamp_index(ih, 0, h, row_lo * sh + t * dh - pt,
                                                 (row_hi - 1) * sh + t * dh - pt))
                for col_lo, col_hi in cols:
                    with kb.loop("ow", col_hi, col_lo) as iv_ow:
                        values = []
                        for ih, h_ok in taps_h:
                            for t in range(kw):
                                iw = kb.iadd(kb.imul(iv_ow, sw), t * dw - pl)
                                iw, w_ok = kb.clamp_index(iw, 0, w, col_lo * sw + t * dw - pl,
                                                          (col_hi - 1) * sw + t * dw - pl)
                                inside = kb.all_of([cond for cond in (h_ok, w_ok) if cond is not None])
                                # outside taps contribute the identity (lowest for max, 0 for sum)
                                values.append(kb.load_or(kb.inputs[0], [iv_n, iv_c, ih, iw], inside, identity))
                        if is_max:  # max is exact in any order: a tree (short dependency chains)
                            acc = _max_tree(kb, [identity] + values, et)
                        else:  # the sum keeps the (kh, kw) order
                            acc = identity
                            for value in values:
                                acc = kb.add(acc, value, et)
                        if not is_max:
                            acc = _mean(kb, a, et, acc, iv_oh, iv_ow, (h, w), (oh, ow), (kh, kw),
                                        (sh, sw), (dh, dw), (pt, pl, pb, pr),
                                        (row_lo, row_hi), (col_lo, col_hi))
                        out_idx = [iv_n, iv_c, iv_oh, iv_ow]
                        kb.store(kb.epilogue_value(acc, out_idx), kb.outputs[0], out_idx)
                    if sw > 1 and (col_lo, col_hi) == _interior_columns(ow, kw, sw, dw, pl, w):
                        # its loads are stride sw, not 1: the default schedule's analysis
                        # would refuse to vectorize it; each iteration writes its own output
                        kb.block.last_op.attributes[STRIDED_VECTOR_ATTR] = UnitAttr()


def _max_tree(kb: KernelBuilder, values: list[SSAValue], et: Attribute) -> SSAValue:
    """The max of ``values`` as a balanced tree: the same result as a chain (max is
    associative and commutative, NaN and signed zeros included), with a
    dependency chain of log2(taps) maxima (each one is several instructions)."""
    while len(values) > 1:
        pairs = [kb.max(values[i], values[i + 1], et) for i in range(0, len(values) - 1, 2)]
        values = pairs + values[len(pairs) * 2:]
    return values[0]


def _mean(kb: KernelBuilder, a, et, total, iv_oh, iv_ow, hw, ohw, k, stride, dil, pads,
          row_range: tuple[int, int] | None = None, col_range: tuple[int, int] | None = None) -> SSAValue:
    """The window sum ``total`` divided by its count of counted positions: inside the
    input, or inside the padding too with count_include_pad (never the ceil-mode
    overhang). ``row_range`` / ``col_range``: the [lo, hi) of output rows / columns the
    loop covers (a count constant there needs no select chain)."""
    (h, w), (oh, ow), (kh, kw), (sh, sw), (dh, dw), (pt, pl, pb, pr) = hw, ohw, k, stride, dil, pads
    include = a.count_include_pad
    rows = _counts(oh, kh, sh, dh, pt, -pt if include else 0, h + pb if include else h)
    cols = _counts(ow, kw, sw, dw, pl, -pl if include else 0, w + pr if include else w)
    ft = et if is_float(et) else f64

    def factor(counts: list[int], iv, span: tuple[int, int] | None):
        counts = [float(max(c, 1)) for c in counts]
        covered = counts[span[0]:span[1]] if span else counts
        if len(set(covered)) == 1:
            return covered[0]
        return static_table(kb, iv, counts, ft)

    row_factor, col_factor = factor(rows, iv_oh, row_range), factor(cols, iv_ow, col_range)
    if isinstance(row_factor, float) and isinstance(col_factor, float):
        count = kb.const(row_factor * col_factor, ft)  # no padding effects here
    else:
        as_value = (lambda f: kb.const(f, ft) if isinstance(f, float) else f)
        count = kb.mul(as_value(row_factor), as_value(col_factor), ft)
    return kb.convert(kb.div(kb.convert(total, et, ft), count, ft), ft, et)


def _pool_row_passes(kb: KernelBuilder, a, et: Attribute, is_max: bool, nchw, ohw, k, stride, dil, pads) -> None:
    """NCHW pools one output row at a time, the output-column loop innermost
    (vectorizable: stride-1 output, stride-``sw`` input):

        for n, c, oh:  out[ow] = identity;  for kh, kw: out[ow] = max/add(out[ow], x[tap])
                       then (avg) divide, and the fused epilogue

    Each output element still takes its taps in (kh, kw) order: the results equal
    those of the per-element loop bit for bit. The column loop splits into the
    left border, the interior (no clamp: an affine index) and the right border."""
    n, c, h, w = nchw
    (oh, ow), (kh, kw), (sh, sw), (dh, dw), (pt, pl, pb, pr) = ohw, k, stride, dil, pads
    identity_value = lowest(et) if is_max else 0
    first, end = _interior_columns(ow, kw, sw, dw, pl, w)
    segments = [(lo, hi) for lo, hi in ((0, first), (first, end), (end, ow)) if hi > lo]
    with kb.loops(["n", "c", "oh"], [n, c, oh]) as (iv_n, iv_c, iv_oh):
        with kb.loop("ow", ow) as iv_ow:
            kb.store(kb.const(identity_value, et), kb.outputs[0], [iv_n, iv_c, iv_oh, iv_ow])
        with kb.loops(["kh", "kw"], [kh, kw]) as (iv_kh, iv_kw):
            ih = kb.iadd(kb.iadd(kb.imul(iv_oh, sh), kb.imul(iv_kh, dh)), -pt)
            ih, h_ok = kb.clamp_index(ih, 0, h, -pt, (oh - 1) * sh + (kh - 1) * dh - pt)
            for lo, hi in segments:
                with kb.loop("ow", hi, lo) as iv_ow:
                    iw = kb.iadd(kb.iadd(kb.imul(iv_ow, sw), kb.imul(iv_kw, dw)), -pl)
                    iw, w_ok = kb.clamp_index(iw, 0, w, lo * sw - pl, (hi - 1) * sw + (kw - 1) * dw - pl)
                    inside = kb.all_of([cond for cond in (h_ok, w_ok) if cond is not None])
                    # outside taps contribute the identity (lowest for max, 0 for sum)
                    xv = kb.load_or(kb.inputs[0], [iv_n, iv_c, ih, iw], inside,
                                    kb.const(identity_value, et))
                    out_idx = [iv_n, iv_c, iv_oh, iv_ow]
                    acc = kb.load(kb.outputs[0], out_idx)
                    kb.store(kb.max(acc, xv, et) if is_max else kb.add(acc, xv, et),
                             kb.outputs[0], out_idx)
        if not is_max or kb.epilogue is not None:
            with kb.loop("ow", ow) as iv_ow:
                out_idx = [iv_n, iv_c, iv_oh, iv_ow]
                if not is_max:
                    _average(kb, a, et, iv_oh, iv_ow, (h, w), (oh, ow), (kh, kw), (sh, sw),
                             (dh, dw), (pt, pl, pb, pr), out_idx)
                kb.apply_epilogue(out_idx)  # fused elementwise ops (fuse-ops)


@kernel("graph.max_pool2d", options=True)
def lower_max_pool2d(op: GraphOp, name: str, options: KernelOptions) -> func.FuncOp:
    return _pool(op, name, True, options)


@kernel("graph.avg_pool2d", options=True)
def lower_avg_pool2d(op: GraphOp, name: str, options: KernelOptions) -> func.FuncOp:
    return _pool(op, name, False, options)


@kernel("graph.global_avg_pool", "graph.global_max_pool")
def lower_global_pool(op: GraphOp, name: str) -> func.FuncOp:
    x_t, out_t = op.operands[0].type, op.results[0].type
    et = out_t.element_type
    is_max = isinstance(op, GlobalMaxPoolOp)
    xs = x_t.get_shape()
    rank = len(xs)
    nhwc = op.layout == "NHWC"
    spatial = list(range(1, rank - 1)) if nhwc else list(range(2, rank))
    kept = [d for d in range(rank) if d not in spatial]
    kb = KernelBuilder(name, [x_t], [out_t], op.name, ["x", "out"])
    outer_names = ["n", "c"]
    with kb.loops(outer_names, [xs[d] for d in kept]) as outer:
        out_idx = [0] * rank
        for d, iv in zip(kept, outer):
            out_idx[d] = iv
        kb.store(kb.const(lowest(et) if is_max else 0, et), kb.outputs[0], out_idx)
        with kb.loops([f"s{k}" for k in range(len(spatial))], [xs[d] for d in spatial]) as inner:
            in_idx = list(out_idx)
            for d, iv in zip(spatial, inner):
                in_idx[d] = iv
            xv = kb.load(kb.inputs[0], in_idx)
            acc = kb.load(kb.outputs[0], out_idx)
            kb.store(kb.max(acc, xv, et) if is_max else kb.add(acc, xv, et), kb.outputs[0], out_idx)
        if not is_max:
            count = math.prod(xs[d] for d in spatial)
            ft = et if is_float(et) else f64
            total = kb.convert(kb.load(kb.outputs[0], out_idx), et, ft)
            mean = kb.div(total, kb.const(float(count), ft), ft)
            kb.store(kb.convert(mean, ft, et), kb.outputs[0], out_idx)
    return kb.finish()


# -- N-D pools (max_pool3d, avg_pool3d, max_pool_with_indices), channels first ------


def _pool_nd(op: GraphOp, name: str, kind: str) -> func.FuncOp:
    """kind: "max", "avg" or "argmax" (max plus the flat input index of the
    window's first maximum, in a second output)."""
    from dlc.dialects.graph import pool_geometry, pool_index_steps

    x_t, out_t = op.operands[0].type, op.results[0].type
    et = out_t.element_type
    xs = x_t.get_shape()
    in_dims = xs[2:]
    kernel_, strides, dil, pads, out = pool_geometry(op.attrs, in_dims)
    n = len(in_dims)
    is_max = kind != "avg"
    out_types = [r.type for r in op.results]
    names = ["x", "out"] if len(out_types) == 1 else ["x", "out", "indices"]
    kb = KernelBuilder(name, [x_t], out_types, op.name, names)
    identity = kb.const(lowest(et) if is_max else 0, et)
    with kb.loops(["n", "c"] + [f"o{i}" for i in range(n)], list(xs[:2]) + list(out)) as ivs:
        out_idx = ivs
        kb.store(identity, kb.outputs[0], out_idx)
        if kind == "argmax":
            kb.store(kb.const(-1, i64), kb.outputs[1], out_idx)  # -1: no input tap yet
            steps = pool_index_steps(in_dims, op.storage_order)
        with kb.loops([f"k{i}" for i in range(n)], kernel_) as taps:
            in_idx, conds = list(ivs[:2]), []
            for i in range(n):
                pos = kb.iadd(kb.iadd(kb.imul(ivs[2 + i], strides[i]), kb.imul(taps[i], dil[i])), -pads[i])
                top = (out[i] - 1) * strides[i] + (kernel_[i] - 1) * dil[i] - pads[i]
                pos, ok = kb.clamp_index(pos, 0, in_dims[i], -pads[i], top)
                in_idx.append(pos)
                if ok is not None:
                    conds.append(ok)
            inside = kb.all_of(conds)
            # outside taps contribute the identity (lowest for max, 0 for sum)
            xv = kb.load_or(kb.inputs[0], in_idx, inside, identity)
            acc = kb.load(kb.outputs[0], out_idx)
            if kind == "argmax":
                old = kb.load(kb.outputs[1], out_idx)
                first = kb.emit(arith.CmpiOp(old, kb.const(0, i64), "slt"))
                wins = kb.emit(arith.OrIOp(kb.cmp("gt", xv, acc, et), first))
                better = kb.all_of([c for c in (inside, wins) if c is not None])
                flat: Index = kb.imul(kb.iadd(kb.imul(in_idx[0], xs[1]), in_idx[1]), math.prod(in_dims))
                for i in range(n):
                    flat = kb.iadd(flat, kb.imul(in_idx[2 + i], steps[i]))
                kb.store(kb.select(better, kb.index_to(flat, i64), old), kb.outputs[1], out_idx)
                kb.store(kb.select(better, xv, acc), kb.outputs[0], out_idx)
            else:
                kb.store(kb.max(acc, xv, et) if is_max else kb.add(acc, xv, et), kb.outputs[0], out_idx)
        if kind == "avg":
            include = op.count_include_pad
            ft = et if is_float(et) else f64
            count = None
            for i in range(n):
                lo, hi = (-pads[i], in_dims[i] + pads[n + i]) if include else (0, in_dims[i])
                per = [float(max(v, 1)) for v in _counts(out[i], kernel_[i], strides[i], dil[i], pads[i], lo, hi)]
                factor = kb.const(per[0], ft) if len(set(per)) == 1 else static_table(kb, ivs[2 + i], per, ft)
                count = factor if count is None else kb.mul(count, factor, ft)
            total = kb.convert(kb.load(kb.outputs[0], out_idx), et, ft)
            kb.store(kb.convert(kb.div(total, count, ft), ft, et), kb.outputs[0], out_idx)
        if kind != "argmax":
            kb.apply_epilogue(out_idx)  # fused elementwise ops (fuse-ops)
    return kb.finish()


@kernel("graph.max_pool3d")
def lower_max_pool3d(op: GraphOp, name: str) -> func.FuncOp:
    return _pool_nd(op, name, "max")


@kernel("graph.avg_pool3d")
def lower_avg_pool3d(op: GraphOp, name: str) -> func.FuncOp:
    return _pool_nd(op, name, "avg")


@kernel("graph.max_pool_with_indices")
def lower_max_pool_with_indices(op: GraphOp, name: str) -> func.FuncOp:
    return _pool_nd(op, name, "argmax")
