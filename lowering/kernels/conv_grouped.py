"""Grouped conv2d on the CPU: the flattened padded form with an explicit group loop.

The flat form (kernels/conv.py) handles groups by indexing the input channel
``(oc // OPG) * CPG + ic``. Its schedule tiles the *global* output channel by
8, so ``oc // OPG`` is no affine index of the tile loops: every one of the 8
unrolled channels loads its own input vector (8 loads per 8 FMAs, load-bound:
ShuffleNet's group-4 1x1 convs ran at ~35% of the FMA peak; LLVM only
recovers a shared load when it proves ``oc // OPG`` uniform over the tile, as
for a power-of-two OPG like AlexNet's 128). Here (groups > 1 and at least :data:`GROUP_TILE` output
channels per group) the group is a loop of its own::

    xp[n, c, phase * PLANE + r * WQ + q]     padded phase planes, as in conv.py
                                             (no copy for an unpadded 1x1 stride-1
                                             conv: a view of x, P = OH * OW, unless
                                             the last tile would be narrower than
                                             IN_PLACE_MIN_TAIL columns)
    wp[g, o, ic, kh, kw]                     weights, output channels per group padded
                                             with zeros to a multiple of GROUP_TILE
                                             (no copy when OPG already is one)
    outp[n, g, o, p] += wp[g, o, ic, kh, kw] * xp[n, g * CPG + ic, p + offset(kh, kw)]
    out[n, g * OPG + o, oh, ow] = epilogue(outp[n, g, o, oh * WQ + ow])
                                             (one loop over the plane when WQ == OW)

so the 8-channel register tile (schedule/defaults_conv_grouped.py) runs within
one group and shares one input vector load between its 8 FMAs. Padding the
group's channels (ShuffleNet: 28 -> 32, 34 -> 40) computes throw-away rows
instead of a second, narrower tile nest; the copy-out skips them.

Depthwise convs (one input channel per group, any channel multiplier) get a
per-channel form instead: each channel's padded phase planes and flattened
output row are scratch of the channel's iteration (a few KiB, L1-resident, at
most DW_SCRATCH_BYTES: thread stacks), so the whole layer is one loop over
channels (parallel when big enough) with no separate copy passes::

    parallel for (n, oc):                                  fused
      xc[phase * PLANE + r * WQ + q] = padded x[n, oc // M]   (phase planes, as above)
      row[p] = sum_(kh, kw) w[oc, 0, kh, kw] * xc[p + offset(kh, kw)]
      out[n, oc, oh, ow] = epilogue(row[oh * WQ + ow])

``row`` is :data:`DW_VECTORS` x 16 columns of register accumulators per tile
(schedule/defaults_conv_grouped.py): one weight broadcast feeds 4 FMAs.
Other small groups (fewer than GROUP_TILE output channels per group, more than
one input channel) keep the flat form.
"""

from __future__ import annotations

from xdsl.dialects import func, memref

from dlc.dialects.graph_base import GraphOp
from dlc.lowering.kernels.builder import KernelBuilder
from dlc.lowering.kernels.forms import CONV2D_DEPTHWISE, CONV2D_GROUPED

GROUP_TILE = 8  # output channels of the register tile (schedule/defaults_conv_grouped.py)
# x is read in place when the last, narrower column tile has at least this many columns: a
# 1-column tail (7 x 7: 49 = 3 x 16 + 1) runs serially at one lane per FMA, which cost more
# than copying x into whole tiles (4-18%); a 4-column one (14 x 14) costs less (11%)
IN_PLACE_MIN_TAIL = 4
DW_VECTORS = 4  # 16-column vectors per depthwise register tile
DW_SCRATCH_BYTES = 128 << 10  # per-channel scratch (thread stack) of the depthwise form


def _ceil_to(value: int, unit: int) -> int:
    return -(-value // unit) * unit


def grouped_plan(plan: dict) -> dict | None:
    """The grouped form's extra sizes for a flat-form plan, or None when it does not apply."""
    groups = plan["c"] // plan["cpg"]
    if groups < 2 or plan["opg"] < GROUP_TILE:
        return None
    g = plan
    # an unpadded 1x1 stride-1 conv reads x in place: its plane is the padded plane; P is
    # then exactly OH * OW (the schedule gives the last P % 16 columns a tile of their own)
    tail = g["oh"] * g["ow"] % 16
    direct = (g["kh"] == g["kw"] == g["sh"] == g["sw"] == 1 and g["pt"] == g["pl"] == 0
              and (g["oh"], g["ow"]) == (g["h"], g["w"]) and (tail == 0 or tail >= IN_PLACE_MIN_TAIL))
    return dict(groups=groups, ocp=_ceil_to(g["opg"], GROUP_TILE), direct_input=direct,
                p=g["oh"] * g["ow"] if direct else g["p"])


def lower_conv2d_grouped(op: GraphOp, name: str, plan: dict, extra: dict) -> func.FuncOp:
    """The grouped form (module docstring); `plan`, `extra`: the flat form's sizes and
    :func:`grouped_plan`'s (conv.py's ConvPlan)."""
    from dlc.lowering.kernels.conv import _split_tap  # conv.py imports this module lazily

    g = plan
    groups, ocp = extra["groups"], extra["ocp"]
    x_t, w_t = (o.type for o in op.operands)
    out_t = op.results[0].type
    et = out_t.element_type
    n, c, o, opg, cpg = g["n"], g["c"], g["o"], g["opg"], g["cpg"]
    wq, p, rows, sh, sw, rph, cph = g["wq"], extra["p"], g["rows"], g["sh"], g["sw"], g["rph"], g["cph"]
    kh, kw = g["kh"], g["kw"]
    plane = rows * wq
    kb = KernelBuilder(name, [x_t, w_t], [out_t], op.name, ["x", "w", "out"])
    zero = kb.const(0, et)
    # 1. the input as padded phase planes (conv.py's copy), or x itself
    if extra["direct_input"]:
        xp = kb.row_major_view(kb.inputs[0], [n, c, p], "xflat")
    else:
        xp = kb.emit(memref.AllocOp.get(et, shape=[n, c, rph * cph * plane]))
        xp.name_hint = "xpad"
        kb.copy_phase_planes(kb.inputs[0], xp, [("pad_n", n), ("pad_c", c)], list, list, h=g["h"], w=g["w"],
                             sh=sh, sw=sw, pt=g["pt"], pl=g["pl"], rph=rph, cph=cph, rows=rows, wq=wq,
                             zero=zero)
    # 2. the weights per group, output channels padded with zero rows to a multiple of the tile
    if ocp == opg:
        wp = kb.row_major_view(kb.inputs[1], [groups, ocp, cpg, kh, kw])
    else:
        wp = kb.emit(memref.AllocOp.get(et, shape=[groups, ocp, cpg, kh, kw]))
        with kb.loops(["wpad_g", "wpad_o", "wpad_i", "wpad_h", "wpad_w"], [groups, ocp, cpg, kh, kw]) as ivs:
            iv_g, iv_o, iv_i, iv_h, iv_w = ivs
            oc, valid = kb.clamp_index(iv_o, 0, opg, 0, ocp - 1)
            value = kb.load_or(kb.inputs[1], [kb.iadd(kb.imul(iv_g, opg), oc), iv_i, iv_h, iv_w], valid, zero)
            kb.store(value, wp, ivs)
    wp.name_hint = "wgroup"
    # 3. accumulation: tap (kh, kw) of output p reads its phase plane at p + offset (conv.py)
    outp = kb.emit(memref.AllocOp.get(et, shape=[n, groups, ocp, p]))
    outp.name_hint = "outpad"
    with kb.loops(["n", "g", "oc", "p"], [n, groups, ocp, p]) as (iv_n, iv_g, iv_o, iv_p):
        kb.store(zero, outp, [iv_n, iv_g, iv_o, iv_p])
        group_base = kb.imul(iv_g, cpg)
        with kb.loops(["ic", "kh", "kw"], [cpg, kh, kw]) as (iv_ic, iv_kh, iv_kw):
            (row_phase, row_off), (col_phase, col_off) = (
                _split_tap(kb, iv, k, d, st, phases)
                for iv, k, d, st, phases in ((iv_kh, kh, g["dh"], sh, rph), (iv_kw, kw, g["dw"], sw, cph)))
            phase = kb.iadd(kb.imul(row_phase, cph), col_phase)
            offset = kb.iadd(kb.imul(row_off, wq), col_off)
            src = kb.iadd(iv_p, kb.iadd(kb.imul(phase, plane), offset))
            xv = kb.load(xp, [iv_n, kb.iadd(group_base, iv_ic), src])
            wv = kb.load(wp, [iv_g, iv_o, iv_ic, iv_kh, iv_kw])
            acc = kb.load(outp, [iv_n, iv_g, iv_o, iv_p])
            kb.store(kb.add(acc, kb.mul(xv, wv, et), et), outp, [iv_n, iv_g, iv_o, iv_p])
    # 4. the valid channels and columns to the output (fused elementwise epilogue here)
    if wq == g["ow"]:  # no throw-away columns: one row over the whole plane (vectorizes)
        with kb.loops(["out_n", "out_c", "out_p"], [n, o, g["oh"] * wq]) as (iv_n, iv_o, iv_p):
            src = [iv_n, kb.idiv(iv_o, opg), kb.irem(iv_o, opg), iv_p]
            ivs = [iv_n, iv_o, kb.idiv(iv_p, wq), kb.irem(iv_p, wq)]
            kb.store(kb.epilogue_value(kb.load(outp, src), ivs), kb.outputs[0], ivs)
    else:
        with kb.loops(["out_n", "out_c", "out_h", "out_w"], [n, o, g["oh"], g["ow"]]) as ivs:
            iv_n, iv_o, iv_oh, iv_ow = ivs
            src = [iv_n, kb.idiv(iv_o, opg), kb.irem(iv_o, opg), kb.iadd(kb.imul(iv_oh, wq), iv_ow)]
            kb.store(kb.epilogue_value(kb.load(outp, src), ivs), kb.outputs[0], ivs)
    for buffer in (xp, wp, outp):
        if isinstance(buffer.owner, memref.AllocOp):
            kb.emit(memref.DeallocOp.get(buffer))
    return kb.finish(CONV2D_GROUPED)


def depthwise_plan(plan: dict) -> dict | None:
    """Sizes of the per-channel depthwise form, or None when it does not apply."""
    g = plan
    if g["cpg"] != 1 or g["c"] == 1:  # one channel: a dense conv, the flat form
        return None
    p0 = g["oh"] * g["wq"]
    block = 16 * min(DW_VECTORS, -(-p0 // 16))
    p = _ceil_to(p0, block)
    last_read = p - 1 + (g["kh"] - 1) * g["dh"] // g["sh"] * g["wq"] + (g["kw"] - 1) * g["dw"] // g["sw"]
    rows = -(-(last_read + 1) // g["wq"])
    plane = rows * g["wq"]
    if 4 * (g["rph"] * g["cph"] * plane + p) > DW_SCRATCH_BYTES:
        return None
    return dict(p=p, rows=rows, plane=plane, block=block)


def lower_conv2d_depthwise(op: GraphOp, name: str, plan: dict, dw: dict) -> func.FuncOp:
    """The per-channel depthwise form (module docstring); `plan`, `dw`: the flat form's
    sizes and :func:`depthwise_plan`'s (conv.py's ConvPlan)."""
    from dlc.lowering.kernels.conv import _split_tap  # conv.py imports this module lazily

    g = plan
    x_t, w_t = (o.type for o in op.operands)
    out_t = op.results[0].type
    et = out_t.element_type
    n, o, opg, wq, kh, kw = g["n"], g["o"], g["opg"], g["wq"], g["kh"], g["kw"]
    sh, sw, rph, cph = g["sh"], g["sw"], g["rph"], g["cph"]
    p, rows, plane = dw["p"], dw["rows"], dw["plane"]
    kb = KernelBuilder(name, [x_t, w_t], [out_t], op.name, ["x", "w", "out"])
    zero = kb.const(0, et)
    with kb.loops(["dw_n", "dw_c"], [n, o]) as (iv_n, iv_o):
        # the channel's scratch: allocas inside the loop are private to its iteration
        xc = kb.emit(memref.AllocaOp.get(et, shape=[rph * cph * plane]))
        xc.name_hint = "xchan"
        row = kb.emit(memref.AllocaOp.get(et, shape=[p]))
        row.name_hint = "row"
        channel = kb.idiv(iv_o, opg) if opg > 1 else iv_o
        # 1. the input channel's zero-padded phase planes (conv.py's copy, one channel)
        kb.copy_phase_planes(kb.inputs[0], xc, [], lambda _: [iv_n, channel], lambda _: [], h=g["h"],
                             w=g["w"], sh=sh, sw=sw, pt=g["pt"], pl=g["pl"], rph=rph, cph=cph, rows=rows,
                             wq=wq, zero=zero)
        # 2. the flattened output row: tap (kh, kw) reads its phase plane at p + offset
        with kb.loop("p", p) as iv_p:
            kb.store(zero, row, [iv_p])
            with kb.loops(["kh", "kw"], [kh, kw]) as (iv_kh, iv_kw):
                (row_phase, row_off), (col_phase, col_off) = (
                    _split_tap(kb, iv, k, d, st, phases)
                    for iv, k, d, st, phases in ((iv_kh, kh, g["dh"], sh, rph), (iv_kw, kw, g["dw"], sw, cph)))
                phase = kb.iadd(kb.imul(row_phase, cph), col_phase)
                src = kb.iadd(iv_p, kb.iadd(kb.imul(phase, plane), kb.iadd(kb.imul(row_off, wq), col_off)))
                xv = kb.load(xc, [src])
                wv = kb.load(kb.inputs[1], [iv_o, 0, iv_kh, iv_kw])
                kb.store(kb.add(kb.load(row, [iv_p]), kb.mul(xv, wv, et), et), row, [iv_p])
        # 3. the valid columns to the output (fused elementwise epilogue here)
        with kb.loops(["out_h", "out_w"], [g["oh"], g["ow"]]) as (iv_oh, iv_ow):
            value = kb.load(row, [kb.iadd(kb.imul(iv_oh, wq), iv_ow)])
            ivs = [iv_n, iv_o, iv_oh, iv_ow]
            kb.store(kb.epilogue_value(value, ivs), kb.outputs[0], ivs)
    return kb.finish(CONV2D_DEPTHWISE)
