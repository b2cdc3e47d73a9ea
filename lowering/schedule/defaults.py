"""apply_default_schedules: a simple, safe default for every kernel.

For now: the outermost loop of each loop nest is marked parallel when it has
at least 2 iterations, the nest does enough work to pay for waking threads,
and its iterations write disjoint elements; the
innermost loop is marked vectorized when its accesses are stride-1 and it is
not a reduction loop. Whenever a check cannot prove a change safe, nothing
is changed. (Per-op-class schedules will replace this.)
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr

from dlc.dialects.tloop import KERNEL_ATTR, ForOp
from dlc.lowering.schedule.annotate import parallel_problem, vectorize_problem
from dlc.lowering.schedule.core import inner_loops
from dlc.lowering.schedule.defaults_dense import schedule_dense
from dlc.lowering.schedule.defaults_conv_grouped import schedule_grouped
from dlc.lowering.schedule.defaults_elementwise import schedule_generic
from dlc.lowering.schedule.defaults_nchwc import mark_block_vectors, schedule_nchwc


# Waking and joining a thread team costs ~50 us with the passive wait policy
# (runtime/native.py), far more when the machine is oversubscribed: a nest runs
# serially unless it does the work of this many iterations of a 64-op body
# (defaults_elementwise.nest_work; about 1M op executions).
MIN_PARALLEL_ITERATIONS = 16384


def nest_iterations(loop: ForOp) -> int:
    """Innermost-body executions of ``loop``'s nest (the largest branch)."""
    inner = [op for op in loop.body.block.ops if isinstance(op, ForOp)]
    return loop.trip_count * max((nest_iterations(i) for i in inner), default=1)


def apply_default_schedules(
    module: ModuleOp, target: str = "llvm", min_parallel_iterations: int = MIN_PARALLEL_ITERATIONS
) -> ModuleOp:
    if target != "llvm":
        return module  # GPU schedules are the GPU lowering's business
    for kernel in module.ops:
        if not isinstance(kernel, func.FuncOp) or KERNEL_ATTR not in kernel.attributes:
            continue
        schedule_nchwc(kernel) or schedule_grouped(kernel) or schedule_dense(kernel)  # conv2d_nchwc (defaults_nchwc.py); grouped / depthwise conv2d (defaults_conv_grouped.py); matmul / conv2d (defaults_dense.py)
        # everything else, and nests a dense schedule left alone (fused epilogues)
        schedule_generic(kernel, min_parallel_iterations)
        mark_block_vectors(kernel)  # loops over NCHW{b}c channel blocks: one vector each
    return module
