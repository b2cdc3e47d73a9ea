"""fold-constant, legalize and cse take linear-ish time in the number of ops.

No absolute timing: the time for 5,000 ops must stay under 4x the time for
2,500 ops (linear is 2x, quadratic 4x). bench/bench_passes.py times 50,000.
"""

from __future__ import annotations

import time

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp
from xdsl.ir import Block, Region
from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination

from dlc.context import make_context
from dlc.dialects import graph as g
from dlc.dialects.graph_base import tensor_type_of
from dlc.evaluator import evaluate
from dlc.transforms.fold_constant import FoldConstantPass
from dlc.transforms.legalize import LegalizePass

SHAPE = (2, 3)


def chain_module(n_ops: int) -> ModuleOp:
    """A chain of adds over one tensor; every 10th link adds a foldable
    constant sum, every 50th is a softmax (composite)."""
    x_type = tensor_type_of(np.zeros(SHAPE, np.float32))
    block = Block(arg_types=[x_type])
    ops, value, link = [], block.args[0], 0
    while len(ops) < n_ops:
        link += 1
        if link % 10 == 0:
            a = g.ConstantOp.from_numpy(np.full(SHAPE, 1.0 / link, np.float32))
            b = g.ConstantOp.from_numpy(np.float32(0.5))
            c = g.AddOp.make(a, b)
            step = g.AddOp.make(value, c)
            ops += [a, b, c, step]
        elif link % 50 == 1:
            step = g.SoftmaxOp.make(value)
            ops.append(step)
        else:
            step = g.AddOp.make(value, g.ConstantOp.from_numpy(np.float32(0.25)))
            ops += [step.rhs.owner, step]
        value = step.results[0]
    block.add_ops([*ops, func.ReturnOp(value)])
    signature = FunctionType.from_lists([x_type], [x_type])
    return ModuleOp([func.FuncOp("main", signature, Region(block))])


def run_pipeline(module: ModuleOp) -> float:
    ctx = make_context()
    start = time.perf_counter()
    for pass_ in (FoldConstantPass(), LegalizePass(), CommonSubexpressionElimination()):
        pass_.apply(ctx, module)
    return time.perf_counter() - start


def best_time(n_ops: int, repeats: int = 3) -> float:
    return min(run_pipeline(chain_module(n_ops)) for _ in range(repeats))


def test_pipeline_time_grows_linearly():
    run_pipeline(chain_module(500))  # warm up imports and caches
    small, large = best_time(2500), best_time(5000)
    assert large / small < 4.0, f"2,500 ops: {small:.3f} s, 5,000 ops: {large:.3f} s"


def test_pipeline_preserves_values_and_folds_all_constant_sums():
    module = chain_module(300)
    x = np.random.default_rng(1).uniform(-1, 1, SHAPE).astype(np.float32)
    expected = evaluate(module, [x])
    run_pipeline(module)
    module.verify()
    names = [op.name for op in module.walk()]
    # every constant sum folded; cse merged the repeated 0.25 constants
    adds_of_constants = [
        op for op in module.walk()
        if isinstance(op, g.AddOp) and all(isinstance(v.owner, g.ConstantOp) for v in op.operands)
    ]
    assert not adds_of_constants
    assert "graph.softmax" not in names
    assert sum(1 for op in module.walk() if isinstance(op, g.ConstantOp) and op.array().shape == ()) == 1
    np.testing.assert_allclose(evaluate(module, [x])[0], expected[0], rtol=1e-5)
