"""The fast depthwise qconv2d kernel (groups == channels, one output channel per group):
MobileNet's 3x3 layers, i32 arithmetic, vectorized over 16 channels.

MobileNet's depthwise planes are small (28x28 .. 7x7): vectors along an output row
(7 .. 28 lanes) waste most of a 16-lane vector and pay a loop per channel. This kernel
runs 16 channels in the lanes instead, for one output row at a time::

    for dw_nb in N * CB:                    one (image, block of LANES channels) per
                                            iteration (parallel: disjoint outputs)
      bias_b[l] = b[c0 + l]                 (0 past the last channel)
      for dw_oh:
        band[kh][Wp][l] = x[n, c0+l, oh*sh + kh*dh - pt, px - pl] - zx   (0 in the
                                            padding and past the last channel)
        acc[ow][l] = bias_b[l]
        for dw_ow, dw_kh, dw_kw:  for dw_l:  acc[ow][l] += band[kh][ow*sw + kw*dw][l] * wq[kh*KW + kw][c0 + l]
        q[ow][l] = clamp(zo + requant(acc[ow][l]))     (vector over l, per-channel fixed point)
        out[n, c0 + l, oh, ow] = q[ow][l]   (l < C - c0)

Every ``dw_l`` loop is stride-1 over 16 lanes (a zmm of i32), so the generic default
schedule vectorizes it; the band is the one transposing step (NCHW rows into lanes), the
write-back the other. The input's layout is read through :class:`_Nchw` (``x_lane``:
one lane's element, ``out_lane``: one lane's store); a channel-blocked (NCHW16c) input
would give contiguous lanes there, with the rest of the kernel unchanged.

The weights minus their zero points (``wq``, [KH*KW][CB*16], zero-padded) and the
requantization parameters (Q31 multiplier and total shift per channel) are compile-time
i32 weights; the bias is read at run time. The sums are exact integers, so the order does
not matter: the result equals the op's reference (TFLite's single-rounding
requantization, ``dialects/graph/requant.py``) bit for bit.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import IntegerType, MemRefType, i32

from dlc.dialects import tloop
from dlc.lowering.kernels.builder import KernelBuilder
from dlc.lowering.kernels.quantized_fast import _c32, _constant, _signed
from dlc.lowering.kernels.requant import single_rounding

LANES = 16  # channels per vector: 16 i32 lanes (one 512-bit register; two 256-bit ones)


class _Nchw:
    """Where a lane's element lives in NCHW data (the kernel's one layout fact)."""

    def __init__(self, kb: KernelBuilder, channels: int):
        self.kb, self.c = kb, channels

    def channel(self, cb, lane):
        return self.kb.iadd(self.kb.imul(cb, LANES), lane)

    def x_lane(self, x, b, cb, lane, y, xx):
        kb = self.kb
        return kb.load(x, [b, kb.imin(self.channel(cb, lane), self.c - 1), y, xx])

    def out_lane(self, value, out, b, cb, lane, oy, ox):
        self.kb.store(value, out, [b, self.channel(cb, lane), oy, ox])


def qdepthwise(op, name: str) -> func.FuncOp | None:
    from dlc.dialects.graph import requant
    from dlc.dialects.graph.conv import _window_attrs
    from dlc.weights import store_of

    x, wv = op.operands[0], op.operands[1]
    w = _constant(wv)
    n, c, h, wd = x.type.get_shape()
    if w is None or op.attrs.groups != c or w.shape[0] != c or w.shape[1] != 1:
        return None
    _, _, kh, kw = w.shape
    _, _, oh, ow = op.results[0].type.get_shape()
    (sh, sw), (dh, dw), (pt, pl, _pb, _pr) = _window_attrs(op.attrs)
    wp = (ow - 1) * sw + (kw - 1) * dw + 1
    cb_count = -(-c // LANES)
    cp = cb_count * LANES
    zw = np.broadcast_to(np.asarray(op.w_zero_point, np.int64), (c,))
    wq = np.zeros((kh * kw, cp), np.int32)
    wq[:, :c] = (w.astype(np.int64).reshape(c, kh * kw) - zw[:, None]).T
    mult, shift = requant.quantize_multipliers(np.broadcast_to(op.multipliers(), (c,)))
    pad = lambda a, fill: np.concatenate([a, np.full(cp - c, fill, a.dtype)]).astype(np.int32)  # noqa: E731
    consts = {"wq": wq, "mult": pad(mult, 0), "total": pad(31 - shift, 31)}
    store = store_of(op)
    operands = list(op.operands)
    kb = KernelBuilder(name, [v.type for v in operands], [op.results[0].type], op.name,
                       ["x", "w", "b"][: len(operands)] + ["out"])
    buf = {}
    for key, array in consts.items():
        buf[key] = kb.emit(tloop.WeightOp(store.add(f"{name}.{key}", array), MemRefType(i32, list(array.shape))))
        buf[key].name_hint = key
    layout = _Nchw(kb, c)
    x_unsigned = not _signed(x.type.element_type)
    zx = _c32(kb, int(op.x_zero_point[0]))
    zo = _c32(kb, int(op.y_zero_point[0]))
    lo, hi = (_c32(kb, v) for v in op.out_range())
    zero = _c32(kb, 0)
    with kb.loop("dw_nb", n * cb_count) as nb:
        b, cb = kb.idiv(nb, cb_count), kb.irem(nb, cb_count)
        bias = kb.emit(memref.AllocaOp.get(i32, shape=[LANES]))
        bias.name_hint = "bias_b"
        with kb.loop("dw_bl", LANES) as lane:
            if len(operands) == 3:
                ch = layout.channel(cb, lane)
                value = kb.load(kb.inputs[2], [kb.imin(ch, c - 1)])
                value = kb.select(kb.icmp("slt", ch, c), value, zero) if c % LANES else value
            else:
                value = zero
            kb.store(value, bias, [lane])
        with kb.loop("dw_oh", oh) as iy:
            band = kb.emit(memref.AllocaOp.get(i32, shape=[kh, wp, LANES]))
            band.name_hint = "band"
            with kb.loops(["dw_bk", "dw_bx", "dw_bc"], [kh, wp, LANES]) as (ky, px, lane):
                y = kb.isub(kb.iadd(kb.imul(iy, sh), kb.imul(ky, dh)), pt)
                xx = kb.isub(px, pl)
                y_hi = (oh - 1) * sh + (kh - 1) * dh - pt
                conds = kb.in_range(y, 0, h, -pt, y_hi) + kb.in_range(xx, 0, wd, -pl, wp - 1 - pl)
                if c % LANES:
                    conds.append(kb.icmp("slt", layout.channel(cb, lane), c))
                yc, _ = kb.clamp_index(y, 0, h, -pt, y_hi)
                xc, _ = kb.clamp_index(xx, 0, wd, -pl, wp - 1 - pl)
                raw = layout.x_lane(kb.inputs[0], b, cb, lane, yc, xc)
                wide = kb.emit(arith.ExtUIOp(raw, i32) if x_unsigned else arith.ExtSIOp(raw, i32))
                value = kb.emit(arith.SubiOp(wide, zx))
                cond = kb.all_of(conds)
                kb.store(value if cond is None else kb.select(cond, value, zero), band, [ky, px, lane])
            acc = kb.emit(memref.AllocaOp.get(i32, shape=[ow, LANES]))
            acc.name_hint = "acc"
            with kb.loops(["dw_zx", "dw_zl"], [ow, LANES]) as (ix, lane):
                kb.store(kb.load(bias, [lane]), acc, [ix, lane])
            with kb.loops(["dw_ow", "dw_kh", "dw_kw", "dw_l"], [ow, kh, kw, LANES]) as (ix, ky, kx, lane):
                tap = kb.load(buf["wq"], [kb.iadd(kb.imul(ky, kw), kx), layout.channel(cb, lane)])
                v = kb.load(band, [ky, kb.iadd(kb.imul(ix, sw), kb.imul(kx, dw)), lane])
                kb.store(kb.emit(arith.AddiOp(kb.load(acc, [ix, lane]), kb.emit(arith.MuliOp(v, tap)))),
                         acc, [ix, lane])
            q8 = kb.emit(memref.AllocaOp.get(IntegerType(8), shape=[ow, LANES]))
            q8.name_hint = "q"
            with kb.loops(["dw_qx", "dw_ql"], [ow, LANES]) as (ix, lane):
                ch = layout.channel(cb, lane)
                q = single_rounding(kb, kb.load(acc, [ix, lane]), kb.load(buf["mult"], [ch]),
                                    kb.load(buf["total"], [ch]))
                q = kb.emit(arith.MinSIOp(kb.emit(arith.MaxSIOp(kb.emit(arith.AddiOp(q, zo)), lo)), hi))
                kb.store(kb.emit(arith.TruncIOp(q, IntegerType(8))), q8, [ix, lane])
            lanes = min(LANES, c)
            with kb.loops(["dw_ol", "dw_ox"], [lanes, ow]) as (lane, ix):
                if c % LANES:
                    with kb.if_(kb.icmp("slt", layout.channel(cb, lane), c)):
                        layout.out_lane(kb.load(q8, [ix, lane]), kb.outputs[0], b, cb, lane, iy, ix)
                else:
                    layout.out_lane(kb.load(q8, [ix, lane]), kb.outputs[0], b, cb, lane, iy, ix)
    return kb.finish()
