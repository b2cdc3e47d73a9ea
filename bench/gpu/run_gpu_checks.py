"""Run dlc's CUDA backend on a real GPU: correctness against dlc.evaluator, then matmul
GFLOP/s of the generated tiled kernel versus torch (cuBLAS) when torch is installed.

    python bench/gpu/run_gpu_checks.py [--quick] [--sizes 512,1024,2048]

Exit status 0 when every program matches the evaluator. Needs nvcc and a GPU; says
which is missing otherwise. Kernel timings use CUDA events around the kernel launches
only (no host<->device copies), through a small timing harness appended to the .cu.
"""

from __future__ import annotations

import argparse
import ctypes
import sys
import time

import numpy as np
from xdsl.parser import Parser

from dlc.backends.cuda import CudaBuildError, build, emit_cuda
from dlc.backends.cuda.nvcc_build import compile_shared_library
from dlc.context import make_context
from dlc.evaluator import evaluate
from dlc.lowering.lower_to_gpu import is_kernel
from dlc.lowering.lower_to_loops import lower_module

PROGRAMS = {
    "add_broadcast": ("tensor<31x1x257xf32>, tensor<1x17x257xf32>", "tensor<31x17x257xf32>", "graph.add %a0, %a1"),
    "relu_1": ("tensor<1xf32>", "tensor<1xf32>", "graph.relu %a0"),
    "tanh_big": ("tensor<1000003xf32>", "tensor<1000003xf32>", "graph.tanh %a0"),
    "softmax": ("tensor<129x1001xf32>", "tensor<129x1001xf32>", "graph.softmax %a0 {axis = 1 : i64}"),
    "reduce_sum": ("tensor<7x4099xf32>", "tensor<7xf32>", "graph.reduce_sum %a0 {axes = array<i64: 1>, keepdims = false}"),
    "global_avg_pool": ("tensor<2x64x13x13xf32>", "tensor<2x64x1x1xf32>", "graph.global_avg_pool %a0"),
    "max_pool": ("tensor<2x3x17x15xf32>", "tensor<2x3x8x7xf32>",
                 "graph.max_pool2d %a0 {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>}"),
    "matmul_odd": ("tensor<3x67x129xf32>, tensor<129x71xf32>", "tensor<3x67x71xf32>", "graph.matmul %a0, %a1"),
    "conv2d": ("tensor<2x3x31x29xf32>, tensor<16x3x3x3xf32>", "tensor<2x16x16x15xf32>",
               "graph.conv2d %a0, %a1 {padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>}"),
}


def graph_module(args: str, result: str, line: str):
    types = [t.strip() for t in args.split(", ")]
    params = ", ".join(f"%a{k}: {t}" for k, t in enumerate(types))
    text = (f"func.func @main({params}) -> {result} {{\n  %r = {line} : ({', '.join(types)}) -> {result}\n"
            f"  func.return %r : {result}\n}}")
    shapes = [tuple(int(d) for d in t[7:-5].split("x")) for t in types]
    return Parser(make_context(), text).parse_module(), shapes


def check_programs(names) -> bool:
    ok = True
    rng = np.random.default_rng(0)
    for name in names:
        module, shapes = graph_module(*PROGRAMS[name])
        inputs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        expected = evaluate(module, inputs)
        lower_module(module)
        start = time.perf_counter()
        program = build(module)
        built = time.perf_counter() - start
        got = program(*inputs)
        err = max(float(np.max(np.abs(g - e))) for g, e in zip(got, expected))
        scale = max(1.0, max(float(np.max(np.abs(e))) for e in expected))
        good = err <= 1e-4 * scale
        ok &= good
        print(f"{'ok  ' if good else 'FAIL'} {name:18s} max|err| {err:.2e}  (build {built:.1f} s)")
    return ok


TIMER = """
extern "C" float dlc_time_kernel(int m, int n, int k, int repeats) {{
  float *a, *b, *c;
  if (cudaMalloc((void**)&a, sizeof(float) * m * k) || cudaMalloc((void**)&b, sizeof(float) * k * n) ||
      cudaMalloc((void**)&c, sizeof(float) * m * n)) return -1.0f;
  cudaMemset(a, 0, sizeof(float) * m * k);
  cudaMemset(b, 0, sizeof(float) * k * n);
  cudaEvent_t t0, t1;
  cudaEventCreate(&t0);
  cudaEventCreate(&t1);
  {kernel}<<<dim3({gx}, {gy}, {gz}), dim3({bx}, {by}, {bz})>>>(a, b, c);
  cudaEventRecord(t0);
  for (int r = 0; r < repeats; r++)
    {kernel}<<<dim3({gx}, {gy}, {gz}), dim3({bx}, {by}, {bz})>>>(a, b, c);
  cudaEventRecord(t1);
  cudaEventSynchronize(t1);
  float ms = 0.0f;
  cudaEventElapsedTime(&ms, t0, t1);
  cudaFree(a); cudaFree(b); cudaFree(c);
  return cudaGetLastError() == cudaSuccess ? ms / repeats : -1.0f;
}}
"""


def matmul_gflops(size: int, repeats: int = 20) -> float:
    t = f"tensor<1x{size}x{size}xf32>"
    module, _ = graph_module(f"{t}, tensor<{size}x{size}xf32>", t, "graph.matmul %a0, %a1")
    lower_module(module)
    source = emit_cuda(module)
    kernel = next(op for op in module.ops if is_kernel(op))
    grid = kernel.attributes["gpu.grid"].get_values()
    block = kernel.attributes["gpu.block"].get_values()
    source += TIMER.format(kernel=kernel.sym_name.data, gx=grid[0], gy=grid[1], gz=grid[2],
                           bx=block[0], by=block[1], bz=block[2])
    lib = ctypes.CDLL(compile_shared_library(source))
    lib.dlc_time_kernel.restype = ctypes.c_float
    ms = lib.dlc_time_kernel(size, size, size, repeats)
    if ms <= 0:
        raise CudaBuildError(f"timing the {size}^3 matmul failed")
    return 2.0 * size**3 / (ms * 1e-3) / 1e9


def torch_gflops(size: int, repeats: int = 20) -> float | None:
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    a = torch.randn(size, size, device="cuda")
    b = torch.randn(size, size, device="cuda")
    torch.backends.cuda.matmul.allow_tf32 = False
    a @ b
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(repeats):
        a @ b
    stop.record()
    torch.cuda.synchronize()
    return 2.0 * size**3 / (start.elapsed_time(stop) / repeats * 1e-3) / 1e9


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="three programs and one matmul size")
    parser.add_argument("--sizes", default="512,1024,2048")
    args = parser.parse_args()
    names = ["add_broadcast", "softmax", "matmul_odd"] if args.quick else list(PROGRAMS)
    sizes = [1024] if args.quick else [int(s) for s in args.sizes.split(",")]
    try:
        ok = check_programs(names)
        print("\nmatmul f32 (kernel only)     dlc GFLOP/s   torch/cuBLAS GFLOP/s (no TF32)")
        for size in sizes:
            ours = matmul_gflops(size)
            theirs = torch_gflops(size)
            print(f"  {size:5d}^3                  {ours:10.1f}   {'n/a' if theirs is None else f'{theirs:10.1f}'}")
    except CudaBuildError as err:
        print(f"run_gpu_checks: {err}", file=sys.stderr)
        return 2
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
