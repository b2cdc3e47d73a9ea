"""Spatial sampling and signal kernels: grid_sample, dft, col2im, roi_align,
deform_conv2d.

* grid_sample: the output loops ``%n %o0..`` compute, per spatial dim, the
  source coordinate (f64, the reference's formulas), its padding treatment
  and the interpolation taps (index, weight, in-range flag) once; the channel
  loop ``%c`` inside then sums the tap products. Out-of-range taps load at a
  clamped index and select 0 (zeros padding): no branch in the kernel.
* dft: a direct O(n^2) transform; twiddles are computed in the kernel from
  ``(k * n) mod length`` (exact integer reduction to a quadrant, then f64
  Taylor polynomials), so no table has to be passed in. The sum over input samples is
  unrolled in chunks of ``DFT_CHUNK`` terms added in f64 (tloop.for carries
  no values, and an output-typed running sum loses near-zero results).
* col2im: zero the image, then scatter-add every column element in the
  reference's order (block offset outer), guarded by ``scf.if``.
* deform_conv2d: a direct convolution whose taps are bilinear samples at
  offset positions (zero outside), computed in f64 per (output, channel, tap).
* roi_align: per (roi, channel, bin) a loop over the sample grid; sample
  coordinates are computed in the rois' precision as onnxruntime does. The
  adaptive grid (sampling_ratio = 0) loops to the static ``max_samples`` and
  skips samples past the per-roi count.
"""

from __future__ import annotations

import itertools
import math

from xdsl.dialects import arith, func
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import f64, i64
from xdsl.ir import Attribute, SSAValue

from dlc.dialects.graph import col2im_blocks, deform_conv_extras, deform_conv_window
from dlc.dialects.graph_base import GraphOp, or_default
from dlc.lowering.kernels import kernel
from dlc.lowering.kernels.builder import Index, KernelBuilder


def _f64_to_index(kb: KernelBuilder, v: SSAValue) -> SSAValue:
    """Truncating f64 -> index (callers keep v in a small range)."""
    return kb.to_index(kb.convert(v, f64, i64), i64)


def _not(kb: KernelBuilder, cond: SSAValue) -> SSAValue:
    return kb.emit(arith.XOrIOp(cond, kb.emit(arith.ConstantOp.from_int_and_width(1, 1))))


def _or(kb: KernelBuilder, a: SSAValue, b: SSAValue) -> SSAValue:
    return kb.emit(arith.OrIOp(a, b))


# ---------------------------------------------------------------------------
# grid_sample
# ---------------------------------------------------------------------------


def _reflect(kb: KernelBuilder, v: SSAValue, lo: float, hi: float) -> SSAValue:
    """``grid_reflect`` of the reference, branch-free in f64."""
    span = hi - lo
    if span <= 0:
        return kb.f64(lo)
    below = kb.cmp("lt", v, kb.f64(lo), f64)
    above = kb.cmp("gt", v, kb.f64(hi), f64)
    dist = kb.select(below, kb.sub(kb.f64(lo), v, f64), kb.sub(v, kb.f64(hi), f64))
    flips = kb.emit(xmath.FloorOp(kb.div(dist, kb.f64(span), f64)))
    rest = kb.sub(dist, kb.mul(flips, kb.f64(span), f64), f64)
    half = kb.mul(flips, kb.f64(0.5), f64)
    even = kb.cmp("eq", kb.emit(xmath.FloorOp(half)), half, f64)
    low_side = kb.select(below, even, _not(kb, even))
    reflected = kb.select(low_side, kb.add(kb.f64(lo), rest, f64), kb.sub(kb.f64(hi), rest, f64))
    return kb.select(_or(kb, below, above), reflected, v)


def _cubic_weights(kb: KernelBuilder, t: SSAValue) -> list[SSAValue]:
    """Keys weights (alpha = -0.75) of the taps -1, 0, 1, 2, as grid_cubic_weights."""
    A = -0.75
    c = kb.f64

    def add(a, b):
        return kb.add(a, b, f64)

    def sub(a, b):
        return kb.sub(a, b, f64)

    def mul(a, b):
        return kb.mul(a, b, f64)

    def outer(u):  # ((A*u - 5A)*u + 8A)*u - 4A
        return sub(mul(add(mul(sub(mul(c(A), u), c(5 * A)), u), c(8 * A)), u), c(4 * A))

    def inner(u):  # ((A+2)*u - (A+3))*u*u + 1
        return add(mul(mul(sub(mul(c(A + 2), u), c(A + 3)), u), u), c(1.0))

    one_minus = sub(c(1.0), t)
    return [outer(add(t, c(1.0))), inner(t), inner(one_minus), outer(sub(c(2.0), t))]


def _grid_taps(kb, g, d: int, mode: str, padding: str, align: bool):
    """[(index, weight or None, in-range condition or None)] along one dim."""
    if align:
        c = kb.mul(kb.div(kb.add(g, kb.f64(1.0), f64), kb.f64(2.0), f64), kb.f64(float(d - 1)), f64)
        lo, hi = 0.0, d - 1.0
    else:
        scaled = kb.mul(kb.add(g, kb.f64(1.0), f64), kb.f64(float(d)), f64)
        c = kb.div(kb.sub(scaled, kb.f64(1.0), f64), kb.f64(2.0), f64)
        lo, hi = -0.5, d - 0.5
    if mode == "nearest":
        c = kb.emit(xmath.RoundEvenOp(c))
    if padding == "border":
        outside = _or(kb, kb.cmp("lt", c, kb.f64(lo), f64), kb.cmp("gt", c, kb.f64(hi), f64))
        clamped = kb.min(kb.max(c, kb.f64(0.0), f64), kb.f64(float(d - 1)), f64)
        c = kb.select(outside, clamped, c)
    elif padding == "reflection":
        c = _reflect(kb, c, lo, hi)
    # far outside every tap is padding: clamping keeps the index conversion defined
    c = kb.min(kb.max(c, kb.f64(-8.0), f64), kb.f64(d + 8.0), f64)
    base_f = kb.emit(xmath.FloorOp(c))
    t = kb.sub(c, base_f, f64)
    if mode == "nearest":
        offsets, weights = [0], [None]
    elif mode == "linear":
        offsets, weights = [0, 1], [kb.sub(kb.f64(1.0), t, f64), t]
    else:
        offsets, weights = [-1, 0, 1, 2], _cubic_weights(kb, t)
    taps = []
    for off, w in zip(offsets, weights):
        pos = kb.add(base_f, kb.f64(float(off)), f64)
        if padding == "reflection":
            pos = _reflect(kb, pos, lo, hi)
        idx = _f64_to_index(kb, pos)
        # reflected/border taps are inside already; the clamp only guards the load
        if padding == "zeros":
            idx, ok = kb.clamp_index(idx, 0, d, -16, d + 16)
            taps.append((idx, w, ok))
        else:
            taps.append((kb.clamp_extent(idx, d), w, None))
    return taps


@kernel("graph.grid_sample")
def lower_grid_sample(op: GraphOp, name: str) -> func.FuncOp:
    x_t, grid_t = op.operands[0].type, op.operands[1].type
    out_t = op.results[0].type
    et, gt = out_t.element_type, grid_t.element_type
    a = op.attrs
    mode, padding = a.mode, a.padding_mode
    align = a.align_corners
    xs, os_ = x_t.get_shape(), out_t.get_shape()
    dims = xs[2:]
    r = len(dims)
    kb = KernelBuilder(name, [x_t, grid_t], [out_t], op.name, ["x", "grid", "out"])
    names = ["n"] + [f"o{i}" for i in range(r)]
    with kb.loops(names, [os_[0], *os_[2:]]) as ivs:
        n, opos = ivs[0], ivs[1:]
        per_dim = []
        for i, d in enumerate(dims):
            g = kb.convert(kb.load(kb.inputs[1], [n, *opos, r - 1 - i]), gt, f64)
            per_dim.append(_grid_taps(kb, g, d, mode, padding, align))
        combos = []
        for combo in itertools.product(*per_dim):
            weight = None
            for _, w, _ in combo:
                if w is not None:
                    weight = w if weight is None else kb.mul(weight, w, f64)
            conds = [ok for _, _, ok in combo if ok is not None]
            combos.append(([idx for idx, _, _ in combo], weight, kb.all_of(conds)))
        with kb.loop("c", xs[1]) as c:
            total = None
            for idx, weight, ok in combos:
                value = kb.convert(kb.load(kb.inputs[0], [n, c, *idx]), et, f64)
                if ok is not None:
                    value = kb.select(ok, value, kb.f64(0.0))
                term = value if weight is None else kb.mul(value, weight, f64)
                total = term if total is None else kb.add(total, term, f64)
            kb.store(kb.epilogue_value(kb.convert(total, f64, et), [n, c, *opos]),
                     kb.outputs[0], [n, c, *opos])
    return kb.finish()


# ---------------------------------------------------------------------------
# dft
# ---------------------------------------------------------------------------


def _twiddle(kb: KernelBuilder, m: Index, length: int) -> tuple[SSAValue, SSAValue]:
    """(cos, sin) of 2*pi*m/length for 0 <= m < length, in f64 without libm.

    The quadrant q = 4m div length is exact integer arithmetic, so multiples of
    pi/2 give exact 0 and +-1; the rest angle in [0, pi/2) goes through Taylor
    polynomials whose truncation error is below f64 rounding. (NVPTX has no
    f64 cos/sin, and libm calls would keep the CPU loop scalar.)"""
    quarter = kb.imul(m, 4)
    q = kb.idiv(quarter, length)
    rest = kb.isub(quarter, kb.imul(q, length))
    x = kb.mul(kb.index_to(rest, f64), kb.f64(math.pi / (2 * length)), f64)
    x2 = kb.mul(x, x, f64)

    def series(first: int, terms: int) -> SSAValue:
        # sum_j (-1)^j x2^j / (2j + first)!, by Horner's rule from the last term
        coeffs = [(-1) ** j / math.factorial(2 * j + first) for j in range(terms)]
        acc = kb.f64(coeffs[-1])
        for c in reversed(coeffs[:-1]):
            acc = kb.add(kb.mul(acc, x2, f64), kb.f64(c), f64)
        return acc

    sin_r = kb.mul(x, series(1, 12), f64)
    cos_r = series(0, 13)
    neg_sin, neg_cos = kb.neg(sin_r, f64), kb.neg(cos_r, f64)

    def pick(values):  # values[q] for q in 0..3
        out = values[3]
        for k in (2, 1, 0):
            out = kb.select(kb.icmp("eq", q, k), values[k], out)
        return out

    return pick([cos_r, neg_sin, neg_cos, sin_r]), pick([sin_r, cos_r, neg_sin, neg_cos])


# Terms of the DFT sum added in f64 before one rounding into the output: with
# single-precision outputs a long f32 running sum would lose the near-zero
# results (an inverse of a Hermitian spectrum) that the f64 reference gets exact.
DFT_CHUNK = 32


@kernel("graph.dft")
def lower_dft(op: GraphOp, name: str) -> func.FuncOp:
    x_t, out_t = op.operands[0].type, op.results[0].type
    et = out_t.element_type
    a = op.attrs
    xs, os_ = x_t.get_shape(), out_t.get_shape()
    rank = len(xs)
    axis = a.axis % rank
    length, inverse, onesided = a.length, a.inverse, a.onesided
    half_spectrum = inverse and onesided  # irfft: Hermitian input, real output
    used = min(xs[axis], length // 2 + 1 if half_spectrum else length)
    complex_in, complex_out = xs[-1] == 2, os_[-1] == 2
    parts = [0, 1] if complex_out else [0]
    sign = 1.0 if inverse else -1.0
    scale = 1.0 / length if inverse else 1.0
    kb = KernelBuilder(name, [x_t], [out_t], op.name, ["x", "out"])

    def terms(ivs, n):
        """(real, imag) f64 contributions of input sample ``n`` to output ``ivs``."""
        src = list(ivs)
        src[axis] = n
        xr = kb.convert(kb.load(kb.inputs[0], [*src, 0]), et, f64)
        xi = kb.convert(kb.load(kb.inputs[0], [*src, 1]), et, f64) if complex_in else None
        cos, sin = _twiddle(kb, kb.irem(kb.imul(ivs[axis], n), length), length)
        sin = kb.mul(sin, kb.f64(sign), f64)  # e^{sign*i*angle}
        real = kb.mul(xr, cos, f64)
        if xi is not None:
            real = kb.sub(real, kb.mul(xi, sin, f64), f64)
        out = [real]
        if complex_out:
            imag = kb.mul(xr, sin, f64)
            if xi is not None:
                imag = kb.add(imag, kb.mul(xi, cos, f64), f64)
            out.append(imag)
        factor = kb.f64(scale) if scale != 1.0 else None
        if half_spectrum:
            # bins 1..(length-1)/2 stand for themselves and their mirror image
            if isinstance(n, int):
                mirrored = 0 < n and not (length % 2 == 0 and n == length // 2)
                factor = kb.f64((2.0 if mirrored else 1.0) * scale)
            else:
                mirrored = kb.all_of([kb.icmp("sgt", n, 0)] + (
                    [kb.icmp("ne", n, length // 2)] if length % 2 == 0 else []))
                factor = kb.select(mirrored, kb.f64(2.0 * scale), kb.f64(scale))
        return [t if factor is None else kb.mul(t, factor, f64) for t in out]

    def chunk_sum(ivs, first: Index, count: int):
        sums = None
        for j in range(count):
            contrib = terms(ivs, kb.iadd(first, j))
            sums = contrib if sums is None else [kb.add(s, t, f64) for s, t in zip(sums, contrib)]
        return sums

    def accumulate(ivs, sums):
        for p, s in zip(parts, sums):
            acc = kb.load(kb.outputs[0], [*ivs, p])
            kb.store(kb.add(acc, kb.convert(s, f64, et), et), kb.outputs[0], [*ivs, p])

    with kb.loops([f"d{i}" for i in range(rank - 1)], os_[:-1]) as ivs:
        full, tail = divmod(used, DFT_CHUNK)
        if full == 0:  # one rounding per output element
            for p, s in zip(parts, chunk_sum(ivs, 0, tail)):
                kb.store(kb.convert(s, f64, et), kb.outputs[0], [*ivs, p])
        else:
            for p in parts:
                kb.store(kb.const(0.0, et), kb.outputs[0], [*ivs, p])
            with kb.loop("n", full) as chunk:
                accumulate(ivs, chunk_sum(ivs, kb.imul(chunk, DFT_CHUNK), DFT_CHUNK))
            if tail:
                accumulate(ivs, chunk_sum(ivs, full * DFT_CHUNK, tail))
    return kb.finish()


# ---------------------------------------------------------------------------
# col2im
# ---------------------------------------------------------------------------


def _flat(kb: KernelBuilder, ivs, extents) -> Index:
    flat: Index = 0
    for iv, e in zip(ivs, extents):
        flat = kb.iadd(kb.imul(flat, e), iv)
    return flat


@kernel("graph.col2im")
def lower_col2im(op: GraphOp, name: str) -> func.FuncOp:
    x_t, out_t = op.operands[0].type, op.results[0].type
    et = out_t.element_type
    a = op.attrs
    image, block = a.image_shape, a.block_shape
    r = len(image)
    strides, dilations = or_default(a.strides, [1] * r), or_default(a.dilations, [1] * r)
    pads = or_default(a.pads, [0] * (2 * r))
    blocks = col2im_blocks(image, block, strides, dilations, pads)
    os_ = out_t.get_shape()
    kb = KernelBuilder(name, [x_t], [out_t], op.name, ["x", "out"])
    with kb.loops([f"z{i}" for i in range(len(os_))], os_) as ivs:
        kb.store(kb.const(0, et), kb.outputs[0], ivs)
    names = ["n", "c"] + [f"b{i}" for i in range(r)] + [f"l{i}" for i in range(r)]
    with kb.loops(names, [os_[0], os_[1], *block, *blocks]) as ivs:
        n, c, bs, ls = ivs[0], ivs[1], ivs[2:2 + r], ivs[2 + r:]
        pos, conds = [], []
        for i in range(r):
            p = kb.iadd(kb.iadd(kb.imul(ls[i], strides[i]), kb.imul(bs[i], dilations[i])), -pads[i])
            top = (blocks[i] - 1) * strides[i] + (block[i] - 1) * dilations[i] - pads[i]
            conds += kb.in_range(p, 0, image[i], -pads[i], top)
            pos.append(p)
        channel = kb.iadd(kb.imul(c, math.prod(block)), _flat(kb, bs, block))
        column = _flat(kb, ls, blocks)
        inside = kb.all_of(conds)

        def accumulate():
            value = kb.load(kb.inputs[0], [n, channel, column])
            acc = kb.load(kb.outputs[0], [n, c, *pos])
            kb.store(kb.add(acc, value, et), kb.outputs[0], [n, c, *pos])

        if inside is None:
            accumulate()
        else:
            with kb.if_(inside):
                accumulate()
    return kb.finish()


# ---------------------------------------------------------------------------
# roi_align
# ---------------------------------------------------------------------------


def _to_float(kb: KernelBuilder, i: Index, et: Attribute) -> SSAValue:
    return kb.const(float(i), et) if isinstance(i, int) else kb.index_to(i, et)


@kernel("graph.roi_align")
def lower_roi_align(op: GraphOp, name: str) -> func.FuncOp:
    x_t, rois_t, ids_t = (o.type for o in op.operands)
    out_t = op.results[0].type
    et, rt, it = out_t.element_type, rois_t.element_type, ids_t.element_type
    a = op.attrs
    oh, ow = a.output_height, a.output_width
    ratio, max_samples = a.sampling_ratio, a.max_samples
    scale = a.spatial_scale
    half_pixel = a.coordinate_transformation_mode == "half_pixel"
    is_max = a.mode == "max"
    n_img, channels, height, width = x_t.get_shape()
    kb = KernelBuilder(name, [x_t, rois_t, ids_t], [out_t], op.name, ["x", "rois", "ids", "out"])
    with kb.loops(["r", "c", "ph", "pw"], [out_t.get_shape()[0], channels, oh, ow]) as (r, c, ph, pw):
        out_idx = [r, c, ph, pw]
        img = kb.to_index(kb.load(kb.inputs[2], [r]), it)
        img = kb.clamp_extent(img, n_img)
        offset = kb.const(0.5 if half_pixel else 0.0, rt)

        def corner(k):
            v = kb.load(kb.inputs[1], [r, k])
            return kb.sub(kb.mul(v, kb.const(scale, rt), rt), offset, rt)

        x1, y1, x2, y2 = (corner(k) for k in range(4))
        axes = []
        for start, end, bins, iv in ((y1, y2, oh, ph), (x1, x2, ow, pw)):
            size = kb.sub(end, start, rt)
            if not half_pixel:
                size = kb.max(size, kb.const(1.0, rt), rt)
            bin_size = kb.div(size, kb.const(float(bins), rt), rt)
            if ratio > 0:
                grid, grid_f = ratio, kb.const(float(ratio), rt)
            else:
                # ceil(bin size) samples, in [0, max_samples]
                need = kb.emit(xmath.CeilOp(kb.convert(bin_size, rt, f64)))
                need = kb.min(kb.max(need, kb.f64(0.0), f64), kb.f64(float(max_samples)), f64)
                grid = _f64_to_index(kb, need)
                grid_f = kb.convert(need, f64, rt)
            base = kb.add(start, kb.mul(_to_float(kb, iv, rt), bin_size, rt), rt)
            axes.append((base, kb.div(bin_size, kb.max(grid_f, kb.const(1.0, rt), rt), rt), grid))
        (y_base, y_step, gh), (x_base, x_step, gw) = axes
        count = kb.imul(gh, gw)
        kb.store(kb.const(-math.inf if is_max else 0.0, et), kb.outputs[0], out_idx)
        bound = ratio if ratio > 0 else max_samples
        with kb.loops(["iy", "ix"], [bound, bound]) as (iy, ix):
            def sample():
                coords = []
                outside = []
                for base, step, s, extent in ((y_base, y_step, iy, height), (x_base, x_step, ix, width)):
                    half = kb.add(_to_float(kb, s, rt), kb.const(0.5, rt), rt)
                    p = kb.add(base, kb.mul(half, step, rt), rt)
                    outside.append(kb.cmp("lt", p, kb.const(-1.0, rt), rt))
                    outside.append(kb.cmp("gt", p, kb.const(float(extent), rt), rt))
                    p = kb.max(p, kb.const(0.0, rt), rt)
                    low = kb.to_index(kb.convert(kb.min(p, kb.const(float(extent), rt), rt), rt, i64), i64)
                    at_end = kb.icmp("sge", low, extent - 1)
                    low = kb.iselect(at_end, extent - 1, low)
                    high = kb.iselect(at_end, extent - 1, kb.iadd(low, 1))
                    p = kb.select(at_end, kb.const(float(extent - 1), rt), p)
                    frac = kb.sub(p, kb.index_to(low, rt), rt)
                    coords.append((low, high, kb.sub(kb.const(1.0, rt), frac, rt), frac))
                skip = outside[0]
                for o in outside[1:]:
                    skip = _or(kb, skip, o)
                (yl, yh, wyl, wyh), (xl, xh, wxl, wxh) = coords
                zero = kb.const(0.0, rt)
                value = None
                for yi, wy in ((yl, wyl), (yh, wyh)):
                    for xi, wx in ((xl, wxl), (xh, wxh)):
                        w = kb.select(skip, zero, kb.mul(wy, wx, rt))
                        v = kb.mul(kb.convert(w, rt, et), kb.load(kb.inputs[0], [img, c, yi, xi]), et)
                        if value is None:
                            value = v
                        else:
                            value = kb.max(value, v, et) if is_max else kb.add(value, v, et)
                acc = kb.load(kb.outputs[0], out_idx)
                kb.store(kb.max(acc, value, et) if is_max else kb.add(acc, value, et), kb.outputs[0], out_idx)

            if ratio > 0:
                sample()
            else:
                with kb.if_(kb.all_of([kb.icmp("slt", iy, gh), kb.icmp("slt", ix, gw)])):
                    sample()
        acc = kb.load(kb.outputs[0], out_idx)
        if is_max:
            if ratio == 0:  # no samples at all: 0, as the reference
                acc = kb.select(kb.icmp("eq", count, 0), kb.const(0.0, et), acc)
        else:
            divisor = _to_float(kb, kb.imax(count, 1), et)
            acc = kb.div(acc, divisor, et)
        kb.store(kb.epilogue_value(acc, out_idx), kb.outputs[0], out_idx)
    return kb.finish()


# ---------------------------------------------------------------------------
# deform_conv2d
# ---------------------------------------------------------------------------


@kernel("graph.deform_conv2d")
def lower_deform_conv2d(op: GraphOp, name: str) -> func.FuncOp:
    types = [o.type for o in op.operands]
    x_t, w_t, off_t = types[:3]
    mask_t, bias_t = deform_conv_extras(types)
    out_t = op.results[0].type
    et = out_t.element_type
    (sh, sw), (dh, dw), (pt, pl, _, _) = deform_conv_window(op.attrs)
    groups, ogroups = op.groups, op.offset_groups
    n_, c_, h, wd = x_t.get_shape()
    oc, cpg, kh, kw = w_t.get_shape()
    _, _, oh, ow = out_t.get_shape()
    names = ["x", "w", "offset"] + (["mask"] if mask_t else []) + (["bias"] if bias_t else []) + ["out"]
    kb = KernelBuilder(name, types, [out_t], op.name, names)
    x, w, off = kb.inputs[:3]
    mask = kb.inputs[3] if mask_t else None
    bias = kb.inputs[-1] if bias_t else None
    per_offset_group = c_ // ogroups
    with kb.loops(["n", "oc", "oh", "ow"], [n_, oc, oh, ow]) as (n, o, y, xo):
        out_idx = [n, o, y, xo]
        kb.store(kb.load(bias, [o]) if bias else kb.const(0.0, et), kb.outputs[0], out_idx)
        first_channel = kb.imul(kb.idiv(o, oc // groups), cpg)
        with kb.loops(["ic", "kh", "kw"], [cpg, kh, kw]) as (ic, i, j):
            c = kb.iadd(first_channel, ic)
            tap = kb.iadd(kb.imul(kb.iadd(kb.imul(kb.idiv(c, per_offset_group), kh), i), kw), j)
            coords = []
            for t, (pos, stride, dil, pad, extent, k) in enumerate(
                    ((y, sh, dh, pt, h, i), (xo, sw, dw, pl, wd, j))):
                base = kb.iadd(kb.iadd(kb.imul(pos, stride), kb.imul(k, dil)), -pad)
                delta = kb.convert(kb.load(off, [n, kb.iadd(kb.imul(tap, 2), t), y, xo]), et, f64)
                p = kb.add(kb.index_to(base, f64), delta, f64)
                # far outside, every tap is zero: the clamp keeps the conversion defined
                p = kb.min(kb.max(p, kb.f64(-8.0), f64), kb.f64(extent + 8.0), f64)
                low_f = kb.emit(xmath.FloorOp(p))
                frac = kb.sub(p, low_f, f64)
                low = _f64_to_index(kb, low_f)
                taps = []
                for step, weight in ((0, kb.sub(kb.f64(1.0), frac, f64)), (1, frac)):
                    idx, ok = kb.clamp_index(kb.iadd(low, step), 0, extent, -16, extent + 16)
                    taps.append((idx, weight, ok))
                coords.append(taps)
            total = None
            for (yi, wy, oky), (xi, wx, okx) in itertools.product(*coords):
                value = kb.convert(kb.load(x, [n, c, yi, xi]), et, f64)
                inside = kb.all_of([ok for ok in (oky, okx) if ok is not None])
                if inside is not None:
                    value = kb.select(inside, value, kb.f64(0.0))
                term = kb.mul(value, kb.mul(wy, wx, f64), f64)
                total = term if total is None else kb.add(total, term, f64)
            if mask is not None:
                total = kb.mul(total, kb.convert(kb.load(mask, [n, tap, y, xo]), et, f64), f64)
            total = kb.mul(total, kb.convert(kb.load(w, [o, ic, i, j]), et, f64), f64)
            acc = kb.load(kb.outputs[0], out_idx)
            kb.store(kb.add(acc, kb.convert(total, f64, et), et), kb.outputs[0], out_idx)
    return kb.finish()
