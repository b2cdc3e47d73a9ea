"""The integer GEMM kernel (form ``qgemm``): u8 x s8 products, i32 accumulators, fixed-point
requantization; quantized dense / matmul with a constant weight and conv2d (as a GEMM over
an im2col'd activation panel) share it.

``out[m, n] = requant(sum_k (a[m, k] - za) * (w[k, n] - zw[n]) + bias[n])``

What the kernel computes, in five loop nests (the schedule, ``lowering/schedule/
defaults_quantized.py``, addresses them by these names)::

    pk_m, pk_k   ap2[m, k] = 0 on the padded rows / columns (Mp x Kp: MR- and 4-aligned)
    pa_*         ap2[m, k] = u8(A(m, k))       the activation panel, u8: an s8 activation
                                              is shifted by +128 (xor 0x80), conv padding
                                              holds the zero point
    z_m, z_n     acc[m, n] = 0                 i32 accumulators (Mp x Np)
    m, nb, nl, k4, j                           acc[m, 16 nb + nl] +=
                                                 zext(ap[m, k4, j]) * sext(wp[nb, k4, nl, j])
    o_*          out[..] = clamp(zo + requant(acc[m, n] + bias'[n]))

``ap`` is ``ap2`` seen as [Mp][Kp/4][4]: 4 consecutive k of one row, the 4 bytes one
``vpdpbusd`` lane broadcast reads; the weights are packed at compile time into
``wp[Np/16][Kp/4][16][4]`` (4 consecutive k of one output channel contiguous, 16 channels
a 64-byte vector), zero-padded, s8 (u8 weights are shifted by -128 with their zero
point). The standard trick folds every zero-point and shift term into the bias at
compile time: with ``ua = a + s`` (s = 128 for s8 activations, else 0),
``sum (a - za)(w - zw) = sum ua*w - (s + za) colsum(w)`` when ``zw == 0``; a weight zero
point other than 0 (after the u8 shift) would need the activations' row sums and is
not this kernel's: ``plan_qgemm`` returns None and the plain kernel applies.

Requantization (an op with ``requant = "float"``: f32, ``requant.requantize_float``; else)
is gemmlowp / TFLite's ``MultiplyByQuantizedMultiplier`` (a Q31 multiplier
and a shift per output channel: ``SaturatingRoundingDoublingHighMul`` then
``RoundingDivideByPOT``), computed in i64 so the write-back vectorizes; the multipliers
come from ``dialects/graph/quantized.py``'s requant parameters (the same function the
ops' numpy references use), so the kernel equals them bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import DenseArrayBase, f32, IntegerType, MemRefType, i32, i64
from xdsl.ir import SSAValue

from dlc.dialects import tloop
from dlc.lowering.kernels import requant as rq
from dlc.lowering.kernels.builder import KernelBuilder
from dlc.lowering.kernels.forms import QGEMM, QGEMM_TILE_ATTR, stamp_weight_range

LANES, GROUP = 16, 4
I8 = IntegerType(8)


@dataclass(frozen=True)
class QGemmPlan:
    """One integer GEMM: sizes, quantization parameters and the packed constants.

    ``w`` is the [K, N] weight as integers (its own values, s8 or u8); ``w_zero`` its zero
    point(s); ``multiplier`` / ``shift`` per output channel (TFLite convention: shift > 0
    shifts left); ``out_bits`` 8 (u8 / s8 by ``out_signed``) or 32 (no requantization:
    the raw i32 sums plus bias, as QLinear*'s i32 tests and MatMulInteger want);
    ``clamp`` the output range (a fused relu raises the low end to the zero point)."""

    m: int
    n: int
    k: int
    a_signed: bool
    a_zero: int
    w: np.ndarray
    w_unsigned: bool
    w_zero: np.ndarray
    multiplier: np.ndarray
    shift: np.ndarray
    out_zero: int
    out_signed: bool
    out_bits: int = 8
    clamp: tuple[int, int] | None = None
    accumulators: int = 16  # the target's 16-lane accumulator budget (KernelOptions)
    float_scale: np.ndarray | None = None  # f32 per channel: the op's requant = "float" rounding

    @property
    def m_pad(self) -> int:
        return -(-self.m // self.tile[0]) * self.tile[0]

    @property
    def k_pad(self) -> int:
        return -(-self.k // GROUP) * GROUP

    @property
    def n_pad(self) -> int:
        return -(-self.n // (LANES * self.tile[1])) * LANES * self.tile[1]

    @property
    def tile(self) -> tuple[int, int]:
        """(rows, 16-column vectors) of the register tile: with 16 accumulators (AVX-512)
        8 x 2 (enough to hide vpdpbusd's latency on two ports) when N has two vectors, else
        12 x 1; with fewer (AVX2's 16 ymm: 4) one vector of that many rows. The kernel
        states it (QGEMM_TILE_ATTR) for its schedule."""
        if self.accumulators < 12:
            return (self.accumulators, 1)
        return (8, 2) if self.n > LANES and self.accumulators >= 16 else (12, 1)


def pack_constants(plan: QGemmPlan) -> dict[str, np.ndarray]:
    """The compile-time arrays the kernel reads: packed weights and per-channel constants."""
    w = plan.w.astype(np.int64)
    zw = np.broadcast_to(np.asarray(plan.w_zero, np.int64), (plan.n,))
    if plan.w_unsigned:  # u8 weights: shifted to s8 with their zero point
        w, zw = w - 128, zw - 128
    if np.any(zw != 0):
        raise ValueError("qgemm needs a zero weight zero point (after the u8 shift)")
    kp, np_ = plan.k_pad, plan.n_pad
    full = np.zeros((kp, np_), np.int64)
    full[: plan.k, : plan.n] = w
    wp = full.reshape(kp // GROUP, GROUP, np_ // LANES, LANES).transpose(2, 0, 3, 1)
    shift_a = 128 if plan.a_signed else 0
    colsum = w.sum(axis=0)
    bias_eff = -(shift_a + plan.a_zero) * colsum  # + the op's bias, read at run time
    mult = np.broadcast_to(np.asarray(plan.multiplier, np.int64), (plan.n,))
    shift = np.broadcast_to(np.asarray(plan.shift, np.int64), (plan.n,))
    packed = {"wp": np.ascontiguousarray(wp).astype(np.int8), "bias": _wrap_i32(bias_eff)}
    if plan.float_scale is not None:
        return {**packed, "scale": np.broadcast_to(np.asarray(plan.float_scale, np.float32), (plan.n,)).copy()}
    return {
        **packed,
        "mult": mult.astype(np.int32),
        "lshift": np.maximum(shift, 0).astype(np.int32),
        "rshift": np.maximum(-shift, 0).astype(np.int32),
    }


def _wrap_i32(x: np.ndarray) -> np.ndarray:
    return ((x + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int32)


# A(kb, m_ivs, k_ivs) loads one activation; pack loops are (names, extents, m index, k index)
@dataclass(frozen=True)
class ActivationPanel:
    """How the pack nest reads the activation: loops over (m digits..., k digits...),
    the flattened row m and column k as affine functions of them, and the loaded value
    (or None where it reads padding: the zero point)."""

    names: list[str]
    extents: list[int]
    row: Callable  # (kb, ivs) -> Index
    col: Callable  # (kb, ivs) -> Index
    load: Callable  # (kb, ivs) -> SSAValue (i8)


def build_qgemm(kb: KernelBuilder, plan: QGemmPlan, weights: dict[str, str],
                panel: ActivationPanel, write: Callable, bias: SSAValue | None) -> func.FuncOp:
    """Emit the five nests into `kb` (inputs: the activation; output 0: the result).
    `weights`: constant name -> weights-store name; `write(kb, acc_value_fn)` emits the
    write-back nest (``o_*`` loops) calling ``acc_value_fn(m, n)`` for the final value."""
    mp, kp, np_ = plan.m_pad, plan.k_pad, plan.n_pad
    k4 = kp // GROUP
    types = {"wp": I8, "scale": f32}
    wbuf = {key: kb.emit(tloop.WeightOp(name, _memref(_SHAPES[key](plan), types.get(key, i32))))
            for key, name in weights.items()}
    for key, value in wbuf.items():
        value.name_hint = key
    ap2 = kb.emit(memref.AllocOp.get(I8, shape=[mp, kp]))
    ap2.name_hint = "ap2"
    acc = kb.emit(memref.AllocOp.get(i32, shape=[mp, np_]))
    acc.name_hint = "acc"
    zero8 = kb.emit(arith.ConstantOp.from_int_and_width(0, I8))
    # 1. padding of the panel (rows past M, columns past K): zeros (their weights are 0)
    if kp > plan.k:
        with kb.loops(["pk_m", "pk_k"], [mp, kp - plan.k]) as (m, k):
            kb.store(zero8, ap2, [m, kb.iadd(k, plan.k)])
    if mp > plan.m:
        with kb.loops(["pr_m", "pr_k"], [mp - plan.m, plan.k]) as (m, k):
            kb.store(zero8, ap2, [kb.iadd(m, plan.m), k])
    # 2. the activation panel, u8
    flip = kb.emit(arith.ConstantOp.from_int_and_width(-128, I8)) if plan.a_signed else None
    with kb.loops(panel.names, panel.extents) as ivs:
        value = panel.load(kb, ivs)
        if flip is not None:
            value = kb.emit(arith.XOrIOp(value, flip))
        kb.store(value, ap2, [panel.row(kb, ivs), panel.col(kb, ivs)])
    ap = kb.row_major_view(ap2, [mp, k4, GROUP], "ap")
    # 3. accumulators
    zero32 = kb.emit(arith.ConstantOp.from_int_and_width(0, i32))
    with kb.loops(["z_m", "z_n"], [mp, np_]) as (m, n):
        kb.store(zero32, acc, [m, n])
    # 4. the dot products
    with kb.loops(["m", "nb", "nl", "k4", "j"], [mp, np_ // LANES, LANES, k4, GROUP]) as (m, nb, nl, kq, j):
        col = kb.iadd(kb.imul(nb, LANES), nl)
        a = kb.emit(arith.ExtUIOp(kb.load(ap, [m, kq, j]), i32))
        w = kb.emit(arith.ExtSIOp(kb.load(wbuf["wp"], [nb, kq, nl, j]), i32))
        total = kb.emit(arith.AddiOp(kb.load(acc, [m, col]), kb.emit(arith.MuliOp(a, w))))
        kb.store(total, acc, [m, col])

    # 5. bias, requantization, clamp: the write-back
    def value_at(m, n) -> SSAValue:
        v = kb.emit(arith.AddiOp(kb.load(acc, [m, n]), kb.load(wbuf["bias"], [n])))
        if bias is not None:  # the op's i32 bias (wrapping adds, as the reference's wrap_i32)
            v = kb.emit(arith.AddiOp(v, kb.load(bias, [n])))
        if plan.out_bits == 32:
            return v
        lo, hi = (-128, 127) if plan.out_signed else (0, 255)
        if plan.clamp is not None:
            lo, hi = max(lo, plan.clamp[0]), min(hi, plan.clamp[1])
        if plan.float_scale is not None:
            q = rq.requantize_float(kb, v, kb.load(wbuf["scale"], [n]), plan.out_zero, lo, hi)
            return kb.emit(arith.TruncIOp(q, I8))
        q = requantize(kb, v, kb.load(wbuf["mult"], [n]), kb.load(wbuf["lshift"], [n]),
                       kb.load(wbuf["rshift"], [n]))
        q = kb.emit(arith.AddiOp(q, _c32(kb, plan.out_zero)))
        q = kb.emit(arith.MinSIOp(kb.emit(arith.MaxSIOp(q, _c32(kb, lo))), _c32(kb, hi)))
        return kb.emit(arith.TruncIOp(q, I8))

    write(kb, value_at)
    kb.emit(memref.DeallocOp.get(ap2))
    kb.emit(memref.DeallocOp.get(acc))
    kernel = kb.finish(QGEMM)
    kernel.attributes[QGEMM_TILE_ATTR] = DenseArrayBase.from_list(i64, list(plan.tile))
    stamp_weight_range(kernel, plan.w.astype(np.int64) - (128 if plan.w_unsigned else 0))  # as packed
    return kernel


_SHAPES = {
    "wp": lambda p: [p.n_pad // LANES, p.k_pad // GROUP, LANES, GROUP],
    "bias": lambda p: [p.n], "scale": lambda p: [p.n], "mult": lambda p: [p.n], "lshift": lambda p: [p.n], "rshift": lambda p: [p.n],
}


def _memref(shape, et) -> MemRefType:
    return MemRefType(et, shape)


def _c32(kb: KernelBuilder, v: int) -> SSAValue:
    return kb.const(v, i32)


def _c64(kb: KernelBuilder, v: int) -> SSAValue:
    return kb.const(v, i64)


def requantize(kb: KernelBuilder, x: SSAValue, mult: SSAValue, lshift: SSAValue, rshift: SSAValue) -> SSAValue:
    """TFLite's single-rounding MultiplyByQuantizedMultiplier(x, mult, shift) on i32
    (lshift = max(shift, 0), rshift = max(-shift, 0)): ``(x * mult + 2**(t-1)) >> t``
    in i64, ``t = 31 - lshift + rshift``, saturated to i32 (``kernels/requant.py``)."""
    from dlc.lowering.kernels.requant import single_rounding

    total = kb.emit(arith.AddiOp(kb.emit(arith.SubiOp(_c32(kb, 31), lshift)), rshift))
    return single_rounding(kb, x, mult, total)


def requantize_reference(x: np.ndarray, mult: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """numpy twin of :func:`requantize` (i32 in, i32 out), for tests."""
    lshift, rshift = np.maximum(shift, 0).astype(np.int64), np.maximum(-shift, 0).astype(np.int64)
    total = 31 - lshift + rshift
    y = (x.astype(np.int64) * mult.astype(np.int64) + (np.int64(1) << (total - 1))) >> total
    return np.clip(y, -(1 << 31), (1 << 31) - 1).astype(np.int32)


# -- the activation panels of the op adapters --------------------------------------------

def matrix_panel(a: SSAValue, m: int, k: int, lead: list[int]) -> ActivationPanel:
    """A [..lead, M', K] activation (dense / matmul, leading dims flattened into M)."""
    names = [f"pa_b{i}" for i in range(len(lead))] + ["pa_m", "pa_k"]
    rows = m // max(1, int(np.prod(lead))) if lead else m

    def row(kb, ivs):
        r = 0
        for iv, extent in zip(ivs[:-1], lead + [rows]):
            r = kb.iadd(kb.imul(r, extent), iv)
        return r

    return ActivationPanel(names, lead + [rows, k], row, lambda kb, ivs: ivs[-1],
                           lambda kb, ivs: kb.load(a, list(ivs)))


def conv_panel(x: SSAValue, n: int, c: int, h: int, w: int, kh: int, kw: int, oh: int, ow: int,
               strides, pads, dilations, pad_value: int) -> ActivationPanel:
    """im2col of an NCHW activation: row (n, oh, ow), column (c, kh, kw); padding reads
    the zero point (real 0)."""
    (sh, sw), (pt, pl), (dh, dw) = strides, pads, dilations
    names = ["pa_n", "pa_oh", "pa_ow", "pa_c", "pa_kh", "pa_kw"]

    def row(kb, ivs):
        return kb.iadd(kb.imul(kb.iadd(kb.imul(ivs[0], oh), ivs[1]), ow), ivs[2])

    def col(kb, ivs):
        return kb.iadd(kb.imul(kb.iadd(kb.imul(ivs[3], kh), ivs[4]), kw), ivs[5])

    def load(kb, ivs):
        y = kb.isub(kb.iadd(kb.imul(ivs[1], sh), kb.imul(ivs[4], dh)), pt)
        xx = kb.isub(kb.iadd(kb.imul(ivs[2], sw), kb.imul(ivs[5], dw)), pl)
        conds = kb.in_range(y, 0, h, -pt, (oh - 1) * sh + (kh - 1) * dh - pt) + \
            kb.in_range(xx, 0, w, -pl, (ow - 1) * sw + (kw - 1) * dw - pl)
        cond = kb.all_of(conds)
        if cond is None:
            return kb.load(x, [ivs[0], ivs[3], y, xx])
        yc, _ = kb.clamp_index(y, 0, h, -pt, (oh - 1) * sh + (kh - 1) * dh - pt)
        xc, _ = kb.clamp_index(xx, 0, w, -pl, (ow - 1) * sw + (kw - 1) * dw - pl)
        value = kb.load(x, [ivs[0], ivs[3], yc, xc])
        return kb.select(cond, value, kb.emit(arith.ConstantOp.from_int_and_width(pad_value, I8)))

    return ActivationPanel(names, [n, oh, ow, c, kh, kw], row, col, load)


# -- the op adapters: plan, constants, panel, write-back ------------------------------------

def _signed(et) -> bool:
    from dlc.dialects.graph.quantized import quant_range

    return quant_range(et)[0] < 0


def _constant(value: SSAValue) -> np.ndarray | None:
    from dlc.dialects import graph as g

    owner = value.owner
    return owner.array() if isinstance(owner, (g.ConstantOp, g.WeightOp)) else None


def _plan(op, m: int, n: int, k: int, x_et, w: np.ndarray, w_et, w_zero, a_zero, real,
          accumulators: int) -> QGemmPlan | None:
    from dlc.dialects.graph import requant

    zw = np.broadcast_to(np.asarray(w_zero, np.int64), (n,)) - (128 if not _signed(w_et) else 0)
    if np.any(zw != 0):
        return None  # would need the activations' row sums: the plain kernel
    mult, shift = requant.quantize_multipliers(np.broadcast_to(np.asarray(real, np.float64), (n,)))
    out_et = op.results[0].type.element_type
    lo, hi = op.out_range()
    scale = op.float_scales() if op.requant == "float" else None
    return QGemmPlan(m, n, k, _signed(x_et), int(a_zero), w, not _signed(w_et), np.asarray(w_zero),
                     mult, shift, int(op.y_zero_point[0]), _signed(out_et), 8, (lo, hi), accumulators, scale)


def _weights(op, plan: QGemmPlan, name: str) -> dict[str, str]:
    from dlc.weights import store_of

    store = store_of(op)
    return {key: store.add(f"{name}.{key}", array) for key, array in pack_constants(plan).items()}


def generate_fast(op, name: str, accumulators: int = 16) -> func.FuncOp | None:
    """The qgemm kernel of a graph.qdense / graph.qmatmul / graph.qconv2d (a depthwise
    qconv2d: kernels/quantized_depthwise.py), or None when the op is not its shape (a
    non-constant weight, other grouped convs, a weight zero point other than 0 (or 128
    for ui8)): the caller then emits the plain kernel."""
    from dlc.dialects import graph as g

    if isinstance(op, g.QConv2DOp):
        from dlc.lowering.kernels.quantized_depthwise import qdepthwise

        return _qconv2d(op, name, accumulators) if op.attrs.groups == 1 else qdepthwise(op, name)
    if isinstance(op, (g.QDenseOp, g.QMatmulOp)):
        return _qdense(op, name, accumulators)
    return None


def fast_first(plain: Callable) -> Callable:
    """A generator ``(op, name, options)``: the qgemm kernel when lower-to-loops builds the
    CPU forms (``options.flat_conv``) and :func:`generate_fast` applies, else
    ``plain(op, name)`` (the GPU lowering and the shapes qgemm does not take)."""

    def generate(op, name: str, options) -> func.FuncOp:
        if options.flat_conv:
            fast = generate_fast(op, name, options.int8_accumulators)
            if fast is not None:
                return fast
        return plain(op, name)

    generate.__name__ = generate.__qualname__ = plain.__name__
    generate.__doc__ = plain.__doc__
    return generate


def _qdense(op, name: str, accumulators: int) -> func.FuncOp | None:
    from dlc.dialects import graph as g

    dense = isinstance(op, g.QDenseOp)
    x, wv = op.operands[0], op.operands[1]
    w = _constant(wv)
    xs, ws = list(x.type.get_shape()), list(wv.type.get_shape())
    if w is None or len(ws) != 2 or len(xs) < 2 and not dense or len(xs) < 1:
        return None
    wk = w.T if dense else w  # [K, N]
    k, n = wk.shape
    lead = xs[:-1]
    m = int(np.prod(lead)) if lead else 1
    if dense:
        plan = _plan(op, m, n, k, x.type.element_type, wk, wv.type.element_type, op.w_zero_point,
                     op.x_zero_point[0], op.multipliers(), accumulators)
    else:
        plan = _plan(op, m, n, k, x.type.element_type, wk, wv.type.element_type, op.b_zero_point,
                     op.a_zero_point[0], op.multipliers(), accumulators)
    if plan is None:
        return None
    operands = list(op.operands)
    kb = KernelBuilder(name, [o.type for o in operands], [op.results[0].type], op.name,
                       ["x", "w", "b"][: len(operands)] + ["out"])
    a = kb.row_major_view(kb.inputs[0], [m, k], "x2") if len(xs) != 2 else kb.inputs[0]
    out = kb.row_major_view(kb.outputs[0], [m, n], "out2") if len(xs) != 2 else kb.outputs[0]

    def write(kb, value_at):
        with kb.loops(["o_m", "o_n"], [m, n]) as (i, j):
            kb.store(value_at(i, j), out, [i, j])

    bias = kb.inputs[2] if len(operands) == 3 else None
    return build_qgemm(kb, plan, _weights(op, plan, name), matrix_panel(a, m, k, []), write, bias)


def _qconv2d(op, name: str, accumulators: int) -> func.FuncOp | None:
    from dlc.dialects.graph_base import Attrs  # noqa: F401 (attrs via op)
    from dlc.dialects.graph.conv import _window_attrs

    if op.attrs.groups != 1:
        return None
    x, wv = op.operands[0], op.operands[1]
    w = _constant(wv)
    if w is None:
        return None
    n, c, h, wd = x.type.get_shape()
    o, _, kh, kw = w.shape
    _, _, oh, ow = op.results[0].type.get_shape()
    (sh, sw), (dh, dw), (pt, pl, _pb, _pr) = _window_attrs(op.attrs)
    k = c * kh * kw
    plan = _plan(op, n * oh * ow, o, k, x.type.element_type, w.reshape(o, k).T, wv.type.element_type,
                 op.w_zero_point, op.x_zero_point[0], op.multipliers(), accumulators)
    if plan is None:
        return None
    operands = list(op.operands)
    kb = KernelBuilder(name, [v.type for v in operands], [op.results[0].type], op.name,
                       ["x", "w", "b"][: len(operands)] + ["out"])
    out = kb.row_major_view(kb.outputs[0], [n, o, oh * ow], "out3")
    pad = _wrap_i8(int(op.x_zero_point[0]))

    def write(kb, value_at):
        with kb.loops(["o_n", "o_c", "o_p"], [n, o, oh * ow]) as (b, ch, p):
            kb.store(value_at(kb.iadd(kb.imul(b, oh * ow), p), ch), out, [b, ch, p])

    panel = conv_panel(kb.inputs[0], n, c, h, wd, kh, kw, oh, ow, (sh, sw), (pt, pl), (dh, dw), pad)
    bias = kb.inputs[2] if len(operands) == 3 else None
    return build_qgemm(kb, plan, _weights(op, plan, name), panel, write, bias)


def _wrap_i8(v: int) -> int:
    return (v + 128) % 256 - 128
