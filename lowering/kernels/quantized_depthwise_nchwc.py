"""The int8 depthwise convolution of the channel-blocked layout (form
``qdepthwise_nchwc``): graph.qdepthwise_conv2d_nchwc on u8/s8 NCHW{b}c activations, the
``b`` channels of a block in the vector lanes, the requantization fused into the write-back.

What the kernel computes (the schedule, ``lowering/schedule/defaults_quantized.py``,
addresses the loops by these names)::

    for n, cb, oh, owt:                          one register tile: T output pixels of a row
      for c:                                     the block's b channels (one i32 vector of 16)
        wv[kh][kw] = wq[cb, kh, kw, c]           the taps' weights, loaded once for T pixels
        for t (T, unrolled when generated):      acc_t = bias'[cb, c]
          for kh, kw (unrolled when generated):  acc_t += ext(inside ? x[n, cb, ih, iw, c] : zx) * wv[kh][kw]
          out[n, cb, oh, T owt + t, c] = clamp(zo + requant(acc_t))

    with ``ih = oh*sh + kh*dh - pt``, ``iw = (T owt + t)*sw + kw*dw - pl`` clamped into the
    input (``KernelBuilder.window_tap``): the op's padding is x's zero point, selected per
    tap, branch-free; only the checks that can fail are emitted (none without padding).

The T accumulators and the KH x KW weight vectors are SSA values of one straight-line
body (registers); the ``c`` loop is the vector (``vpmovzxbd`` / ``vpmulld`` /
``vpaddd`` per tap and pixel). In-kernel padding rather than alter-op-layout's graph.pad:
the u8 pad kernels before each depthwise cost 13-18 % of MobileNet-V2's int8 run (a copy
kernel of its own per layer), more than the selects. A row whose width is not a multiple of T gets a second nest
(loops suffixed ``_u``) for its last pixels.

Compile-time constants (weights store): ``wq`` ``[CB, KH, KW, b]`` i32 (the weight
minus its zero point, per block, zeros in the padded channels), and per channel
``[CB, b]``: ``bias`` = ``-zx * sum(wq)`` (x's zero-point compensation: ``sum (x - zx)
wq = sum x wq - zx sum wq``; a constant op bias is added in; a run-time bias is read at
the write-back), and the requantization tables of ``requant.channel_tables``: ``mult``
(i32) with the shift tables of TFLite's single-rounding ``MultiplyByQuantizedMultiplier``,
or an f32 ``scale`` for an op with ``requant = "float"``, as the op's reference computes
them (``dialects/graph/quantized.py``), emitted by ``requant.requantize_channel``. Padded channels have zero weights, bias and
multiplier: they hold the clamped output zero point, as the op's reference says.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import f32, IntegerType, MemRefType, i32, i64

from dlc.dialects import tloop
from dlc.lowering.kernels import kernel
from dlc.lowering.kernels.builder import KernelBuilder
from dlc.lowering.kernels.forms import QDEPTHWISE_NCHWC
from dlc.lowering.kernels.quantized_fast import _constant, _signed, _wrap_i32
from dlc.lowering.kernels.requant import CHANNEL_KEYS, channel_tables, requantize_channel

I8 = IntegerType(8)
MAX_COLUMNS = 8  # pixels of the register tile (T accumulators + KH x KW weights in zmm)


def tile_columns(ow: int) -> int:
    """T: a divisor of the row in 8..4 when there is one (no tail nest), else min(row, 8)."""
    return next((t for t in (8, 7, 6, 5, 4) if ow % t == 0), min(ow, MAX_COLUMNS))


def depthwise_constants(op, w: np.ndarray, cb: int, block: int) -> dict[str, np.ndarray]:
    """``wq`` [CB, KH, KW, b] and the per-channel [CB, b] bias' and requantization tables
    (``requant.channel_tables``; zeros in the padded channels)."""
    c, _, kh, kw = w.shape
    channels = cb * block
    zw = np.broadcast_to(np.asarray(op.w_zero_point, np.int64), (c,))
    wq = w.astype(np.int64).reshape(c, kh, kw) - zw[:, None, None]
    full = np.zeros((channels, kh, kw), np.int64)
    full[:c] = wq
    packed = np.ascontiguousarray(full.reshape(cb, block, kh, kw).transpose(0, 2, 3, 1)).astype(np.int32)
    bias = np.zeros(channels, np.int64)
    bias[:c] = -int(op.x_zero_point[0]) * wq.reshape(c, -1).sum(axis=1)
    tables = channel_tables(op, c, channels)
    return {"wq": packed, "bias": _wrap_i32(bias).reshape(cb, block),
            **{key: table.reshape(cb, block) for key, table in tables.items()}}


@kernel("graph.qdepthwise_conv2d_nchwc")
def lower_qdepthwise_conv2d_nchwc(op, name: str) -> func.FuncOp:
    from dlc.lowering.lower_to_loops import LoweringError
    from dlc.weights import store_of

    x_t, out_t = op.operands[0].type, op.results[0].type
    w = _constant(op.operands[1])
    if w is None:
        raise LoweringError(op, "graph.qdepthwise_conv2d_nchwc needs a constant weight (graph.constant / graph.weight)")
    n, cb, _h, _w, block = x_t.get_shape()
    _, _, oh, ow, _ = out_t.get_shape()
    try:
        consts = depthwise_constants(op, w, cb, block)
    except ValueError as err:
        raise LoweringError(op, f"graph.qdepthwise_conv2d_nchwc: {err}") from None
    bias_value = _constant(op.operands[2]) if len(op.operands) == 3 else None
    if bias_value is not None:  # a constant bias joins the compensation (wrapping adds)
        folded = consts["bias"].astype(np.int64).reshape(-1)
        folded[: bias_value.shape[0]] += bias_value.astype(np.int64)
        consts["bias"] = _wrap_i32(folded).reshape(cb, block)
    store = store_of(op)
    operands = list(op.operands)
    kb = KernelBuilder(name, [v.type for v in operands], [out_t], op.name,
                       ["x", "w", "b"][: len(operands)] + ["out"])
    buf = {}
    for key, array in consts.items():
        et = {np.dtype(np.int32): i32, np.dtype(np.int64): i64, np.dtype(np.float32): f32}[array.dtype]
        buf[key] = kb.emit(tloop.WeightOp(store.add(f"{name}.{key}", array), MemRefType(et, list(array.shape))))
        buf[key].name_hint = key
    run_bias = kb.inputs[2] if len(operands) == 3 and bias_value is None else None
    cols = tile_columns(ow)
    full = ow // cols
    with kb.loops(["n", "cb", "oh", "owt"], [n, cb, oh, full]) as (iv_n, iv_cb, iv_oh, iv_t):
        _tile(kb, op, buf, run_bias, (iv_n, iv_cb, iv_oh), kb.imul(iv_t, cols), cols, "")
    if ow % cols:  # the row's last pixels: a nest of its own (scheduled like the main one)
        with kb.loops(["n_u", "cb_u", "oh_u"], [n, cb, oh]) as (iv_n, iv_cb, iv_oh):
            _tile(kb, op, buf, run_bias, (iv_n, iv_cb, iv_oh), full * cols, ow % cols, "_u")
    return kb.finish(QDEPTHWISE_NCHWC)


def _tile(kb: KernelBuilder, op, buf, run_bias, outer, ow0, cols: int, suffix: str) -> None:
    """T pixels x the block's channels: weights once, T accumulators, the write-back."""
    from dlc.dialects.graph.conv import _window_attrs

    iv_n, iv_cb, iv_oh = outer
    x, out = kb.inputs[0], kb.outputs[0]
    _, _, h, wd, block = x.type.get_shape()
    _, _, oh, ow, _ = out.type.get_shape()
    c_total = x.type.get_shape()[1] * block
    _, _, kh, kw = op.operands[1].type.get_shape()
    (sh, sw), (dh, dw), (pt, pl, _, _) = _window_attrs(op.attrs)
    zx = int(op.x_zero_point[0])
    fill = kb.const(zx - 256 if zx > 127 else zx, I8)  # x's zero point (real 0), as stored
    widen = arith.ExtSIOp if _signed(op.operands[0].type.element_type) else arith.ExtUIOp  # (memrefs are signless)
    lo, hi = op.out_range()
    zo = int(op.y_zero_point[0])
    e = kb.emit
    with kb.loop(f"c{suffix}", block) as iv_c:
        taps = [(i, j, kb.load(buf["wq"], [iv_cb, i, j, iv_c]))
                for i in range(kh) for j in range(kw)]
        start = kb.load(buf["bias"], [iv_cb, iv_c])
        tables = {key: kb.load(buf[key], [iv_cb, iv_c]) for key in CHANNEL_KEYS if key in buf}
        if run_bias is not None:
            from dlc.lowering.kernels.quantized_nchwc import _add_bias

            start = _add_bias(kb, start, run_bias, kb.iadd(kb.imul(iv_cb, block), iv_c), c_total)
        accs = []
        for t in range(cols):
            acc = start
            for i, j, wv in taps:
                # padding: the tap's index clamped, x's zero point selected outside (no
                # checks are emitted where none can fail: an unpadded op has none)
                ih, iw, inside = kb.window_tap((iv_oh, kb.iadd(ow0, t)), (i, j), strides=(sh, sw),
                                               dilations=(dh, dw), pads=(pt, pl), in_hw=(h, wd),
                                               out_hw=(oh, ow), kernel=(kh, kw))
                xv = e(widen(kb.load_or(x, [iv_n, iv_cb, ih, iw, iv_c], inside, fill), i32))
                acc = e(arith.AddiOp(acc, e(arith.MuliOp(xv, wv))))
            accs.append(acc)
        for t, acc in enumerate(accs):
            q = requantize_channel(kb, acc, tables, zo, lo, hi)
            kb.store(e(arith.TruncIOp(q, I8)), out, [iv_n, iv_cb, iv_oh, kb.iadd(ow0, t), iv_c])
