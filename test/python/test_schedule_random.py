"""Random schedules (hypothesis): whatever sequence of primitives is accepted keeps the
results bit-identical, and whatever is refused leaves the IR unchanged."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import MemRefType
from xdsl.parser import Parser

from dlc.context import make_context
from dlc.dialects.tloop import ForOp
from dlc.lowering.schedule import Schedule, ScheduleError
from schedule_kernels import BROADCAST_ADD, CONV2D, MATMUL, MATMUL_ACC, REDUCE_SUM, STENCIL, STRIDED, random_args
from tloop_exec import run_kernel

KERNELS = {"mm": MATMUL, "mma": MATMUL_ACC, "badd": BROADCAST_ADD, "conv": CONV2D,
           "rsum": REDUCE_SUM, "stencil": STENCIL, "strided": STRIDED}
PRIMITIVES = ["split", "reorder", "fuse", "parallel", "vectorize", "unroll", "cache_read",
              "cache_write", "tile", "compute_at"]


def apply_random(s: Schedule, primitive: str, data) -> None:
    loops = s.loops()
    if not loops:  # everything was expanded
        return
    # draw positions, not ops: hypothesis keeps the repr of what it draws
    pick = lambda: loops[data.draw(st.integers(0, len(loops) - 1))]  # noqa: E731
    if primitive == "split":
        s.split(pick(), data.draw(st.integers(1, 6)))
    elif primitive == "tile":
        a = pick()
        inner = [op for op in a.body.block.ops if isinstance(op, ForOp)]
        b = inner[0] if inner else pick()
        s.tile(a, b, data.draw(st.integers(1, 5)), data.draw(st.integers(1, 5)))
    elif primitive == "reorder":
        a, b = pick(), pick()
        s.reorder(a, b)
    elif primitive == "fuse":
        a = pick()
        inner = [op for op in a.walk() if isinstance(op, ForOp) and op is not a]
        s.fuse(a, inner[0] if inner else pick())
    elif primitive == "parallel":
        s.parallel(pick())
    elif primitive == "vectorize":
        s.vectorize(pick())
    elif primitive == "unroll":
        s.unroll(pick(), expand=data.draw(st.booleans()))
    elif primitive in ("cache_read", "cache_write"):
        buffers = [a for a in s.kernel.args if isinstance(a.type, MemRefType)]
        getattr(s, primitive)(buffers[data.draw(st.integers(0, len(buffers) - 1))], pick())
    elif primitive == "compute_at":
        s.compute_at(pick(), pick())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(KERNELS)),
       steps=st.lists(st.sampled_from(PRIMITIVES), min_size=1, max_size=4), data=st.data())
def test_random_schedules(name, steps, data):
    module = Parser(make_context(), KERNELS[name]).parse_module()
    args = random_args(module, name, 1)
    expected = run_kernel(module, name, args)
    s = Schedule.of(module, name)
    for primitive in steps:
        before = str(module)
        try:
            apply_random(s, primitive, data)
        except ScheduleError as err:
            assert str(module) == before, f"{primitive} failed ({err}) but changed the IR"
            continue
        module.verify()
        for want, got in zip(expected, run_kernel(module, name, args)):
            np.testing.assert_array_equal(got, want, err_msg=f"after {primitive}:\n{module}")
