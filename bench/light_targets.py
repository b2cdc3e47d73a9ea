"""The nine ONNX light models through the BYOC codegens and the C target, against onnxruntime.

The light models ship constant weights (their outputs are uniform whatever the code
computes), so each model gets seeded random weights first (bench/cross_run.py's
``random_weights``). Then, through the public API as a user calls it:

* ``dlc.compile(model, byoc=["dnnl"])`` and ``byoc=["c"]`` (JIT), called on one input;
* ``dlc.compile(model, target="c")``, built with the host C compiler and run by the C
  target's host harness (backends/c/toolchain.py ``run_on_host``).

Each prints the relative max error against onnxruntime on the same input (max |dlc - ort|
/ max |ort|), the BYOC report's length, the C target's arena, and the wall time. The C
target writes weights as C array text: models over ``--c-max-weight-mb`` (default 64) are
skipped, because gcc needs more than 16 GB to compile vgg19's 548 MB of initializers.

    python bench/light_targets.py [--how byoc-dnnl,byoc-c,target-c] [--models squeezenet,resnet50]
"""

from __future__ import annotations

import argparse
import glob
import os
import tempfile
import time

import numpy as np
import onnx
from onnx import numpy_helper

import dlc
from dlc.bench.cross_run import random_weights

LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")


def _weight_mb(model: onnx.ModelProto) -> float:
    return sum(numpy_helper.to_array(t).nbytes for t in model.graph.initializer) / 2**20


def _one(how: str, model: onnx.ModelProto, x: np.ndarray, c_max_mb: float) -> tuple[np.ndarray | None, str]:
    if how == "target-c":
        from dlc.backends.c.toolchain import run_on_host

        if _weight_mb(model) > c_max_mb:
            return None, f"skipped: {_weight_mb(model):.0f} MB of weights as C text (--c-max-weight-mb {c_max_mb:g})"
        program = dlc.compile(model, target="c")
        with tempfile.TemporaryDirectory() as folder:
            return run_on_host(program, [x], folder)[0], f"arena {program.workspace_bytes / 2**20:.1f} MiB"
    module = dlc.compile(model, byoc=[how.split("-", 1)[1]])
    return module(x)[0], f"{len(module.byoc_report)} report lines"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--how", default="byoc-dnnl,byoc-c,target-c")
    ap.add_argument("--models", help="comma-separated names (default: all nine)")
    ap.add_argument("--c-max-weight-mb", type=float, default=64.0)
    args = ap.parse_args()
    import onnxruntime as ort

    only = set(args.models.split(",")) if args.models else None
    for path in sorted(glob.glob(os.path.join(LIGHT, "*.onnx"))):
        name = os.path.basename(path)[: -len(".onnx")].replace("light_", "")
        if only and name not in only:
            continue
        model = random_weights(onnx.load(path))
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        spec = session.get_inputs()[0]
        x = np.random.default_rng(1).standard_normal(
            [d if isinstance(d, int) else 1 for d in spec.shape]).astype(np.float32)
        want = session.run(None, {spec.name: x})[0]
        scale = float(np.abs(want).max()) or 1.0
        row = [f"{name:14s}"]
        for how in args.how.split(","):
            start = time.perf_counter()
            got, extra = _one(how, model, x, args.c_max_weight_mb)
            took = time.perf_counter() - start
            if got is None:
                row.append(f"{how}: {extra}")
            else:
                row.append(f"{how}: rel err {float(np.abs(got - want).max()) / scale:.1e}, {extra} ({took:.0f} s)")
        print(" | ".join(row), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
