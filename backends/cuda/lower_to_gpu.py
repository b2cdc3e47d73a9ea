"""`lower-to-gpu`: tensor-loop module -> GPU kernels + host code with device buffers.

Input: the loop-level contract (``tloop.kernel`` and ``tloop.host`` functions).

1. Each kernel without bindings gets the default GPU schedule for its class
   (see ``dlc.backends.cuda.gpu_schedule``); kernels the user already bound are
   kept as they are.
2. Bound loops are materialised: ``tloop.for %i ... {gpu.bind = "threadIdx.x"}``
   becomes ``%i = lb + gpu.thread_id x * step``, guarded by ``scf.if`` when the
   loop is shorter than the launch extent. The kernel gets ``gpu.kernel`` and
   its launch shape ``gpu.grid`` / ``gpu.block`` (``array<i64: x, y, z>``).
3. Host functions run on device buffers: their arguments and weights are device
   pointers (the entries of ``host_code.py`` copy host buffers in and out),
   ``gpu.alloc``/``gpu.dealloc`` for intermediates, ``gpu.launch_func`` per kernel
   call. The weights used are listed, in the order the host entry takes them, in
   the host function's ``gpu.weights`` attribute. Host control flow (``scf.if``,
   ``scf.for``, ``scf.while``) stays host control flow, at any depth.

Kernels stay ``func.func`` (not ``gpu.func`` in a ``gpu.module``): xDSL has no
outlining and its gpu ops print only in generic form; the CUDA/PTX emitters
read the kernels directly.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, gpu, memref, scf
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    IndexType,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    UnitAttr,
    i64,
)
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from dlc.backends.cuda.cuda_c import byte_size, is_shared
from dlc.backends.cuda.gpu_schedule import apply_default_schedule, binding
from dlc.dialects.tloop import ForOp, WeightOp, YieldOp

KERNEL_ATTR = "tloop.kernel"
HOST_ATTR = "tloop.host"
MAX_THREADS_PER_BLOCK = 1024
MAX_STATIC_SHARED_BYTES = 48 * 1024  # __shared__ arrays; more needs dynamic shared memory


class GpuLoweringError(DiagnosticException):
    """A kernel or host function cannot be mapped to the GPU (one-line message)."""


@dataclass
class LaunchShape:
    grid: tuple[int, int, int]
    block: tuple[int, int, int]


def is_kernel(op: Operation) -> bool:
    return isinstance(op, func.FuncOp) and KERNEL_ATTR in op.attributes


def is_host(op: Operation) -> bool:
    return isinstance(op, func.FuncOp) and HOST_ATTR in op.attributes


def launch_shape(kernel: func.FuncOp) -> LaunchShape:
    grid = kernel.attributes["gpu.grid"].get_values()
    block = kernel.attributes["gpu.block"].get_values()
    return LaunchShape(tuple(grid), tuple(block))  # type: ignore[arg-type]


# --------------------------------------------------------------------------- kernels


def materialize_bindings(kernel: func.FuncOp) -> LaunchShape:
    name = kernel.sym_name.data
    bound = [op for op in kernel.walk() if isinstance(op, ForOp) and binding(op)]
    extent: dict[str, int] = {}
    for lp in bound:
        axis = binding(lp)
        extent[axis] = max(extent.get(axis, 1), lp.trip_count)  # type: ignore[index]
    for lp in bound:
        axis = binding(lp)
        assert axis is not None
        kind, dim = axis.split(".")
        id_op = (gpu.BlockIdOp if kind == "blockIdx" else gpu.ThreadIdOp)(
            gpu.DimensionAttr(gpu.DimensionEnum(dim))
        )
        block = lp.parent_block()
        assert block is not None
        block.insert_op_before(id_op, lp)
        iv = id_op.results[0]
        iv.name_hint = lp.induction_var.name_hint
        if lp.stride != 1:
            step = arith.ConstantOp(IntegerAttr(lp.stride, IndexType()))
            mul = arith.MuliOp(iv, step)
            block.insert_ops_before([step, mul], lp)
            iv = mul.results[0]
        if lp.lower != 0:
            low = arith.ConstantOp(IntegerAttr(lp.lower, IndexType()))
            add = arith.AddiOp(iv, low)
            block.insert_ops_before([low, add], lp)
            iv = add.results[0]
        ops = [o for o in lp.body.block.ops if not isinstance(o, YieldOp)]
        if lp.trip_count < extent[axis]:
            # a guard on a block index is uniform over the block: barriers inside are fine
            if kind == "threadIdx" and any(isinstance(o, gpu.BarrierOp) for body_op in ops for o in body_op.walk()):
                raise GpuLoweringError(
                    f"lower-to-gpu: kernel @{name}: loop %{lp.induction_var.name_hint} bound to "
                    f"{axis} has {lp.trip_count} iterations but {extent[axis]} are launched, and "
                    "its body holds a barrier (a guarded barrier deadlocks)"
                )
            trip = arith.ConstantOp(IntegerAttr(lp.trip_count, IndexType()))
            cond = arith.CmpiOp(id_op.results[0], trip, "ult")
            then = Block()
            then.add_op(scf.YieldOp())
            block.insert_ops_before([trip, cond, scf.IfOp(cond, [], [then])], lp)
            dest, anchor = then, then.last_op
        else:
            dest, anchor = block, lp
        lp.induction_var.replace_all_uses_with(iv)
        for o in ops:
            o.detach()
            dest.insert_op_before(o, anchor)
        lp.detach()
        lp.erase()
    grid = tuple(extent.get(f"blockIdx.{d}", 1) for d in "xyz")
    threads = tuple(extent.get(f"threadIdx.{d}", 1) for d in "xyz")
    if threads[0] * threads[1] * threads[2] > MAX_THREADS_PER_BLOCK:
        raise GpuLoweringError(
            f"lower-to-gpu: kernel @{name}: {threads[0] * threads[1] * threads[2]} threads per "
            f"block exceed the CUDA limit of {MAX_THREADS_PER_BLOCK}"
        )
    shared = sum(byte_size(op.memref.type) for op in kernel.walk()
                 if isinstance(op, memref.AllocaOp) and is_shared(op.memref.type))
    if shared > MAX_STATIC_SHARED_BYTES:
        raise GpuLoweringError(
            f"lower-to-gpu: kernel @{name}: {shared} bytes of shared memory exceed the static "
            f"limit of {MAX_STATIC_SHARED_BYTES} (split the kernel or tile its scratch)"
        )
    if grid[1] > 65535 or grid[2] > 65535:
        raise GpuLoweringError(f"lower-to-gpu: kernel @{name}: grid y/z extent above 65535: {grid}")
    kernel.attributes["gpu.kernel"] = UnitAttr()
    kernel.attributes["gpu.grid"] = DenseArrayBase.from_list(i64, grid)
    kernel.attributes["gpu.block"] = DenseArrayBase.from_list(i64, threads)
    return LaunchShape(grid, threads)  # type: ignore[arg-type]


def lower_kernel(kernel: func.FuncOp, mma: str | None = None) -> LaunchShape:
    if "gpu.kernel" in kernel.attributes:
        return launch_shape(kernel)
    schedule = apply_default_schedule(kernel, mma)
    kernel.attributes["gpu.schedule"] = StringAttr(schedule)  # named in the emitted .cu
    return materialize_bindings(kernel)


# --------------------------------------------------------------------------- host


def _index_consts(block: Block, anchor: Operation, values: tuple[int, ...]) -> list[SSAValue]:
    out = []
    for v in values:
        c = arith.ConstantOp(IntegerAttr(v, IndexType()))
        block.insert_op_before(c, anchor)
        out.append(c.results[0])
    return out


def _hoist_weights(host: func.FuncOp) -> list[str]:
    """Move every ``tloop.weight`` (branches and loop bodies too) to the entry, one per
    name: weights are constants, so the entry takes them once as device pointers."""
    block = host.body.block
    kept: dict[str, WeightOp] = {}
    for op in [o for o in host.walk() if isinstance(o, WeightOp)]:
        name = op.weight_name.data
        op.detach()
        if name in kept:
            op.buffer.replace_all_uses_with(kept[name].buffer)
            op.erase()
        else:
            kept[name] = op
    anchor = block.first_op
    assert anchor is not None
    block.insert_ops_before(list(kept.values()), anchor)
    return list(kept)


def lower_host(host: func.FuncOp, shapes: dict[str, LaunchShape]) -> None:
    """Host code on device buffers. The function's arguments are device pointers (the
    emitted entries copy host buffers in and out, or take device pointers as they are),
    weights come as a table of device pointers (``gpu.weights`` gives its order),
    buffers become ``gpu.alloc``/``gpu.dealloc``, kernel calls ``gpu.launch_func``.
    Host control flow (``scf.if``/``scf.for``/``scf.while`` from lower-to-loops) stays:
    its ``memref.load``/``memref.store`` of a condition, trip count or iteration index
    read and write device memory (the CUDA C copies that one element), so nothing is
    unrolled however many iterations a loop has."""
    name = host.sym_name.data
    weights = _hoist_weights(host)
    for op in list(host.walk()):
        block = op.parent_block()
        if isinstance(op, memref.AllocOp):
            alloc = gpu.AllocOp(op.memref.type)
            alloc.results[0].name_hint = op.memref.name_hint
            block.insert_op_before(alloc, op)
            op.memref.replace_all_uses_with(alloc.results[0])
            op.detach()
            op.erase()
        elif isinstance(op, memref.DeallocOp):
            block.insert_op_before(gpu.DeallocOp(op.memref), op)
            op.detach()
            op.erase()
        elif isinstance(op, func.CallOp):
            callee = op.callee.root_reference.data
            if callee not in shapes:
                raise GpuLoweringError(
                    f"lower-to-gpu: host function @{name} calls @{callee}, which is not a kernel"
                )
            shape = shapes[callee]
            grid = _index_consts(block, op, shape.grid)
            threads = _index_consts(block, op, shape.block)
            launch = gpu.LaunchFuncOp(SymbolRefAttr(callee), grid, threads, None, list(op.arguments))
            block.insert_op_before(launch, op)
            op.detach()
            op.erase()
    host.attributes["gpu.host"] = UnitAttr()
    host.attributes["gpu.weights"] = ArrayAttr([StringAttr(w) for w in weights])


@dataclass(frozen=True)
class LowerToGPUPass(ModulePass):
    """Schedule kernels for the GPU and make host functions drive the device."""

    name = "lower-to-gpu"
    allow_tf32: bool = False  # f32 matmuls may use tf32 tensor cores (as torch's allow_tf32)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.allow_tf32:
            op.attributes["gpu.allow_tf32"] = UnitAttr()
        lower_to_gpu(op)


def lower_to_gpu(module: ModuleOp) -> ModuleOp:
    from dlc.backends.cuda.mma_schedule import mma_precisions

    precisions = mma_precisions(module)  # which matmuls may use tensor cores, and how
    shapes = {k.sym_name.data: lower_kernel(k, precisions.get(k.sym_name.data))
              for k in module.ops if is_kernel(k)}
    for host in [h for h in module.ops if is_host(h)]:
        if "gpu.host" not in host.attributes:
            lower_host(host, shapes)
    return module


def ensure_gpu_lowered(module: ModuleOp) -> ModuleOp:
    """Bring ``module`` to the GPU level in place: graph functions go through the
    graph passes of ``dlc.compile`` (``dlc.passes.GPU_GRAPH_PASSES``: ``legalize``, as
    composite ops such as dense or batch_norm have no kernel, and ``fold-constant``) and ``lower-to-loops`` first, then
    ``lower-to-gpu`` runs if it has not yet."""
    graph_funcs = [
        op for op in module.ops
        if isinstance(op, func.FuncOp) and not op.is_declaration
        and not is_kernel(op) and not is_host(op)
    ]
    if graph_funcs:
        from dlc.context import make_context
        from dlc.lowering.lower_to_loops import lower_module
        from dlc.passes import GPU_GRAPH_PASSES, load_pass

        ctx = make_context()
        for name in GPU_GRAPH_PASSES:  # the CPU target's graph pipeline; control flow stays
            load_pass(name)().apply(ctx, module)
        lower_module(module)
    if any(is_kernel(op) and "gpu.kernel" not in op.attributes for op in module.ops) or any(
        is_host(op) and "gpu.host" not in op.attributes for op in module.ops
    ):
        lower_to_gpu(module)
    return module
