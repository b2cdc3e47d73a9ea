"""Default CPU schedules of the non-dense kernels: elementwise (fused or not),
reductions, softmax, pools, data movement -- and the epilogue nests left
after a dense schedule.

For each top-level loop nest whose loops are all still serial:

* parallel: the outermost loop with at least 2 iterations, found by walking
  down through loops of 1 iteration (the batch loop of a batch-1 model) as
  long as each body holds a single loop, when the nest does enough work to
  pay for waking the threads (``nest_work``: op executions, at least
  ``min_parallel_iterations x OPS_PER_ITERATION``; iterations alone let
  100k-element copies and ReLUs fork, each slower than its serial run) and its
  iterations write disjoint elements;
* rfactor: an innermost float sum/max/min reduction loop whose other accesses
  are stride-1 becomes LANES interleaved partial results and a lane loop
  (``rfactor.py``: max/min exact, the sum's order becomes LANES partial sums);
* vectorized: every innermost loop whose accesses are stride-1 and that is
  not a reduction loop (no other reassociation of float reductions), and
  those a kernel tagged ``STRIDED_VECTOR_ATTR`` (strided loads, independent
  iterations).

Every change is checked by the schedule analyses (``parallel_problem``,
``vectorize_problem``); when one cannot prove it safe, the loop stays serial.
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import StringAttr

from dlc.dialects.tloop import ForOp
from dlc.lowering.schedule.annotate import parallel_problem, vectorize_problem
from dlc.lowering.schedule.core import inner_loops
from dlc.lowering.schedule.rfactor import rfactor_reductions


# Waking and joining a thread team costs ~50 us with the passive wait policy
# (runtime/native.py), far more when the machine is oversubscribed: a nest runs
# serially unless it does the work of this many iterations of a 64-op body
# (nest_work; about 1M op executions). Here, below every schedule that reads it, so
# that none imports defaults.py (which imports them).
MIN_PARALLEL_ITERATIONS = 16384

# ops of the reference loop body that MIN_PARALLEL_ITERATIONS counts
OPS_PER_ITERATION = 64

# set by a kernel generator on an innermost loop whose iterations are independent
# (each writes its own stride-1 output element, nothing read is written) but whose
# loads are strided (a pool's interior columns, stride sw): LLVM vectorizes them as
# interleaved loads, which the stride-1 analysis (vectorize_problem) cannot prove
STRIDED_VECTOR_ATTR = "dlc.strided_vector"


def nest_iterations(loop: ForOp) -> int:
    """Innermost-body executions of ``loop``'s nest (the largest branch)."""
    inner = [op for op in loop.body.block.ops if isinstance(op, ForOp)]
    return loop.trip_count * max((nest_iterations(i) for i in inner), default=1)


def nest_work(loop: ForOp) -> int:
    """Op executions of ``loop``'s nest: each body op counted once per iteration
    of the loops around it (a cheap stand-in for its run time)."""
    body = 0
    for op in loop.body.block.ops:
        body += nest_work(op) if isinstance(op, ForOp) else 1
    return loop.trip_count * body


def parallel_candidate(top: ForOp) -> ForOp:
    """``top``, or the loop below a chain of 1-iteration single-loop bodies
    (never an innermost loop: that one is better vectorized)."""
    loop = top
    while loop.trip_count < 2:
        children = [op for op in loop.body.block.ops if isinstance(op, ForOp)]
        if len(children) != 1 or not inner_loops(children[0]):
            break
        loop = children[0]
    return loop


def schedule_nest(top: ForOp, min_parallel_iterations: int) -> None:
    # worth a fork/join only when the nest does about as much work as
    # min_parallel_iterations iterations of a 64-op body (a copy of 100k floats
    # is not: its ~30 us are less than waking and joining the team)
    # (min_parallel_iterations <= 1: no threshold at all, to test the choices themselves)
    if min_parallel_iterations <= 1 or nest_work(top) >= min_parallel_iterations * OPS_PER_ITERATION:
        loop = parallel_candidate(top)
        if loop.loop_kind == "serial" and loop.trip_count >= 2 and parallel_problem(loop) is None:
            loop.kind = StringAttr("parallel")
    for loop in [top] + inner_loops(top):
        if (loop.loop_kind == "serial" and not inner_loops(loop) and loop.trip_count >= 2
                and (STRIDED_VECTOR_ATTR in loop.attributes or vectorize_problem(loop) is None)):
            loop.kind = StringAttr("vectorized")


def schedule_generic(kernel: func.FuncOp, min_parallel_iterations: int) -> None:
    """Schedule every top-level nest of ``kernel`` that no schedule touched yet."""
    for top in [op for op in kernel.body.block.ops if isinstance(op, ForOp)]:
        if all(loop.loop_kind == "serial" for loop in [top] + inner_loops(top)):
            rfactor_reductions(kernel, [top])  # float reductions -> vector-wide partials
            schedule_nest(top, min_parallel_iterations)
