"""Scheduled kernels compiled by the LLVM backend (dlc.driver) agree with the unscheduled
kernel run by the Python executor: the backends honour parallel / vectorized /
unrolled loops, guards and alloca scratch as the schedule primitives produce them."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.parser import Parser

from dlc.context import make_context
from dlc.lowering.schedule import Schedule, apply_default_schedules
from schedule_kernels import (
    BROADCAST_ADD, CONV2D, MATMUL, MATMUL_ACC, REDUCE_SUM, SIBLINGS, STENCIL, random_args,
)
from tloop_exec import run_kernel

driver = pytest.importorskip("dlc.driver")


def with_host(module, name: str) -> str:
    """The module's text plus a host @main that calls kernel @name (last argument = output)."""
    kernel = next(op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == name)
    types = [str(a.type) for a in kernel.args]
    params = ", ".join(f"%a{i}: {t}" for i, t in enumerate(types))
    args = ", ".join(f"%a{i}" for i in range(len(types)))
    host = (f"func.func @main({params}) attributes {{tloop.host, tloop.num_inputs = {len(types) - 1} : i64}} {{\n"
            f"  func.call @{name}({args}) : ({', '.join(types)}) -> ()\n  func.return\n}}\n")
    body = str(module).strip()
    assert body.startswith("builtin.module {") and body.endswith("}")
    return body[len("builtin.module {"):-1] + "\n" + host


SCHEDULES = {
    "split-guard": ("mm", MATMUL, [lambda s: s.split("i", 4), lambda s: s.parallel("i_outer")]),
    "tile-vectorize": ("badd", BROADCAST_ADD, [lambda s: s.tile("i", "j", 3, 4), lambda s: s.vectorize("j_inner"),
                                               lambda s: s.parallel("i_outer")]),
    "gemm-blocking": ("mma", MATMUL_ACC, [lambda s: s.tile("i", "j", 2, 4),
                                          lambda s: s.reorder("k", "i_inner", "j_inner"),
                                          lambda s: s.parallel("i_outer"), lambda s: s.cache_write("c", "j_outer"),
                                          lambda s: s.vectorize("j_inner")]),
    "conv-fuse-cache": ("conv", CONV2D, [lambda s: s.fuse("n", "f"), lambda s: s.parallel("n_f_fused"),
                                         lambda s: s.cache_read("x", "h"), lambda s: s.unroll("kw", expand=True)]),
    "reduce-split": ("rsum", REDUCE_SUM, [lambda s: s.split("r", 4), lambda s: s.unroll("r_inner"),
                                          lambda s: s.parallel("i")]),
    "siblings": ("sib", SIBLINGS, [lambda s: s.fuse_siblings("i", "j"), lambda s: s.split("i", 4),
                                   lambda s: s.parallel("i_outer"), lambda s: s.vectorize("i_inner")]),
    "compute-at": ("stencil", STENCIL, [lambda s: s.split("i", 4), lambda s: s.compute_at("p", "i_inner"),
                                        lambda s: s.vectorize("j"), lambda s: s.vectorize("q")]),
    "defaults": ("conv", CONV2D, [lambda s: apply_default_schedules(s.kernel.parent_op())]),
}


@pytest.mark.parametrize("case", sorted(SCHEDULES))
def test_scheduled_kernel_on_llvm(case):
    name, text, steps = SCHEDULES[case]
    module = Parser(make_context(), text).parse_module()
    args = random_args(module, name, 11)
    expected = run_kernel(module, name, args)[-1]
    s = Schedule.of(module, name)
    for step in steps:
        step(s)
    module.verify()
    compiled = driver.compile(with_host(module, name), num_threads=2)
    got = compiled(*args[:-1], outputs=[args[-1].copy()])[0]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
