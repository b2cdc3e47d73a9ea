"""Time fold-constant,legalize,cse on a big graph (not part of CI).

    python bench/bench_passes.py [N_OPS]      # default 50,000

The graph is a chain of adds over one tensor; every 10th link adds a
constant expression (constant + constant, foldable) and every 50th link is a
composite op (softmax) for legalize. Prints the time of each stage, built in
Python with ``Op.make``, then the same through ``dlc-opt`` on the printed text.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp
from xdsl.ir import Block, Region

from dlc.context import make_context
from dlc.dialects import graph as g
from dlc.dialects.graph_base import tensor_type_of
from dlc.transforms.fold_constant import FoldConstantPass
from dlc.transforms.legalize import LegalizePass
from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination

SHAPE = (4, 8)


def chain_module(n_ops: int) -> ModuleOp:
    """About ``n_ops`` graph ops: a chain of adds over one tensor argument."""
    x_type = tensor_type_of(np.zeros(SHAPE, np.float32))
    block = Block(arg_types=[x_type])
    ops = []
    value = block.args[0]
    link = 0
    while len(ops) < n_ops:
        link += 1
        if link % 10 == 0:  # a foldable constant expression
            a = g.ConstantOp.from_numpy(np.full(SHAPE, link, np.float32))
            b = g.ConstantOp.from_numpy(np.float32(0.5))
            c = g.AddOp.make(a, b)
            step = g.AddOp.make(value, c)
            ops += [a, b, c, step]
        elif link % 50 == 1:  # a composite op for legalize
            step = g.SoftmaxOp.make(value)
            ops.append(step)
        else:
            step = g.AddOp.make(value, value)
            ops.append(step)
        value = step.results[0]
    block.add_ops([*ops, func.ReturnOp(value)])
    signature = FunctionType.from_lists([x_type], [x_type])
    return ModuleOp([func.FuncOp("main", signature, Region(block))])


def count_ops(module: ModuleOp) -> int:
    return sum(1 for _ in module.walk()) - 2  # minus module and func


def run_python(n_ops: int) -> float:
    ctx = make_context()
    start = time.perf_counter()
    module = chain_module(n_ops)
    built = time.perf_counter()
    print(f"python: built {count_ops(module)} ops in {built - start:.2f} s")
    total = 0.0
    for pass_ in (FoldConstantPass(), LegalizePass(), CommonSubexpressionElimination()):
        t0 = time.perf_counter()
        pass_.apply(ctx, module)
        dt = time.perf_counter() - t0
        total += dt
        print(f"python: {pass_.name:<14} {dt:6.2f} s  ({count_ops(module)} ops after)")
    print(f"python: fold-constant,legalize,cse total {total:.2f} s")
    return total


def run_dlc_opt(n_ops: int) -> None:
    module = chain_module(n_ops)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "chain.mlir")
        with open(path, "w") as f:
            f.write(str(module))
        t0 = time.perf_counter()
        proc = subprocess.run(
            ["dlc-opt", path, "-p", "fold-constant,legalize,cse", "--pass-timing", "-o", path + ".out"],
            capture_output=True, text=True,
        )
        dt = time.perf_counter() - t0
        sys.stdout.write(proc.stderr)
        print(f"dlc-opt: exit {proc.returncode}, {dt:.2f} s wall (parse, verify, passes, print)")


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 50_000
    run_python(n)
    run_dlc_opt(n)
