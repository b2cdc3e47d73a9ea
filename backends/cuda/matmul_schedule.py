"""Default GPU schedule of matmul kernels: shared-memory tiles and register blocking.

Matches ``C[b.., i, j] = init; for k: C[b.., i, j] += A[b.., i, k] * B[b.., k, j]``
(B may drop batch dims, as for a weight) and rebuilds the kernel as 64x64 output
tiles per block (blockIdx.x/y, batch on blockIdx.z), 16x16 threads each
accumulating a 4x4 register block, with A and B staged through shared memory in
16-deep K slices (coalesced loads, zero-filled outside the matrices). Rows and
columns of a thread's block are strided by 16 so shared reads are conflict-free.
"""

from __future__ import annotations

import math as pymath
from dataclasses import dataclass

from xdsl.dialects import func, gpu, memref
from xdsl.ir import Operation, SSAValue

from dlc.backends.cuda.gpu_schedule import Accumulation, find_accumulation, is_parallel, kernel_loops
from dlc.backends.cuda.loop_utils import (
    Inserter,
    body_inserter,
    body_ops,
    defined_outside,
    float_const,
    guard,
    loop,
    perfect_nest,
)
from dlc.dialects.tloop import ForOp

TILE_M = TILE_N = 64
TILE_K = 16
THREADS_Y = THREADS_X = 16
REG_M, REG_N = TILE_M // THREADS_Y, TILE_N // THREADS_X


@dataclass
class MatmulMatch:
    batch: list[ForOp]
    i: ForOp
    j: ForOp
    k: ForOp
    init: SSAValue
    a: memref.LoadOp
    b: memref.LoadOp
    acc: Accumulation
    epilogue: list[Operation]  # ops after the k loop (fused bias/relu/residual...), last the store


def match_matmul(kernel: func.FuncOp, allow_epilogue: bool = False) -> MatmulMatch | None:
    """The matmul nest of ``kernel``; with ``allow_epilogue`` the (i, j) body may go on
    after the k loop with a fused elementwise chain ending in the one store of C
    (``load C[ivs]``, loads of other buffers at the nest's indices, scalar ops)."""
    tops = kernel_loops(kernel)
    if len(tops) != 1 or not is_parallel(tops[0]):
        return None
    nest = perfect_nest(tops[0], parallel_only=True)
    if len(nest) < 2:
        return None
    ops = body_ops(nest[-1])
    loops = [op for op in ops if isinstance(op, ForOp)]
    stores = [op for op in ops if isinstance(op, memref.StoreOp)]
    epilogue: list[Operation] = []
    if allow_epilogue and len(loops) == 1 and ops.index(loops[0]) == 1 and len(stores) == 2:
        epilogue = ops[2:]
        if not _plain_epilogue(epilogue, stores[1], [lp.induction_var for lp in nest]):
            return None
        ops, stores = ops[:2], stores[:1]
    if len(loops) != 1 or len(stores) != 1 or len(ops) > 4:
        return None
    k = loops[0]
    acc = find_accumulation(k)
    if acc is None or acc.combine.name != "arith.addf" or stores[0].memref is not acc.store.memref:
        return None
    if any(isinstance(op, ForOp) for op in body_ops(k)) or len(body_ops(k)) != 6:
        return None
    ivs = [lp.induction_var for lp in nest]
    if list(acc.store.indices) != ivs or list(stores[0].indices) != ivs:
        return None
    other = next(v for v in acc.combine.operands if v.owner is not acc.load)
    mul = other.owner
    if not isinstance(mul, Operation) or mul.name != "arith.mulf":
        return None
    a, b = (v.owner for v in mul.operands)
    if not (isinstance(a, memref.LoadOp) and isinstance(b, memref.LoadOp)):
        return None
    kv, iv, jv = k.induction_var, ivs[-2], ivs[-1]
    if list(a.indices) != (ivs[:-2] + [iv, kv])[-len(a.indices):]:
        return None
    if list(b.indices) != (ivs[:-2] + [kv, jv])[-len(b.indices):]:
        return None
    if any(lp.lower != 0 or lp.stride != 1 for lp in [*nest, k]):
        return None
    if epilogue and epilogue[-1].memref is not acc.store.memref:
        return None
    return MatmulMatch(nest[:-2], nest[-2], nest[-1], k, stores[0].value, a, b, acc, epilogue)


def _plain_epilogue(ops: list[Operation], store: memref.StoreOp, ivs: list[SSAValue]) -> bool:
    """Loads/stores indexed by the nest's ivs and constants, and scalar arith/math ops
    only, ending with ``store``."""
    from xdsl.dialects import arith

    from dlc.backends.cuda.loop_utils import is_pure_scalar

    if not ops or ops[-1] is not store:
        return False
    for op in ops:
        if isinstance(op, (memref.LoadOp, memref.StoreOp)):
            # each index: one of the nest's ivs or a constant (a broadcast operand, bias[oc, 0, 0])
            if not all(i in ivs or isinstance(i.owner, arith.ConstantOp) for i in op.indices):
                return False
            if isinstance(op, memref.StoreOp) and op is not store:
                return False
        elif not is_pure_scalar(op):
            return False
    return list(store.indices) == ivs


def schedule_matmul(kernel: func.FuncOp) -> bool:
    m = match_matmul(kernel)
    if m is None:
        return False
    M, N, K = m.i.trip_count, m.j.trip_count, m.k.trip_count
    elt = m.acc.store.value.type
    batch = pymath.prod(lp.trip_count for lp in m.batch)
    bz = loop(batch, "bz", "parallel", "blockIdx.z")
    by = loop(-(-M // TILE_M), "by", "parallel", "blockIdx.y")
    bx = loop(-(-N // TILE_N), "bx", "parallel", "blockIdx.x")
    body_inserter(bz).add(by)
    body_inserter(by).add(bx)
    outer = body_inserter(bx)
    a_tile = outer.alloca(elt, [TILE_K, TILE_M], shared=True, name="a_tile")
    b_tile = outer.alloca(elt, [TILE_K, TILE_N], shared=True, name="b_tile")
    ty = loop(THREADS_Y, "ty", "parallel", "threadIdx.y")
    tx = loop(THREADS_X, "tx", "parallel", "threadIdx.x")
    outer.add(ty)
    body_inserter(ty).add(tx)
    ins = body_inserter(tx)
    batch_ivs = _delinearize_batch(ins, bz.induction_var, m.batch)
    row0 = ins.mul_i(by.induction_var, TILE_M)
    col0 = ins.mul_i(bx.induction_var, TILE_N)
    tyv, txv = ty.induction_var, tx.induction_var
    lane = ins.add_i(ins.mul_i(tyv, THREADS_X), txv)
    regs = ins.alloca(elt, [REG_M, REG_N], shared=False, name="regs")
    init = m.init
    if not defined_outside(init, m.i) or not isinstance(init.owner, Operation):
        return False
    init_value = ins.val(init.owner.clone()) if init.owner.name == "arith.constant" else None
    if init_value is None:
        return False
    for r in range(REG_M):
        for c in range(REG_N):
            ins.store(init_value, regs, [ins.index(r), ins.index(c)])

    ktiles = loop(-(-K // TILE_K), "kt", "serial")
    ins.add(ktiles)
    kin = body_inserter(ktiles)
    k0 = kin.mul_i(ktiles.induction_var, TILE_K)
    nthreads = THREADS_X * THREADS_Y
    zero = float_const(kin, 0.0, elt)

    def stage(tile: SSAValue, load: memref.LoadOp, rows: int, cols: int, row_is_k: bool) -> None:
        # tile[kk, x] for x along M (A) or N (B); coalesced along the source's last axis.
        for part in range(rows * cols // nthreads):
            e = kin.add_i(lane, part * nthreads)
            r, c = kin.div_i(e, cols), kin.rem_i(e, cols)
            if row_is_k:  # B: source row = k, column = j
                gk, gx, bound = kin.add_i(k0, r), kin.add_i(col0, c), N
                dst = [r, c]
            else:  # A: source row = i, column = k
                gx, gk, bound = kin.add_i(row0, r), kin.add_i(k0, c), M
                dst = [c, r]
            ok = kin.both(kin.less(gx, bound), kin.less(gk, K))
            value = _guarded_load(kin, ok, load, batch_ivs, m, gx, gk, zero)
            kin.store(value, tile, dst)

    stage(a_tile, m.a, TILE_M, TILE_K, row_is_k=False)
    stage(b_tile, m.b, TILE_K, TILE_N, row_is_k=True)
    kin.add(gpu.BarrierOp())
    kk = loop(TILE_K, "kk", "unrolled")
    kin.add(kk)
    kb = body_inserter(kk)
    a_vals = [kb.load(a_tile, [kk.induction_var, kb.add_i(tyv, r * THREADS_Y)]) for r in range(REG_M)]
    b_vals = [kb.load(b_tile, [kk.induction_var, kb.add_i(txv, c * THREADS_X)]) for c in range(REG_N)]
    mul_proto = m.acc.combine
    for r in range(REG_M):
        for c in range(REG_N):
            at = [kb.index(r), kb.index(c)]
            prod = kb.val(_binary("arith.mulf", a_vals[r], b_vals[c], mul_proto))
            kb.store(kb.val(_binary("arith.addf", kb.load(regs, at), prod, mul_proto)), regs, at)
    kin.add(gpu.BarrierOp())

    out = m.acc.store.memref
    for r in range(REG_M):
        gi = ins.add_i(row0, ins.add_i(tyv, r * THREADS_Y))
        ok_i = ins.less(gi, M)
        for c in range(REG_N):
            gj = ins.add_i(col0, ins.add_i(txv, c * THREADS_X))
            g = guard(ins, ins.both(ok_i, ins.less(gj, N)))
            g.store(g.load(regs, [g.index(r), g.index(c)]), out, [*batch_ivs, gi, gj])

    top = kernel_loops(kernel)[0]
    Inserter(kernel.body.block, top).add(bz)
    top.detach()
    top.erase()
    return True


def _binary(name: str, a: SSAValue, b: SSAValue, proto: Operation) -> Operation:
    """A float binary op carrying ``proto``'s fast-math flags."""
    from xdsl.dialects import arith

    cls = {"arith.mulf": arith.MulfOp, "arith.addf": arith.AddfOp}[name]
    op = cls(a, b)
    if "fastmath" in proto.properties:
        op.properties["fastmath"] = proto.properties["fastmath"]
    return op


def _delinearize_batch(ins: Inserter, flat: SSAValue, batch: list[ForOp]) -> list[SSAValue]:
    from dlc.backends.cuda.loop_utils import delinearize

    return delinearize(ins, flat, batch) if batch else []


def _guarded_load(
    ins: Inserter, ok: SSAValue, load: memref.LoadOp, batch_ivs: list[SSAValue],
    m: MatmulMatch, gx: SSAValue, gk: SSAValue, zero: SSAValue,
) -> SSAValue:
    """``ok ? src[...] : 0`` with the load inside an ``scf.if`` (no out-of-bounds read)."""
    from xdsl.dialects import scf
    from xdsl.ir import Block

    remap = {m.k.induction_var: gk, m.i.induction_var: gx, m.j.induction_var: gx}
    remap |= {lp.induction_var: v for lp, v in zip(m.batch, batch_ivs)}
    indices = [remap[v] for v in load.indices]
    then_block, else_block = Block(), Block()
    value = memref.LoadOp.get(load.memref, indices)
    then_block.add_ops([value, scf.YieldOp(value)])
    else_block.add_op(scf.YieldOp(zero))
    return ins.val(scf.IfOp(ok, [zero.type], [then_block], [else_block]))


