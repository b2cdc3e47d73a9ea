"""graph -> lower-to-loops (the real pass) -> lower-to-gpu -> emulated GPU run, against
the numpy evaluator. Small odd shapes: the emulator interprets every thread."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.parser import Parser

from dlc.backends.cuda.emulator import emulate
from dlc.backends.cuda.gpu_schedule import apply_default_schedule
from dlc.context import make_context
from dlc.evaluator import evaluate
from dlc.backends.cuda.lower_to_gpu import is_kernel, lower_to_gpu
from dlc.lowering.lower_to_loops import lower_module

CASES = {
    # name: (argument types, result type, op line, expected schedule per kernel)
    "add_broadcast": ("tensor<3x1x5xf32>, tensor<1x7x5xf32>", "tensor<3x7x5xf32>",
                      "graph.add %a0, %a1", "generic"),
    "relu_rank1": ("tensor<1xf32>", "tensor<1xf32>", "graph.relu %a0", "generic"),
    "softmax": ("tensor<3x37xf32>", "tensor<3x37xf32>", "graph.softmax %a0 {axis = 1 : i64}", "row-reduction"),
    "softmax_3d": ("tensor<2x3x41xf32>", "tensor<2x3x41xf32>", "graph.softmax %a0 {axis = 2 : i64}", "row-reduction"),
    "reduce_sum": ("tensor<3x37xf32>", "tensor<3xf32>",
                   "graph.reduce_sum %a0 {axes = array<i64: 1>, keepdims = false}", "row-reduction"),
    "global_avg_pool": ("tensor<2x3x7x5xf32>", "tensor<2x3x1x1xf32>", "graph.global_avg_pool %a0", "row-reduction"),
    "reduce_mean_all": ("tensor<5x77xf32>", "tensor<f32>",
                        "graph.reduce_mean %a0 {axes = array<i64: 0, 1>, keepdims = false}", "row-reduction"),
    "max_pool": ("tensor<2x3x7x5xf32>", "tensor<2x3x3x2xf32>",
                 "graph.max_pool2d %a0 {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, ceil_mode = true}", "generic"),
    "matmul_batch": ("tensor<2x5x3xf32>, tensor<3x7xf32>", "tensor<2x5x7xf32>", "graph.matmul %a0, %a1", "matmul"),
    "conv2d": ("tensor<1x2x5x7xf32>, tensor<3x2x3x3xf32>", "tensor<1x3x5x7xf32>",
               "graph.conv2d %a0, %a1 {padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}", "generic"),
    "transpose": ("tensor<3x5x7xf32>", "tensor<5x7x3xf32>", "graph.transpose %a0 {perm = array<i64: 1, 2, 0>}", "generic"),
}


def graph_module(args: str, result: str, line: str):
    types = [t.strip() for t in args.split(",")] if "tensor<" in args else []
    types = [t for t in types if t]
    params = ", ".join(f"%a{k}: {t}" for k, t in enumerate(types))
    text = (f"func.func @main({params}) -> {result} {{\n  %r = {line} : ({', '.join(types)}) -> {result}\n"
            f"  func.return %r : {result}\n}}")
    return Parser(make_context(), text).parse_module(), types


@pytest.fixture
def small_tiles(monkeypatch):
    import dlc.backends.cuda.matmul_schedule as S

    for name, value in dict(TILE_M=8, TILE_N=8, TILE_K=4, THREADS_Y=4, THREADS_X=4, REG_M=2, REG_N=2).items():
        monkeypatch.setattr(S, name, value)


@pytest.mark.parametrize("name", sorted(CASES))
def test_lowered_graph_runs_on_emulated_gpu(name, small_tiles):
    args, result, line, schedule = CASES[name]
    module, types = graph_module(args, result, line)
    rng = np.random.default_rng(3)
    inputs = [rng.standard_normal([int(d) for d in t[7:-5].split("x")]).astype(np.float32) for t in types]
    expected = evaluate(module, inputs)
    lower_module(module)
    kernels = [op for op in module.ops if is_kernel(op)]
    assert [apply_default_schedule(k) for k in kernels] == [schedule]
    lower_to_gpu(module)
    module.verify()
    (out,) = emulate(module, inputs)
    np.testing.assert_allclose(out, expected[0], rtol=1e-5, atol=1e-5)
