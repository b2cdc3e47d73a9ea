"""Run dlc's CUDA target on a real GPU: every graph op and the small CNNs through
``dlc.compile(..., target="cuda")`` against ``dlc.evaluator``, then matmul GFLOP/s
of the generated tiled kernel versus torch.matmul (cuBLAS, no TF32) when torch is
installed.

    python bench/gpu/run_gpu_checks.py [--quick] [--sizes 1024,2048,4096,8192] [--no-matmul]
    python bench/gpu/run_gpu_checks.py --emulate --quick   # no GPU: the same checks on the emulator

Needs Python packages numpy, xdsl (0.75), llvmlite and onnx (lark for the custom-op
case), nvcc, a CUDA driver and a GPU; it installs nothing and says what is missing.
From a clean checkout it imports ``dlc`` from the checkout itself (no pip install).
Exit status: 0 all match, 1 a mismatch or a failed program, 2 something missing.
Kernel timings use CUDA events around the kernel launches only (no copies).
Runs in well under 5 minutes on an H100/H200 (one nvcc call for all op cases).
"""

from __future__ import annotations

import argparse
import ctypes
import importlib
import importlib.util
import os
import shutil
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NEEDED = ("numpy", "xdsl", "llvmlite", "onnx")


def ensure_environment() -> list[str]:
    """Import dlc (from the checkout when it is not installed); lines describing the setup."""
    missing = [name for name in NEEDED if importlib.util.find_spec(name) is None]
    if missing:
        print(f"run_gpu_checks: missing Python packages: {', '.join(missing)} "
              f"(pip install {' '.join(missing)} xdsl==0.75.0)", file=sys.stderr)
        sys.exit(2)
    notes = []
    try:
        import dlc  # noqa: F401
    except ImportError:
        # The repository root is the package: expose it as `dlc` through a symlink.
        shim = tempfile.mkdtemp(prefix="dlc-import-")
        os.symlink(REPO, os.path.join(shim, "dlc"))
        sys.path.insert(0, shim)
        notes.append(f"dlc is not installed: importing it from {REPO}")
    import llvmlite
    import numpy
    import onnx
    import xdsl

    notes.append(f"python {sys.version.split()[0]}, numpy {numpy.__version__}, xdsl {getattr(xdsl, '__version__', '?')}, "
                 f"llvmlite {llvmlite.__version__}, onnx {onnx.__version__}")
    notes.append(f"nvcc: {shutil.which('nvcc') or 'not found'}; torch: "
                 f"{'present' if importlib.util.find_spec('torch') else 'absent (no cuBLAS comparison)'}")
    return notes


# --------------------------------------------------------------------------- programs


def larger_cases():
    """A few bigger shapes: many blocks, capped grids (grid-stride), long rows, big tiles."""
    from dlc.backends.cuda.op_cases import In, _c
    from dlc.dialects import graph as g

    return [
        _c("big_add_broadcast", g.AddOp, [(31, 1, 257), (1, 17, 257)]),
        _c("big_tanh", g.TanhOp, [(1000003,)]),
        _c("big_softmax", g.SoftmaxOp, [(129, 1001)], axis=1, rtol=1e-4, atol=1e-6),
        _c("big_reduce_sum", g.ReduceSumOp, [(7, 4099)], axes=[1], rtol=1e-4, atol=1e-3),
        _c("big_layer_norm", g.LayerNormOp, [(33, 768), (768,), (768,)], rtol=1e-3, atol=1e-4),
        _c("big_matmul", g.MatmulOp, [(3, 67, 129), (129, 71)], rtol=1e-4, atol=1e-4),
        _c("big_conv2d", g.Conv2DOp, [(2, 16, 31, 29), (32, 16, 3, 3)], padding=[1, 1, 1, 1],
           strides=[2, 2], rtol=1e-4, atol=1e-4),
        _c("big_max_pool", g.MaxPool2DOp, [(2, 64, 57, 55)], kernel=[3, 3], strides=[2, 2]),
        _c("big_gather", g.GatherOp, [(1000, 64), In((77,), g.i64, int_range=(0, 1000))]),
    ]


def op_cases(quick: bool):
    from dlc.backends.cuda.op_cases import OP_CASES

    cases = list(OP_CASES) + larger_cases()
    if importlib.util.find_spec("lark") is None:
        print("note: lark absent: the custom (tensor-expression) op case is skipped")
        cases = [c for c in cases if not c.id.startswith("custom")]
    if quick:
        keep = {"add", "exp", "softmax", "matmul", "conv", "max_pool", "reduce_sum", "gather", "dense", "big_add_broadcast"}
        cases = [c for c in cases if c.id in keep]
    return cases


def cnn_programs(emulate: bool):
    """(name, graph module, inputs) of the small CNNs (the emulator takes only the tiny one)."""
    import numpy as np
    from xdsl.parser import Parser

    from dlc.context import make_context
    from dlc.frontends.onnx import import_model
    from dlc.weights import load_for_module

    rng = np.random.default_rng(0)
    graph_ir = os.path.join(REPO, "test", "lit", "cuda", "small_cnn_graph.mlir")
    out = [("small_cnn_graph.mlir", Parser(make_context(), open(graph_ir).read(), graph_ir).parse_module(),
            [rng.standard_normal((2, 3, 7, 5)).astype(np.float32)])]
    if emulate:
        return out
    out.append(("small_cnn.onnx", import_model(os.path.join(REPO, "examples", "small_cnn.onnx")),
                [rng.standard_normal((1, 3, 32, 32)).astype(np.float32)]))
    example = os.path.join(REPO, "examples", "small_cnn.mlir")
    if os.path.exists(example):
        module = Parser(make_context(), open(example).read(), example).parse_module()
        load_for_module(module, example)
        out.append(("small_cnn.mlir", module, [rng.standard_normal((1, 3, 32, 32)).astype(np.float32)]))
    return out


# --------------------------------------------------------------------------- checks


def compile_program(module, emulate: bool):
    """``dlc.compile(module, target="cuda")``, or with --emulate the same lowering run
    by the emulator; either way an object with ``run(entry, *inputs)``."""
    if not emulate:
        import dlc

        return dlc.compile(module, target="cuda")
    import dlc.backends.cuda.matmul_schedule as tiles
    from dlc.backends.cuda.emulator import emulate as run_emulated

    # tiles the emulator can run in seconds (it interprets every thread)
    for name, value in dict(TILE_M=8, TILE_N=8, TILE_K=4, THREADS_Y=4, THREADS_X=4, REG_M=2, REG_N=2).items():
        setattr(tiles, name, value)
    from dlc.driver import load_module
    from dlc.backends.cuda.lower_to_gpu import ensure_gpu_lowered

    lowered = ensure_gpu_lowered(load_module(module))

    class Emulated:
        timings: dict = {}

        def run(self, entry, *inputs):
            return run_emulated(lowered, inputs, entry=entry)

    return Emulated()


def check_ops(cases, emulate: bool) -> tuple[int, list[str]]:
    from dlc.backends.cuda.op_cases import case_inputs, case_module, max_error
    from dlc.evaluator import evaluate

    start = time.perf_counter()
    program = compile_program(case_module(cases), emulate)
    print(f"compiled {len(cases)} op programs into one library in {time.perf_counter() - start:.1f} s "
          f"{dict((k, round(v, 1)) for k, v in program.timings.items())}")
    failures = []
    print(f"\n{'op case':24s} {'result':8s} detail")
    for case in cases:
        inputs = case_inputs(case, seed=1)
        expected = evaluate(case_module([case]), inputs)
        try:
            got = program.run(case.id, *inputs)
            problems = [max_error(o, e, case) for o, e in zip(got, expected)]
            problem = next((p for p in problems if p), None)
        except Exception as err:  # a CUDA error in one program must not hide the others
            problem = f"{type(err).__name__}: {str(err).splitlines()[0]}"
        if problem:
            failures.append(case.id)
        print(f"{case.id:24s} {'FAIL' if problem else 'ok':8s} {problem or case.op.name}")
    return len(cases), failures


def check_cnns(emulate: bool) -> tuple[int, list[str]]:
    import numpy as np

    from dlc.evaluator import evaluate

    failures = []
    programs = cnn_programs(emulate)
    print(f"\n{'model':24s} {'result':8s} detail")
    for name, module, inputs in programs:
        (want,) = evaluate(module, inputs)
        entry = next(iter(module.ops)).sym_name.data
        try:
            start = time.perf_counter()
            program = compile_program(module, emulate)
            built = time.perf_counter() - start
            (got,) = program.run(entry, *inputs)
            err = float(np.max(np.abs(got - want)))
            ok = np.allclose(got, want, rtol=1e-4, atol=1e-5)
            detail = f"max|err| {err:.2e}, build {built:.1f} s"
        except Exception as exc:
            ok, detail = False, f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
        if not ok:
            failures.append(name)
        print(f"{name:24s} {'ok' if ok else 'FAIL':8s} {detail}")
    return len(programs), failures


# --------------------------------------------------------------------------- matmul speed

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


def matmul_gflops(size: int) -> float:
    from xdsl.parser import Parser

    from dlc.backends.cuda import CudaBuildError, emit_cuda
    from dlc.backends.cuda.nvcc_build import compile_shared_library
    from dlc.context import make_context
    from dlc.backends.cuda.lower_to_gpu import is_kernel

    t = f"tensor<{size}x{size}xf32>"
    text = (f"func.func @main(%a: {t}, %b: {t}) -> {t} {{\n  %r = graph.matmul %a, %b : ({t}, {t}) -> {t}\n"
            f"  func.return %r : {t}\n}}")
    module = Parser(make_context(), text).parse_module()
    source = emit_cuda(module)
    kernel = next(op for op in module.ops if is_kernel(op))
    grid = kernel.attributes["gpu.grid"].get_values()
    block = kernel.attributes["gpu.block"].get_values()
    source += TIMER.format(kernel=kernel.sym_name.data, gx=grid[0], gy=grid[1], gz=grid[2],
                           bx=block[0], by=block[1], bz=block[2])
    lib = ctypes.CDLL(compile_shared_library(source))
    lib.dlc_time_kernel.restype = ctypes.c_float
    repeats = max(3, min(50, int(2e11 / size**3)))
    ms = lib.dlc_time_kernel(size, size, size, repeats)
    if ms <= 0:
        raise CudaBuildError(f"timing the {size}^3 matmul failed")
    return 2.0 * size**3 / (ms * 1e-3) / 1e9


def torch_gflops(size: int) -> float | None:
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    torch.backends.cuda.matmul.allow_tf32 = False
    a = torch.randn(size, size, device="cuda")
    b = torch.randn(size, size, device="cuda")
    a @ b
    repeats = max(3, min(50, int(2e11 / size**3)))
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(repeats):
        a @ b
    stop.record()
    torch.cuda.synchronize()
    return 2.0 * size**3 / (start.elapsed_time(stop) / repeats * 1e-3) / 1e9


def bench_matmul(sizes) -> None:
    print(f"\n{'matmul f32 (kernel only)':26s} {'dlc GFLOP/s':>12s} {'cuBLAS GFLOP/s':>15s} {'dlc/cuBLAS':>10s}")
    for size in sizes:
        ours = matmul_gflops(size)
        theirs = torch_gflops(size)
        ratio = f"{ours / theirs:10.2f}" if theirs else f"{'n/a':>10s}"
        print(f"  {size:5d}^3{'':17s} {ours:12.1f} {('n/a' if theirs is None else f'{theirs:.1f}'):>15s} {ratio}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few ops, the CNNs, one matmul size")
    parser.add_argument("--sizes", default="1024,2048,4096,8192", help="matmul sizes to time")
    parser.add_argument("--no-matmul", action="store_true", help="skip the matmul timing")
    parser.add_argument("--emulate", action="store_true",
                        help="no GPU: run the correctness checks on the emulator (slow; use --quick)")
    args = parser.parse_args()
    for line in ensure_environment():
        print(line)
    from dlc.backends.cuda import CudaBuildError
    from dlc.backends.cuda.nvcc_build import missing_cuda_piece
    from dlc.driver import CompileError

    if not args.emulate:
        missing = missing_cuda_piece()
        if missing:
            print(f"run_gpu_checks: {missing}", file=sys.stderr)
            return 2
    start = time.perf_counter()
    try:
        ops, op_failures = check_ops(op_cases(args.quick), args.emulate)
        models, cnn_failures = check_cnns(args.emulate)
        if not args.no_matmul and not args.emulate:
            bench_matmul([1024] if args.quick else [int(s) for s in args.sizes.split(",")])
    except (CudaBuildError, CompileError) as err:
        print(f"run_gpu_checks: {err}", file=sys.stderr)
        return 1
    failures = op_failures + cnn_failures
    print(f"\n{ops - len(op_failures)}/{ops} op cases and {models - len(cnn_failures)}/{models} models match "
          f"the evaluator ({time.perf_counter() - start:.0f} s)" + (f"; FAILED: {', '.join(failures)}" if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
