"""Tensor-core schedule of matmul kernels (``mma.sync``), and which precision may use it.

**Precision** (``mma_precisions``): dlc's matmul kernels are f32 (widen-accumulation
turns an f16 matmul into ``cast f32 -> matmul -> cast f16``; bf16 lives in i16 and is
decoded by a cast kernel), so the schedule asks where A and B come from. A buffer is
*f16-exact* when a kernel widened it from f16 (``extf`` of an f16 load) or it is a
weight whose every value is an f16; *bf16-exact* likewise (the bf16 decode
``bitcast(extui(x) << 16)``). Both f16 -> ``m16n8k16.f16``, both bf16 ->
``m16n8k16.bf16``, a mix of the two -> ``m16n8k8.tf32`` (f16 and bf16 values are
exact in tf32): these change no input value, so they need no opt-in. Any other f32
input uses tf32 (10 mantissa bits) only with ``allow_tf32`` (the module attribute
``gpu.allow_tf32``, set by ``dlc.compile(..., allow_tf32=True)`` / ``--allow-tf32``,
like torch's ``allow_tf32``); otherwise it stays on CUDA cores (matmul_schedule.py).

**Kernel** (``schedule_mma``): 64 x 64 output tiles per block (batch on blockIdx.z),
4 warps (128 threads) of 32 x 32 each = 2 x 4 mma tiles of 16 x 8 with f32
accumulators in registers; A (64 x 16) and B (16 x 64) K-slices are copied to shared
memory with ``cp.async`` (one element each, zero-filled outside the matrices, so any
M, N, K works) in a 2-stage pipeline: slice k+1 is in flight while slice k is
multiplied. Fragments are loaded from shared memory element by element at the PTX
ISA's lane positions (tensor_core.py; no ``ldmatrix``: the f32 staging buffers do
not have its 16-bit row layout). The epilogue (the kernel's fused chain: bias,
relu, residual add...) runs on each accumulator register before its predicated
store. Needs sm_80+ (``cp.async``, bf16/tf32 ``mma``); the CUDA target is sm_90.
"""

from __future__ import annotations

import math as pymath

import numpy as np
from xdsl.dialects import arith, func, gpu, memref
from xdsl.dialects.builtin import Float16Type, Float32Type, IntegerType, MemRefType, ModuleOp
from xdsl.ir import Operation, SSAValue

from dlc.backends.c_expr import stored_args, strides_of
from dlc.backends.cuda.loop_utils import Inserter, body_inserter, guard, loop
from dlc.backends.cuda.matmul_schedule import MatmulMatch, match_matmul
from dlc.backends.cuda.tensor_core import MMA_K, MMA_M, MMA_N, WARP, a_coords, b_coords, c_coords
from dlc.dialects import cuda
from dlc.dialects.tloop import ForOp, WeightOp

TILE_M = TILE_N = 64
TILE_K = 16
WARPS_M = WARPS_N = 2
WARP_M, WARP_N = TILE_M // WARPS_M, TILE_N // WARPS_N
ALLOW_TF32_ATTR = "gpu.allow_tf32"


# --------------------------------------------------------------------------- precision


def _exact_type_of_stored(value: SSAValue) -> str | None:
    """"f16"/"bf16" when ``value`` is a widened f16 load / a decoded bf16 (i16) load."""
    op = value.owner
    if isinstance(op, arith.ExtFOp) and isinstance(op.input.type, Float16Type):
        return "f16" if isinstance(op.input.owner, memref.LoadOp) else None
    if isinstance(op, arith.BitcastOp) and isinstance(op.result.type, Float32Type):
        shl = op.input.owner
        if isinstance(shl, arith.ShLIOp):
            amount, ext = shl.rhs.owner, shl.lhs.owner
            if (isinstance(amount, arith.ConstantOp) and getattr(amount.value, "value", None) is not None
                    and amount.value.value.data == 16 and isinstance(ext, arith.ExtUIOp)
                    and isinstance(ext.input.type, IntegerType) and ext.input.type.width.data == 16
                    and isinstance(ext.input.owner, memref.LoadOp)):
                return "bf16"
    return None


def _kernel_output_exact(kernel: func.FuncOp) -> dict[int, str]:
    """For each argument the kernel writes: its exact narrow type if every store is one."""
    out: dict[int, str] = {}
    for index in stored_args(kernel):
        arg = kernel.body.block.args[index]
        kinds = {_exact_type_of_stored(op.value) for op in kernel.walk()
                 if isinstance(op, memref.StoreOp) and op.memref is arg}
        if len(kinds) == 1 and None not in kinds:
            out[index] = kinds.pop()
    return out


def _weight_exact(op: WeightOp) -> str | None:
    from dlc.weights import WeightLookupError, lookup_weight

    try:
        values = np.asarray(lookup_weight(op, op.weight_name.data))
    except WeightLookupError:  # no store attached yet: the host lowering reports it; no claim here
        return None
    if values.dtype != np.float32:
        return None
    with np.errstate(all="ignore"):
        if np.array_equal(values.astype(np.float16).astype(np.float32), values):
            return "f16"
        import ml_dtypes

        if np.array_equal(values.astype(ml_dtypes.bfloat16).astype(np.float32), values):
            return "bf16"
    return None


def combine_precision(a: str | None, b: str | None, allow_tf32: bool) -> str | None:
    if a is not None and a == b:
        return a
    if a is not None and b is not None:
        return "tf32"  # f16 and bf16 values are both exact in tf32
    return "tf32" if allow_tf32 else None


def mma_precisions(module: ModuleOp) -> dict[str, str]:
    """Kernel name -> the ``mma`` input type its A x B may use (absent: CUDA cores)."""
    from dlc.backends.cuda.lower_to_gpu import is_host, is_kernel

    allow_tf32 = ALLOW_TF32_ATTR in module.attributes
    kernels = {op.sym_name.data: op for op in module.ops if is_kernel(op)}
    outputs = {name: _kernel_output_exact(k) for name, k in kernels.items()}
    chosen: dict[str, set] = {}
    for host in [op for op in module.ops if is_host(op)]:
        exact: dict[SSAValue, str | None] = {}
        for op in host.body.block.ops:
            if isinstance(op, WeightOp):
                exact[op.buffer] = _weight_exact(op)
            elif isinstance(op, func.CallOp):
                name = op.callee.root_reference.data
                kernel = kernels.get(name)
                if kernel is None:
                    continue
                m = match_matmul(kernel, allow_epilogue=True)
                if m is not None:
                    args = list(op.arguments)
                    kinds = []
                    for load in (m.a, m.b):
                        ref = load.memref
                        is_arg = ref in kernel.body.block.args
                        kinds.append(exact.get(args[ref.index]) if is_arg else None)  # type: ignore[union-attr]
                    chosen.setdefault(name, set()).add(combine_precision(*kinds, allow_tf32))
                for index, kind in outputs[name].items():
                    exact[op.arguments[index]] = kind
                for index in stored_args(kernel) - set(outputs[name]):
                    exact[op.arguments[index]] = None
    # a kernel called from several places takes the precision every call allows
    return {name: kinds.pop() for name, kinds in chosen.items() if len(kinds) == 1 and None not in kinds}


# --------------------------------------------------------------------------- schedule


def _affine_coords(coords, ab_type: str | None, i: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Coordinates of fragment element ``i`` as ``const + cg * group + ct * tig`` per axis
    (the PTX layouts are affine in group = lane / 4 and tig = lane % 4)."""
    f = (lambda lane: coords(ab_type, lane, i)) if ab_type else (lambda lane: coords(lane, i))
    base, by_group, by_tig = f(0), f(4), f(1)
    terms = tuple((base[d], by_group[d] - base[d], by_tig[d] - base[d]) for d in range(2))
    for lane in range(WARP):  # the layout really is affine: checked, not assumed
        assert f(lane) == tuple(c + cg * (lane // 4) + ct * (lane % 4) for c, cg, ct in terms)
    return terms  # type: ignore[return-value]


def _coord(ins: Inserter, base: SSAValue | None, term: tuple[int, int, int], group: SSAValue, tig: SSAValue) -> SSAValue:
    c, cg, ct = term
    value = ins.index(c) if base is None else ins.add_i(base, c)
    if cg:
        value = ins.add_i(value, ins.mul_i(group, cg))
    if ct:
        value = ins.add_i(value, ins.mul_i(tig, ct))
    return value


def _flat_offset(ins: Inserter, ref: SSAValue, indices: list[SSAValue]) -> SSAValue:
    strides = strides_of(ref.type, "mma", ValueError)
    total = None
    for value, stride in zip(indices, strides):
        term = ins.mul_i(value, stride)
        total = term if total is None else ins.add_i(total, term)
    return total if total is not None else ins.index(0)


def schedule_mma(kernel: func.FuncOp, ab_type: str) -> bool:
    m = match_matmul(kernel, allow_epilogue=True)
    if m is None or not isinstance(m.acc.store.value.type, Float32Type):
        return False
    init = m.init
    if not isinstance(init.owner, arith.ConstantOp):
        return False
    if any(not isinstance(ld.memref.type, MemRefType) or not isinstance(ld.memref.type.element_type, Float32Type)
           for ld in (m.a, m.b)):
        return False
    _build(kernel, m, ab_type)
    return True


def _build(kernel: func.FuncOp, m: MatmulMatch, ab_type: str) -> None:  # noqa: C901 - one kernel
    from dlc.backends.cuda.matmul_schedule import _delinearize_batch

    M, N, K = m.i.trip_count, m.j.trip_count, m.k.trip_count
    f32 = m.acc.store.value.type
    mk = MMA_K[ab_type]
    mt_count, nt_count = WARP_M // MMA_M, WARP_N // MMA_N
    n_a, n_b = {16: (8, 4), 8: (4, 2)}[mk]
    batch = pymath.prod(lp.trip_count for lp in m.batch)
    kt_count = -(-K // TILE_K)
    threads = WARPS_M * WARPS_N * WARP

    bz = loop(batch, "bz", "parallel", "blockIdx.z")
    by = loop(-(-M // TILE_M), "by", "parallel", "blockIdx.y")
    bx = loop(-(-N // TILE_N), "bx", "parallel", "blockIdx.x")
    body_inserter(bz).add(by)
    body_inserter(by).add(bx)
    outer = body_inserter(bx)
    a_s = outer.alloca(f32, [2 * TILE_M * TILE_K], shared=True, name="a_stage")
    b_s = outer.alloca(f32, [2 * TILE_K * TILE_N], shared=True, name="b_stage")
    tx = loop(threads, "tx", "parallel", "threadIdx.x")
    outer.add(tx)
    ins = body_inserter(tx)
    t = tx.induction_var
    batch_ivs = _delinearize_batch(ins, bz.induction_var, m.batch)
    row0 = ins.mul_i(by.induction_var, TILE_M)
    col0 = ins.mul_i(bx.induction_var, TILE_N)
    warp = ins.div_i(t, WARP)
    lane = ins.rem_i(t, WARP)
    group, tig = ins.div_i(lane, 4), ins.rem_i(lane, 4)
    warp_row = ins.add_i(row0, ins.mul_i(ins.div_i(warp, WARPS_N), WARP_M))
    warp_col = ins.add_i(col0, ins.mul_i(ins.rem_i(warp, WARPS_N), WARP_N))
    local_row = ins.mul_i(ins.div_i(warp, WARPS_N), WARP_M)  # inside the block tile
    local_col = ins.mul_i(ins.rem_i(warp, WARPS_N), WARP_N)
    init_value = ins.val(m.init.owner.clone())
    accs = [[ins.alloca(f32, [4], shared=False, name=f"acc{i}{j}") for j in range(nt_count)] for i in range(mt_count)]
    for row in accs:
        for acc in row:
            for e in range(4):
                ins.store(init_value, acc, [ins.index(e)])
    a_frags = [ins.alloca(f32, [n_a], shared=False, name=f"a_frag{i}") for i in range(mt_count)]
    b_frags = [ins.alloca(f32, [n_b], shared=False, name=f"b_frag{j}") for j in range(nt_count)]
    remap_ivs = {lp.induction_var: v for lp, v in zip(m.batch, batch_ivs)}

    def source_offset(at: Inserter, load: memref.LoadOp, gi: SSAValue, gk: SSAValue, is_a: bool) -> SSAValue:
        table = dict(remap_ivs)
        table[m.k.induction_var] = gk
        table[m.i.induction_var if is_a else m.j.induction_var] = gi
        return _flat_offset(at, load.memref, [table[v] for v in load.indices])

    def issue(at: Inserter, kt: SSAValue, stage: SSAValue) -> None:
        """cp.async of K-slice ``kt`` of A and B into stage ``stage`` (zero fill outside)."""
        k0 = at.mul_i(kt, TILE_K)
        for part in range(TILE_M * TILE_K // threads):
            e = at.add_i(t, part * threads)
            r, c = at.div_i(e, TILE_K), at.rem_i(e, TILE_K)  # A tile row-major [m][k]
            gm, gk = at.add_i(row0, r), at.add_i(k0, c)
            ok = at.both(at.less(gm, M), at.less(gk, K))
            dst = at.add_i(at.mul_i(stage, TILE_M * TILE_K), e)
            at.add(cuda.CpAsyncOp(a_s, dst, m.a.memref, source_offset(at, m.a, gm, gk, True), ok))
        for part in range(TILE_K * TILE_N // threads):
            e = at.add_i(t, part * threads)
            r, c = at.div_i(e, TILE_N), at.rem_i(e, TILE_N)  # B tile row-major [k][n]
            gk, gn = at.add_i(k0, r), at.add_i(col0, c)
            ok = at.both(at.less(gk, K), at.less(gn, N))
            dst = at.add_i(at.mul_i(stage, TILE_K * TILE_N), e)
            at.add(cuda.CpAsyncOp(b_s, dst, m.b.memref, source_offset(at, m.b, gn, gk, False), ok))
        at.add(cuda.CpAsyncCommitOp())

    issue(ins, ins.index(0), ins.index(0))
    kloop = loop(kt_count, "kt", "serial")
    ins.add(kloop)
    kin = body_inserter(kloop)
    kt = kloop.induction_var
    stage = kin.rem_i(kt, 2)
    if kt_count > 1:
        nxt = kin.add_i(kt, 1)
        pre = guard(kin, kin.less(nxt, kt_count))
        issue(pre, nxt, pre.rem_i(nxt, 2))
        kin.add(cuda.CpAsyncWaitOp(1))  # slice kt has landed; kt + 1 may still be in flight
    else:
        kin.add(cuda.CpAsyncWaitOp(0))
    kin.add(gpu.BarrierOp())
    a_base = kin.mul_i(stage, TILE_M * TILE_K)
    b_base = kin.mul_i(stage, TILE_K * TILE_N)
    a_terms = [_affine_coords(a_coords, ab_type, i) for i in range(n_a)]
    b_terms = [_affine_coords(b_coords, ab_type, i) for i in range(n_b)]
    for ks in range(TILE_K // mk):
        for i, frag in enumerate(a_frags):
            for e, (rt, kt_) in enumerate(a_terms):
                r = _coord(kin, kin.add_i(local_row, i * MMA_M), rt, group, tig)
                c = _coord(kin, None, kt_, group, tig)
                c = kin.add_i(c, ks * mk)
                off = kin.add_i(a_base, kin.add_i(kin.mul_i(r, TILE_K), c))
                kin.store(kin.load(a_s, [off]), frag, [kin.index(e)])
        for j, frag in enumerate(b_frags):
            for e, (kt_, nt) in enumerate(b_terms):
                r = kin.add_i(_coord(kin, None, kt_, group, tig), ks * mk)
                c = _coord(kin, kin.add_i(local_col, j * MMA_N), nt, group, tig)
                off = kin.add_i(b_base, kin.add_i(kin.mul_i(r, TILE_N), c))
                kin.store(kin.load(b_s, [off]), frag, [kin.index(e)])
        for i in range(mt_count):
            for j in range(nt_count):
                kin.add(cuda.MmaSyncOp(a_frags[i], b_frags[j], accs[i][j], ab_type))
    kin.add(gpu.BarrierOp())  # the next iteration's cp.async overwrites this stage

    c_terms = [_affine_coords(c_coords, None, e) for e in range(4)]
    out = m.acc.store.memref
    for i in range(mt_count):
        for j in range(nt_count):
            for e, (rt, ct) in enumerate(c_terms):
                gm = _coord(ins, ins.add_i(warp_row, i * MMA_M), rt, group, tig)
                gn = _coord(ins, ins.add_i(warp_col, j * MMA_N), ct, group, tig)
                g = guard(ins, ins.both(ins.less(gm, M), ins.less(gn, N)))
                value = g.load(accs[i][j], [g.index(e)])
                _epilogue(g, m, value, batch_ivs, gm, gn, out)

    top = [op for op in kernel.body.block.ops if isinstance(op, ForOp)][0]
    Inserter(kernel.body.block, top).add(bz)
    top.detach()
    top.erase()


def _epilogue(g: Inserter, m: MatmulMatch, value: SSAValue, batch_ivs: list[SSAValue],
              gm: SSAValue, gn: SSAValue, out: SSAValue) -> None:
    """Store ``value`` (one accumulator) at C[.., gm, gn] through the kernel's fused chain."""
    ivs = [*batch_ivs, gm, gn]
    old_ivs = [lp.induction_var for lp in [*m.batch, m.i, m.j]]
    table: dict[SSAValue, SSAValue] = dict(zip(old_ivs, ivs))
    if not m.epilogue:
        g.store(value, out, ivs)
        return
    for op in m.epilogue:
        if isinstance(op, memref.LoadOp) and op.memref is out:
            table[op.res] = value
        elif isinstance(op, memref.LoadOp):
            table[op.res] = g.load(op.memref, [table[v] for v in op.indices])
        elif isinstance(op, memref.StoreOp):
            g.store(table[op.value], out, ivs)
        else:
            new = op.clone(value_mapper={v: table.get(v, v) for v in op.operands})
            g.add(new)
            for old, res in zip(op.results, new.results):
                table[old] = res

