"""The int8 convolution of the channel-blocked layout (form ``qconv2d_nchwc``):
graph.qconv2d_nchwc, a direct convolution (no im2col) on u8 NCHW{ib}c activations with
the requantization fused into the register tile's write-back, u8 NCHW16c out.

What the kernel computes (the schedule, ``lowering/schedule/defaults_quantized.py``,
addresses the loops by these names)::

    for n, ocbo, oh, owt:                         one register tile: T output pixels of one
                                                  row x B blocks of 16 output channels
      acc = alloca i32 [B][T][16]                 (private to the iteration: per thread)
      z_b, z_t, z_l:  acc = 0
      for icb, kh, kw, ic4:                       the reduction, 4 input channels at a time
        for tb, t:  for nl, j:                    acc[tb, t, nl] += zext(x[n, icb, ih, iw, 4 ic4 + j])
                                                      * sext(wp[B ocbo + tb, icb, kh, kw, ic4, nl, j])
      c_b, c_t, c_l:  accm = acc                  (acc: unrolled indices only, so registers)
      o_b, o_t, o_l:  out[n, B ocbo + o_b, oh, T owt + o_t, o_l] = clamp(zo + requant(accm + bias'))

with ``ih = oh*sh + kh*dh`` and ``iw = (T owt + t)*sw + kw*dw`` (the input is padded by
alter-op-layout with x's zero point: no bounds checks). The ``nl``/``j`` loop is the
form ``lowering/to_llvm/int8_dot.py`` turns into one ``vpdpbusd``: the 4 bytes of input
channels ``4 ic4 .. 4 ic4 + 3`` of one pixel broadcast, times a 64-byte vector of packed
s8 weights (16 output channels x those 4 input channels). A row whose width is not a
multiple of T gets a second nest (loops suffixed ``_u``) for its last pixels.

Compile-time constants (weights store): ``wp`` ``[OB, CB, KH, KW, ib/4, 16, 4]`` s8
(u8 weights shifted by -128 with their zero point; a weight zero point other than 0
after that shift is not this kernel's: :func:`plan` returns None), and per output
channel (padded to OB x 16) ``bias`` = ``-za * sum(w)`` (the u8 zero point's
compensation: ``sum (ua - za) w = sum ua w - za sum w``; a constant op bias is added in),
the requantization tables of ``requant.channel_tables`` (``mult`` and the shift tables of
TFLite's single-rounding fixed point, or an f32 ``scale`` for ``requant = "float"``, as the
op's reference: ``requant.requantize_channel``).
Padded output channels have zero weights, bias and multiplier: they hold the clamped
output zero point, as the op's reference says.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import f32, IntegerType, MemRefType, i32, i64

from dlc.dialects import tloop
from dlc.lowering.kernels import kernel
from dlc.lowering.kernels.builder import KernelBuilder
from dlc.lowering.kernels.forms import QCONV2D_NCHWC, stamp_weight_range
from dlc.lowering.kernels.quantized_fast import _c32, _constant, _wrap_i32
from dlc.lowering.kernels.requant import CHANNEL_KEYS, channel_tables, requantize_channel

LANES, GROUP = 16, 4
I8 = IntegerType(8)
MAX_ACCUMULATORS = 16  # AVX-512's register tile: 16 of the 32 zmm (the rest: weights, broadcasts)


@dataclass(frozen=True)
class QConvNCHWcPlan:
    """Sizes of one blocked int8 conv and its register tile (``cols`` pixels x ``blocks``
    output-channel blocks)."""

    n: int
    cb: int
    ib: int
    obn: int
    oh: int
    ow: int
    kh: int
    kw: int
    strides: tuple[int, int]
    dilations: tuple[int, int]
    cols: int
    blocks: int


def tile_pixels(ow: int, cap: int) -> int:
    """Pixels of a row's register tile, at most ``cap``: a divisor of the row in cap..4 (a
    cap of 4 or less: cap..cap-1) when there is one (no tail nest), else min(row, cap)."""
    cap = max(1, cap)
    lowest = 4 if cap > 4 else max(1, cap - 1)  # AVX2's 4: a row of 9 takes 3 x 3, no tail
    return next((t for t in range(cap, lowest - 1, -1) if ow % t == 0), min(ow, cap))


def register_tile(ow: int, obn: int, accumulators: int = MAX_ACCUMULATORS) -> tuple[int, int]:
    """(pixels T, output blocks B) of the tile of at most ``accumulators`` 16-lane
    accumulators (the target's: KernelOptions.int8_accumulators): T = :func:`tile_pixels`
    of the row, capped at 8 and the budget; B = 2 (4 for rows of at most 4 pixels) when it divides the output blocks and
    fits, so each broadcast feeds B dot products and each weight vector T."""
    cols = tile_pixels(ow, min(8, accumulators))
    for blocks in (4, 2, 1):
        if obn % blocks == 0 and cols * blocks <= accumulators and (blocks < 4 or cols <= 4):
            return cols, blocks
    return cols, 1


def pack_weights(w: np.ndarray, w_unsigned: bool, w_zero, cb: int, ib: int, block: int) -> np.ndarray | None:
    """``wp[OB, CB, KH, KW, ib/4, 16, 4]`` s8 from the OIHW integer weight, or None when
    the weight zero point (after the u8 shift) is not 0."""
    o, i, kh, kw = w.shape
    wi = w.astype(np.int64)
    zw = np.broadcast_to(np.asarray(w_zero, np.int64), (o,))
    if w_unsigned:
        wi, zw = wi - 128, zw - 128
    if np.any(zw != 0):
        return None
    obn = -(-o // block)
    full = np.zeros((obn * block, cb * ib, kh, kw), np.int64)
    full[:o, :i] = wi
    # [OB, 16, CB, ib/4, 4, KH, KW] -> [OB, CB, KH, KW, ib/4, 16, 4]
    packed = full.reshape(obn, block, cb, ib // GROUP, GROUP, kh, kw).transpose(0, 2, 5, 6, 3, 1, 4)
    return np.ascontiguousarray(packed).astype(np.int8)


def channel_constants(op, w: np.ndarray, w_unsigned: bool, obn: int, block: int) -> dict[str, np.ndarray]:
    """bias' (the zero-point compensation) and the requantization tables
    (``requant.channel_tables``), padded to obn x block."""
    o = w.shape[0]
    wi = w.astype(np.int64) - (128 if w_unsigned else 0)
    colsum = wi.reshape(o, -1).sum(axis=1)
    channels = obn * block
    bias = np.zeros(channels, np.int64)
    bias[:o] = -int(op.x_zero_point[0]) * colsum
    return {"bias": _wrap_i32(bias), **channel_tables(op, o, channels)}


@kernel("graph.qconv2d_nchwc", options=True)
def lower_qconv2d_nchwc(op, name: str, options) -> func.FuncOp:
    from dlc.dialects.graph.quantized import quant_range
    from dlc.lowering.lower_to_loops import LoweringError
    from dlc.weights import store_of

    x_t, w_t = op.operands[0].type, op.operands[1].type
    out_t = op.results[0].type
    w = _constant(op.operands[1])
    n, cb, h, wd, ib = x_t.get_shape()
    _, obn, oh, ow, block = out_t.get_shape()
    if w is None:
        raise LoweringError(op, "graph.qconv2d_nchwc needs a constant weight (graph.constant / graph.weight)")
    if block != LANES:
        raise LoweringError(op, f"graph.qconv2d_nchwc's kernel writes blocks of {LANES} channels, got {block}")
    w_unsigned = quant_range(w_t.element_type)[0] == 0
    wp = pack_weights(w, w_unsigned, op.w_zero_point, cb, ib, block)
    if wp is None:
        raise LoweringError(op, "graph.qconv2d_nchwc needs a weight zero point of 0 (128 for ui8 weights)")
    _, _, kh, kw = w.shape
    cols, blocks = register_tile(ow, obn, options.int8_accumulators)
    plan = QConvNCHWcPlan(n, cb, ib, obn, oh, ow, kh, kw, tuple(op.strides), tuple(op.dilations), cols, blocks)
    store = store_of(op)
    consts = {"wp": wp, **channel_constants(op, w, w_unsigned, obn, block)}
    bias_value = _constant(op.operands[2]) if len(op.operands) == 3 else None
    if bias_value is not None:  # a constant bias joins the compensation (wrapping adds)
        folded = consts["bias"].astype(np.int64)
        folded[: bias_value.shape[0]] += bias_value.astype(np.int64)
        consts["bias"] = _wrap_i32(folded)
    operands = list(op.operands)
    kb = KernelBuilder(name, [v.type for v in operands], [out_t], op.name,
                       ["x", "w", "b"][: len(operands)] + ["out"])
    buf = {}
    for key, array in consts.items():
        et = {np.dtype(np.int8): I8, np.dtype(np.int32): i32, np.dtype(np.int64): i64,
              np.dtype(np.float32): f32}[array.dtype]
        buf[key] = kb.emit(tloop.WeightOp(store.add(f"{name}.{key}", array), MemRefType(et, list(array.shape))))
        buf[key].name_hint = key
    bias = kb.inputs[2] if len(operands) == 3 and bias_value is None else None
    lo, hi = op.out_range()
    zo = int(op.y_zero_point[0])
    full = ow // cols
    with kb.loops(["n", "ocbo", "oh", "owt"], [n, obn // blocks, oh, full]) as (iv_n, iv_ob, iv_oh, iv_t):
        _tile(kb, plan, buf, bias, (iv_n, iv_ob, iv_oh), kb.imul(iv_t, cols), cols, "", lo, hi, zo)
    if ow % cols:  # the row's last ow % cols pixels: a nest of its own (its schedule is the
        # main nest's; one nest holding both would index %out through two loop sets)
        with kb.loops(["n_u", "ocbo_u", "oh_u"], [n, obn // blocks, oh]) as (iv_n, iv_ob, iv_oh):
            _tile(kb, plan, buf, bias, (iv_n, iv_ob, iv_oh), full * cols, ow % cols, "_u", lo, hi, zo)
    kernel = kb.finish(QCONV2D_NCHWC)
    stamp_weight_range(kernel, w.astype(np.int64) - (128 if w_unsigned else 0))  # as packed
    return kernel


def _tile(kb: KernelBuilder, plan: QConvNCHWcPlan, buf, bias, outer, ow0, cols: int, suffix: str,
          lo: int, hi: int, zo: int) -> None:
    """One register tile: zero, the dot products, the requantizing write-back."""
    iv_n, iv_ob, iv_oh = outer
    blocks = plan.blocks
    (sh, sw), (dh, dw) = plan.strides, plan.dilations
    x, out = kb.inputs[0], kb.outputs[0]
    acc = kb.emit(memref.AllocaOp.get(i32, shape=[blocks, cols, LANES]))
    acc.name_hint = "acc"
    zero = _c32(kb, 0)
    with kb.loops([f"z_b{suffix}", f"z_t{suffix}", f"z_l{suffix}"], [blocks, cols, LANES]) as (b, t, lane):
        kb.store(zero, acc, [b, t, lane])
    names = [f"{v}{suffix}" for v in ("icb", "kh", "kw", "ic4", "tb", "t", "nl", "j")]
    extents = [plan.cb, plan.kh, plan.kw, plan.ib // GROUP, blocks, cols, LANES, GROUP]
    with kb.loops(names, extents) as (icb, ikh, ikw, ic4, tb, t, nl, j):
        ih = kb.iadd(kb.imul(iv_oh, sh), kb.imul(ikh, dh))
        iw = kb.iadd(kb.imul(kb.iadd(ow0, t), sw), kb.imul(ikw, dw))
        ob = kb.iadd(kb.imul(iv_ob, blocks), tb)
        a = kb.emit(arith.ExtUIOp(kb.load(x, [iv_n, icb, ih, iw, kb.iadd(kb.imul(ic4, GROUP), j)]), i32))
        wv = kb.emit(arith.ExtSIOp(kb.load(buf["wp"], [ob, icb, ikh, ikw, ic4, nl, j]), i32))
        total = kb.emit(arith.AddiOp(kb.load(acc, [tb, t, nl]), kb.emit(arith.MuliOp(a, wv))))
        kb.store(total, acc, [tb, t, nl])
    # the finished sums to a second scratch: acc is only ever indexed by unrolled loops (its
    # elements stay in registers), accm is what the vectorized write-back reads
    accm = kb.emit(memref.AllocaOp.get(i32, shape=[blocks, cols, LANES]))
    accm.name_hint = "accm"
    with kb.loops([f"c_b{suffix}", f"c_t{suffix}", f"c_l{suffix}"], [blocks, cols, LANES]) as (b, t, lane):
        kb.store(kb.load(acc, [b, t, lane]), accm, [b, t, lane])
    with kb.loops([f"o_b{suffix}", f"o_t{suffix}", f"o_l{suffix}"], [blocks, cols, LANES]) as (b, t, lane):
        ob = kb.iadd(kb.imul(iv_ob, blocks), b)
        ch = kb.iadd(kb.imul(ob, LANES), lane)
        v = kb.emit(arith.AddiOp(kb.load(accm, [b, t, lane]), kb.load(buf["bias"], [ch])))
        if bias is not None:  # the op's i32 bias (wrapping adds): real channels only
            v = _add_bias(kb, v, bias, ch, plan.obn * LANES)
        tables = {key: kb.load(buf[key], [ch]) for key in CHANNEL_KEYS if key in buf}
        q = requantize_channel(kb, v, tables, zo, lo, hi)
        kb.store(kb.emit(arith.TruncIOp(q, I8)), out, [iv_n, ob, iv_oh, kb.iadd(ow0, t), lane])


def _add_bias(kb: KernelBuilder, v, bias, ch, total: int):
    """``v + bias[ch]`` where ``ch`` is a real channel (the bias has O entries; the padded
    channels past O add 0: a clamped load selected against 0)."""
    o = bias.type.get_shape()[0]
    if o == total:
        return kb.emit(arith.AddiOp(v, kb.load(bias, [ch])))
    clamped, ok = kb.clamp_index(ch, 0, o, 0, total - 1)
    value = kb.load_or(bias, [clamped], ok, _c32(kb, 0))
    return kb.emit(arith.AddiOp(v, value))
