"""The process that times tuning candidates: ``python -m dlc.tune.run_worker``.

Reads one JSON request per line on stdin (``{"path", "repeat", "number", "min_repeat_ms",
"threads", "seed"}``, optionally ``"baseline"``), loads the library with ``dlc.runtime.load``,
feeds it seeded random inputs of its input specs and times its default entry with
``dlc.rpc.timing.time_calls`` (TVM's number/repeat/min_repeat_ms, the same function the RPC
worker uses), then writes one JSON line: ``{"costs": [seconds per call, ...]}`` or
``{"error": "..."}``.

With ``"baseline"`` (the library of the task's default schedule) the two are timed
interleaved (:func:`paired_timing`): ``repeat`` pairs of blocks, candidate and baseline
back to back in alternating order, each block ``min_repeat_ms`` long at least; the reply
adds ``"baseline_costs"``. Both blocks of a pair see about the same load of a shared
machine, so the per-pair ratio candidate / baseline holds where absolute times swing 2-3x.
A candidate that segfaults or hangs takes only this process down; the runner
(tune/measure.py) sees it die or time out, records the error and starts a fresh worker.
The first line it writes is ``{"ready": true}``, once its imports are done.
numpy + dlc.runtime only: it starts fast and never imports xDSL.
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np


def random_inputs(specs, seed: int) -> list[np.ndarray]:
    """Seeded random arrays of the specs (floats in [-1, 1), ints in [0, 4), bools)."""
    rng = np.random.default_rng(seed)
    out = []
    for _, shape, dtype in specs:
        dtype = np.dtype(dtype)
        if dtype.kind == "f":
            out.append(rng.uniform(-1, 1, size=shape).astype(dtype))
        elif dtype.kind == "b":
            out.append(rng.integers(0, 2, size=shape).astype(dtype))
        else:
            out.append(rng.integers(0, 4, size=shape).astype(dtype))
    return out


def paired_timing(call, baseline, repeat: int, number: int = 1,
                  min_repeat_ms: float = 0) -> tuple[list[float], list[float]]:
    """Seconds per call of `call` and of `baseline`, ``repeat`` samples each, taken in pairs
    of adjacent blocks (candidate first in even pairs, baseline first in odd ones, so a
    drift of the load favours neither); each side's ``number`` calibrated to
    ``min_repeat_ms`` on its own after one warm-up call each."""
    from dlc.rpc.timing import calibrate_number, check_timing_args

    check_timing_args(repeat, number, min_repeat_ms)
    call()
    baseline()
    numbers = {"c": calibrate_number(call, number, min_repeat_ms), "b": calibrate_number(baseline, number, min_repeat_ms)}
    fns = {"c": call, "b": baseline}
    samples: dict[str, list[float]] = {"c": [], "b": []}
    clock = time.perf_counter
    for i in range(repeat):
        for side in (("c", "b") if i % 2 == 0 else ("b", "c")):
            fn, n = fns[side], numbers[side]
            start = clock()
            for _ in range(n):
                fn()
            samples[side].append((clock() - start) / n)
    return samples["c"], samples["b"]


def _callable(path: str, request: dict):
    from dlc.runtime import load

    module = load(path, num_threads=request.get("threads"))
    inputs = random_inputs(module.input_specs, int(request.get("seed", 0)))
    outputs = [np.empty(shape, dtype) for _, shape, dtype in module.output_specs]
    return module, lambda: module(*inputs, outputs=outputs)


def measure(request: dict) -> dict:
    from dlc.rpc.timing import time_calls
    from dlc.runtime import DlcRuntimeError

    try:
        module, call = _callable(request["path"], request)
        if request.get("baseline"):
            base_module, base = _callable(request["baseline"], request)
            if [s[1:] for s in base_module.input_specs] != [s[1:] for s in module.input_specs]:
                return {"error": "the baseline library takes other inputs than the candidate"}
            costs, base_costs = paired_timing(call, base, repeat=int(request["repeat"]),
                                              number=int(request["number"]),
                                              min_repeat_ms=float(request["min_repeat_ms"]))
            return {"costs": costs, "baseline_costs": base_costs}
        timing = time_calls(call, repeat=int(request["repeat"]),
                            number=int(request["number"]), min_repeat_ms=float(request["min_repeat_ms"]))
    except (DlcRuntimeError, ValueError, OSError) as err:
        return {"error": str(err).splitlines()[0] if str(err) else type(err).__name__}
    return {"costs": timing.samples, "number": timing.number}


def main() -> int:
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # a library that prints cannot corrupt the replies
    sys.stdout = sys.stderr
    import dlc.rpc.timing  # noqa: F401  (imported before "ready": the run timeout counts no start-up)
    import dlc.runtime  # noqa: F401

    out.write(json.dumps({"ready": True}) + "\n")
    for line in sys.stdin:
        if line.strip():
            out.write(json.dumps(measure(json.loads(line))) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
