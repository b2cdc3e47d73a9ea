"""Kernels of the channel-blocked pools (alter-op-layout): max_pool2d_nchwc and
avg_pool2d_nchwc on ``[N, C/b, H, W, b]``, and depthwise_conv2d_nchwc, which has
the same loop form (a KH x KW window per channel, channels the vector).

pool.py's kernels take NCHW or NHWC; in NCHW{b}c the block of ``b`` channels
is the contiguous innermost dimension, so the natural vector is that block,
not a row of output columns::

    for n, cb, oh, ow:
      tap indices (kh, kw unrolled): ih, iw clamped into the input, inside = not padding
      for c:  acc = identity                                   (lowest for max, 0 for sums)
              acc = max/add(acc, inside ? x[n, cb, ih, iw, c] : identity)   per tap
              out[n, cb, oh, ow, c] = epilogue(acc [/ count(oh, ow)])

The ``c`` loop is stride-1 in the input and the output and carries no
reduction, so the default schedule (defaults_nchwc.py) vectorizes it as one
16-lane vector and the accumulator stays in a register. Windows of more than
MAX_UNROLLED_TAPS taps (a global pool over 13 x 13) keep a (kh, kw) loop
nest that accumulates in the output instead. Each output element takes its
taps in (kh, kw) order, like pool.py. The tap index is clamped and the loaded
value selected against the identity (branch-free, as in pool.py). The avg
divisor depends only on (oh, ow) and factors into a row count times a column
count (a select chain over runs of equal values: :func:`pool.static_table`).

Padded channels (zeros after a blocked conv) stay zero: every window sees at
least one input position (the op's shape rule), so max and mean of zeros are 0.
"""

from __future__ import annotations

from xdsl.dialects import func

from dlc.dialects.graph import _window_attrs
from dlc.dialects.graph_base import GraphOp
from dlc.lowering.kernels import kernel
from dlc.lowering.kernels.builder import KernelBuilder, lowest
from dlc.lowering.kernels.forms import POOL2D_NCHWC
from dlc.lowering.kernels.pool import static_table


def _taps_inside(out: int, k: int, stride: int, dil: int, pad: int, lo: int, hi: int) -> list[int]:
    """Per output index: how many of its window taps land in [lo, hi) (input coordinates)."""
    return [sum(1 for t in range(k) if lo <= o * stride - pad + t * dil < hi) for o in range(out)]


MAX_UNROLLED_TAPS = 64  # larger windows keep a (kh, kw) loop nest (see _pool_loops)


def _pool_nchwc(op: GraphOp, name: str, is_max: bool) -> func.FuncOp:
    x_t, out_t = op.operands[0].type, op.results[0].type
    et = out_t.element_type
    a = op.attrs
    kh, kw = a.kernel
    (sh, sw), (dh, dw), (pt, pl, _, _) = _window_attrs(a)
    n, cb, h, w, b = x_t.get_shape()
    _, _, oh, ow, _ = out_t.get_shape()
    identity_value = lowest(et) if is_max else 0

    def tap(iv_oh, iv_ow, i, j):
        """(clamped ih, clamped iw, inside-the-input condition or None) of tap (i, j)."""
        return kb.window_tap((iv_oh, iv_ow), (i, j), strides=(sh, sw), dilations=(dh, dw),
                             pads=(pt, pl), in_hw=(h, w), out_hw=(oh, ow), kernel=(kh, kw))

    def combine(acc, ih, iw, inside, iv_n, iv_cb, iv_c):
        # outside taps contribute the identity (lowest for max, 0 for sums)
        xv = kb.load_or(kb.inputs[0], [iv_n, iv_cb, ih, iw, iv_c], inside, kb.const(identity_value, et))
        return kb.max(acc, xv, et) if is_max else kb.add(acc, xv, et)

    kb = KernelBuilder(name, [x_t], [out_t], op.name, ["x", "out"])
    with kb.loops(["n", "cb", "oh", "ow"], [n, cb, oh, ow]) as (iv_n, iv_cb, iv_oh, iv_ow):
        count = None if is_max else _window_count(kb, op, et, iv_oh, iv_ow, (h, w), (oh, ow))
        if kh * kw <= MAX_UNROLLED_TAPS:
            # the window unrolled inside the channel loop: the sum/max stays in a register
            taps = [tap(iv_oh, iv_ow, i, j) for i in range(kh) for j in range(kw)]
            with kb.loop("c", b) as iv_c:
                acc = kb.const(identity_value, et)
                for ih, iw, inside in taps:
                    acc = combine(acc, ih, iw, inside, iv_n, iv_cb, iv_c)
                out_idx = [iv_n, iv_cb, iv_oh, iv_ow, iv_c]
                if count is not None:
                    acc = kb.div(acc, count, et)
                kb.store(kb.epilogue_value(acc, out_idx), kb.outputs[0], out_idx)
        else:
            _pool_loops(kb, (kh, kw), b, identity_value, et, tap, combine, (iv_n, iv_cb, iv_oh, iv_ow), count)
    return kb.finish(POOL2D_NCHWC)


def _pool_loops(kb: KernelBuilder, k, b, identity_value, et, tap, combine, outer, count) -> None:
    """A large window: the taps in a (kh, kw) loop nest accumulating in the output."""
    iv_n, iv_cb, iv_oh, iv_ow = outer
    with kb.loop("c", b) as iv_c:
        kb.store(kb.const(identity_value, et), kb.outputs[0], [iv_n, iv_cb, iv_oh, iv_ow, iv_c])
    with kb.loops(["kh", "kw"], list(k)) as (iv_kh, iv_kw):
        ih, iw, inside = tap(iv_oh, iv_ow, iv_kh, iv_kw)
        with kb.loop("c", b) as iv_c:
            out_idx = [iv_n, iv_cb, iv_oh, iv_ow, iv_c]
            acc = kb.load(kb.outputs[0], out_idx)
            kb.store(combine(acc, ih, iw, inside, iv_n, iv_cb, iv_c), kb.outputs[0], out_idx)
    if count is not None or kb.epilogue is not None:
        with kb.loop("c", b) as iv_c:
            out_idx = [iv_n, iv_cb, iv_oh, iv_ow, iv_c]
            if count is not None:
                total = kb.load(kb.outputs[0], out_idx)
                kb.store(kb.div(total, count, et), kb.outputs[0], out_idx)
            kb.apply_epilogue(out_idx)  # fused elementwise ops (fuse-ops)


def _window_count(kb: KernelBuilder, op: GraphOp, et, iv_oh, iv_ow, hw, ohw):
    """avg_pool's divisor at (oh, ow), in the (float) element type: the counted taps
    (inside the input, or inside the padding too with count_include_pad; never the
    ceil-mode overhang)."""
    a = op.attrs
    (h, w), (oh, ow) = hw, ohw
    kh, kw = a.kernel
    (sh, sw), (dh, dw), (pt, pl, pb, pr) = _window_attrs(a)
    include = a.count_include_pad
    rows = _taps_inside(oh, kh, sh, dh, pt, -pt if include else 0, h + pb if include else h)
    cols = _taps_inside(ow, kw, sw, dw, pl, -pl if include else 0, w + pr if include else w)
    rows, cols = [float(max(r, 1)) for r in rows], [float(max(c, 1)) for c in cols]
    if len(set(rows)) == 1 and len(set(cols)) == 1:
        return kb.const(rows[0] * cols[0], et)
    return kb.mul(static_table(kb, iv_oh, rows, et), static_table(kb, iv_ow, cols, et), et)


@kernel("graph.max_pool2d_nchwc")
def lower_max_pool2d_nchwc(op: GraphOp, name: str) -> func.FuncOp:
    return _pool_nchwc(op, name, is_max=True)


@kernel("graph.avg_pool2d_nchwc")
def lower_avg_pool2d_nchwc(op: GraphOp, name: str) -> func.FuncOp:
    return _pool_nchwc(op, name, is_max=False)


@kernel("graph.depthwise_conv2d_nchwc")
def lower_depthwise_conv2d_nchwc(op: GraphOp, name: str) -> func.FuncOp:
    """Depthwise conv on NCHW{b}c in the pools' loop form (and schedule): per output
    position the KH x KW taps unrolled inside the channel loop ``c``, which the pool
    schedule keeps one whole vector; the sum stays in a register and the fused
    epilogue (bias, relu6) is applied at the store. alter-op-layout pads the input
    explicitly, so the taps have no bounds checks then (``window_tap`` clamps otherwise)."""
    x_t, w_t = (o.type for o in op.operands)
    out_t = op.results[0].type
    et = out_t.element_type
    (sh, sw), (dh, dw), (pt, pl, _, _) = _window_attrs(op.attrs)
    n, cb, h, w, b = x_t.get_shape()
    _, _, kh, kw, _, _ = w_t.get_shape()
    _, _, oh, ow, _ = out_t.get_shape()
    kb = KernelBuilder(name, [x_t, w_t], [out_t], op.name, ["x", "w", "out"])
    with kb.loops(["n", "cb", "oh", "ow"], [n, cb, oh, ow]) as (iv_n, iv_cb, iv_oh, iv_ow):
        taps = [(i, j, *kb.window_tap((iv_oh, iv_ow), (i, j), strides=(sh, sw), dilations=(dh, dw),
                                      pads=(pt, pl), in_hw=(h, w), out_hw=(oh, ow), kernel=(kh, kw)))
                for i in range(kh) for j in range(kw)]
        zero = kb.index(0)
        with kb.loop("c", b) as iv_c:
            acc = kb.const(0, et)
            for i, j, ih, iw, inside in taps:
                xv = kb.load_or(kb.inputs[0], [iv_n, iv_cb, ih, iw, iv_c], inside, kb.const(0, et))
                wv = kb.load(kb.inputs[1], [iv_cb, zero, kb.index(i), kb.index(j), zero, iv_c])
                acc = kb.add(acc, kb.mul(xv, wv, et), et)
            out_idx = [iv_n, iv_cb, iv_oh, iv_ow, iv_c]
            kb.store(kb.epilogue_value(acc, out_idx), kb.outputs[0], out_idx)
    return kb.finish(POOL2D_NCHWC)
