"""Parallel-loop speed-up of the LLVM backend: one elementwise kernel over 64M floats.

Runs ``y = max(x * 1.5 + 0.25, 0)`` (or ``--op tanh``; loop-level IR: an outer ``parallel`` loop
over rows, an inner ``vectorized`` loop) with 1 and with 2 threads (libgomp),
takes the median of several runs each (output buffer reused, so page faults
are not measured) and prints the ratio.

    python bench/bench_parallel.py [--elements 67108864] [--runs 7] [--threads 2] [--op tanh]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

# y = max(x * 1.5 + 0.25, 0): memory-bound
AFFINE_RELU = """
        %a = arith.constant 1.5 : f32
        %b = arith.constant 0.25 : f32
        %m = arith.mulf %v, %a : f32
        %s = arith.addf %m, %b : f32
        %z = arith.constant 0.0 : f32
        %r = arith.maximumf %s, %z : f32"""
# y = tanh(x): a libm call per element, compute-bound
TANH = """
        %r = math.tanh %v : f32"""

KERNEL = """
builtin.module {{
  func.func @bench_0_elementwise(%x: memref<{r}x{c}xf32>, %y: memref<{r}x{c}xf32>) attributes {{tloop.kernel}} {{
    tloop.for %i = 0 to {r} parallel {{
      tloop.for %j = 0 to {c} vectorized {{
        %v = memref.load %x[%i, %j] : memref<{r}x{c}xf32>
        {body}
        memref.store %r, %y[%i, %j] : memref<{r}x{c}xf32>
      }}
    }}
    func.return
  }}
  func.func @main(%x: memref<{r}x{c}xf32>, %y: memref<{r}x{c}xf32>) attributes {{tloop.host, tloop.num_inputs = 1 : i64}} {{
    func.call @bench_0_elementwise(%x, %y) : (memref<{r}x{c}xf32>, memref<{r}x{c}xf32>) -> ()
    func.return
  }}
}}
"""


def median_time(fn, runs: int) -> float:
    fn()  # warm up (page faults, thread pool start)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--elements", type=int, default=64 * 1024 * 1024)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--op", choices=("affine-relu", "tanh"), default="affine-relu",
                    help="affine-relu (memory-bound, default) or tanh (compute-bound)")
    args = ap.parse_args()

    from dlc.driver import compile

    cols = 4096
    rows = max(1, args.elements // cols)
    body = AFFINE_RELU if args.op == "affine-relu" else TANH
    module = compile(KERNEL.format(r=rows, c=cols, body=body))
    x = np.random.default_rng(0).standard_normal((rows, cols), dtype=np.float32)
    (y,) = module(x)
    tmp = np.empty_like(x)

    def numpy_version():
        if args.op == "tanh":
            np.tanh(x, out=y)
            return
        np.multiply(x, np.float32(1.5), out=tmp)
        np.add(tmp, np.float32(0.25), out=tmp)
        np.maximum(tmp, 0, out=y)

    expected = np.tanh(x) if args.op == "tanh" else np.maximum(x * np.float32(1.5) + np.float32(0.25), 0)
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-7)

    results = {}
    for threads in (1, args.threads):
        module.set_num_threads(threads)
        results[threads] = median_time(lambda: module(x, outputs=[y]), args.runs)
    numpy_time = median_time(numpy_version, args.runs)
    n = rows * cols
    for threads, seconds in results.items():
        print(f"{threads} thread(s): {seconds * 1e3:8.2f} ms  ({n * 8 / seconds / 1e9:5.2f} GB/s)")
    print(f"numpy       : {numpy_time * 1e3:8.2f} ms")
    print(f"speed-up 1 -> {args.threads} threads: {results[1] / results[args.threads]:.2f}x")


if __name__ == "__main__":
    main()
