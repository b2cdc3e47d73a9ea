"""The batched determinant kernel (graph.det): Gaussian elimination with
partial pivoting in f64 per matrix."""

from __future__ import annotations

from xdsl.dialects import arith, func, memref
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import IndexType, f64, i64

from dlc.dialects.graph_base import GraphOp
from dlc.lowering.kernels import kernel
from dlc.lowering.kernels.builder import KernelBuilder

INDEX = IndexType()


@kernel("graph.det")
def lower_det(op: GraphOp, name: str) -> func.FuncOp:
    """Per matrix: copy into an f64 scratch, then Gaussian elimination with
    partial pivoting; det = product of pivots, negated per row swap. Loop
    bounds are static, so the "rows below k" ranges are masked with selects;
    a zero pivot zeroes the eliminated factors and with them the product."""
    x_t, out_t = op.operands[0].type, op.results[0].type
    et = out_t.element_type
    shape = x_t.get_shape()
    m = shape[-1]
    batch = shape[:-2]
    kb = KernelBuilder(name, [x_t], [out_t], op.name, ["x", "out"])
    lu = kb.emit(memref.AllocaOp.get(f64, shape=[m, m]))
    # det, the pivot's magnitude and row (as f64/i64 cells: scalars across loops)
    det = kb.emit(memref.AllocaOp.get(f64, shape=[1]))
    best = kb.emit(memref.AllocaOp.get(f64, shape=[1]))
    pivot_row = kb.emit(memref.AllocaOp.get(i64, shape=[1]))
    lu.name_hint, det.name_hint, pivot_row.name_hint = "lu", "det", "pivot_row"
    zero, one = kb.const(0.0, f64), kb.const(1.0, f64)
    with kb.loops([f"b{k}" for k in range(len(batch))], batch) as b:
        with kb.loops(["i", "j"], [m, m]) as (i, j):
            kb.store(kb.convert(kb.load(kb.inputs[0], [*b, i, j]), et, f64), lu, [i, j])
        kb.store(one, det, [0])
        with kb.loop("k", m) as k:
            k64 = kb.index_to(k, i64)
            kb.store(kb.const(-1.0, f64), best, [0])
            kb.store(k64, pivot_row, [0])
            with kb.loop("i", m) as i:
                magnitude = kb.emit(xmath.AbsFOp(kb.load(lu, [i, k])))
                larger = kb.emit(arith.CmpfOp(magnitude, kb.load(best, [0]), "ogt"))
                take = kb.emit(arith.AndIOp(larger, kb.icmp("sge", i, k)))
                kb.store(kb.select(take, magnitude, kb.load(best, [0])), best, [0])
                kb.store(kb.select(take, kb.index_to(i, i64), kb.load(pivot_row, [0])), pivot_row, [0])
            p64 = kb.load(pivot_row, [0])
            p = kb.emit(arith.IndexCastOp(p64, INDEX))
            with kb.loop("j", m) as j:  # swap rows k and p (a no-op when p == k)
                row_k, row_p = kb.load(lu, [k, j]), kb.load(lu, [p, j])
                kb.store(row_p, lu, [k, j])
                kb.store(row_k, lu, [p, j])
            swapped = kb.emit(arith.CmpiOp(p64, k64, "ne"))
            pivot = kb.load(lu, [k, k])
            signed = kb.select(swapped, kb.emit(arith.NegfOp(pivot)), pivot)
            kb.store(kb.emit(arith.MulfOp(kb.load(det, [0]), signed)), det, [0])
            pivot_zero = kb.emit(arith.CmpfOp(pivot, zero, "oeq"))
            with kb.loop("i", m) as i:
                below = kb.icmp("sgt", i, k)
                factor = kb.emit(arith.DivfOp(kb.load(lu, [i, k]), pivot))
                factor = kb.select(pivot_zero, zero, factor)
                with kb.loop("j", m) as j:
                    old = kb.load(lu, [i, j])
                    new = kb.emit(arith.SubfOp(old, kb.emit(arith.MulfOp(factor, kb.load(lu, [k, j])))))
                    kb.store(kb.select(below, new, old), lu, [i, j])
        kb.store(kb.convert(kb.load(det, [0]), f64, et), kb.outputs[0], list(b))
    return kb.finish()
