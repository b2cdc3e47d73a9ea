"""The nine ONNX `light` models, compiled with the command-line tools.

For each ``onnx/backend/test/data/light/light_<name>.onnx``:

1. ``dlc compile light_<name>.onnx -o <tmp>/<name>.so`` (the whole pipeline to a
   shared library),
2. ``dlc run <name>.so --input x.npy --expect light_<name>_output_0.pb
   --rtol 1e-3 --atol 1e-4`` (the exported library run through the thin
   runtime and compared with the output onnx ships),

where ``x`` is the input onnx's own backend test runner feeds these models
(``arange(n) / n`` in the input's shape). Prints one line per model (compile
seconds, run milliseconds, max abs error, status) and exits 1 if any fails::

    python conformance/run_light_models.py                 # all nine
    python conformance/run_light_models.py squeezenet vgg19
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx

LIGHT_DIR = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
ALL_LIGHT = sorted(os.path.basename(p)[len("light_"):-len(".onnx")]
                   for p in glob.glob(os.path.join(LIGHT_DIR, "light_*.onnx")))
RTOL, ATOL = 1e-3, 1e-4


def light_input(name: str) -> np.ndarray:
    """The input onnx's backend runner feeds a light model: arange(n)/n in its shape."""
    model = onnx.load(os.path.join(LIGHT_DIR, f"light_{name}.onnx"), load_external_data=False)
    initializers = {t.name for t in model.graph.initializer}
    graph_input = next(i for i in model.graph.input if i.name not in initializers)
    shape = [d.dim_value for d in graph_input.type.tensor_type.shape.dim]
    n = int(np.prod(shape))
    return (np.arange(n).reshape(shape) / n).astype(np.float32)


def run_model(name: str, workdir: str, threads: int | None = None) -> dict:
    """Compile and run one light model with the CLI; returns what happened."""
    model = os.path.join(LIGHT_DIR, f"light_{name}.onnx")
    library = os.path.join(workdir, f"{name}.so")
    x_path = os.path.join(workdir, f"{name}_input.npy")
    np.save(x_path, light_input(name))
    thread_args = ["--threads", str(threads)] if threads else []

    start = time.perf_counter()
    compiled = subprocess.run(["dlc", "compile", model, "-o", library, *thread_args],
                              capture_output=True, text=True)
    compile_s = time.perf_counter() - start
    result = {"name": name, "compile_s": compile_s, "ok": False, "run_ms": None, "max_abs": None,
              "message": ""}
    if compiled.returncode != 0:
        result["message"] = "dlc compile: " + (compiled.stderr.strip().splitlines() or ["?"])[-1]
        return result
    ran = subprocess.run(["dlc", "run", library, "--input", x_path,
                          "--expect", os.path.join(LIGHT_DIR, f"light_{name}_output_0.pb"),
                          "--rtol", str(RTOL), "--atol", str(ATOL), "--repeat", "3", *thread_args],
                         capture_output=True, text=True)
    out = ran.stdout
    if m := re.search(r"median run time: ([0-9.]+) ms", out):
        result["run_ms"] = float(m.group(1))
    if m := re.search(r"max abs err ([0-9.e+-]+)", out):
        result["max_abs"] = float(m.group(1))
    result["ok"] = ran.returncode == 0
    if not result["ok"]:
        result["message"] = "dlc run: " + (ran.stderr.strip().splitlines() or out.strip().splitlines() or ["?"])[-1]
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", help=f"subset of: {', '.join(ALL_LIGHT)}")
    ap.add_argument("--threads", type=int, help="threads for parallel loops")
    args = ap.parse_args(argv)
    unknown = [m for m in args.models if m not in ALL_LIGHT]
    if unknown:
        print(f"error: unknown light model(s) {', '.join(unknown)} (have {', '.join(ALL_LIGHT)})",
              file=sys.stderr)
        return 2
    failed = 0
    print(f"{'model':<14} {'compile s':>9} {'run ms':>9} {'max abs err':>12}  status")
    with tempfile.TemporaryDirectory(prefix="dlc-light-") as workdir:
        for name in args.models or ALL_LIGHT:
            r = run_model(name, workdir, args.threads)
            failed += not r["ok"]
            run_ms = f"{r['run_ms']:.2f}" if r["run_ms"] is not None else "-"
            err = f"{r['max_abs']:.3g}" if r["max_abs"] is not None else "-"
            status = "ok" if r["ok"] else f"FAILED {r['message']}"
            print(f"{name:<14} {r['compile_s']:>9.2f} {run_ms:>9} {err:>12}  {status}", flush=True)
    print(f"{len(args.models or ALL_LIGHT) - failed} of {len(args.models or ALL_LIGHT)} match their "
          f"shipped outputs (rtol {RTOL}, atol {ATOL})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
