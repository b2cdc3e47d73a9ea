"""The fast depthwise qconv2d kernel (groups == channels, one output channel per group):
MobileNet's 3x3 layers, i32 arithmetic, vectorizable rows.

    for dw_nc in N*C:                       one (image, channel) per iteration (the generic
                                            default's parallel loop: they write disjoint planes)
      xp[Hp][Wp] = x[n, c] - zx, 0 in the padding     (stack scratch, i32)
      for dw_oh:
        row[ow] = 0;  for kh, kw:  row[ow] += xp[oh*sh + kh*dh][ow*sw + kw*dw] * wq[c, kh, kw]
        out[n, c, oh, ow] = clamp(zo + requant(row[ow] + bias[c]))     (per-channel fixed point)

The weights minus their zero points (``wq``) and the requantization parameters are
compile-time i32 weights; the bias is read at run time. The ``ow`` loops are stride-1 for
stride 1 (vectorized by the generic default); the sums are exact integers, so the order
does not matter. Same arithmetic as the op's reference: kernels/quantized_fast.requantize, or
requant.requantize_float for an op with ``requant = "float"``.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import f32, IntegerType, MemRefType, i32

from dlc.dialects import tloop
from dlc.lowering.kernels import requant as rq
from dlc.lowering.kernels.builder import KernelBuilder
from dlc.lowering.kernels.quantized_fast import _c32, _constant, _signed, requantize


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
    hp, wp = (oh - 1) * sh + (kh - 1) * dh + 1, (ow - 1) * sw + (kw - 1) * dw + 1
    zw = np.broadcast_to(np.asarray(op.w_zero_point, np.int64), (c,))
    wq = (w.astype(np.int64).reshape(c, kh * kw) - zw[:, None]).astype(np.int32)
    store = store_of(op)
    if op.requant == "float":
        consts = {"wq": wq, "scale": np.broadcast_to(op.float_scales(), (c,)).astype(np.float32)}
    else:
        mult, shift = requant.quantize_multipliers(np.broadcast_to(op.multipliers(), (c,)))
        consts = {"wq": wq, "mult": mult.astype(np.int32), "lshift": np.maximum(shift, 0).astype(np.int32),
                  "rshift": np.maximum(-shift, 0).astype(np.int32)}
    operands = list(op.operands)
    kb = KernelBuilder(name, [v.type for v in operands], [op.results[0].type], op.name,
                       ["x", "w", "b"][: len(operands)] + ["out"])
    buf = {}
    for key, array in consts.items():
        et = f32 if key == "scale" else i32
        buf[key] = kb.emit(tloop.WeightOp(store.add(f"{name}.{key}", array), MemRefType(et, list(array.shape))))
        buf[key].name_hint = key
    x_unsigned = not _signed(x.type.element_type)
    zx = int(op.x_zero_point[0])
    lo, hi = op.out_range()
    zero = _c32(kb, 0)
    with kb.loop("dw_nc", n * c) as nc:
        b, ch = kb.idiv(nc, c), kb.irem(nc, c)
        xp = kb.emit(memref.AllocaOp.get(i32, shape=[hp, wp]))
        xp.name_hint = "xp"
        with kb.loops(["dw_py", "dw_px"], [hp, wp]) as (py, px):
            y, xx = kb.isub(py, pt), kb.isub(px, pl)
            conds = kb.in_range(y, 0, h, -pt, hp - 1 - pt) + kb.in_range(xx, 0, wd, -pl, wp - 1 - pl)
            yc, _ = kb.clamp_index(y, 0, h, -pt, hp - 1 - pt)
            xc, _ = kb.clamp_index(xx, 0, wd, -pl, wp - 1 - pl)
            raw = kb.load(kb.inputs[0], [b, ch, yc, xc])
            wide = kb.emit(arith.ExtUIOp(raw, i32) if x_unsigned else arith.ExtSIOp(raw, i32))
            value = kb.emit(arith.SubiOp(wide, _c32(kb, zx)))
            cond = kb.all_of(conds)
            kb.store(value if cond is None else kb.select(cond, value, zero), xp, [py, px])
        with kb.loop("dw_oh", oh) as iy:
            row = kb.emit(memref.AllocaOp.get(i32, shape=[ow]))
            row.name_hint = "row"
            with kb.loop("dw_z", ow) as ix:
                kb.store(zero, row, [ix])
            with kb.loops(["dw_kh", "dw_kw"], [kh, kw]) as (ky, kx):
                tap = kb.load(buf["wq"], [ch, kb.iadd(kb.imul(ky, kw), kx)])
                with kb.loop("dw_ow", ow) as ix:
                    v = kb.load(xp, [kb.iadd(kb.imul(iy, sh), kb.imul(ky, dh)), kb.iadd(kb.imul(ix, sw), kb.imul(kx, dw))])
                    kb.store(kb.emit(arith.AddiOp(kb.load(row, [ix]), kb.emit(arith.MuliOp(v, tap)))), row, [ix])
            with kb.loop("dw_out", ow) as ix:
                acc = kb.load(row, [ix])
                if len(operands) == 3:
                    acc = kb.emit(arith.AddiOp(acc, kb.load(kb.inputs[2], [ch])))
                if "scale" in buf:
                    q = rq.requantize_float(kb, acc, kb.load(buf["scale"], [ch]), int(op.y_zero_point[0]), lo, hi)
                else:
                    q = requantize(kb, acc, kb.load(buf["mult"], [ch]), kb.load(buf["lshift"], [ch]),
                                   kb.load(buf["rshift"], [ch]))
                    q = kb.emit(arith.AddiOp(q, _c32(kb, int(op.y_zero_point[0]))))
                    q = kb.emit(arith.MinSIOp(kb.emit(arith.MaxSIOp(q, _c32(kb, lo))), _c32(kb, hi)))
                kb.store(kb.emit(arith.TruncIOp(q, IntegerType(8))), kb.outputs[0], [b, ch, iy, ix])
    return kb.finish()
