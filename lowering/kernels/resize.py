"""resize kernel: nearest / linear, ONNX coordinate transformation modes.

Source coordinates are computed in f64 with the same operations, in the same
order, as the reference (``resize_source_coords``), so nearest rounding ties
resolve identically. Linear mode is separable multilinear interpolation over
the resized axes (2^r corner loads, weights multiplied in f64).
"""

from __future__ import annotations

import itertools

from xdsl.dialects import func
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import f64
from xdsl.ir import SSAValue

from dlc.dialects.graph_base import GraphOp
from dlc.lowering.kernels import kernel
from dlc.lowering.kernels.builder import KernelBuilder


def _source_coord(kb: KernelBuilder, iv: SSAValue, n_in: int, n_out: int, mode: str) -> SSAValue:
    o = kb.index_to(iv, f64)
    scale = n_out / n_in
    if mode == "asymmetric":
        return kb.div(o, kb.f64(scale), f64)
    if mode == "align_corners":
        if n_out == 1:
            return kb.f64(0.0)
        return kb.div(kb.mul(o, kb.f64(float(n_in - 1)), f64), kb.f64(float(n_out - 1)), f64)
    if mode == "pytorch_half_pixel" and n_out == 1:
        return kb.f64(0.0)
    if mode in ("half_pixel", "pytorch_half_pixel"):
        shifted = kb.div(kb.add(o, kb.f64(0.5), f64), kb.f64(scale), f64)
        return kb.sub(shifted, kb.f64(0.5), f64)
    raise ValueError(f"unknown coordinate_transformation_mode {mode}")


def _nearest(kb: KernelBuilder, c: SSAValue, mode: str) -> SSAValue:
    half = kb.f64(0.5)
    if mode == "round_prefer_floor":
        return kb.emit(xmath.CeilOp(kb.sub(c, half, f64)))
    if mode == "round_prefer_ceil":
        return kb.emit(xmath.FloorOp(kb.add(c, half, f64)))
    if mode == "floor":
        return kb.emit(xmath.FloorOp(c))
    if mode == "ceil":
        return kb.emit(xmath.CeilOp(c))
    raise ValueError(f"unknown nearest_mode {mode}")


def _f64_to_index(kb: KernelBuilder, v: SSAValue) -> SSAValue:
    from xdsl.dialects.builtin import i64

    return kb.to_index(kb.convert(v, f64, i64), i64)


@kernel("graph.resize")
def lower_resize(op: GraphOp, name: str) -> func.FuncOp:
    x_t, out_t = op.operands[0].type, op.results[0].type
    et = out_t.element_type
    in_shape, out_shape = x_t.get_shape(), out_t.get_shape()
    a = op.attrs
    mode = a.mode
    coord_mode = a.coordinate_transformation_mode
    nearest_mode = a.nearest_mode
    resized = [d for d, (i, o) in enumerate(zip(in_shape, out_shape)) if i != o or d >= 2]
    kb = KernelBuilder(name, [x_t], [out_t], op.name, ["x", "out"])
    with kb.loops([f"d{k}" for k in range(len(out_shape))], out_shape) as ivs:
        if mode == "nearest":
            src = list(ivs)
            for d in resized:
                n = in_shape[d]
                c = _source_coord(kb, ivs[d], n, out_shape[d], coord_mode)
                idx = _f64_to_index(kb, _nearest(kb, c, nearest_mode))
                src[d] = kb.imin(kb.imax(idx, 0), n - 1)
            kb.store(kb.load(kb.inputs[0], src), kb.outputs[0], ivs)
        else:
            corners = {}
            for d in resized:
                n = in_shape[d]
                c = _source_coord(kb, ivs[d], n, out_shape[d], coord_mode)
                c = kb.min(kb.max(c, kb.f64(0.0), f64), kb.f64(float(n - 1)), f64)
                lo_f = kb.emit(xmath.FloorOp(c))
                lo = _f64_to_index(kb, lo_f)
                hi = kb.imin(kb.iadd(lo, 1), n - 1)
                frac = kb.sub(c, lo_f, f64)
                corners[d] = ((lo, kb.sub(kb.f64(1.0), frac, f64)), (hi, frac))
            total = None
            for choice in itertools.product((0, 1), repeat=len(resized)):
                src = list(ivs)
                weight = None
                for d, pick in zip(resized, choice):
                    idx, w = corners[d][pick]
                    src[d] = idx
                    weight = w if weight is None else kb.mul(weight, w, f64)
                value = kb.convert(kb.load(kb.inputs[0], src), et, f64)
                term = value if weight is None else kb.mul(value, weight, f64)
                total = term if total is None else kb.add(total, term, f64)
            kb.store(kb.convert(total, f64, et), kb.outputs[0], ivs)
    return kb.finish()
