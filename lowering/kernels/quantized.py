"""Kernels of the quantized graph ops (dialects/graph/quantized.py): straightforward
loop nests, integer arithmetic throughout.

qconv2d / qdense / qmatmul / requantize / qadd / qmul / qconcat / qavg_pool2d use no
float: operands are widened to i32, their zero points subtracted, products
accumulated in i32 (a one-element ``memref.alloca`` inside the output loops, private
to each iteration, so the generic schedule may run the outer loops in parallel), and
the accumulator is rescaled with TFLite's fixed point (``lowering/kernels/requant.py``,
the twin of ``dialects/graph/requant.py``: results equal the ops' numpy references
exactly). Per-channel multipliers, shifts and zero points are kernel-entry tables.
graph.quantize and graph.dequantize compute in f32 as ONNX does (``x / scale`` rounded
half to even; ``(x - zp) * scale``); quantize saturates as a saturating conversion to
i32 and an i32 clamp would (NaN -> 0), in vectorizable selects (``_saturate_to_int``).

These kernels carry no ``tloop.form``: they get the generic schedule (the outer loop
parallel, the inner one vectorized). What keeps the elementwise ones fast there:
qadd/qmul of unbroadcast operands and quantize/dequantize/requantize (per tensor, or per
channel on axis 0 or 1) loop over ``[N*C, H*W]`` views (an 8-bit NCHW row of
56 is one 32-lane vector plus a 24-element scalar tail; a 3136-element row has no tail),
and qadd is two i64 products and one rounding shift per element (``QAddOp``'s arithmetic).
(A 256-entry table per input was tried: LLVM will not emit gathers for this host, and
the scalar table loop was no faster.)
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod

from xdsl.dialects import arith, func, math, memref
from xdsl.dialects.builtin import f32, i32, i64
from xdsl.ir import SSAValue

from dlc.dialects.graph import _window_attrs
from dlc.dialects.graph import requant as nrequant
from dlc.dialects.graph.quantized import qadd_params, quant_range
from dlc.dialects.graph_base import GraphOp, normalize_axis
from dlc.lowering.kernels import kernel
from dlc.lowering.kernels import requant as rq
from dlc.lowering.kernels.builder import INDEX, Index, KernelBuilder
from dlc.lowering.kernels.pool import _counts, static_table
from dlc.lowering.kernels.quantized_fast import fast_first

Param = SSAValue | int | float  # a per-tensor constant, or a per-channel table (memref)


def _param(kb: KernelBuilder, values: Sequence, et=i32):
    """One value (a Python number) or a per-channel table buffer."""
    vals = [float(v) if et == f32 else int(v) for v in values]
    if len(set(vals)) == 1:
        return vals[0]
    return rq.table(kb, vals, et)


def _at(kb: KernelBuilder, p, index: Index, et=i32) -> SSAValue:
    if isinstance(p, (int, float)):
        return kb.const(p, et)
    return kb.load(p, [index])


def _multipliers(kb: KernelBuilder, reals) -> tuple:
    m, s = nrequant.quantize_multipliers(reals)
    return _param(kb, m), _param(kb, s)


def _requantizer(kb: KernelBuilder, op: GraphOp, zero_point: int, lo: int, hi: int):
    """``(acc, channel) -> i32`` result of an accumulating op (qconv2d, qdense, qmatmul)
    by its ``requant`` rounding; per-channel parameters in tables made here, before the
    loops."""
    if op.requant == "float":
        scales = op.float_scales()
        single = float(scales[0]) if len(set(scales.tolist())) == 1 else None
        tbl = None if single is not None else rq.table(kb, [float(v) for v in scales], f32)

        def float_rounding(acc, channel):
            scale = single if tbl is None else kb.load(tbl, [channel])
            return rq.requantize_float(kb, acc, scale, zero_point, lo, hi)
        return float_rounding
    m, s = _multipliers(kb, op.multipliers())
    return lambda acc, channel: rq.requantize(kb, acc, _pick(kb, m, channel), _pick(kb, s, channel),
                                              zero_point, lo, hi)


def _accumulator(kb: KernelBuilder, init: SSAValue) -> SSAValue:
    acc = kb.emit(memref.AllocaOp.get(i32, shape=[1]))
    acc.name_hint = "acc"
    kb.store(init, acc, [0])
    return acc


def _accumulate(kb: KernelBuilder, acc: SSAValue, term: SSAValue) -> None:
    kb.store(kb.emit(arith.AddiOp(kb.load(acc, [0]), term)), acc, [0])


def _minus(kb: KernelBuilder, value: SSAValue, et, zero_point: SSAValue | int) -> SSAValue:
    wide = rq.widen(kb, value, et)
    if isinstance(zero_point, int) and zero_point == 0:
        return wide
    zp = kb.const(zero_point, i32) if isinstance(zero_point, int) else zero_point
    return kb.emit(arith.SubiOp(wide, zp))


def _broadcast_index(ivs: Sequence[Index], shape: Sequence[int]) -> list[Index]:
    """The operand index of output index ``ivs`` under numpy broadcasting."""
    lead = len(ivs) - len(shape)
    return [0 if d == 1 else ivs[lead + j] for j, d in enumerate(shape)]


def _names(rank: int) -> list[str]:
    return [f"d{i}" for i in range(rank)]


# ---------------------------------------------------------------------------
# quantize, dequantize, requantize
# ---------------------------------------------------------------------------


def _axis(op: GraphOp, rank: int, count: int) -> int | None:
    return normalize_axis(op.axis, rank) if count > 1 and rank else None


PER_TENSOR_ROW = (256, 4096)  # row lengths of the per-tensor view: a multiple of 64 bytes


def _per_tensor_row(total: int) -> int | None:
    """The longest multiple of 16 in PER_TENSOR_ROW dividing ``total`` that leaves at
    least 8 rows, or None (small or awkward sizes keep the ``[N*C, H*W]`` view)."""
    lo, hi = PER_TENSOR_ROW
    return next((d for d in range(hi, lo - 1, -16) if total % d == 0 and total // d >= 8), None)


def _rows(kb: KernelBuilder, shape: list[int], axis: int | None):
    """(loop extents, [input view, output view], channel of the loop index): an
    elementwise kernel over ``[N*C, rest]`` row-major views when the per-channel axis (if
    any) is 0 or 1, so the vectorized inner loop is long (7, 14 or 28 elements of an NCHW
    row are mostly the vector loop's scalar tail); else the shape itself."""
    buffers = [kb.inputs[0], kb.outputs[0]]
    if axis is None and (inner := _per_tensor_row(prod(shape))) is not None:
        # one parameter for every element: rows of a fixed length, so the parallel
        # outer loop has many rows (an image's 3 channels would split 2:1 on 2 threads)
        flat = [prod(shape) // inner, inner]
        return flat, [kb.row_major_view(b, flat) for b in buffers], lambda ivs: 0
    if len(shape) < 3 or (axis is not None and axis > 1):
        return shape, buffers, (lambda ivs: ivs[axis] if axis is not None else 0)
    c = shape[1]
    flat = [shape[0] * c, prod(shape) // (shape[0] * c)]
    views = [kb.row_major_view(b, flat) for b in buffers]
    if axis is None:
        return flat, views, lambda ivs: 0
    return flat, views, (lambda ivs: kb.irem(ivs[0], c)) if axis == 1 else (lambda ivs: kb.idiv(ivs[0], c))


@kernel("graph.quantize")
def lower_quantize(op: GraphOp, name: str) -> func.FuncOp:
    x_t, out_t = op.operands[0].type, op.results[0].type
    shape = list(x_t.get_shape())
    kb = KernelBuilder(name, [x_t], [out_t], op.name, ["x", "out"])
    n = max(len(op.scale), len(op.zero_point))
    axis = _axis(op, len(shape), n)
    scale = _param(kb, list(op.scale) * (n // len(op.scale)), f32)
    zp = _param(kb, [float(z) for z in op.zero_point] * (n // len(op.zero_point)), f32)
    lo, hi = quant_range(out_t.element_type)
    extents, (x, out), channel_of = _rows(kb, shape, axis)
    with kb.loops(_names(len(extents)), extents) as ivs:
        channel = channel_of(ivs)
        y = kb.emit(arith.DivfOp(kb.load(x, ivs), _at(kb, scale, channel, f32)))
        rounded = kb.emit(math.RoundEvenOp(y) if op.rounding == "half_even" else math.RoundOp(y))
        y = kb.emit(arith.AddfOp(rounded, _at(kb, zp, channel, f32)))
        kb.store(rq.narrow(kb, _saturate_to_int(kb, y, lo, hi)), out, ivs)
    return kb.finish()


def _saturate_to_int(kb: KernelBuilder, y: SSAValue, lo: int, hi: int) -> SSAValue:
    """The integer-valued f32 ``y`` saturated to the 8-bit range ``[lo, hi]`` as i32,
    NaN -> 0 (what the saturating ``fptosi`` then an i32 clamp give): a select for NaN,
    then ``requant.round_clamped``."""
    e = kb.emit
    y = e(arith.SelectOp(e(arith.CmpfOp(y, y, "uno")), kb.const(0.0, f32), y))  # NaN -> 0
    return rq.round_clamped(kb, y, lo, hi)


@kernel("graph.dequantize")
def lower_dequantize(op: GraphOp, name: str) -> func.FuncOp:
    x_t, out_t = op.operands[0].type, op.results[0].type
    et = x_t.element_type
    shape = list(x_t.get_shape())
    kb = KernelBuilder(name, [x_t], [out_t], op.name, ["x", "out"])
    n = max(len(op.scale), len(op.zero_point))
    axis = _axis(op, len(shape), n)
    scale = _param(kb, list(op.scale) * (n // len(op.scale)), f32)
    zp = _param(kb, [float(z) for z in op.zero_point] * (n // len(op.zero_point)), f32)
    extents, (x, out), channel_of = _rows(kb, shape, axis)
    with kb.loops(_names(len(extents)), extents) as ivs:
        channel = channel_of(ivs)
        xf = kb.convert(kb.load(x, ivs), et, f32)
        y = kb.emit(arith.MulfOp(kb.emit(arith.SubfOp(xf, _at(kb, zp, channel, f32))), _at(kb, scale, channel, f32)))
        kb.store(y, out, ivs)
    return kb.finish()


@kernel("graph.requantize")
def lower_requantize(op: GraphOp, name: str) -> func.FuncOp:
    x_t, out_t = op.operands[0].type, op.results[0].type
    et = x_t.element_type
    shape = list(x_t.get_shape())
    kb = KernelBuilder(name, [x_t], [out_t], op.name, ["x", "out"])
    real = op.multipliers()
    n = max(real.size, len(op.x_zero_point), len(op.y_zero_point))
    axis = _axis(op, len(shape), n)
    m, s = _multipliers(kb, list(real) * (n // real.size))
    xzp = _param(kb, list(op.x_zero_point) * (n // len(op.x_zero_point)))
    yzp = _param(kb, list(op.y_zero_point) * (n // len(op.y_zero_point)))
    lo, hi = op.out_range()
    extents, (x, out), channel_of = _rows(kb, shape, axis)
    with kb.loops(_names(len(extents)), extents) as ivs:
        c = channel_of(ivs)
        acc = _minus(kb, kb.load(x, ivs), et, xzp if isinstance(xzp, int) else _at(kb, xzp, c))
        y = rq.requantize(kb, acc, _pick(kb, m, c), _pick(kb, s, c), _pick(kb, yzp, c), lo, hi)
        kb.store(rq.narrow(kb, y), out, ivs)
    return kb.finish()


def _pick(kb: KernelBuilder, p, index: Index):
    """A per-tensor parameter as a Python int (folded by the emitter), else a table load."""
    return p if isinstance(p, int) else kb.load(p, [index])


# ---------------------------------------------------------------------------
# qconv2d, qdense, qmatmul
# ---------------------------------------------------------------------------


@kernel("graph.qconv2d", options=True)
@fast_first  # the qgemm kernel (quantized_fast.py) on the CPU forms where it applies
def lower_qconv2d(op: GraphOp, name: str) -> func.FuncOp:
    x_t, w_t = op.operands[0].type, op.operands[1].type
    has_bias = len(op.operands) == 3
    out_t = op.results[0].type
    xe, we = x_t.element_type, w_t.element_type
    n, c, h, w = x_t.get_shape()
    o, cpg, kh, kw = w_t.get_shape()
    _, _, oh, ow = out_t.get_shape()
    opg = o // op.groups
    (sh, sw), (dh, dw), (pt, pl, _, _) = _window_attrs(op.attrs)
    inputs = [x_t, w_t] + ([op.operands[2].type] if has_bias else [])
    kb = KernelBuilder(name, inputs, [out_t], op.name, ["x", "w"] + (["bias"] if has_bias else []) + ["out"])
    wzp = _param(kb, op.w_zero_point)
    xzp, yzp = op.x_zero_point[0], op.y_zero_point[0]
    lo, hi = op.out_range()
    requantize = _requantizer(kb, op, yzp, lo, hi)
    with kb.loops(["n", "o", "oh", "ow"], [n, o, oh, ow]) as (iv_n, iv_o, iv_oh, iv_ow):
        init = kb.load(kb.inputs[2], [iv_o]) if has_bias else kb.const(0, i32)
        acc = _accumulator(kb, init)
        base = kb.imul(kb.idiv(iv_o, opg), cpg) if op.groups > 1 else 0
        w_zero = _pick(kb, wzp, iv_o)
        with kb.loops(["ic", "kh", "kw"], [cpg, kh, kw]) as (iv_ic, iv_kh, iv_kw):
            ih, iw, inside = kb.window_tap((iv_oh, iv_ow), (iv_kh, iv_kw), strides=(sh, sw), dilations=(dh, dw),
                                           pads=(pt, pl), in_hw=(h, w), out_hw=(oh, ow), kernel=(kh, kw))
            # a padded tap reads x's zero point: it contributes 0
            xv = kb.load_or(kb.inputs[0], [iv_n, kb.iadd(base, iv_ic), ih, iw], inside, kb.const(xzp, xe))
            wv = kb.load(kb.inputs[1], [iv_o, iv_ic, iv_kh, iv_kw])
            _accumulate(kb, acc, kb.emit(arith.MuliOp(_minus(kb, xv, xe, xzp), _minus(kb, wv, we, w_zero))))
        y = requantize(kb.load(acc, [0]), iv_o)
        kb.store(rq.narrow(kb, y), kb.outputs[0], [iv_n, iv_o, iv_oh, iv_ow])
    return kb.finish()


@kernel("graph.qdense", options=True)
@fast_first  # the qgemm kernel (quantized_fast.py) on the CPU forms where it applies
def lower_qdense(op: GraphOp, name: str) -> func.FuncOp:
    x_t, w_t = op.operands[0].type, op.operands[1].type
    has_bias = len(op.operands) == 3
    out_t = op.results[0].type
    xe, we = x_t.element_type, w_t.element_type
    lead = list(x_t.get_shape())[:-1]
    nn, k = w_t.get_shape()
    inputs = [x_t, w_t] + ([op.operands[2].type] if has_bias else [])
    kb = KernelBuilder(name, inputs, [out_t], op.name, ["x", "w"] + (["bias"] if has_bias else []) + ["out"])
    wzp = _param(kb, op.w_zero_point)
    xzp, yzp = op.x_zero_point[0], op.y_zero_point[0]
    lo, hi = op.out_range()
    requantize = _requantizer(kb, op, yzp, lo, hi)
    with kb.loops(_names(len(lead)) + ["j"], lead + [nn]) as ivs:
        *lead_ivs, iv_j = ivs
        acc = _accumulator(kb, kb.load(kb.inputs[2], [iv_j]) if has_bias else kb.const(0, i32))
        w_zero = _pick(kb, wzp, iv_j)
        with kb.loop("k", k) as iv_k:
            xv = kb.load(kb.inputs[0], [*lead_ivs, iv_k])
            wv = kb.load(kb.inputs[1], [iv_j, iv_k])
            _accumulate(kb, acc, kb.emit(arith.MuliOp(_minus(kb, xv, xe, xzp), _minus(kb, wv, we, w_zero))))
        y = requantize(kb.load(acc, [0]), iv_j)
        kb.store(rq.narrow(kb, y), kb.outputs[0], ivs)
    return kb.finish()


@kernel("graph.qmatmul", options=True)
@fast_first  # the qgemm kernel (quantized_fast.py) on the CPU forms where it applies
def lower_qmatmul(op: GraphOp, name: str) -> func.FuncOp:
    a_t, b_t = op.operands[0].type, op.operands[1].type
    out_t = op.results[0].type
    ae, be = a_t.element_type, b_t.element_type
    a_s, b_s, o_s = list(a_t.get_shape()), list(b_t.get_shape()), list(out_t.get_shape())
    k = a_s[-1]
    kb = KernelBuilder(name, [a_t, b_t], [out_t], op.name, ["a", "b", "out"])
    azp, bzp, yzp = op.a_zero_point[0], op.b_zero_point[0], op.y_zero_point[0]
    lo, hi = op.out_range()
    requantize = _requantizer(kb, op, yzp, lo, hi)
    with kb.loops(_names(len(o_s) - 2) + ["i", "j"], o_s) as ivs:
        *batch, iv_i, iv_j = ivs
        acc = _accumulator(kb, kb.const(0, i32))
        with kb.loop("k", k) as iv_k:
            av = kb.load(kb.inputs[0], _broadcast_index(batch, a_s[:-2]) + [iv_i, iv_k])
            bv = kb.load(kb.inputs[1], _broadcast_index(batch, b_s[:-2]) + [iv_k, iv_j])
            _accumulate(kb, acc, kb.emit(arith.MuliOp(_minus(kb, av, ae, azp), _minus(kb, bv, be, bzp))))
        y = requantize(kb.load(acc, [0]), 0)
        kb.store(rq.narrow(kb, y), kb.outputs[0], ivs)
    return kb.finish()


# ---------------------------------------------------------------------------
# qadd, qmul, qconcat, qavg_pool2d
# ---------------------------------------------------------------------------


def _binary(op: GraphOp, name: str, combine) -> func.FuncOp:
    a_t, b_t = op.operands[0].type, op.operands[1].type
    out_t = op.results[0].type
    o_s = list(out_t.get_shape())
    kb = KernelBuilder(name, [a_t, b_t], [out_t], op.name, ["a", "b", "out"])
    lo, hi = op.out_range()
    a, b, out = kb.inputs[0], kb.inputs[1], kb.outputs[0]
    a_s, b_s = list(a_t.get_shape()), list(b_t.get_shape())
    if a_s == b_s == o_s and len(o_s) >= 3:
        # no broadcasting: [N*C, H*W] row-major views, so the vectorized inner loop is long
        # (an NCHW row of 56 bytes is one 32-lane vector and a 24-element scalar tail)
        rows = o_s[0] * o_s[1]
        o_s = a_s = b_s = [rows, prod(o_s) // rows]
        a, b, out = (kb.row_major_view(v, o_s) for v in (a, b, out))
    with kb.loops(_names(len(o_s)), o_s) as ivs:
        av = _minus(kb, kb.load(a, _broadcast_index(ivs, a_s)), a_t.element_type, op.a_zero_point[0])
        bv = _minus(kb, kb.load(b, _broadcast_index(ivs, b_s)), b_t.element_type, op.b_zero_point[0])
        y = rq.clamp(kb, kb.emit(arith.AddiOp(combine(kb, av, bv), kb.const(op.y_zero_point[0], i32))), lo, hi)
        kb.store(rq.narrow(kb, y), out, ivs)
    return kb.finish()


@kernel("graph.qadd")
def lower_qadd(op: GraphOp, name: str) -> func.FuncOp:
    ma, mb, total = qadd_params(op.a_scale[0], op.b_scale[0], op.y_scale[0])

    def combine(kb, av, bv):
        # one rounding: (av * ma + bv * mb + 2**(total-1)) >> total in i64, saturated
        wide = kb.emit(arith.AddiOp(kb.emit(arith.MuliOp(kb.emit(arith.ExtSIOp(av, i64)), kb.const(ma, i64))),
                                    kb.emit(arith.MuliOp(kb.emit(arith.ExtSIOp(bv, i64)), kb.const(mb, i64)))))
        y = kb.emit(arith.ShRSIOp(kb.emit(arith.AddiOp(wide, kb.const(1 << (total - 1), i64))), kb.const(total, i64)))
        y = kb.emit(arith.MinSIOp(kb.emit(arith.MaxSIOp(y, kb.const(-(1 << 31), i64))), kb.const((1 << 31) - 1, i64)))
        return kb.emit(arith.TruncIOp(y, i32))

    return _binary(op, name, combine)


@kernel("graph.qmul")
def lower_qmul(op: GraphOp, name: str) -> func.FuncOp:
    (m,), (s,) = nrequant.quantize_multipliers(op.multipliers())
    m, s = int(m), int(s)
    return _binary(op, name, lambda kb, av, bv: rq.mbqm(kb, kb.emit(arith.MuliOp(av, bv)), m, s))


@kernel("graph.qconcat")
def lower_qconcat(op: GraphOp, name: str) -> func.FuncOp:
    types = [v.type for v in op.operands]
    out_t = op.results[0].type
    axis = normalize_axis(op.axis, out_t.get_num_dims())
    kb = KernelBuilder(name, types, [out_t], op.name, [f"in{i}" for i in range(len(types))] + ["out"])
    lo, hi = op.out_range()
    yzp, ys = op.y_zero_point[0], op.y_scale[0]
    offset = 0
    for i, t in enumerate(types):
        shape = list(t.get_shape())
        sc, zp = op.in_scale[i], op.in_zero_point[i]
        [m], [s] = nrequant.quantize_multipliers([float(sc) / float(ys)])
        with kb.loops([f"p{i}d{j}" for j in range(len(shape))], shape) as ivs:
            v = kb.load(kb.inputs[i], ivs)
            out_idx = list(ivs)
            out_idx[axis] = kb.iadd(ivs[axis], offset)
            if sc == ys and zp == yzp and (lo, hi) == quant_range(t.element_type) and t.element_type == out_t.element_type:
                kb.store(v, kb.outputs[0], out_idx)  # same parameters: a copy
            else:
                y = rq.requantize(kb, _minus(kb, v, t.element_type, zp), int(m), int(s), yzp, lo, hi)
                kb.store(rq.narrow(kb, y), kb.outputs[0], out_idx)
        offset += shape[axis]
    return kb.finish()


@kernel("graph.qavg_pool2d")
def lower_qavg_pool2d(op: GraphOp, name: str) -> func.FuncOp:
    x_t, out_t = op.operands[0].type, op.results[0].type
    xe = x_t.element_type
    a = op.attrs
    kh, kw = a.kernel
    (sh, sw), (dh, dw), (pt, pl, pb, pr) = _window_attrs(a)
    n, c, h, w = x_t.get_shape()
    _, _, oh, ow = out_t.get_shape()
    kb = KernelBuilder(name, [x_t], [out_t], op.name, ["x", "out"])
    same_scale = op.x_scale[0] == op.y_scale[0]
    if not same_scale:  # per window count (1 .. kh*kw): x_scale / (y_scale * count)
        ms, ss = op.count_multipliers()
        m_table, s_table = rq.table(kb, [int(v) for v in ms]), rq.table(kb, [int(v) for v in ss])
    xzp, yzp = op.x_zero_point[0], op.y_zero_point[0]
    lo, hi = op.out_range()
    include = a.count_include_pad
    rows = [max(v, 1) for v in _counts(oh, kh, sh, dh, pt, -pt if include else 0, h + pb if include else h)]
    cols = [max(v, 1) for v in _counts(ow, kw, sw, dw, pl, -pl if include else 0, w + pr if include else w)]
    with kb.loops(["n", "c", "oh", "ow"], [n, c, oh, ow]) as (iv_n, iv_c, iv_oh, iv_ow):
        acc = _accumulator(kb, kb.const(0, i32))
        with kb.loops(["kh", "kw"], [kh, kw]) as (iv_kh, iv_kw):
            ih, iw, inside = kb.window_tap((iv_oh, iv_ow), (iv_kh, iv_kw), strides=(sh, sw), dilations=(dh, dw),
                                           pads=(pt, pl), in_hw=(h, w), out_hw=(oh, ow), kernel=(kh, kw))
            xv = kb.load_or(kb.inputs[0], [iv_n, iv_c, ih, iw], inside, kb.const(xzp, xe))
            _accumulate(kb, acc, _minus(kb, xv, xe, xzp))
        count = kb.emit(arith.MuliOp(static_table(kb, iv_oh, rows, i32), static_table(kb, iv_ow, cols, i32)))
        total = kb.load(acc, [0])
        if same_scale:
            y = rq.clamp(kb, kb.emit(arith.AddiOp(_round_half_away_div(kb, total, count), kb.const(yzp, i32))), lo, hi)
        else:
            index = kb.emit(arith.IndexCastOp(count, INDEX))
            y = rq.requantize(kb, total, kb.load(m_table, [index]), kb.load(s_table, [index]), yzp, lo, hi)
        kb.store(rq.narrow(kb, y), kb.outputs[0], [iv_n, iv_c, iv_oh, iv_ow])
    return kb.finish()


def _round_half_away_div(kb: KernelBuilder, total: SSAValue, count: SSAValue) -> SSAValue:
    """``total / count`` (count > 0) rounded half away from zero (TFLite's average pool)."""
    half = kb.emit(arith.DivSIOp(count, kb.const(2, i32)))
    nonneg = kb.emit(arith.CmpiOp(total, kb.const(0, i32), "sge"))
    num = kb.select(nonneg, kb.emit(arith.AddiOp(total, half)), kb.emit(arith.SubiOp(total, half)))
    return kb.emit(arith.DivSIOp(num, count))  # C division truncates toward zero
