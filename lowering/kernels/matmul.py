"""matmul kernels: numpy semantics (batch dims broadcast, 1-D operands promoted), and
``graph.matmul_packed`` (B in column panels).

Loops: batch dims ``%b0..`` (a batch dim of extent 1 gets no loop, index 0: a
``(1, 128, 768) x (768, 3072)`` dense layer is then a plain GEMM whose schedule
parallelizes over C blocks, not over a one-iteration batch loop), then ``%m``, ``%n`` (absent when a 1-D operand
removes them), then the reduction ``%k`` innermost. The accumulator is the
output element itself (zeroed before the ``%k`` loop), as tloop wants.
"""

from __future__ import annotations

from xdsl.dialects import func

from dlc.dialects.graph_base import GraphOp
from dlc.lowering.kernels import kernel
from dlc.lowering.kernels.builder import Index, KernelBuilder
from dlc.lowering.kernels.forms import MATMUL, MATMUL_PACKED
from dlc.lowering.kernels.elementwise import broadcast_indices


@kernel("graph.matmul")
def lower_matmul(op: GraphOp, name: str) -> func.FuncOp:
    a_t, b_t = (o.type for o in op.operands)
    out_t = op.results[0].type
    et = out_t.element_type
    kb = KernelBuilder(name, [a_t, b_t], [out_t], op.name, ["a", "b", "out"])
    a, b = list(a_t.get_shape()), list(b_t.get_shape())
    a_vec, b_vec = len(a) == 1, len(b) == 1
    a2 = [1] + a if a_vec else a
    b2 = b + [1] if b_vec else b
    batch = list(out_t.get_shape())[: max(len(a2), len(b2)) - 2]
    m, n, k = a2[-2], b2[-1], a2[-1]
    names = [f"b{i}" for i, d in enumerate(batch) if d != 1]
    extents = [d for d in batch if d != 1]
    looped_batch = len(extents)
    if not a_vec:
        names.append("m")
        extents.append(m)
    if not b_vec:
        names.append("n")
        extents.append(n)
    with kb.loops(names, extents) as ivs:
        looped = iter(ivs[:looped_batch])
        bivs: list[Index] = [next(looped) if d != 1 else 0 for d in batch]
        rest = list(ivs[looped_batch:])
        iv_m: Index = rest[0] if not a_vec else 0
        iv_n: Index = rest[-1] if not b_vec else 0
        out_idx = bivs + rest
        kb.store(kb.const(0, et), kb.outputs[0], out_idx)
        with kb.loop("k", k) as iv_k:
            a_idx = broadcast_indices(bivs, a2[:-2], batch) + ([iv_m, iv_k] if not a_vec else [iv_k])
            b_idx = broadcast_indices(bivs, b2[:-2], batch) + ([iv_k, iv_n] if not b_vec else [iv_k])
            prod = kb.mul(kb.load(kb.inputs[0], a_idx), kb.load(kb.inputs[1], b_idx), et)
            acc = kb.load(kb.outputs[0], out_idx)
            kb.store(kb.add(acc, prod, et), kb.outputs[0], out_idx)
        kb.apply_epilogue(out_idx)  # fused elementwise ops (fuse-ops)
    # two matrix operands: the blocked GEMM (or, few rows, matrix-vector) schedule; a 1-D
    # operand leaves no m / n loop to tile: the generic schedule
    return kb.finish(MATMUL if not (a_vec or b_vec) else None)


@kernel("graph.matmul_packed")
def lower_matmul_packed(op: GraphOp, name: str) -> func.FuncOp:
    """``c[m, n, nr] = sum_k a[m, k] * bp[n, k, nr]`` with ``c`` the output seen as
    ``[M, N / R, R]`` (a view: its index is the loops', which the schedule's dependence
    checks and epilogue fusion read directly): loops ``%m``, ``%n`` (the panels), ``%nr``
    (the R columns of one), the reduction ``%k`` innermost; a's leading dims of extent 1
    get no loop (index 0). The fused epilogue's operands are indexed as the output."""
    a_t, bp_t = (o.type for o in op.operands)
    out_t = op.results[0].type
    et = out_t.element_type
    kb = KernelBuilder(name, [a_t, bp_t], [out_t], op.name, ["a", "b", "out"])
    *lead, m, k = a_t.get_shape()
    panels, _, width = bp_t.get_shape()
    c = kb.row_major_view(kb.outputs[0], [m, panels, width], "c")
    ones: list[Index] = [0] * len(lead)
    with kb.loops(["m", "n", "nr"], [m, panels, width]) as (iv_m, iv_n, iv_r):
        c_idx = [iv_m, iv_n, iv_r]
        kb.store(kb.const(0, et), c, c_idx)
        with kb.loop("k", k) as iv_k:
            prod = kb.mul(kb.load(kb.inputs[0], ones + [iv_m, iv_k]),
                          kb.load(kb.inputs[1], [iv_n, iv_k, iv_r]), et)
            kb.store(kb.add(kb.load(c, c_idx), prod, et), c, c_idx)
        if kb.epilogue is not None:
            kb.apply_epilogue(ones + [iv_m, kb.iadd(kb.imul(iv_n, width), iv_r)], c, c_idx)
    return kb.finish(MATMUL_PACKED)
