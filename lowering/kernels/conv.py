"""conv2d and conv_transpose2d kernels (direct convolution).

conv2d loops: ``%n %oc %oh %ow`` over the output, then the reduction
``%ic %kh %kw`` innermost; padding is branch-free: the input is loaded at a
clamped index and ``arith.select``-ed against 0 (checks only for the bounds a
window can actually cross), so the scheduled inner loop stays vectorizable.
Zero times the weight is what zero padding computes, so results are exact.
NHWC / HWIO only change the index order of loads and stores.

conv_transpose2d is written as a gather over the output: output row ``y``
receives input row ``iy`` through kernel row ``kh`` when
``y + pad_top - kh * dilation = iy * stride``; the guard checks divisibility
and bounds.

On the CPU (``lower-to-loops{flat-conv=true}``, which the driver sets), f32 NCHW
convolutions use the *flattened padded* form instead (any stride, dilation,
padding, groups):

* ``xp[n, c, phase * PLANE + r * WQ + q]``: the input copied once into
  zero-padded *phase planes*: plane ``(a, b)`` holds padded-input element
  ``(r * sh + a, q * sw + b)`` (one plane for stride 1, or when every window
  tap lands on phase 0, as for 1x1 strided convs). ``WQ = OW + (KW-1)*dw //
  sw`` columns, so the window loads need no clamp;
* ``outp[n, o, p]`` for ``p = oh * WQ + ow`` in ``[0, P)``: a padded-width
  output. Tap ``(kh, kw)`` of output ``p`` reads its phase plane at
  ``p + (kh*dh // sh) * WQ + kw*dw // sw``: stride 1 in ``p`` for every tap,
  so the whole output plane is one long vectorizable row whatever OW is (7,
  14, 28, 56 all tile by 16); the ``WQ - OW`` extra columns per row and the
  tail up to ``P`` (a multiple of :data:`FLAT_TILE`) compute throw-away values;
* a last nest copies the valid columns to ``out`` and applies a fused epilogue.

Both scratch buffers are heap allocations (``memref.alloc``) freed at the end
of the kernel. Two shortcuts drop them where they only copy:

* *x in place*: stride 1, no top/left padding, ``WQ == W`` and no window read
  past the plane (1x1 and Kx1 unpadded convs): ``xp`` is ``x`` itself, seen
  as ``[n, c, H * W]`` (a ``memref.reinterpret_cast`` view), no phase copy;
* *output in place*: ``WQ == OW`` (a window one column wide, any stride or
  padding) and every extra input of the fused epilogue broadcast over both
  plane axes or over neither: ``outp`` is ``out`` seen as ``[n, o, OH * OW]``,
  ``P = OH * OW`` exactly (the schedule gives the columns past the last
  whole tile a tile of their own), and the epilogue is applied in place at
  the end of the ``p`` loop (extras with a plane seen as ``[..., 1, OH * OW]``,
  indexed ``[n, c, 0, p]``). No copy-out.

The schedule (``schedule/defaults_conv.py``) register-blocks the
accumulation nest ``n oc p ic kh kw``, starts its tiles at zero (no zero-fill)
and moves an in-place epilogue into the tiles' write-back.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import func, memref
from xdsl.dialects.builtin import Float32Type

from dlc.dialects.graph import _window_attrs
from dlc.dialects.graph_base import GraphOp
from dlc.lowering.kernels import kernel
from dlc.lowering.kernels.builder import KernelBuilder
from dlc.lowering.kernels.forms import CONV2D_DEPTHWISE, CONV2D_DIRECT, CONV2D_FLAT, CONV2D_GROUPED, KernelOptions


def _nchw_index(layout: str, n, c, h, w):
    return [n, h, w, c] if layout == "NHWC" else [n, c, h, w]


def _oihw_index(layout: str, o, i, h, w):
    return [h, w, i, o] if layout == "HWIO" else [o, i, h, w]


FLAT_TILE = 16  # P (flattened output columns) is a multiple of the schedule's column tile
FLAT_SCRATCH_BYTES = 256 << 20  # xp + outp: heap scratch (memref.alloc) per call


def _ceil_to(value: int, unit: int) -> int:
    return -(-value // unit) * unit


def _phases(k: int, dilation: int, stride: int) -> int:
    """Phase planes one axis needs: 1 when every window tap lands on phase 0 (1x1 strided)."""
    return 1 if all(t * dilation % stride == 0 for t in range(k)) else stride


def flat_conv_plan(op: GraphOp, options: KernelOptions) -> dict | None:
    """Sizes of the flattened padded form for `op`, or None when it does not apply."""
    if not options.flat_conv:
        return None
    x_t, w_t = (o.type for o in op.operands)
    out_t = op.results[0].type
    a = op.attrs
    if (a.data_layout != "NCHW" or a.kernel_layout != "OIHW"
            or not isinstance(out_t.element_type, Float32Type)):
        return None
    (sh, sw), (dh, dw), (pt, pl, _, _) = _window_attrs(a)
    n, c, h, w = x_t.get_shape()
    o, cpg, kh, kw = w_t.get_shape()
    _, _, oh, ow = out_t.get_shape()
    if min(n, c, o, oh, ow) < 1:
        return None
    wq = ow + (kw - 1) * dw // sw  # phase-plane columns: output columns + the window's reach
    p = _ceil_to(oh * wq, FLAT_TILE)
    last_read = p - 1 + (kh - 1) * dh // sh * wq + (kw - 1) * dw // sw
    rows = -(-(last_read + 1) // wq)  # phase-plane rows (the tail of P reads zeros)
    rph, cph = _phases(kh, dh, sh), _phases(kw, dw, sw)
    if 4 * n * (c * rph * cph * rows * wq + o * p) > FLAT_SCRATCH_BYTES:
        return None
    return dict(n=n, c=c, cpg=cpg, opg=o // a.groups, h=h, w=w, o=o, kh=kh, kw=kw,
                oh=oh, ow=ow, sh=sh, sw=sw, dh=dh, dw=dw, pt=pt, pl=pl, wq=wq, p=p, rows=rows,
                rph=rph, cph=cph)


def _split_tap(kb: KernelBuilder, iv, k: int, dilation: int, stride: int, phases: int):
    """(phase, plane offset) of window tap ``iv * dilation``: its remainder and quotient by the
    stride, with a div/rem only where needed (the schedule's index analysis reads ``rem`` and
    ``div`` of a loop variable, not of ``iv * dilation``: vectorizing would refuse)."""
    if phases == 1:  # a 1-tap window, or the stride divides the dilation
        return 0, kb.imul(iv, dilation // stride) if k > 1 else 0
    tap = kb.imul(iv, dilation)
    if (k - 1) * dilation < stride:
        return tap, 0
    return kb.irem(tap, stride), kb.idiv(tap, stride)


def _flat_extras(kb: KernelBuilder, oh: int, ow: int) -> list | None:
    """The fused epilogue's extra inputs, addressable at ``[n, c, 0, p]`` (``p = oh * OW + ow``,
    numpy broadcasting over the output ``[N, C, OH, OW]``): one whose last two dimensions are
    the output plane is seen as ``[..., 1, OH * OW]`` (a view), one broadcast over both is used
    as is. None when an extra broadcasts over only one of them (it needs ``oh`` or ``ow``)."""
    extras = []
    for buf in kb.extra_inputs:
        shape = list(buf.type.get_shape())
        plane = ([1, 1] + shape)[-2:]
        if plane == [1, 1]:
            extras.append(buf)
        elif plane == [oh, ow]:
            extras.append(kb.row_major_view(buf, (shape[:-2] + [1, oh * ow])[-len(shape):], "extra_flat"))
        else:
            return None
    return extras


def _lower_conv2d_flat(op: GraphOp, name: str, plan: dict) -> func.FuncOp:
    """The flattened padded form (module docstring): phase copy, accumulation, copy out.

    Two shortcuts (module docstring): x read in place (no phase copy) when the plane is the
    padded plane, the output written in place (no outpad, no copy out) when WQ == OW."""
    x_t, w_t = (o.type for o in op.operands)
    out_t = op.results[0].type
    et = out_t.element_type
    g = plan
    n, c, o, wq = g["n"], g["c"], g["o"], g["wq"]
    sh, sw, rph, cph = g["sh"], g["sw"], g["rph"], g["cph"]
    oh, ow = g["oh"], g["ow"]
    kb = KernelBuilder(name, [x_t, w_t], [out_t], op.name, ["x", "w", "out"])
    extras = _flat_extras(kb, oh, ow) if wq == ow else None
    direct_out = extras is not None
    # direct: exactly the output plane (the schedule gives the tail of P its own tile);
    # padded: whole column tiles of throw-away columns
    p = oh * ow if direct_out else g["p"]
    last_read = p - 1 + (g["kh"] - 1) * g["dh"] // sh * wq + (g["kw"] - 1) * g["dw"] // sw
    rows = -(-(last_read + 1) // wq)  # phase-plane rows (the tail of P reads zeros)
    plane = rows * wq
    in_place = (sh == sw == 1 and g["pt"] == g["pl"] == 0 and wq == g["w"] and last_read < g["h"] * g["w"])
    zero = kb.const(0, et)
    if in_place:  # the input plane is the padded plane and no read passes its end
        xp = kb.row_major_view(kb.inputs[0], [n, c, g["h"] * g["w"]], "xflat")
    else:
        # heap scratch: megabytes for ResNet's early layers, too much for a thread's stack
        xp = kb.emit(memref.AllocOp.get(et, shape=[n, c, rph * cph * plane]))
        xp.name_hint = "xpad"
    if direct_out:
        outp = kb.row_major_view(kb.outputs[0], [n, o, p], "outflat")
    else:
        outp = kb.emit(memref.AllocOp.get(et, shape=[n, o, p]))
        outp.name_hint = "outpad"
    # 1. zero-padded phase planes: plane (a, b), row r, column q holds the padded input's
    #    (r * sh + a, q * sw + b) (one plane when the stride is 1)
    if not in_place:
        kb.copy_phase_planes(kb.inputs[0], xp, [("pad_n", n), ("pad_c", c)], list, list, h=g["h"], w=g["w"],
                             sh=sh, sw=sw, pt=g["pt"], pl=g["pl"], rph=rph, cph=cph, rows=rows, wq=wq,
                             zero=zero)
    # 2. accumulation over the flattened output: tap (kh, kw) of output p reads its phase
    #    plane at p + (kh*dh // sh) * wq + kw*dw // sw, stride 1 in p
    with kb.loops(["n", "oc", "p"], [n, o, p]) as (iv_n, iv_o, iv_p):
        kb.store(zero, outp, [iv_n, iv_o, iv_p])
        # groups: output channel oc reads input channels (oc // opg) * cpg + ic
        group_base = kb.imul(kb.idiv(iv_o, g["opg"]), g["cpg"]) if g["cpg"] != c else 0
        with kb.loops(["ic", "kh", "kw"], [g["cpg"], g["kh"], g["kw"]]) as (iv_ic, iv_kh, iv_kw):
            (row_phase, row_off), (col_phase, col_off) = (
                _split_tap(kb, iv, k, d, st, phases)
                for iv, k, d, st, phases in ((iv_kh, g["kh"], g["dh"], sh, rph), (iv_kw, g["kw"], g["dw"], sw, cph)))
            phase = kb.iadd(kb.imul(row_phase, cph), col_phase)
            offset = kb.iadd(kb.imul(row_off, wq), col_off)
            src = kb.iadd(iv_p, kb.iadd(kb.imul(phase, plane), offset))
            xv = kb.load(xp, [iv_n, kb.iadd(group_base, iv_ic), src])
            wv = kb.load(kb.inputs[1], [iv_o, iv_ic, iv_kh, iv_kw])
            acc = kb.load(outp, [iv_n, iv_o, iv_p])
            kb.store(kb.add(acc, kb.mul(xv, wv, et), et), outp, [iv_n, iv_o, iv_p])
        if direct_out and kb.epilogue is not None:  # the schedule moves it into the tile write-back
            value = kb.load(outp, [iv_n, iv_o, iv_p])
            value = kb.epilogue.apply(kb, value, [iv_n, iv_o, 0, iv_p], extras)
            kb.store(value, outp, [iv_n, iv_o, iv_p])
    # 3. the valid columns to the output (fused elementwise epilogue here)
    if not direct_out:
        with kb.loops(["out_n", "out_c", "out_h", "out_w"], [n, o, oh, ow]) as ivs:
            iv_n, iv_o, iv_oh, iv_ow = ivs
            value = kb.load(outp, [iv_n, iv_o, kb.iadd(kb.imul(iv_oh, wq), iv_ow)])
            kb.store(kb.epilogue_value(value, ivs), kb.outputs[0], ivs)
    for scratch in ([] if in_place else [xp]) + ([] if direct_out else [outp]):
        kb.emit(memref.DeallocOp.get(scratch))
    return kb.finish(CONV2D_FLAT)


@dataclass(frozen=True)
class ConvPlan:
    """How a conv2d is lowered: its kernel form (kernels/forms.py) and that form's sizes.

    ``flat``: the flattened padded form's sizes (:func:`flat_conv_plan`; also the grouped
    and depthwise forms'); ``extra``: the grouped / depthwise form's own (conv_grouped.py)."""

    form: str
    flat: dict | None = None
    extra: dict | None = None


def plan_conv2d(op: GraphOp, options: KernelOptions) -> ConvPlan:
    """The form of `op`'s kernel: grouped, depthwise, flat (the CPU forms, when they
    apply), else the direct form."""
    from dlc.lowering.kernels.conv_grouped import depthwise_plan, grouped_plan

    flat = flat_conv_plan(op, options)
    if flat is None:
        return ConvPlan(CONV2D_DIRECT)
    if (extra := grouped_plan(flat)) is not None:
        return ConvPlan(CONV2D_GROUPED, flat, extra)
    if (extra := depthwise_plan(flat)) is not None:
        return ConvPlan(CONV2D_DEPTHWISE, flat, extra)
    return ConvPlan(CONV2D_FLAT, flat)


@kernel("graph.conv2d", options=True)
def lower_conv2d(op: GraphOp, name: str, options: KernelOptions) -> func.FuncOp:
    plan = plan_conv2d(op, options)
    if plan.form in (CONV2D_GROUPED, CONV2D_DEPTHWISE):  # kernels/conv_grouped.py
        from dlc.lowering.kernels.conv_grouped import lower_conv2d_depthwise, lower_conv2d_grouped

        lower = lower_conv2d_grouped if plan.form == CONV2D_GROUPED else lower_conv2d_depthwise
        return lower(op, name, plan.flat, plan.extra)
    if plan.form == CONV2D_FLAT:
        return _lower_conv2d_flat(op, name, plan.flat)
    x_t, w_t = (o.type for o in op.operands)
    out_t = op.results[0].type
    et = out_t.element_type
    a = op.attrs
    dl, kl = a.data_layout, a.kernel_layout
    groups = a.groups
    (sh, sw), (dh, dw), (pt, pl, _, _) = _window_attrs(a)
    xs, ws, os_ = x_t.get_shape(), w_t.get_shape(), out_t.get_shape()
    n, c, h, wd = (xs[0], xs[3], xs[1], xs[2]) if dl == "NHWC" else xs
    o, cpg, kh, kw = (ws[3], ws[2], ws[0], ws[1]) if kl == "HWIO" else ws
    oh, ow = (os_[1], os_[2]) if dl == "NHWC" else (os_[2], os_[3])
    opg = o // groups
    del c

    kb = KernelBuilder(name, [x_t, w_t], [out_t], op.name, ["x", "w", "out"])
    with kb.loops(["n", "oc", "oh", "ow"], [n, o, oh, ow]) as (iv_n, iv_o, iv_oh, iv_ow):
        out_idx = _nchw_index(dl, iv_n, iv_o, iv_oh, iv_ow)
        kb.store(kb.const(0, et), kb.outputs[0], out_idx)
        group_base = kb.imul(kb.idiv(iv_o, opg), cpg) if groups > 1 else 0
        with kb.loops(["ic", "kh", "kw"], [cpg, kh, kw]) as (iv_ic, iv_kh, iv_kw):
            # padding: a clamped (always valid) load selected against zero, no
            # branch, so the schedule can vectorize and register-accumulate
            ih, iw, inside = kb.window_tap((iv_oh, iv_ow), (iv_kh, iv_kw), strides=(sh, sw), dilations=(dh, dw),
                                           pads=(pt, pl), in_hw=(h, wd), out_hw=(oh, ow), kernel=(kh, kw))
            ci = kb.iadd(group_base, iv_ic)
            xv = kb.load_or(kb.inputs[0], _nchw_index(dl, iv_n, ci, ih, iw), inside, kb.const(0, et))
            wv = kb.load(kb.inputs[1], _oihw_index(kl, iv_o, iv_ic, iv_kh, iv_kw))
            acc = kb.load(kb.outputs[0], out_idx)
            kb.store(kb.add(acc, kb.mul(xv, wv, et), et), kb.outputs[0], out_idx)
        kb.apply_epilogue(out_idx)  # fused elementwise ops (fuse-ops)
    return kb.finish(CONV2D_DIRECT)


@kernel("graph.conv_transpose2d")
def lower_conv_transpose2d(op: GraphOp, name: str) -> func.FuncOp:
    x_t, w_t = (o.type for o in op.operands)
    out_t = op.results[0].type
    et = out_t.element_type
    groups = op.groups
    (sh, sw), (dh, dw), (pt, pl, _, _) = _window_attrs(op.attrs)
    n, c, h, wd = x_t.get_shape()
    _, opg, kh, kw = w_t.get_shape()
    _, o, oh, ow = out_t.get_shape()
    cpg = c // groups

    kb = KernelBuilder(name, [x_t, w_t], [out_t], op.name, ["x", "w", "out"])
    with kb.loops(["n", "oc", "oh", "ow"], [n, o, oh, ow]) as (iv_n, iv_o, iv_oh, iv_ow):
        out_idx = [iv_n, iv_o, iv_oh, iv_ow]
        kb.store(kb.const(0, et), kb.outputs[0], out_idx)
        group = kb.idiv(iv_o, opg) if groups > 1 else 0
        oc_in_group = kb.irem(iv_o, opg) if groups > 1 else iv_o
        with kb.loops(["ic", "kh", "kw"], [cpg, kh, kw]) as (iv_ic, iv_kh, iv_kw):
            # t = y + pad - k * dilation must be a non-negative multiple of the stride
            th = kb.isub(kb.iadd(iv_oh, pt), kb.imul(iv_kh, dh))
            tw = kb.isub(kb.iadd(iv_ow, pl), kb.imul(iv_kw, dw))
            conds = kb.in_range(th, 0, h * sh, pt - (kh - 1) * dh, oh - 1 + pt)
            conds += kb.in_range(tw, 0, wd * sw, pl - (kw - 1) * dw, ow - 1 + pl)
            # the remainder is taken after the bounds checks pass (t >= 0)
            def body():
                inner = []
                if sh > 1:
                    inner.append(kb.icmp("eq", kb.irem(th, sh), 0))
                if sw > 1:
                    inner.append(kb.icmp("eq", kb.irem(tw, sw), 0))

                def accumulate():
                    ih, iw = kb.idiv(th, sh), kb.idiv(tw, sw)
                    ci = kb.iadd(kb.imul(group, cpg), iv_ic)
                    xv = kb.load(kb.inputs[0], [iv_n, ci, ih, iw])
                    wv = kb.load(kb.inputs[1], [ci, oc_in_group, iv_kh, iv_kw])
                    acc = kb.load(kb.outputs[0], out_idx)
                    kb.store(kb.add(acc, kb.mul(xv, wv, et), et), kb.outputs[0], out_idx)

                if inner:
                    with kb.if_(kb.all_of(inner)):
                        accumulate()
                else:
                    accumulate()

            if conds:
                with kb.if_(kb.all_of(conds)):
                    body()
            else:
                body()
    return kb.finish()
