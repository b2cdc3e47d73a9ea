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
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import arith, func, gpu, memref
from xdsl.dialects.builtin import Float16Type, Float32Type, IntegerType, MemRefType, ModuleOp
from xdsl.ir import Block, Operation, SSAValue

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
                view = gemm_view(kernel)
                if view is not None:
                    args = list(op.arguments)
                    kinds = []
                    for value in (view.a, view.b):
                        ref = _operand_buffer(value)
                        is_arg = ref is not None and ref in kernel.body.block.args
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


@dataclass
class GemmView:
    """A reduction nest seen as C[rows, cols] (+)= A[rows, red] * B[red, cols]: matmul
    (rows = [i], cols = [j], red = [k]) or an implicit-GEMM convolution (rows = n, oh, ow;
    cols = oc; red = ic, kh, kw). ``a``/``b`` are the multiplied values in the innermost
    reduction body; ``a_load``/``b_load`` are set when they are plain loads that
    ``cp.async`` can copy (matmul); otherwise their computation (the conv's padded,
    clamped gather) is cloned per staged element."""

    batch: list[ForOp]
    rows: list[ForOp]
    cols: list[ForOp]
    red: list[ForOp]
    a: SSAValue
    b: SSAValue
    a_load: memref.LoadOp | None
    b_load: memref.LoadOp | None
    init: SSAValue
    out: SSAValue
    epilogue: list[Operation]
    top: ForOp


def _matmul_view(m: MatmulMatch) -> GemmView:
    top = m.batch[0] if m.batch else m.i
    return GemmView(m.batch, [m.i], [m.j], [m.k], m.a.res, m.b.res, m.a, m.b, m.init,
                    m.acc.store.memref, m.epilogue, top)


def _uses_ivs(value: SSAValue) -> set[SSAValue]:
    """The induction variables ``value`` depends on."""
    seen: set[SSAValue] = set()
    stack = [value]
    out: set[SSAValue] = set()
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        if isinstance(v.owner, Block):
            if isinstance(v.owner.parent_op(), ForOp):  # an induction variable, not a kernel argument
                out.add(v)
        elif isinstance(v.owner, Operation):
            stack.extend(v.owner.operands)
    return out


def match_conv(kernel: func.FuncOp) -> GemmView | None:
    """``out[P] = init; for red..: out[P] += f(x; P, red) * g(w; P, red)`` with the parallel
    ivs P split into those only ``f`` uses (rows) and those ``g`` uses (cols)."""
    from dlc.backends.cuda.gpu_schedule import find_accumulation, is_parallel, kernel_loops
    from dlc.backends.cuda.loop_utils import body_ops, perfect_nest

    tops = kernel_loops(kernel)
    if len(tops) != 1 or not is_parallel(tops[0]):
        return None
    nest = perfect_nest(tops[0], parallel_only=True)
    ops = body_ops(nest[-1])
    loops = [op for op in ops if isinstance(op, ForOp)]
    stores = [op for op in ops if isinstance(op, memref.StoreOp)]
    if len(loops) != 1 or ops.index(loops[0]) != 1 or not stores or stores[0] is not ops[0]:
        return None
    red = perfect_nest(loops[0], parallel_only=False)
    acc = find_accumulation(loops[0])
    ivs = [lp.induction_var for lp in nest]
    if acc is None or acc.combine.name != "arith.addf" or list(acc.store.indices) != ivs:
        return None
    if list(stores[0].indices) != ivs or stores[0].memref is not acc.store.memref:
        return None
    epilogue = ops[2:]
    if epilogue:
        from dlc.backends.cuda.matmul_schedule import _plain_epilogue

        if len(stores) != 2 or not _plain_epilogue(epilogue, stores[1], ivs) or stores[1].memref is not acc.store.memref:
            return None
    elif len(stores) != 1:
        return None
    if any(lp.lower != 0 or lp.stride != 1 for lp in nest):
        return None
    other = next(v for v in acc.combine.operands if v.owner is not acc.load)
    mul = other.owner
    if not isinstance(mul, arith.MulfOp):
        return None
    inner = red[-1].body.block
    if any(isinstance(op, ForOp) for op in inner.ops):
        return None
    x, w = mul.lhs, mul.rhs
    ux, uw = _uses_ivs(x), _uses_ivs(w)
    red_ivs = {lp.induction_var for lp in red}
    if not (ux | uw) <= set(ivs) | red_ivs:
        return None
    if ux & set(ivs) & uw:
        return None  # a parallel iv on both sides is not a GEMM (grouped/depthwise conv)
    if not uw & set(ivs):
        x, w, ux, uw = w, x, uw, ux
    cols = [lp for lp in nest if lp.induction_var in uw]
    rows = [lp for lp in nest if lp.induction_var not in uw]
    if not cols or not rows:
        return None
    return GemmView([], rows, cols, red, x, w, None, None, stores[0].value, acc.store.memref,
                    epilogue, tops[0])


def _operand_buffer(value: SSAValue) -> SSAValue | None:
    """The buffer a multiplied value reads: ``load B[..]`` or ``select(c, load B[..], 0)``
    (a padded conv input); None for anything computed."""
    op = value.owner
    if isinstance(op, arith.SelectOp):
        zero = op.rhs.owner
        if not (isinstance(zero, arith.ConstantOp) and getattr(zero.value, "value", None) is not None
                and zero.value.value.data == 0.0):
            return None
        op = op.lhs.owner
    return op.memref if isinstance(op, memref.LoadOp) else None


def gemm_view(kernel: func.FuncOp) -> GemmView | None:
    """The kernel as a GEMM (matmul, or an implicit-GEMM conv), or None."""
    m = match_matmul(kernel, allow_epilogue=True)
    if m is not None and all(isinstance(ld.memref.type, MemRefType)
                             and isinstance(ld.memref.type.element_type, Float32Type) for ld in (m.a, m.b)):
        return _matmul_view(m)
    return match_conv(kernel)


def schedule_mma(kernel: func.FuncOp, ab_type: str) -> bool:
    view = gemm_view(kernel)
    if view is None:
        return False
    if not isinstance(view.out.type.element_type, Float32Type) or not isinstance(view.init.owner, arith.ConstantOp):
        return False
    if not all(isinstance(v.type, Float32Type) for v in (view.a, view.b)):
        return False
    _build(kernel, view, ab_type)
    return True


def _slice(value: SSAValue, block: Block) -> list[Operation]:
    """The ops of ``block`` computing ``value``, in block order."""
    needed: set[Operation] = set()
    stack = [value]
    while stack:
        v = stack.pop()
        op = v.owner
        if isinstance(op, Operation) and op.parent_block() is block and op not in needed:
            needed.add(op)
            stack.extend(op.operands)
    return [op for op in block.ops if op in needed]


def _gathered(at: Inserter, value: SSAValue, block: Block, table: dict, ok: SSAValue, zero: SSAValue) -> SSAValue:
    """``ok ? value(ivs := table) : 0``, the value's ops cloned inside an ``scf.if``."""
    from xdsl.dialects import scf

    then_block, else_block = Block(), Block()
    mapping = dict(table)
    for op in _slice(value, block):
        new = op.clone(value_mapper=mapping)
        then_block.add_op(new)
        for old, res in zip(op.results, new.results):
            mapping[old] = res
    then_block.add_op(scf.YieldOp(mapping.get(value, value)))
    else_block.add_op(scf.YieldOp(zero))
    return at.val(scf.IfOp(ok, [zero.type], [then_block], [else_block]))


def _build(kernel: func.FuncOp, v: GemmView, ab_type: str) -> None:  # noqa: C901 - one kernel
    from dlc.backends.cuda.loop_utils import delinearize, float_const

    M = pymath.prod(lp.trip_count for lp in v.rows)
    N = pymath.prod(lp.trip_count for lp in v.cols)
    K = pymath.prod(lp.trip_count for lp in v.red)
    f32 = v.out.type.element_type
    mk = MMA_K[ab_type]
    mt_count, nt_count = WARP_M // MMA_M, WARP_N // MMA_N
    n_a, n_b = {16: (8, 4), 8: (4, 2)}[mk]
    batch = pymath.prod(lp.trip_count for lp in v.batch)
    kt_count = -(-K // TILE_K)
    threads = WARPS_M * WARPS_N * WARP
    inner = v.red[-1].body.block

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
    batch_ivs = delinearize(ins, bz.induction_var, v.batch) if v.batch else []
    row0 = ins.mul_i(by.induction_var, TILE_M)
    col0 = ins.mul_i(bx.induction_var, TILE_N)
    warp = ins.div_i(t, WARP)
    lane = ins.rem_i(t, WARP)
    group, tig = ins.div_i(lane, 4), ins.rem_i(lane, 4)
    warp_row = ins.add_i(row0, ins.mul_i(ins.div_i(warp, WARPS_N), WARP_M))
    warp_col = ins.add_i(col0, ins.mul_i(ins.rem_i(warp, WARPS_N), WARP_N))
    local_row = ins.mul_i(ins.div_i(warp, WARPS_N), WARP_M)  # inside the block tile
    local_col = ins.mul_i(ins.rem_i(warp, WARPS_N), WARP_N)
    init_value = ins.val(v.init.owner.clone())
    zero = float_const(ins, 0.0, f32)
    accs = [[ins.alloca(f32, [4], shared=False, name=f"acc{i}{j}") for j in range(nt_count)] for i in range(mt_count)]
    for row in accs:
        for acc in row:
            for e in range(4):
                ins.store(init_value, acc, [ins.index(e)])
    a_frags = [ins.alloca(f32, [n_a], shared=False, name=f"a_frag{i}") for i in range(mt_count)]
    b_frags = [ins.alloca(f32, [n_b], shared=False, name=f"b_frag{j}") for j in range(nt_count)]
    batch_table = {lp.induction_var: val for lp, val in zip(v.batch, batch_ivs)}

    def table_for(at: Inserter, outer_loops: list[ForOp], flat: SSAValue, gk: SSAValue) -> dict:
        table = dict(batch_table)
        table |= dict(zip([lp.induction_var for lp in outer_loops], delinearize(at, flat, outer_loops)))
        table |= dict(zip([lp.induction_var for lp in v.red], delinearize(at, gk, v.red)))
        return table

    def stage_one(at: Inserter, dst_buf, dst, value: SSAValue, load, outer_loops, flat, gk, ok) -> None:
        table = table_for(at, outer_loops, flat, gk)
        if load is not None:  # a plain load: an asynchronous copy, zero-filled when not ok
            src = _flat_offset(at, load.memref, [table[i] for i in load.indices])
            at.add(cuda.CpAsyncOp(dst_buf, dst, load.memref, src, ok))
        else:
            at.store(_gathered(at, value, inner, table, ok, zero), dst_buf, [dst])

    def issue(at: Inserter, kt: SSAValue, stage: SSAValue) -> None:
        """Stage K-slice ``kt`` of A and B into ``stage`` (zero outside the matrices)."""
        k0 = at.mul_i(kt, TILE_K)
        for part in range(TILE_M * TILE_K // threads):
            e = at.add_i(t, part * threads)
            r, c = at.div_i(e, TILE_K), at.rem_i(e, TILE_K)  # A tile row-major [m][k]
            gm, gk = at.add_i(row0, r), at.add_i(k0, c)
            ok = at.both(at.less(gm, M), at.less(gk, K))
            dst = at.add_i(at.mul_i(stage, TILE_M * TILE_K), e)
            stage_one(at, a_s, dst, v.a, v.a_load, v.rows, gm, gk, ok)
        for part in range(TILE_K * TILE_N // threads):
            e = at.add_i(t, part * threads)
            r, c = at.div_i(e, TILE_N), at.rem_i(e, TILE_N)  # B tile row-major [k][n]
            gk, gn = at.add_i(k0, r), at.add_i(col0, c)
            ok = at.both(at.less(gk, K), at.less(gn, N))
            dst = at.add_i(at.mul_i(stage, TILE_K * TILE_N), e)
            stage_one(at, b_s, dst, v.b, v.b_load, v.cols, gn, gk, ok)
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
    for i in range(mt_count):
        for j in range(nt_count):
            for e, (rt, ct) in enumerate(c_terms):
                gm = _coord(ins, ins.add_i(warp_row, i * MMA_M), rt, group, tig)
                gn = _coord(ins, ins.add_i(warp_col, j * MMA_N), ct, group, tig)
                g = guard(ins, ins.both(ins.less(gm, M), ins.less(gn, N)))
                table = dict(batch_table)
                table |= dict(zip([lp.induction_var for lp in v.rows], delinearize(g, gm, v.rows)))
                table |= dict(zip([lp.induction_var for lp in v.cols], delinearize(g, gn, v.cols)))
                _epilogue(g, v, g.load(accs[i][j], [g.index(e)]), table)

    Inserter(kernel.body.block, v.top).add(bz)
    v.top.detach()
    v.top.erase()


def _epilogue(g: Inserter, v: GemmView, value: SSAValue, table: dict[SSAValue, SSAValue]) -> None:
    """Store ``value`` (one accumulator) at C[ivs := table] through the kernel's fused chain."""
    out_ivs = [table[lp.induction_var] for lp in v.batch + _in_nest_order(v)]
    if not v.epilogue:
        g.store(value, v.out, out_ivs)
        return
    table = dict(table)
    for op in v.epilogue:
        if isinstance(op, memref.LoadOp) and op.memref is v.out:
            table[op.res] = value
        elif isinstance(op, memref.LoadOp):
            table[op.res] = g.load(op.memref, [table.get(i, i) for i in op.indices])
        elif isinstance(op, memref.StoreOp):
            g.store(table[op.value], v.out, out_ivs)
        else:
            new = op.clone(value_mapper={x: table.get(x, x) for x in op.operands})
            g.add(new)
            for old, res in zip(op.results, new.results):
                table[old] = res


def _in_nest_order(v: GemmView) -> list[ForOp]:
    """The output's parallel loops (rows and cols) in their original nesting order."""
    loops = v.rows + v.cols
    depth = {lp: len([p for p in _parents(lp)]) for lp in loops}
    return sorted(loops, key=depth.__getitem__)


def _parents(op: Operation) -> list[Operation]:
    out = []
    parent = op.parent_op()
    while parent is not None:
        out.append(parent)
        parent = parent.parent_op()
    return out
