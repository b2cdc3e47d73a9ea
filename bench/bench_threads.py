"""Wake-up cost of libgomp's thread team for back-to-back small kernels.

One call runs three small kernels (add, row sum, broadcast multiply on 257x1031 f32: three
parallel regions). Prints the median microseconds per call over ``--calls`` calls (a few
rounds, median of the round medians), the CPU/wall ratio and the process's thread count
before/after (libgomp keeps its pool alive between calls). The wait policy is libgomp's,
read from the environment when libgomp loads, so compare settings in separate processes.
dlc defaults to ``GOMP_SPINCOUNT=1000`` when neither variable is set
(``dlc.runtime.native.prefer_short_omp_spin``); ``GOMP_SPINCOUNT=300000`` gives
libgomp's own spin default back::

    python bench/bench_threads.py --threads 1
    python bench/bench_threads.py                      # dlc's default: GOMP_SPINCOUNT=1000
    OMP_WAIT_POLICY=passive python bench/bench_threads.py
    GOMP_SPINCOUNT=300000 python bench/bench_threads.py  # libgomp's spin default
    GOMP_SPINCOUNT=10000 python bench/bench_threads.py

Findings on the shared 2-core box are in docs/architecture.md ("Runtime: threads").
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

import dlc

ROWS, COLS = 257, 1031  # each kernel just above the work that forks threads (defaults_elementwise)
T = f"tensor<{ROWS}x{COLS}xf32>"
SOURCE = f"""func.func @main(%x: {T}, %y: {T}) -> {T} {{
  %a = graph.add %x, %y : ({T}, {T}) -> {T}
  %s = graph.reduce_sum %a {{axes = array<i64: 1>, keepdims = true}} : ({T}) -> tensor<{ROWS}x1xf32>
  %b = graph.mul %a, %s : ({T}, tensor<{ROWS}x1xf32>) -> {T}
  func.return %b : {T}
}}"""


def threads_now() -> int:
    return len(os.listdir("/proc/self/task"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    compiled = dlc.compile(SOURCE, num_threads=args.threads)
    x = np.ones((ROWS, COLS), np.float32)
    out = np.empty_like(x)
    before = threads_now()
    medians, ratios = [], []
    for _ in range(args.rounds):
        times = []
        cpu0, wall0 = time.process_time(), time.perf_counter()
        for _ in range(args.calls):
            start = time.perf_counter()
            compiled(x, x, outputs=[out])
            times.append(time.perf_counter() - start)
        medians.append(statistics.median(times))
        ratios.append((time.process_time() - cpu0) / (time.perf_counter() - wall0))
    policy = os.environ.get("OMP_WAIT_POLICY", "libgomp default")
    spin = os.environ.get("GOMP_SPINCOUNT", "default")
    print(f"threads={args.threads} OMP_WAIT_POLICY={policy} GOMP_SPINCOUNT={spin}: "
          f"{statistics.median(medians) * 1e6:.1f} us/call, cpu/wall {statistics.median(ratios):.2f}, "
          f"process threads {before} -> {threads_now()}")


if __name__ == "__main__":
    main()
