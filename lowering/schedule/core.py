"""`Schedule`: one kernel's schedule primitives, as methods.

Each primitive is a function in the module of its family (loops: split, tile,
reorder, fuse, fuse_siblings; fission: distribute, split_range; annotate:
parallel, vectorize, unroll; cache: cache_read, cache_write; producer:
compute_at, inline). Those modules build on `loop_nest` only; this class sits on
top of them and delegates, so importing it gives the full API (nothing is
attached at import time) and the modules form no cycle.

The helpers of `loop_nest` are re-exported here: the default schedules import
them from this module.
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue

from dlc.dialects.tloop import ForOp
from dlc.lowering.schedule import annotate, cache, fission
from dlc.lowering.schedule import loops as loop_structure
from dlc.lowering.schedule import producer as producers
from dlc.lowering.schedule.loop_nest import (  # noqa: F401  (re-exported)
    KernelLoops,
    LoopHeader,
    ScheduleError,
    append_to_body,
    body_ops,
    build_nest,
    detach_body,
    enclosing_loops,
    find_kernel,
    index_constant,
    inner_loops,
    is_pure_scalar,
    kernel_name,
    loop_name,
    make_if,
    replace_loop,
    value_name,
)

Loop = ForOp | str  # a loop, or its induction-variable name


class Schedule(KernelLoops):
    """Schedule primitives applied to one kernel function, addressing loops by name.

    ```python
    s = Schedule(kernel)            # or Schedule.of(module, "kernel_name")
    io, ii = s.split("i", 4)
    s.vectorize(ii)
    ```
    Every primitive accepts a loop as a `ForOp` or its induction-variable name,
    checks its preconditions and raises `ScheduleError` instead of producing
    wrong code.
    """

    @staticmethod
    def of(module: ModuleOp, name: str) -> Schedule:
        """The schedule of kernel @name of ``module``."""
        return Schedule(find_kernel(module, name))

    # loop structure (loops.py)
    def split(self, loop: Loop, factor: int, outer_name: str | None = None,
              inner_name: str | None = None) -> tuple[ForOp, ForOp]:
        """``for i`` -> ``for i_outer step f*step { for i_inner }`` (see `loops.split`)."""
        return loop_structure.split(self, loop, factor, outer_name, inner_name)

    def tile(self, loop_a: Loop, loop_b: Loop, factor_a: int, factor_b: int) -> tuple[ForOp, ForOp, ForOp, ForOp]:
        """Split both loops and reorder to (a_outer, b_outer, a_inner, b_inner)."""
        return loop_structure.tile(self, loop_a, loop_b, factor_a, factor_b)

    def reorder(self, *loops: Loop) -> list[ForOp]:
        """Permute loops of one perfect nest: the given loops take each other's places, in order."""
        return loop_structure.reorder(self, *loops)

    def fuse(self, outer: Loop, inner: Loop, name: str | None = None) -> ForOp:
        """Fuse a perfectly nested pair into one loop; the indices come back by div/mod."""
        return loop_structure.fuse(self, outer, inner, name)

    def fuse_siblings(self, first: Loop, second: Loop) -> ForOp:
        """Merge `second` (the loop right after `first`, same bounds) into `first`."""
        return loop_structure.fuse_siblings(self, first, second)

    # loop fission (fission.py)
    def distribute(self, loop: Loop, names: list[str] | None = None) -> list[ForOp]:
        """Split `loop` into one loop per effectful top-level statement (in order)."""
        return fission.distribute(self, loop, names)

    def split_range(self, loop: Loop, at: int, suffix: str = "_t") -> tuple[ForOp, ForOp]:
        """``[lb, ub)`` -> ``[lb, at)`` then ``[at, ub)`` (loops inside the second get `suffix`)."""
        return fission.split_range(self, loop, at, suffix)

    # loop kinds (annotate.py)
    def parallel(self, loop: Loop) -> ForOp:
        """Mark an outermost loop parallel when its iterations write disjoint elements."""
        return annotate.parallel(self, loop)

    def vectorize(self, loop: Loop) -> ForOp:
        """Mark an innermost loop with stride-1 (or loop-invariant) accesses vectorized."""
        return annotate.vectorize(self, loop)

    def unroll(self, loop: Loop, expand: bool = False) -> ForOp | None:
        """Mark `loop` unrolled; with ``expand``, replace it by copies of its body (returns None)."""
        return annotate.unroll(self, loop, expand)

    # scratch buffers (cache.py)
    def cache_read(self, buffer: SSAValue | str | int, loop: Loop, name: str | None = None) -> SSAValue:
        """Copy the tile of `buffer` read inside `loop` into scratch at each iteration; read from it."""
        return cache.cache_read(self, buffer, loop, name)

    def cache_write(self, buffer: SSAValue | str | int, loop: Loop, name: str | None = None) -> SSAValue:
        """Accumulate the tile of `buffer` touched inside `loop` in scratch; copy it back after."""
        return cache.cache_write(self, buffer, loop, name)

    # producers (producer.py)
    def compute_at(self, producer: Loop, consumer: Loop) -> ForOp:
        """Compute the elementwise producer nest `producer` inside loop `consumer`, per iteration."""
        return producers.compute_at(self, producer, consumer)
