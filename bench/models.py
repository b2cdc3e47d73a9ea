"""Whole-model benchmark: dlc vs onnxruntime on the ONNX light models (not part of CI).

    python -m dlc.bench.models [--threads 2] [--layout NCHWc] [--runs 5] [--models resnet50,squeezenet]
                               [--budget 60] [--no-simplify] [--no-expand-math]
    python -m dlc.bench.models --modern [modern_models options]   # transformers, MobileNetV2, LSTM, ViT

For each model (the nine ``onnx/backend/test/data/light`` models and
``examples/small_cnn.onnx``): compile once with ``dlc.compile`` (compile time
printed), build an onnxruntime session with the same thread count
(``intra_op_num_threads``, sequential execution), warm both up, then time
them in alternating blocks (3 dlc runs, 3 ort runs, ..., each after 0.1 s of
untimed runs; see
``time_alternating``) and report medians, the ratio
dlc/ort (lower is better), dlc's GFLOP/s from the FLOP count of the imported
graph (``bench/flops.py``), and whether dlc's output matches onnxruntime's
(max relative error over the output's scale). A geometric mean of the ratios
closes the table. The machine is shared: read ratios, not absolute ms.
``--budget`` caps the timed seconds per model (slow models get fewer runs).
"""

from __future__ import annotations

import argparse
import glob
import math
import os
import statistics
import sys
import time

import numpy as np

LIGHT_MODELS = os.path.join(os.path.dirname(__import__("onnx").__file__), "backend", "test", "data", "light")
SMALL_CNN = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples",
                         "small_cnn.onnx")


def model_paths(selection: str | None) -> list[str]:
    paths = sorted(glob.glob(os.path.join(LIGHT_MODELS, "light_*.onnx"))) + [SMALL_CNN]
    if selection:
        wanted = [w.strip() for w in selection.split(",") if w.strip()]
        paths = [p for p in paths if any(w in os.path.basename(p) for w in wanted)]
    return paths


def short_name(path: str) -> str:
    return os.path.basename(path).removesuffix(".onnx").removeprefix("light_")


def time_alternating(fns: list, runs: int, budget_s: float, block: int = 3,
                     settle_s: float = 0.1) -> list[float]:
    """Median seconds of each fn: rounds of ``block`` back-to-back timed calls of
    each fn in turn, after a warm-up. Before each timed block the harness keeps
    calling the fn untimed for ``settle_s`` (at least once): the previous engine's
    thread pool may still be spinning, and onnxruntime's keeps a core busy for
    ~40 ms after its last run, which doubled the next few dlc calls (SqueezeNet
    9 ms, then 4.5 ms once it stopped). Each engine is so timed in its steady
    state, not charged for the other's idle threads."""
    for fn in fns:
        fn()
    samples: list[list[float]] = [[] for _ in fns]
    start = time.perf_counter()
    for i in range(runs):
        for fn, out in zip(fns, samples):
            settle_until = time.perf_counter() + settle_s
            fn()
            while time.perf_counter() < settle_until:
                fn()
            for _ in range(block):
                t = time.perf_counter()
                fn()
                out.append(time.perf_counter() - t)
        if i >= 1 and time.perf_counter() - start > budget_s:
            break
    return [statistics.median(s) for s in samples]


def bench_model(path: str, threads: int, runs: int, budget_s: float, layout: str | None = None) -> dict:
    import onnxruntime as ort

    import dlc
    from dlc.bench.flops import count_flops
    from dlc.driver import load_module

    row: dict = {"model": short_name(path)}
    flops = count_flops(load_module(path))
    start = time.perf_counter()
    try:
        compiled = dlc.compile(path, num_threads=threads, layout=layout)
    except Exception as err:  # noqa: BLE001 - one line in the table, then the next model
        row["error"] = f"compile failed: {str(err).splitlines()[0][:100]}"
        return row
    row["compile_s"] = time.perf_counter() - start
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(shape).astype(dtype) for _, shape, dtype in compiled.input_specs]
    feeds = {i.name: x for i, x in zip(session.get_inputs(), inputs)}
    ours = compiled(*inputs)[0]
    theirs = session.run(None, feeds)[0]
    scale = max(float(np.max(np.abs(theirs))), 1e-30)
    err = float(np.max(np.abs(ours.astype(np.float64) - theirs))) / scale if ours.shape == theirs.shape else math.inf
    row["match"] = "ok" if err <= 1e-3 else f"ERR {err:.1e}"
    outputs = [np.empty(shape, dtype) for _, shape, dtype in compiled.output_specs]
    t_dlc, t_ort = time_alternating(
        [lambda: compiled(*inputs, outputs=outputs), lambda: session.run(None, feeds)], runs, budget_s)
    row.update(dlc_ms=t_dlc * 1e3, ort_ms=t_ort * 1e3, ratio=t_dlc / t_ort, gflops=flops / t_dlc / 1e9,
               gflop=flops / 1e9)
    return row


def print_table(rows: list[dict], threads: int) -> None:
    print(f"\nthreads={threads}  (ratio = dlc time / onnxruntime time; lower is better)")
    header = f"{'model':<16}{'compile s':>10}{'GFLOP':>8}{'dlc ms':>11}{'ort ms':>10}{'ratio':>8}{'GFLOP/s':>9}  match"
    print(header)
    print("-" * len(header))
    ratios = []
    for r in rows:
        if "error" in r:
            print(f"{r['model']:<16}{r['error']}")
            continue
        ratios.append(r["ratio"])
        print(f"{r['model']:<16}{r['compile_s']:>10.1f}{r['gflop']:>8.2f}{r['dlc_ms']:>11.1f}{r['ort_ms']:>10.1f}"
              f"{r['ratio']:>8.2f}{r['gflops']:>9.2f}  {r['match']}")
    if ratios:
        geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        print(f"{'geomean ratio':<16}{'':>10}{'':>8}{'':>11}{'':>10}{geo:>8.2f}")
    light = [r["ratio"] for r in rows if "error" not in r and r["model"] != "small_cnn"]
    if light and len(light) != len(ratios):
        geo = math.exp(sum(math.log(x) for x in light) / len(light))
        print(f"{'geomean (light)':<16}{'':>10}{'':>8}{'':>11}{'':>10}{geo:>8.2f}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--modern" in argv:  # issue 21's model classes: bench/modern_models.py
        from dlc.bench import modern_models

        return modern_models.main([a for a in argv if a != "--modern"])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--budget", type=float, default=60.0, help="timed seconds per model (at most)")
    parser.add_argument("--models", default=None, help="comma-separated name parts (default: all)")
    parser.add_argument("--layout", choices=["NCHW", "NCHWc"], default=None,
                        help="conv layout (default: dlc.compile's default)")
    parser.add_argument("--no-simplify", action="store_true", help="skip simplify-inference")
    parser.add_argument("--no-expand-math", action="store_true", help="skip expand-math (libm calls)")
    args = parser.parse_args(argv)
    disabled = set()
    if args.no_simplify:
        disabled.add("simplify-inference")
    if args.no_expand_math:
        disabled.add("expand-math")
    if disabled:
        from dlc.driver import disable_passes

        disable_passes(disabled)  # measure without them
    rows = []
    for path in model_paths(args.models):
        row = bench_model(path, args.threads, args.runs, args.budget, args.layout)
        rows.append(row)
        print(f"  {row['model']}: " + ", ".join(
            f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items() if k != "model"),
            file=sys.stderr, flush=True)
    print_table(rows, args.threads)
    return 0


if __name__ == "__main__":
    sys.exit(main())
