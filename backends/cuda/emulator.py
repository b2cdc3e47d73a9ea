"""A slow, exact emulator of GPU-lowered kernels in Python: the test oracle for GPU schedules.

It runs every thread of every block as a Python generator that pauses at each
``gpu.barrier``; all threads of a block must reach the same number of barriers.
Between two barriers it checks for data races on shared and global memory (one
thread writes an element that another thread of the block reads or writes), so
a missing barrier or a wrong thread mapping fails the test even though the
threads run one after another. It is never an execution path of compiled code:
`build` runs the real CUDA program; this exists because CI machines have no GPU.
Use small shapes (it interprets every op of every thread). Warp-level ops
(``cuda.shfl``, ``cuda.mma_sync``: dlc/dialects/cuda.py) pause every lane of the warp
like a barrier of 32 threads; once all 32 reached the same op, it is computed for the
whole warp (tensor-core fragments by the PTX ISA's lane layouts, tensor_core.py) and
the lanes resume. ``cuda.cp_async`` is a synchronous (zero-filling) copy; commit and
wait are no-ops. Scalar ops compute
what ``lowering/scalar_semantics.py`` says (the table the loop-IR executor uses,
checked against the LLVM lowering): floats are numpy scalars of the exact width.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from xdsl.dialects import arith, func, gpu, memref, scf
from xdsl.dialects.builtin import IntegerType, MemRefType, ModuleOp
from xdsl.ir import Block, Operation, SSAValue

from dlc.backends.cuda.cuda_c import is_shared, strides_of
from dlc.dialects import cuda
from dlc.dialects.graph_base import numpy_dtype
from dlc.dialects.tloop import ForOp, YieldOp
from dlc.lowering.scalar_semantics import ScalarError, constant_value, knows, scalar_function


WARP = 32


class EmulationError(Exception):
    """A race, a divergent barrier or an unsupported op (one line)."""


class _Buffer:
    def __init__(self, array: np.ndarray, type_: MemRefType, shared_or_global: bool):
        self.flat = array.reshape(-1)
        self.strides = strides_of(type_)
        self.tracked = shared_or_global

    def offset(self, indices: Sequence[int]) -> int:
        off = 0
        for i, s in zip(indices, self.strides):
            off += i * s
        return off


class _Phase:
    """Accesses of one block between two barriers, for race detection."""

    def __init__(self) -> None:
        self.writes: dict[tuple[int, int], int] = {}
        self.reads: dict[tuple[int, int], int] = {}

    def read(self, buf: _Buffer, off: int, thread: int, where: str) -> None:
        key = (id(buf), off)
        writer = self.writes.get(key, thread)
        if writer != thread:
            raise EmulationError(f"{where}: race: thread {thread} reads element {off} written by thread {writer} without a barrier")
        self.reads.setdefault(key, thread)

    def write(self, buf: _Buffer, off: int, thread: int, where: str) -> None:
        key = (id(buf), off)
        writer = self.writes.get(key, thread)
        reader = self.reads.get(key, thread)
        if writer != thread or (reader != thread and key in self.reads):
            other = writer if writer != thread else reader
            raise EmulationError(f"{where}: race: thread {thread} writes element {off} also accessed by thread {other} without a barrier")
        self.writes[key] = thread


class _Thread:
    def __init__(self, kernel_name: str, ids: dict[str, int], dims: dict[str, int],
                 shared: dict[int, _Buffer], phase_ref: list[_Phase], thread: int,
                 scalars: dict[Operation, Callable]):
        self.where = f"kernel @{kernel_name}"
        self.ids, self.dims, self.shared, self.phase_ref, self.thread = ids, dims, shared, phase_ref, thread
        self.scalars = scalars  # op -> its scalar_semantics function, shared by the kernel's threads

    def scalar(self, op: Operation) -> Callable:
        fn = self.scalars.get(op)
        if fn is None:
            if not knows(op.name):
                raise EmulationError(f"{self.where}: the emulator does not support '{op.name}'")
            fn = self.scalars[op] = scalar_function(op)
        return fn

    def run(self, block: Block, env: dict[SSAValue, object]):  # noqa: C901 - one dispatch table
        for op in block.ops:
            name = op.name
            if isinstance(op, (YieldOp, func.ReturnOp)):
                continue
            if isinstance(op, scf.YieldOp):
                return [env[v] for v in op.operands]
            if isinstance(op, gpu.BarrierOp):
                yield "barrier"
                continue
            if isinstance(op, cuda.ShuffleOp):
                env[op.result] = yield ("warp", op, env[op.value])
                continue
            if isinstance(op, cuda.MmaSyncOp):
                yield ("warp", op, (env[op.a].flat, env[op.b].flat, env[op.acc].flat))
                continue
            if isinstance(op, cuda.CpAsyncOp):
                dst = env[op.dst]
                off = env[op.dst_offset]
                if dst.tracked:
                    self.phase_ref[0].write(dst, off, self.thread, self.where)
                if env[op.pred]:
                    src, src_off = env[op.src], env[op.src_offset]
                    self.phase_ref[0].read(src, src_off, self.thread, self.where)
                    dst.flat[off] = src.flat[src_off]
                else:
                    dst.flat[off] = 0
                continue
            if isinstance(op, (cuda.CpAsyncCommitOp, cuda.CpAsyncWaitOp)):
                continue  # copies are synchronous here
            if isinstance(op, ForOp):
                for i in range(op.lower, op.upper, op.stride):
                    env[op.induction_var] = i
                    yield from self.run(op.body.block, env)
                continue
            if isinstance(op, scf.IfOp):
                region = op.true_region if env[op.cond] else op.false_region
                values = (yield from self.run(region.block, env)) if region.blocks else []
                for r, v in zip(op.results, values or []):
                    env[r] = v
                continue
            if isinstance(op, memref.StoreOp):
                buf = env[op.memref]
                off = buf.offset([env[i] for i in op.indices])
                if buf.tracked:
                    self.phase_ref[0].write(buf, off, self.thread, self.where)
                buf.flat[off] = env[op.value]
                continue
            if isinstance(op, memref.AllocaOp):
                type_ = op.memref.type
                if is_shared(type_):
                    key = id(op)
                    if key not in self.shared:
                        self.shared[key] = _Buffer(np.full(type_.get_shape(), np.nan, numpy_dtype(type_.element_type)) if not isinstance(type_.element_type, IntegerType) else np.zeros(type_.get_shape(), numpy_dtype(type_.element_type)), type_, True)
                    env[op.memref] = self.shared[key]
                else:
                    env[op.memref] = _Buffer(np.zeros(type_.get_shape(), numpy_dtype(type_.element_type)), type_, False)
                continue
            result = op.results[0]
            args = [env[v] for v in op.operands]
            if isinstance(op, arith.ConstantOp):
                env[result] = constant_value(op)
            elif isinstance(op, memref.LoadOp):
                buf = env[op.memref]
                off = buf.offset([env[i] for i in op.indices])
                if buf.tracked:
                    self.phase_ref[0].read(buf, off, self.thread, self.where)
                value = buf.flat[off]
                env[result] = value if buf.flat.dtype.kind == "f" else int(value)
            elif isinstance(op, (gpu.ThreadIdOp, gpu.BlockIdOp, gpu.BlockDimOp, gpu.GridDimOp)):
                kind = {gpu.ThreadIdOp: "t", gpu.BlockIdOp: "b", gpu.BlockDimOp: "nt", gpu.GridDimOp: "nb"}[type(op)]
                table = self.ids if kind in ("t", "b") else self.dims
                env[result] = table[kind.lstrip("n") + op.dimension.data.value]
            else:
                try:
                    env[result] = self.scalar(op)(*args)
                except ScalarError as err:  # e.g. an integer division by zero
                    raise EmulationError(f"{self.where}: '{name}': {err}") from None
        return []


def emulate_kernel(kernel: func.FuncOp, buffers: Sequence[np.ndarray]) -> None:
    """Run a GPU-lowered kernel on ``buffers`` (modified in place)."""
    with np.errstate(all="ignore"):  # inf/NaN results are values, as on the GPU
        _emulate_kernel(kernel, buffers)


def _emulate_kernel(kernel: func.FuncOp, buffers: Sequence[np.ndarray]) -> None:
    name = kernel.sym_name.data
    grid = kernel.attributes["gpu.grid"].get_values()  # type: ignore[union-attr]
    threads = kernel.attributes["gpu.block"].get_values()  # type: ignore[union-attr]
    args = kernel.body.block.args
    dims = {f"{k}{d}": n for k, ext in (("b", grid), ("t", threads)) for d, n in zip("xyz", ext)}
    scalars: dict[Operation, Callable] = {}
    for bz in range(grid[2]):
        for by in range(grid[1]):
            for bx in range(grid[0]):
                shared: dict[int, _Buffer] = {}
                phase = [_Phase()]
                globals_ = {a: _Buffer(buf, a.type, True) for a, buf in zip(args, buffers)}
                gens = []
                for tz in range(threads[2]):
                    for ty in range(threads[1]):
                        for tx in range(threads[0]):
                            ids = {"bx": bx, "by": by, "bz": bz, "tx": tx, "ty": ty, "tz": tz}
                            t = _Thread(name, ids, dims, shared, phase, len(gens), scalars)
                            gens.append(t.run(kernel.body.block, dict(globals_)))
                _run_block(name, gens, (bx, by, bz), phase)


def _step(gen, value):
    try:
        return gen.send(value)
    except StopIteration:
        return "done"


def _warp_op(name: str, events: list) -> list:
    """Results for the lanes of one warp that all reached the warp-level op ``events[i][1]``."""
    op = events[0][1]
    if any(e[1] is not op for e in events):
        raise EmulationError(f"kernel @{name}: lanes of a warp reach different warp-level ops")
    lanes = len(events)
    if isinstance(op, cuda.ShuffleOp):
        if lanes != WARP:
            raise EmulationError(f"kernel @{name}: cuda.shfl in a partial warp of {lanes} lanes")
        values = [e[2] for e in events]
        k = op.offset.value.data
        if op.mode.data == "xor":
            return [values[lane ^ k] for lane in range(WARP)]
        return [values[lane + k] if lane + k < WARP else values[lane] for lane in range(WARP)]
    from dlc.backends.cuda.tensor_core import mma_warp

    if lanes != WARP:
        raise EmulationError(f"kernel @{name}: cuda.mma_sync in a partial warp of {lanes} lanes")
    a = np.array([e[2][0] for e in events], np.float32)
    b = np.array([e[2][1] for e in events], np.float32)
    c = np.array([e[2][2] for e in events], np.float32)
    d = mma_warp(op.ab_type.data, a, b, c)
    for e, row in zip(events, d):
        e[2][2][:] = row
    return [None] * WARP


def _run_block(name: str, gens: list, where: tuple[int, int, int], phase: list) -> None:
    """Run one block's threads: warps advance together through warp-level ops; all
    threads meet at each barrier (a new race-check phase starts there)."""
    warps = [list(range(w, min(w + WARP, len(gens)))) for w in range(0, len(gens), WARP)]
    resume: list = [None] * len(gens)
    while True:
        states = []
        for lanes in warps:
            while True:
                events = [_step(gens[t], resume[t]) for t in lanes]
                for t in lanes:
                    resume[t] = None
                kinds = {e if isinstance(e, str) else e[0] for e in events}
                if kinds == {"warp"}:
                    for t, value in zip(lanes, _warp_op(name, events)):
                        resume[t] = value
                    continue
                if len(kinds) != 1:
                    raise EmulationError(f"kernel @{name}: divergent barrier in block {where}")
                states.append(kinds.pop())
                break
        if len(set(states)) != 1:
            raise EmulationError(f"kernel @{name}: divergent barrier in block {where}")
        if states[0] == "done":
            return
        phase[0] = _Phase()


def emulate(module: ModuleOp, inputs: Sequence[np.ndarray], entry: str = "main") -> list[np.ndarray]:
    """Run a GPU-lowered module's host function ``entry`` (its branches and loops too,
    ``host_exec.py``) with emulated kernels."""
    from dlc.backends.cuda.host_exec import HostExecutor

    return HostExecutor(module, entry, emulate_kernel).run(inputs)
