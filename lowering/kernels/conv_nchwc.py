"""Kernels of the channel-blocked layout (alter-op-layout): conv2d_nchwc and
layout_transform.

conv2d_nchwc loops (NCHW{ib}c input, OIHW{ib}i{ob}o weight, NCHW{ob}c output)::

    for n, ocb, oh, ow, oc:   out = 0
                              for icb, kh, kw, ic:  out += x[n, icb, ih, iw, ic] * w[ocb, icb, kh, kw, ic, oc]
                              epilogue (fuse-ops)

``oc`` (the output block, one vector) is innermost and stride-1 in both the
weight and the output, so the default schedule (lowering/schedule/
defaults_nchwc.py) makes it the vector of an (ow block x oc) register tile
with the reduction loops outside it. Padding is branch-free as in conv.py
(clamped load selected against zero).

layout_transform: one loop nest over the result; padded channels (beyond
the source's channel count) are stored as zeros.
"""

from __future__ import annotations

from xdsl.dialects import func

from dlc.dialects.graph import _BLOCKED_DATA, _window_attrs
from dlc.dialects.graph_base import GraphOp
from dlc.lowering.kernels import kernel
from dlc.lowering.kernels.builder import KernelBuilder
from dlc.lowering.kernels.forms import CONV2D_NCHWC


@kernel("graph.conv2d_nchwc")
def lower_conv2d_nchwc(op: GraphOp, name: str) -> func.FuncOp:
    x_t, w_t = (o.type for o in op.operands)
    out_t = op.results[0].type
    et = out_t.element_type
    (sh, sw), (dh, dw), (pt, pl, _, _) = _window_attrs(op.attrs)
    n, cb, h, wd, ib = x_t.get_shape()
    obn, _, kh, kw, _, ob = w_t.get_shape()
    _, _, oh, ow, _ = out_t.get_shape()

    kb = KernelBuilder(name, [x_t, w_t], [out_t], op.name, ["x", "w", "out"])
    with kb.loops(["n", "ocb", "oh", "ow", "oc"], [n, obn, oh, ow, ob]) as (iv_n, iv_ob, iv_oh, iv_ow, iv_oc):
        out_idx = [iv_n, iv_ob, iv_oh, iv_ow, iv_oc]
        kb.store(kb.const(0, et), kb.outputs[0], out_idx)
        with kb.loops(["icb", "kh", "kw", "ic"], [cb, kh, kw, ib]) as (iv_cb, iv_kh, iv_kw, iv_ic):
            ih, iw, inside = kb.window_tap((iv_oh, iv_ow), (iv_kh, iv_kw), strides=(sh, sw), dilations=(dh, dw),
                                           pads=(pt, pl), in_hw=(h, wd), out_hw=(oh, ow), kernel=(kh, kw))
            xv = kb.load_or(kb.inputs[0], [iv_n, iv_cb, ih, iw, iv_ic], inside, kb.const(0, et))
            wv = kb.load(kb.inputs[1], [iv_ob, iv_cb, iv_kh, iv_kw, iv_ic, iv_oc])
            acc = kb.load(kb.outputs[0], out_idx)
            kb.store(kb.add(acc, kb.mul(xv, wv, et), et), kb.outputs[0], out_idx)
        kb.apply_epilogue(out_idx)  # fused elementwise ops (fuse-ops)
    return kb.finish(CONV2D_NCHWC)


@kernel("graph.layout_transform")
def lower_layout_transform(op: GraphOp, name: str) -> func.FuncOp:
    x_t = op.operands[0].type
    out_t = op.results[0].type
    et = out_t.element_type
    src = op.src
    kb = KernelBuilder(name, [x_t], [out_t], op.name, ["x", "out"])
    if _BLOCKED_DATA.match(src):  # NCHW{b}c -> NCHW: a gather, no padding to fill
        n, c, h, w = out_t.get_shape()
        b = x_t.get_shape()[4]
        with kb.loops(["n", "c", "h", "w"], [n, c, h, w]) as (iv_n, iv_c, iv_h, iv_w):
            value = kb.load(kb.inputs[0], [iv_n, kb.idiv(iv_c, b), iv_h, iv_w, kb.irem(iv_c, b)])
            kb.store(value, kb.outputs[0], [iv_n, iv_c, iv_h, iv_w])
        return kb.finish()
    shape = out_t.get_shape()
    if src == "NCHW":  # [n, cb, h, w, b] <- x[n, cb*b + c, h, w]
        names = ["n", "cb", "h", "w", "c"]
        with kb.loops(names, shape) as (iv_n, iv_cb, iv_h, iv_w, iv_c):
            channel = kb.iadd(kb.imul(iv_cb, shape[4]), iv_c)
            limit = x_t.get_shape()[1]
            value = _load_padded(kb, [(channel, limit, shape[1] * shape[4] - 1)], lambda ch: [iv_n, ch[0], iv_h, iv_w], et)
            kb.store(value, kb.outputs[0], [iv_n, iv_cb, iv_h, iv_w, iv_c])
        return kb.finish()
    # OIHW -> [ob, ib, kh, kw, i, o] <- w[obi*o + o, ibi*i + i, kh, kw]
    o_count, i_count = x_t.get_shape()[:2]
    names = ["ob", "ib", "kh", "kw", "i", "o"]
    with kb.loops(names, shape) as (iv_ob, iv_ib, iv_kh, iv_kw, iv_i, iv_o):
        oc = kb.iadd(kb.imul(iv_ob, shape[5]), iv_o)
        ic = kb.iadd(kb.imul(iv_ib, shape[4]), iv_i)
        value = _load_padded(kb, [(oc, o_count, shape[0] * shape[5] - 1), (ic, i_count, shape[1] * shape[4] - 1)],
                             lambda ch: [ch[0], ch[1], iv_kh, iv_kw], et)
        kb.store(value, kb.outputs[0], [iv_ob, iv_ib, iv_kh, iv_kw, iv_i, iv_o])
    return kb.finish()


def _load_padded(kb: KernelBuilder, channels, index_of, et):
    """Load at clamped channel indices, zero where a channel is padding."""
    clamped, conds = [], []
    for channel, limit, known_hi in channels:
        ch, ok = kb.clamp_index(channel, 0, limit, 0, known_hi)
        clamped.append(ch)
        if ok is not None:
            conds.append(ok)
    return kb.load_or(kb.inputs[0], index_of(clamped), kb.all_of(conds), kb.const(0, et))
