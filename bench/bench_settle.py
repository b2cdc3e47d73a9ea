"""How long one engine's idle thread pool slows the other (not part of CI).

    python bench/bench_settle.py [--model squeezenet] [--threads 2]

Compiles a light model with dlc and builds an onnxruntime session, then runs
20 calls of one engine followed by 40 timed calls of the other, five times, and
prints the median time of call 1, 2, 3, 4, 6, 11, 21, 31 and 40 after the
switch, both ways. With onnxruntime's default spinning pool the first dlc
calls after an onnxruntime burst are slow for ~40 ms (SqueezeNet 9 ms, then
4.5 ms); this is why ``bench/models.py`` lets each engine run untimed for
0.1 s before its timed block.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from dlc.bench.models import LIGHT_MODELS

AFTER_SWITCH = (0, 1, 2, 3, 5, 10, 20, 30, 39)


def _profile(first, second, rounds: int = 5) -> list[float]:
    runs = []
    for _ in range(rounds):
        for _ in range(20):
            first()
        times = []
        for _ in range(max(AFTER_SWITCH) + 1):
            start = time.perf_counter()
            second()
            times.append((time.perf_counter() - start) * 1e3)
        runs.append(times)
    return [float(np.median([r[i] for r in runs])) for i in AFTER_SWITCH]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="squeezenet")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    import onnxruntime as ort

    import dlc

    path = os.path.join(LIGHT_MODELS, f"light_{args.model}.onnx")
    compiled = dlc.compile(path, num_threads=args.threads)
    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    inputs = [np.random.default_rng(0).standard_normal(shape).astype(dtype)
              for _, shape, dtype in compiled.input_specs]
    feeds = {i.name: x for i, x in zip(session.get_inputs(), inputs)}
    run_dlc = lambda: compiled(*inputs)  # noqa: E731
    run_ort = lambda: session.run(None, feeds)  # noqa: E731
    for _ in range(3):
        run_dlc()
        run_ort()
    print("ms of call n after the switch:", " ".join(f"{i + 1:>5}" for i in AFTER_SWITCH))
    for name, first, second in (("dlc after ort", run_ort, run_dlc), ("ort after dlc", run_dlc, run_ort)):
        print(f"{name:<30}", " ".join(f"{t:5.1f}" for t in _profile(first, second)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
