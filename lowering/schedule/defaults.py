"""apply_default_schedules: a simple, safe default for every kernel.

For now: the outermost loop of each loop nest is marked parallel when it has
at least 2 iterations and its iterations write disjoint elements; the
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


def apply_default_schedules(module: ModuleOp, target: str = "llvm") -> ModuleOp:
    if target != "llvm":
        return module  # GPU schedules are the GPU lowering's business
    for kernel in module.ops:
        if not isinstance(kernel, func.FuncOp) or KERNEL_ATTR not in kernel.attributes:
            continue
        for top in [op for op in kernel.body.block.ops if isinstance(op, ForOp)]:
            if top.loop_kind == "serial" and top.trip_count >= 2 and parallel_problem(top) is None:
                top.kind = StringAttr("parallel")
            for loop in [top] + inner_loops(top):
                if (loop.loop_kind == "serial" and not inner_loops(loop) and loop.trip_count >= 2
                        and vectorize_problem(loop) is None):
                    loop.kind = StringAttr("vectorized")
    return module
