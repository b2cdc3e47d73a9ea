"""The process that times tuning candidates: ``python -m dlc.tune.run_worker``.

Reads one JSON request per line on stdin (``{"path", "repeat", "number", "min_repeat_ms",
"threads", "seed"}``), loads the library with ``dlc.runtime.load``, feeds it seeded random
inputs of its input specs and times its default entry with ``dlc.rpc.timing.time_calls``
(TVM's number/repeat/min_repeat_ms, the same function the RPC worker uses), then writes
one JSON line: ``{"costs": [seconds per call, ...]}`` or ``{"error": "..."}``.
A candidate that segfaults or hangs takes only this process down; the runner
(tune/measure.py) sees it die or time out, records the error and starts a fresh worker.
The first line it writes is ``{"ready": true}``, once its imports are done.
numpy + dlc.runtime only: it starts fast and never imports xDSL.
"""

from __future__ import annotations

import json
import os
import sys

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


def measure(request: dict) -> dict:
    from dlc.rpc.timing import time_calls
    from dlc.runtime import DlcRuntimeError, load

    try:
        module = load(request["path"], num_threads=request.get("threads"))
        inputs = random_inputs(module.input_specs, int(request.get("seed", 0)))
        outputs = [np.empty(shape, dtype) for _, shape, dtype in module.output_specs]
        timing = time_calls(lambda: module(*inputs, outputs=outputs), repeat=int(request["repeat"]),
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
