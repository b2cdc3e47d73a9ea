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
"""

from __future__ import annotations

from xdsl.dialects import func

from dlc.dialects.graph import _window_attrs
from dlc.dialects.graph_base import GraphOp
from dlc.lowering.kernels import kernel
from dlc.lowering.kernels.builder import KernelBuilder


def _nchw_index(layout: str, n, c, h, w):
    return [n, h, w, c] if layout == "NHWC" else [n, c, h, w]


def _oihw_index(layout: str, o, i, h, w):
    return [h, w, i, o] if layout == "HWIO" else [o, i, h, w]


@kernel("graph.conv2d")
def lower_conv2d(op: GraphOp, name: str) -> func.FuncOp:
    x_t, w_t = (o.type for o in op.operands)
    out_t = op.results[0].type
    et = out_t.element_type
    a = op.attrs
    dl, kl = a.str("data_layout", "NCHW"), a.str("kernel_layout", "OIHW")
    groups = a.int("groups", 1)
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
            ih = kb.iadd(kb.iadd(kb.imul(iv_oh, sh), kb.imul(iv_kh, dh)), -pt)
            iw = kb.iadd(kb.iadd(kb.imul(iv_ow, sw), kb.imul(iv_kw, dw)), -pl)
            # padding: a clamped (always valid) load selected against zero, no
            # branch, so the schedule can vectorize and register-accumulate
            ih, h_ok = kb.clamp_index(ih, 0, h, -pt, (oh - 1) * sh + (kh - 1) * dh - pt)
            iw, w_ok = kb.clamp_index(iw, 0, wd, -pl, (ow - 1) * sw + (kw - 1) * dw - pl)
            inside = kb.all_of([c for c in (h_ok, w_ok) if c is not None])
            ci = kb.iadd(group_base, iv_ic)
            xv = kb.load_or(kb.inputs[0], _nchw_index(dl, iv_n, ci, ih, iw), inside, kb.const(0, et))
            wv = kb.load(kb.inputs[1], _oihw_index(kl, iv_o, iv_ic, iv_kh, iv_kw))
            acc = kb.load(kb.outputs[0], out_idx)
            kb.store(kb.add(acc, kb.mul(xv, wv, et), et), kb.outputs[0], out_idx)
        kb.apply_epilogue(out_idx)  # fused elementwise ops (fuse-ops)
    return kb.finish()


@kernel("graph.conv_transpose2d")
def lower_conv_transpose2d(op: GraphOp, name: str) -> func.FuncOp:
    x_t, w_t = (o.type for o in op.operands)
    out_t = op.results[0].type
    et = out_t.element_type
    groups = op.attrs.int("groups", 1)
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
