"""graph.attention kernel: one pass over the keys per query row, online softmax.

Form ``attention`` (kernels/forms.py, schedule ``lowering/schedule/defaults_attention.py``).
Per (batch ``%b``, head ``%h``) the head's keys are first packed transposed into
``%kt[d, j]`` (Dh x Sk scratch: the score loop then reads stride-1 key rows), then per
query row ``%i`` the keys are visited in blocks of KEY_BLOCK (a last partial block in
its own copy of the loops), flash-attention style::

    m = -inf; l = 0; acc[:] = 0
    for each key block [j0, j0 + n):
      s[j] = sum_d q[i, d] * kt[d, j0 + j]          loops %sd / %sj (j innermost)
      s[j] = s[j] * scale (+ mask[i, j0 + j]);  bm = max_j s[j]     loop %sm
      m' = max(m, bm); c = m' (0 when m' = -inf); alpha = exp(m - c)
      s[j] = exp(s[j] - c);  ps = sum_j s[j]        loop %se
      l = l * alpha + ps;  acc[:] *= alpha          loop %ar
      acc[d] += s[j] * v[j0 + j, d]                 loops %pj / %pd (d innermost)
      m = m'
    out[i, :] = acc / l                             loop %o

No (Sq, Sk) score tensor exists: the scratch is one block's row ``%s``, the running
``%stat`` (m, l, the block max, the block sum), the accumulator row ``%acc`` and ``%kt``,
all allocas inside the ``%b``/``%h`` loops (private to each thread when those run in
parallel). Q, K, V and out are addressed through the op's perms (the head split/merge
transposes), so the projections' outputs are read in place. The exp shift ``c`` guards
fully masked blocks (-inf masks): exp(-inf - 0) = 0 instead of NaN.
"""

from __future__ import annotations

from xdsl.dialects import func, memref
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import MemRefType

from dlc.dialects.graph_base import GraphOp
from dlc.lowering.kernels import kernel
from dlc.lowering.kernels.builder import Index, KernelBuilder, storage_type
from dlc.lowering.kernels.elementwise import broadcast_indices
from dlc.lowering.kernels.forms import ATTENTION

KEY_BLOCK = 32  # keys per online-softmax step
ROWS = 4  # query rows per pass over the head's keys (the register tile's rows)
D_CHUNK = 32  # value features per pass of the P V product (ROWS x D_CHUNK accumulators)
PACK_LIMIT = 256 * 1024  # bytes of one head's packed K (or V): thread-private stack scratch


def packs_fit(sk: int, dh: int, dv: int, itemsize: int = 4) -> bool:
    """Whether one head's packed K (Dh x Sk) and V (Sk x Dv) stay within PACK_LIMIT each
    (fuse-attention forms the op only then; longer sequences keep the written-out form)."""
    return sk * dh * itemsize <= PACK_LIMIT and sk * dv * itemsize <= PACK_LIMIT


def _physical(perm, logical: list[Index]) -> list[Index]:
    """Indices into an operand read as ``transpose(operand, perm)`` at `logical`."""
    idx: list[Index] = [0, 0, 0, 0]
    for t, p in enumerate(perm):
        idx[p] = logical[t]
    return idx


@kernel("graph.attention")
def lower_attention(op: GraphOp, name: str) -> func.FuncOp:
    masked = op.mask is not None
    in_types = [o.type for o in op.operands]
    out_t = op.results[0].type
    et = out_t.element_type
    names = ["q", "k", "v"] + (["mask"] if masked else []) + ["out"]
    kb = KernelBuilder(name, in_types, [out_t], op.name, names)
    q, k, v = kb.inputs[:3]
    mask = kb.inputs[3] if masked else None
    qs, ks, vs = (list(o.type.get_shape()) for o in op.operands[:3])
    b_n, h_n, sq, dh = (qs[p] for p in op.q_perm)
    sk = ks[op.k_perm[2]]
    dv = vs[op.v_perm[3]]
    mask_shape = list(op.mask.type.get_shape()) if masked else []
    scores_shape = [b_n, h_n, sq, sk]
    st = storage_type(et)
    rows, block, chunk = min(ROWS, sq), min(KEY_BLOCK, sk), min(D_CHUNK, dv)
    scale = kb.const(op.scale, et)
    minus_inf, zero = kb.const(float("-inf"), et), kb.const(0.0, et)

    def alloca(shape, hint):
        buf = kb.emit(memref.AllocaOp.get(st, shape=shape))
        buf.name_hint = hint
        return buf

    with kb.loops(["b", "h"], [b_n, h_n]) as (ib, ih):
        # kt's rows padded to whole 64-byte lines: a key block's vector loads then stay
        # line-aligned (197 keys: rows 788 bytes apart split every load in two)
        kt, vp = alloca([dh, -(-sk // 16) * 16], "kt"), alloca([sk, dv], "vp")
        s, acc, stat = alloca([rows, block], "s"), alloca([rows, dv], "acc"), alloca([rows, 4], "stat")
        with kb.loop("pk_j", sk) as j:
            with kb.loop("pk_d", dh) as d:
                kb.store(kb.load(k, _physical(op.k_perm, [ib, ih, j, d])), kt, [d, j])
        with kb.loop("pv_j", sk) as j:
            with kb.loop("pv_d", dv) as d:
                kb.store(kb.load(v, _physical(op.v_perm, [ib, ih, j, d])), vp, [j, d])

        def key_block(i0: Index, nr: int, j0: Index, n: int) -> None:
            with kb.loop("zr", nr) as r:
                with kb.loop("sz", n) as j:
                    kb.store(zero, s, [r, j])
            with kb.loop("sd", dh) as d:
                with kb.loop("sr", nr) as r:
                    qd = kb.load(q, _physical(op.q_perm, [ib, ih, kb.iadd(i0, r), d]))
                    with kb.loop("sj", n) as j:
                        prod = kb.mul(qd, kb.load(kt, [d, kb.iadd(j0, j)]), et)
                        kb.store(kb.add(kb.load(s, [r, j]), prod, et), s, [r, j])
            with kb.loop("mr", nr) as r:
                kb.store(minus_inf, stat, [r, 2])
                with kb.loop("sm", n) as j:
                    x = kb.mul(kb.load(s, [r, j]), scale, et)
                    if masked:
                        at = broadcast_indices([ib, ih, kb.iadd(i0, r), kb.iadd(j0, j)], mask_shape, scores_shape)
                        x = kb.add(x, kb.load(mask, at), et)
                    kb.store(x, s, [r, j])
                    kb.store(kb.max(kb.load(stat, [r, 2]), x, et), stat, [r, 2])
                m_old = kb.load(stat, [r, 0])
                m_new = kb.max(m_old, kb.load(stat, [r, 2]), et)
                shift = kb.select(kb.cmp("eq", m_new, minus_inf, et), zero, m_new)
                alpha = kb.emit(xmath.ExpOp(kb.sub(m_old, shift, et)))
                kb.store(m_new, stat, [r, 0])
                kb.store(zero, stat, [r, 3])
                with kb.loop("se", n) as j:
                    p = kb.emit(xmath.ExpOp(kb.sub(kb.load(s, [r, j]), shift, et)))
                    kb.store(p, s, [r, j])
                    kb.store(kb.add(kb.load(stat, [r, 3]), p, et), stat, [r, 3])
                kb.store(kb.add(kb.mul(kb.load(stat, [r, 1]), alpha, et), kb.load(stat, [r, 3]), et), stat, [r, 1])
                with kb.loop("ar", dv) as d:
                    kb.store(kb.mul(kb.load(acc, [r, d]), alpha, et), acc, [r, d])

            def value_chunk(c0: Index, width: int) -> None:
                with kb.loop("pj", n) as j:
                    with kb.loop("pr", nr) as r:
                        pj = kb.load(s, [r, j])
                        with kb.loop("pd", width) as d:
                            vd = kb.load(vp, [kb.iadd(j0, j), kb.iadd(c0, d)])
                            at = [r, kb.iadd(c0, d)]
                            kb.store(kb.add(kb.load(acc, at), kb.mul(pj, vd, et), et), acc, at)

            whole, rest = divmod(dv, chunk)
            with kb.loop("pc", whole) as c:
                value_chunk(kb.imul(c, chunk), chunk)
            if rest:
                value_chunk(whole * chunk, rest)

        def row_block(i0: Index, nr: int) -> None:
            with kb.loop("ir", nr) as r:
                kb.store(minus_inf, stat, [r, 0])
                kb.store(zero, stat, [r, 1])
                with kb.loop("a0", dv) as d:
                    kb.store(zero, acc, [r, d])
            full, tail = divmod(sk, block)
            with kb.loop("jb", full) as jb:
                key_block(i0, nr, kb.imul(jb, block), block)
            if tail:
                key_block(i0, nr, full * block, tail)
            with kb.loop("or", nr) as r:
                total = kb.load(stat, [r, 1])
                with kb.loop("o", dv) as d:
                    y = kb.div(kb.load(acc, [r, d]), total, et)
                    logical = [ib, ih, kb.iadd(i0, r), d]  # out = transpose(logical, out_perm)
                    kb.store(y, kb.outputs[0], [logical[p] for p in op.out_perm])

        full_rows, tail_rows = divmod(sq, rows)
        with kb.loop("i", full_rows) as i:
            row_block(kb.imul(i, rows), rows)
        if tail_rows:
            row_block(full_rows * rows, tail_rows)
    return kb.finish(ATTENTION)
