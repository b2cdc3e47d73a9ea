"""Running a GPU-lowered host function in Python, its kernels through the emulator.

The host function after ``lower-to-gpu`` is exactly what ``host_code.py`` prints
as the CUDA C host entry: device buffers (``gpu.alloc``), kernel launches, and
the branches and loops of ``graph.if``/``graph.loop``/``graph.scan`` (``scf.if``,
``scf.while``, ``scf.for``) whose conditions are host ``memref.load``s of device
memory. Executing that IR op by op, with numpy arrays for device buffers and
``emulate_kernel`` for each launch, checks the same program the CUDA C runs
(why not the C itself: it would need a stand-in for the CUDA runtime and the
emulated kernels behind it). Scalar host ops compute what
``lowering/scalar_semantics.py`` says, as in the kernels.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects import arith, func, gpu, memref, scf
from xdsl.dialects.builtin import IntegerType
from xdsl.ir import Block, Operation, SSAValue

from dlc.dialects.graph_base import numpy_dtype
from dlc.dialects.tloop import WeightOp
from dlc.lowering.scalar_semantics import ScalarError, constant_value, knows, scalar_function


class HostEmulationError(Exception):
    """The host function holds an op the host executor does not run (one line)."""


def _fresh(type_) -> np.ndarray:
    """A new device buffer: NaN floats (a kernel must write what it reads), zero integers."""
    dtype = numpy_dtype(type_.element_type)
    if isinstance(type_.element_type, IntegerType):
        return np.zeros(type_.get_shape(), dtype)
    return np.full(type_.get_shape(), np.nan).astype(dtype)


class HostExecutor:
    def __init__(self, module, entry: str, emulate_kernel):
        from dlc.backends.cuda.lower_to_gpu import is_host, is_kernel

        self.kernels = {op.sym_name.data: op for op in module.ops if is_kernel(op)}
        hosts = [op for op in module.ops if is_host(op) and op.sym_name.data == entry]
        if not hosts:
            raise HostEmulationError(f"no host function @{entry}")
        self.host = hosts[0]
        self.where = f"host @{entry}"
        self.emulate_kernel = emulate_kernel
        self.launches = 0  # kernels launched by the last run (tests count them)

    def run(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        block = self.host.body.block
        num_inputs = self.host.attributes["tloop.num_inputs"].value.data  # type: ignore[union-attr]
        env: dict[SSAValue, object] = {}
        outputs = []
        for arg in block.args:
            t = arg.type
            if arg.index < num_inputs:
                given = np.asarray(inputs[arg.index])
                want = numpy_dtype(t.element_type)
                if given.dtype.type.__module__ == "ml_dtypes" and given.dtype.itemsize == np.dtype(want).itemsize:
                    given = given.view(want)  # bf16 & co. live in memory as their bits (i16...)
                env[arg] = np.array(given, dtype=want).reshape(t.get_shape())
            else:
                env[arg] = np.zeros(t.get_shape(), numpy_dtype(t.element_type))
                outputs.append(env[arg])
        self.launches = 0
        with np.errstate(all="ignore"):
            self.block(block, env)
        return outputs

    def block(self, block: Block, env: dict) -> list:  # noqa: C901 - one dispatch table
        from dlc.weights import lookup_weight

        for op in block.ops:
            if isinstance(op, (scf.YieldOp, scf.ConditionOp)):
                return [env[v] for v in op.operands]
            if isinstance(op, func.ReturnOp):
                return []
            if isinstance(op, gpu.AllocOp):
                env[op.result] = _fresh(op.result.type)
            elif isinstance(op, gpu.MemcpyOp):
                env[op.dst][...] = env[op.src]
            elif isinstance(op, WeightOp):
                env[op.buffer] = np.asarray(lookup_weight(op, op.weight_name.data)).reshape(
                    op.buffer.type.get_shape())
            elif isinstance(op, memref.ReinterpretCastOp):  # a reshape view (bufferize.py)
                env[op.result] = env[op.source].reshape(op.result.type.get_shape())
            elif isinstance(op, gpu.LaunchFuncOp):
                kernel = self.kernels[op.kernel.root_reference.data]
                self.emulate_kernel(kernel, [env[v] for v in op.kernelOperands])
                self.launches += 1
            elif isinstance(op, (gpu.DeallocOp, memref.DeallocOp)):
                continue
            elif isinstance(op, memref.LoadOp):  # host_code.py: a D2H copy of one element
                value = env[op.memref][tuple(env[i] for i in op.indices)]
                env[op.res] = value if value.dtype.kind == "f" else int(value)  # as the kernels' loads
            elif isinstance(op, memref.StoreOp):  # an H2D copy of one element
                env[op.memref][tuple(env[i] for i in op.indices)] = env[op.value]
            elif isinstance(op, scf.IfOp):
                region = op.true_region if env[op.cond] else op.false_region
                values = self.block(region.block, env) if region.blocks else []
                for r, v in zip(op.results, values):
                    env[r] = v
            elif isinstance(op, scf.ForOp):
                iv = op.body.block.args[0]
                for t in range(env[op.lb], env[op.ub], env[op.step]):
                    env[iv] = t
                    self.block(op.body.block, env)
            elif isinstance(op, scf.WhileOp):
                self.while_loop(op, env)
            elif isinstance(op, arith.ConstantOp):
                env[op.result] = constant_value(op)
            else:
                self.scalar(op, env)
        return []

    def while_loop(self, op: scf.WhileOp, env: dict) -> None:
        before, after = op.before_region.block, op.after_region.block
        values = [env[v] for v in op.arguments]
        while True:
            for arg, v in zip(before.args, values):
                env[arg] = v
            forwarded = self.block(before, env)
            cond = before.last_op
            assert isinstance(cond, scf.ConditionOp)
            if not env[cond.condition]:
                break
            for arg, v in zip(after.args, forwarded[1:]):
                env[arg] = v
            values = self.block(after, env)
        for r, v in zip(op.results, forwarded[1:]):
            env[r] = v

    def scalar(self, op: Operation, env: dict) -> None:
        if not knows(op.name) or len(op.results) != 1:
            raise HostEmulationError(f"{self.where}: the host executor does not run '{op.name}'")
        try:
            env[op.results[0]] = scalar_function(op)(*[env[v] for v in op.operands])
        except ScalarError as err:
            raise HostEmulationError(f"{self.where}: '{op.name}': {err}") from None
