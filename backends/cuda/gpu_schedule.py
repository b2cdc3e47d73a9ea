"""GPU schedules on tloop kernels: TVM's ``bind`` and a default schedule per kernel class.

A binding is the attribute ``gpu.bind = "blockIdx.x"`` (or ``threadIdx.y`` ...)
on a ``tloop.for``: every iteration runs on its own block/thread along that
axis. Bindings stay on the loop IR so that the schedule remains printable and
other loop primitives still apply; ``lower-to-gpu`` later turns bound loops into
``gpu.block_id``/``gpu.thread_id`` (xDSL's gpu dialect has the id ops but no
loop-to-processor mapping, hence this module).

Shared memory is a ``memref.alloca`` whose memory space is 3 (NVVM's shared
space); ``gpu.barrier`` (xDSL) is ``__syncthreads()``. ``stage_in_shared``
turns a ``cache_read`` scratch (dlc.lowering.schedule) into shared memory: the
copy is spread over the block's threads, with barriers around its use.

Default schedules (``apply_default_schedule``), tried in order:

* **matmul** (``C[b.., i, j] = init; C += A[b.., i, k] * B[b.., k, j]``): tiled
  with shared memory and register blocks, see ``matmul_schedule``.
* **row reduction** (outer parallel rows, inner loops over the innermost axis
  with at least one accumulation, e.g. sum/softmax/layer-norm/global pooling):
  one block per row; element loops are strided over the block's threads,
  accumulations become warp-shuffle reductions (warp_reduce.py).
* **generic** (elementwise, conv2d, windowed pooling...): the leading parallel
  loops are flattened and mapped to a grid-stride (blocks x threads) loop; the
  rest runs per thread, with accumulations kept in a register.
"""

from __future__ import annotations

import math as pymath
from dataclasses import dataclass

from xdsl.dialects import func, gpu, memref, scf
from xdsl.dialects.builtin import IntegerType, StringAttr
from xdsl.ir import Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from dlc.backends.cuda.loop_utils import (
    Inserter,
    body_inserter,
    body_ops,
    defined_outside,
    flatten,
    float_const,
    guard,
    loop,
    move_ops,
    perfect_nest,
    strided,
)
from dlc.dialects.tloop import ForOp

BIND_ATTR = "gpu.bind"
GPU_AXES = tuple(f"{k}.{d}" for k in ("blockIdx", "threadIdx") for d in "xyz")
THREADS = 256
MAX_GRID_BLOCKS = 8192  # enough to fill an H100/H200; beyond it threads loop (grid stride)
REDUCTION_MIN_TRIP = 32  # shorter reductions run faster inside one thread

IDENTITY = {
    "arith.addf": 0.0, "arith.mulf": 1.0, "arith.maximumf": -pymath.inf,
    "arith.minimumf": pymath.inf, "arith.maxnumf": -pymath.inf, "arith.minnumf": pymath.inf,
    "arith.addi": 0, "arith.muli": 1, "arith.ori": 0, "arith.xori": 0, "arith.andi": -1,
    "arith.maxsi": "min", "arith.minsi": "max",
}


def bind(loop_op: ForOp, axis: str) -> None:
    """Map the iterations of ``loop_op`` to GPU blocks or threads along ``axis``."""
    if axis not in GPU_AXES:
        raise VerifyException(f"bind: axis must be one of {', '.join(GPU_AXES)}, got '{axis}'")
    loop_op.attributes[BIND_ATTR] = StringAttr(axis)


def binding(loop_op: ForOp) -> str | None:
    attr = loop_op.attributes.get(BIND_ATTR)
    return attr.data if isinstance(attr, StringAttr) else None


def is_parallel(loop_op: ForOp) -> bool:
    """Iterations write disjoint elements: marked so, or proven by the schedule analysis."""
    if loop_op.loop_kind in ("parallel", "vectorized") or writes_disjoint_slices(loop_op):
        return True
    from dlc.lowering.schedule.annotate import parallel_problem

    return parallel_problem(loop_op) is None


def writes_disjoint_slices(loop_op: ForOp) -> bool:
    """Every buffer written in the loop is accessed, at every access inside it, with the
    loop's induction variable itself at one fixed position: iteration i touches slice i only."""
    iv = loop_op.induction_var
    accesses = [op for op in loop_op.walk() if isinstance(op, (memref.LoadOp, memref.StoreOp))]
    written = {op.memref for op in accesses if isinstance(op, memref.StoreOp)}
    for buffer in written:
        if not defined_outside(buffer, loop_op):
            continue  # scratch allocated per iteration is private
        positions = None
        for op in accesses:
            if op.memref is not buffer:
                continue
            mine = {k for k, index in enumerate(op.indices) if index is iv}
            positions = mine if positions is None else positions & mine
            if not positions:
                return False
    return True


def kernel_loops(kernel: func.FuncOp) -> list[ForOp]:
    return [op for op in kernel.body.block.ops if isinstance(op, ForOp)]


# --------------------------------------------------------------------------- patterns


@dataclass
class Accumulation:
    """``out[I] = combine(out[I], x)`` inside a loop, with I invariant in the loop."""

    store: memref.StoreOp
    load: memref.LoadOp
    combine: Operation


def find_accumulation(loop_op: ForOp) -> Accumulation | None:
    stores = invariant_stores(loop_op)
    if len(stores) != 1:
        return None
    store = stores[0]
    combine = store.value.owner
    if not isinstance(combine, Operation) or combine.name not in IDENTITY:
        return None
    for operand in combine.operands:
        load = operand.owner
        if (
            isinstance(load, memref.LoadOp)
            and load.memref is store.memref
            and list(load.indices) == list(store.indices)
            and load.results[0].uses.get_length() == 1
        ):
            accesses = [
                op for op in loop_op.walk()
                if isinstance(op, (memref.LoadOp, memref.StoreOp)) and op.memref is store.memref
            ]
            if len(accesses) == 2:
                return Accumulation(store, load, combine)
    return None


def invariant_stores(loop_op: ForOp) -> list[memref.StoreOp]:
    """Stores inside ``loop_op`` that write the same element on every iteration."""
    return [
        op for op in loop_op.walk()
        if isinstance(op, memref.StoreOp) and all(defined_outside(i, loop_op) for i in op.indices)
    ]


def identity_value(ins: Inserter, acc: Accumulation) -> SSAValue:
    type_ = acc.store.value.type
    ident = IDENTITY[acc.combine.name]
    if isinstance(ident, str):
        width = type_.width.data if isinstance(type_, IntegerType) else 32
        ident = -(1 << (width - 1)) if ident == "min" else (1 << (width - 1)) - 1
    return float_const(ins, ident, type_)


def redirect_accumulation(acc: Accumulation, register: SSAValue, zero: SSAValue) -> None:
    """Make the accumulation read and write ``register[0]`` instead of ``out[I]``."""
    new_load = memref.LoadOp.get(register, [zero])
    acc.load.parent_block().insert_op_before(new_load, acc.load)
    acc.load.results[0].replace_all_uses_with(new_load.results[0])
    acc.load.detach()
    acc.load.erase()
    new_store = memref.StoreOp.get(acc.store.value, register, [zero])
    acc.store.parent_block().insert_op_before(new_store, acc.store)
    acc.store.detach()
    acc.store.erase()


def keep_accumulations_in_registers(root: Operation) -> None:
    """Per-thread code: accumulate in a local scalar, write ``out[I]`` once."""
    done: list[ForOp] = []
    for loop_op in [op for op in root.walk() if isinstance(op, ForOp)]:
        if loop_op.parent is None or binding(loop_op) or any(d.is_ancestor(loop_op) for d in done):
            continue
        acc = find_accumulation(loop_op)
        if acc is None or isinstance(acc.store.memref.owner, memref.AllocaOp):
            continue  # already a local scalar (or scratch)
        done.append(loop_op)
        out, indices = acc.store.memref, list(acc.store.indices)
        ins = Inserter(loop_op.parent_block(), loop_op)
        register = ins.alloca(acc.store.value.type, [1], shared=False, name="acc")
        zero = ins.index(0)
        ins.store(ins.load(out, indices), register, [zero])
        redirect_accumulation(acc, register, zero)
        after = Inserter(loop_op.parent_block(), loop_op.next_op)
        after.store(after.load(register, [zero]), out, indices)


# --------------------------------------------------------------------------- generic


def grid_stride(flat: ForOp) -> None:
    """Map ``flat`` (lb 0, step 1) onto blocks x threads, looping when the grid is capped."""
    total = flat.trip_count
    threads = THREADS if total >= THREADS else max(32, -(-total // 32) * 32)
    blocks = min(-(-total // threads), MAX_GRID_BLOCKS)
    block_loop = loop(blocks, "bx", "parallel", "blockIdx.x")
    thread_loop = loop(threads, "tx", "parallel", "threadIdx.x")
    body_inserter(block_loop).add(thread_loop)
    ins = body_inserter(thread_loop)
    lane = ins.add_i(ins.mul_i(block_loop.induction_var, threads), thread_loop.induction_var)
    Inserter(flat.parent_block(), flat).add(block_loop)
    flat.detach()
    ins.add(flat)
    strided(flat, lane, blocks * threads, flat.induction_var.name_hint or "s")


def schedule_generic(kernel: func.FuncOp) -> None:
    tops = kernel_loops(kernel)
    block = kernel.body.block
    if len(tops) == 1 and is_parallel(tops[0]):
        nest = perfect_nest(tops[0], parallel_only=True)
        grid_stride(flatten(nest) if len(nest) > 1 else nest[0])
    else:
        # Several nests depend on each other: one block, a barrier between nests.
        lanes = THREADS if tops else 1
        thread_loop = loop(lanes, "tx", "parallel", "threadIdx.x")
        move_ops([op for op in block.ops if op is not block.last_op], body_inserter(thread_loop))
        Inserter(block, block.last_op).add(thread_loop)
        lane = thread_loop.induction_var
        for op in body_ops(thread_loop):
            if isinstance(op, memref.AllocaOp):
                _make_shared(op)  # nests communicate through it: one copy per block
        for top in tops:
            if is_parallel(top):
                nest = perfect_nest(top, parallel_only=True)
                flat = flatten(nest) if len(nest) > 1 else nest[0]
                nxt = strided(flat, lane, lanes, flat.induction_var.name_hint or "s").next_op
            else:
                ins = Inserter(top.parent_block(), top)
                only = guard(ins, ins.equal(lane, 0))
                nxt = top.next_op
                top.detach()
                only.add(top)
            Inserter(thread_loop.body.block, nxt).add(gpu.BarrierOp())
    keep_accumulations_in_registers(kernel)


# --------------------------------------------------------------------------- reductions


def block_reduce(target: ForOp, acc: Accumulation, lane: SSAValue, lanes: int) -> Operation:
    """Strided partial accumulation per thread, then warp shuffles (warp_reduce.py);
    thread 0 folds the total into the output. Returns the last op."""
    from dlc.backends.cuda.warp_reduce import block_allreduce

    elt = acc.store.value.type
    out, indices = acc.store.memref, list(acc.store.indices)
    ins = Inserter(target.parent_block(), target)
    register = ins.alloca(elt, [1], shared=False, name="acc")
    zero = ins.index(0)
    ident = identity_value(ins, acc)
    ins.store(ident, register, [zero])
    combine = acc.combine
    redirect_accumulation(acc, register, zero)
    per_thread = strided(target, lane, lanes, target.induction_var.name_hint or "s")
    after = Inserter(per_thread.parent_block(), per_thread.next_op)
    total = block_allreduce(after, combine, after.load(register, [zero]), lane, lanes, ident)
    g = guard(after, after.equal(lane, 0))
    g.store(_combine_like(g, combine, g.load(out, indices), total), out, indices)
    return g.block.parent_op()


def _combine_like(ins: Inserter, combine: Operation, a: SSAValue, b: SSAValue) -> SSAValue:
    op = combine.clone()
    op.operands = (a, b)
    return ins.val(op)


def wrap_full_reduction(kernel: func.FuncOp) -> ForOp | None:
    """A reduction to one element (loops at the kernel's top level, one of them an
    accumulation) is a row reduction with a single row: wrap it in a 1-trip row loop."""
    block = kernel.body.block
    ops = [op for op in block.ops if op is not block.last_op]
    loops = [op for op in ops if isinstance(op, ForOp)]
    if not loops or any(isinstance(op, memref.AllocaOp) for op in ops):
        return None
    if not any(find_accumulation(lp) for lp in loops):
        return None
    row = loop(1, "row", "parallel")
    move_ops([op for op in ops if not is_pure_constant(op)], body_inserter(row))
    Inserter(block, block.last_op).add(row)
    return row


def is_pure_constant(op: Operation) -> bool:
    return op.name == "arith.constant"


def schedule_row_reduction(kernel: func.FuncOp) -> bool:
    tops = kernel_loops(kernel)
    if len(tops) > 1 or (tops and not is_parallel(tops[0])):
        wrapped = wrap_full_reduction(kernel)
        if wrapped is None:
            return False
        if not schedule_row_reduction(kernel):
            _unwrap(wrapped)
            return False
        return True
    if len(tops) != 1 or not is_parallel(tops[0]):
        return False
    if any(isinstance(op, memref.AllocaOp) for op in kernel.body.block.ops):
        return False
    rows = perfect_nest(tops[0], parallel_only=True)
    inner = [op for op in body_ops(rows[-1]) if isinstance(op, ForOp)]
    if not inner:
        return False
    longest = 0
    for lp in inner:
        nest = perfect_nest(lp, parallel_only=False)
        if sum(isinstance(op, ForOp) for op in lp.walk()) != len(nest):
            return False
        longest = max(longest, pymath.prod(x.trip_count for x in nest))
    accs = [find_accumulation(lp) for lp in inner]
    if longest < REDUCTION_MIN_TRIP or not any(accs):
        return False
    if any(acc is None and invariant_stores(lp) for lp, acc in zip(inner, accs)):
        return False  # a loop-invariant store that is not a reduction would race

    for lp in inner:
        nest = perfect_nest(lp, parallel_only=False)
        if len(nest) > 1:
            flatten(nest, kind="serial")
    row = flatten(rows) if len(rows) > 1 else rows[0]
    bind(row, "blockIdx.x")
    lanes = THREADS if longest >= THREADS else max(32, 1 << (longest - 1).bit_length())
    thread_loop = loop(lanes, "tx", "parallel", "threadIdx.x")
    move_ops(body_ops(row), body_inserter(thread_loop))
    body_inserter(row).add(thread_loop)
    lane = thread_loop.induction_var
    tb = thread_loop.body.block
    for op in body_ops(thread_loop):
        if isinstance(op, ForOp):
            acc = find_accumulation(op)
            last = block_reduce(op, acc, lane, lanes) if acc else strided(op, lane, lanes, "s")
            Inserter(tb, last.next_op).add(gpu.BarrierOp())
        elif isinstance(op, memref.StoreOp):
            # the store and what only it uses (e.g. mean = sum / n) run on thread 0
            moving = _exclusive_slice(op)
            ins = Inserter(tb, op)
            only = guard(ins, ins.equal(lane, 0))
            nxt = op.next_op
            move_ops(moving, only)
            Inserter(tb, nxt).add(gpu.BarrierOp())
        elif isinstance(op, memref.AllocaOp):
            _make_shared(op)
    return True


def _unwrap(row: ForOp) -> None:
    block = row.parent_block()
    move_ops(body_ops(row), Inserter(block, row))
    row.detach()
    row.erase()


def _exclusive_slice(store: memref.StoreOp) -> list[Operation]:
    """``store`` and the ops before it in its block whose results feed only that slice."""
    chosen: list[Operation] = [store]
    op = store.prev_op
    while op is not None:
        if not isinstance(op, ForOp) and not op.regions and op.results and all(
            use.operation in chosen for r in op.results for use in r.uses
        ) and not isinstance(op, memref.AllocaOp):
            chosen.insert(0, op)
        op = op.prev_op
    return chosen


def _make_shared(alloca: memref.AllocaOp) -> None:
    """Row scratch is read by every thread of the block, so it lives in shared memory."""
    from dlc.backends.cuda.loop_utils import SHARED_SPACE

    old = alloca.memref.type
    ins = Inserter(alloca.parent_block(), alloca)
    new = ins.alloca(old.element_type, old.get_shape(), shared=True, name=alloca.memref.name_hint or "scratch")
    assert SHARED_SPACE == new.type.memory_space
    alloca.memref.replace_all_uses_with(new)
    alloca.detach()
    alloca.erase()


# --------------------------------------------------------------------------- shared staging


def thread_extents(kernel: func.FuncOp) -> dict[str, int]:
    extent: dict[str, int] = {}
    for op in kernel.walk():
        if isinstance(op, ForOp) and (axis := binding(op)) and axis.startswith("threadIdx"):
            extent[axis[-1]] = max(extent.get(axis[-1], 1), op.trip_count)
    return extent


def stage_in_shared(kernel: func.FuncOp, scratch: SSAValue) -> None:
    """Turn a ``cache_read`` scratch buffer into block-shared memory (TVM's cache_read
    "shared"): the copy-in loops are spread over all threads of the block, with a barrier
    after the copy and one at the end of the enclosing loop body (before the next refill).

    The ``cache_read`` must be at a loop outside the threadIdx-bound loops, so the copy
    runs once per block iteration."""
    name = kernel.sym_name.data
    label = f"stage_in_shared: kernel @{name}, %{scratch.name_hint or 'scratch'}"
    if not isinstance(scratch.owner, memref.AllocaOp):
        raise VerifyException(f"{label}: not a memref.alloca (use cache_read first)")
    copies = [u.operation for u in scratch.uses if isinstance(u.operation, memref.StoreOp)]
    wanted = f"{scratch.name_hint}_d0"
    tops = [op for c in copies for op in _ancestors(c)
            if isinstance(op, ForOp) and op.induction_var.name_hint == wanted]
    if not tops:
        raise VerifyException(f"{label}: no copy-in loops found (use cache_read first)")
    top = tops[0]
    for op in _ancestors(top):
        if (isinstance(op, ForOp) and (binding(op) or "").startswith("threadIdx")) or isinstance(op, scf.IfOp):
            raise VerifyException(
                f"{label}: the copy runs inside a thread loop or a guard; cache_read at a loop "
                "outside the threadIdx-bound loops")
    extent = thread_extents(kernel)
    if not extent:
        raise VerifyException(f"{label}: the kernel has no threadIdx-bound loop to share the copy")
    ins = Inserter(top.parent_block(), top)
    lane, lanes = None, 1
    for dim in "xyz":
        if dim not in extent:
            continue
        tid = ins.val(gpu.ThreadIdOp(gpu.DimensionAttr(gpu.DimensionEnum(dim))))
        term = ins.mul_i(tid, lanes)
        lane = term if lane is None else ins.add_i(lane, term)
        lanes *= extent[dim]
    nest = perfect_nest(top, parallel_only=False)
    flat = flatten(nest, kind="serial") if len(nest) > 1 else top
    copy = strided(flat, lane, lanes, wanted)
    block = copy.parent_block()
    Inserter(block, copy.next_op).add(gpu.BarrierOp())
    if isinstance(block.parent_op(), ForOp):
        Inserter(block, block.last_op).add(gpu.BarrierOp())
    _make_shared(scratch.owner)


def _ancestors(op: Operation) -> list[Operation]:
    out = []
    parent = op.parent_op()
    while parent is not None:
        out.append(parent)
        parent = parent.parent_op()
    return out


# --------------------------------------------------------------------------- entry


def is_scheduled(kernel: func.FuncOp) -> bool:
    return any(isinstance(op, ForOp) and binding(op) for op in kernel.walk())


def privatize_scratch(kernel: func.FuncOp) -> None:
    """Scratch indexed exactly by the outer loops (``row_max[d0]``) becomes one element
    allocated inside those loops, so the loops become parallel."""
    tops = kernel_loops(kernel)
    if len(tops) != 1:
        return
    nest = perfect_nest(tops[0], parallel_only=False)
    for alloca in [op for op in kernel.body.block.ops if isinstance(op, memref.AllocaOp)]:
        shape = alloca.memref.type.get_shape()
        rank = len(shape)
        if rank == 0 or rank > len(nest):
            continue
        loops = nest[:rank]
        ivs = [lp.induction_var for lp in loops]
        uses = [u.operation for u in alloca.memref.uses]
        if any(lp.lower != 0 or lp.stride != 1 or lp.trip_count != n for lp, n in zip(loops, shape)):
            continue
        if not all(
            isinstance(u, (memref.LoadOp, memref.StoreOp)) and u.memref is alloca.memref
            and list(u.indices) == ivs for u in uses
        ):
            continue
        body = loops[-1].body.block
        ins = Inserter(body, body.first_op)
        scalar = ins.alloca(alloca.memref.type.element_type, [1], shared=False,
                            name=alloca.memref.name_hint or "scratch")
        zero = ins.index(0)
        for use in uses:
            at = Inserter(use.parent_block(), use)
            if isinstance(use, memref.LoadOp):
                use.results[0].replace_all_uses_with(at.load(scalar, [zero]))
            else:
                at.store(use.value, scalar, [zero])
            use.detach()
            use.erase()
        alloca.detach()
        alloca.erase()


def stack_allocate_intermediates(kernel: func.FuncOp) -> None:
    """A kernel's own ``memref.alloc``/``dealloc`` pair (intermediates of a custom TE
    op) becomes a ``memref.alloca``: a device kernel cannot call malloc per thread,
    and the schedules then treat it like any scratch (shared when nests share it)."""
    block = kernel.body.block
    for alloc in [op for op in block.ops if isinstance(op, memref.AllocOp)]:
        ins = Inserter(block, alloc)
        type_ = alloc.memref.type
        scratch = ins.alloca(type_.element_type, type_.get_shape(), shared=False,
                             name=alloc.memref.name_hint or "scratch")
        for use in list(alloc.memref.uses):
            if isinstance(use.operation, memref.DeallocOp):
                use.operation.detach()
                use.operation.erase()
        alloc.memref.replace_all_uses_with(scratch)
        alloc.detach()
        alloc.erase()


def apply_default_schedule(kernel: func.FuncOp, mma: str | None = None) -> str:
    """Schedule ``kernel`` unless it already has bindings; returns the schedule's name.
    ``mma``: the tensor-core input type its matmul may use (mma_schedule.mma_precisions)."""
    stack_allocate_intermediates(kernel)
    if is_scheduled(kernel):
        keep_accumulations_in_registers(kernel)
        return "user"
    privatize_scratch(kernel)
    from dlc.backends.cuda.matmul_schedule import schedule_matmul

    if mma is not None:
        from dlc.backends.cuda.mma_schedule import schedule_mma

        if schedule_mma(kernel, mma):
            return "mma"
    if schedule_matmul(kernel):
        return "matmul"
    if schedule_row_reduction(kernel):
        return "row-reduction"
    schedule_generic(kernel)
    return "generic"
