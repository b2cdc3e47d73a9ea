"""Auto-tuning benchmark (issue 19): tuned vs untuned dlc, against onnxruntime (not CI).

    python bench/bench_tune.py [--models resnet50,squeezenet,mobilenet] [--minutes 15] [--threads 2]
                               [--rounds 7] [--kernels gemm,conv1,conv2,conv3|none] [--kernel-minutes M]
                               [--workdir DIR] [--records-dir DIR] [--no-tune]

Models: the ONNX light models resnet50 and squeezenet with seeded random weights
(bench/cross_run.py ``random_weights``, as bench/light_targets.py), and a MobileNetV2-style
torch model (inverted residuals, depthwise 3x3, ReLU6; seeded init, exported with torch's
TorchScript ONNX exporter so that onnxruntime runs the same graph). Each is tuned with
``dlc.tune`` for ``--minutes`` (the kernels timed at ``--threads``), then exported twice
(default schedules; ``tuning_records=`` the log). The three engines are timed side by side:
each round runs every engine alone in a fresh process of its own (no idle thread pool of one
engine slows another), engines alternating within a round; each process reports the median
of its calls (``min_repeat_ms`` blocks after a warm-up). The table gives the medians over
rounds and their spread ((max - min) / median), the tuned speedup, the tuned dlc /
onnxruntime ratio and the geometric mean speedup.

Kernels: GEMM 1024^3 and three ResNet-50 convolutions as one-op ONNX models, tuned for
``--kernel-minutes``; then the config the log applies (records.best_records: it beat the
default in every interleaved pair) is measured again against the default, paired in one
run worker (``--kernel-repeat`` pairs), and both GFLOP/s (the task's FLOPs over the median
time) are given as a share of the FMA peak measured by /work/shared/tools/fma_peak.c
(gcc -O3 -march=native -fopenmp) at the same thread count. A kernel whose log beats its
default nowhere reports its default twice.

Records: ``<records-dir>/<model or kernel>.jsonl`` (default: the workdir); a tune resumes
from them. ``--no-tune`` tunes nothing and compares with the records as they are (the way
to re-measure a tune on a quieter machine). The host's CPU flags are printed
with the table: onnxruntime's MLAS picks kernels by ISA, so the ratio holds for this host.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
FMA_PEAK_C = "/work/shared/tools/fma_peak.c"
ONNX_MODELS = ("resnet50", "squeezenet")
# (name, N, C, H, W, OC, kernel, stride, pad): ResNet-50 stage 1/2/4 convolutions
CONVS = {"conv1": (1, 64, 56, 56, 64, 3, 1, 1), "conv2": (1, 256, 56, 56, 64, 1, 1, 0),
         "conv3": (1, 256, 14, 14, 256, 3, 1, 1)}


# ---------------------------------------------------------------------------
# models
# ---------------------------------------------------------------------------


def light_model(name: str, workdir: str) -> str:
    import glob

    import onnx

    from dlc.bench.cross_run import random_weights

    light = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
    (path,) = glob.glob(os.path.join(light, f"light_{name}.onnx"))
    out = os.path.join(workdir, f"{name}.onnx")
    onnx.save(random_weights(onnx.load(path), seed=0), out)
    return out


def mobilenet_model(workdir: str) -> str:
    import torch
    from torch import nn

    def block(cin, cout, stride, expand):
        hidden = cin * expand
        layers = [] if expand == 1 else [nn.Conv2d(cin, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6()]
        layers += [nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False), nn.BatchNorm2d(hidden),
                   nn.ReLU6(), nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout)]
        return nn.Sequential(*layers)

    class Inverted(nn.Module):
        def __init__(self, cin, cout, stride, expand):
            super().__init__()
            self.body = block(cin, cout, stride, expand)
            self.residual = stride == 1 and cin == cout

        def forward(self, x):
            y = self.body(x)
            return x + y if self.residual else y

    torch.manual_seed(0)
    cfg = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]
    layers, cin = [nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU6()], 32
    for t, c, n, s in cfg:
        for i in range(n):
            layers.append(Inverted(cin, c, s if i == 0 else 1, t))
            cin = c
    layers += [nn.Conv2d(cin, 1280, 1, bias=False), nn.BatchNorm2d(1280), nn.ReLU6(),
               nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(1280, 1000)]
    model = nn.Sequential(*layers).eval()
    for m in model.modules():  # non-trivial BN statistics
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.1, 0.1)
            m.running_var.uniform_(0.5, 1.5)
    out = os.path.join(workdir, "mobilenet.onnx")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.randn(1, 3, 224, 224),), out, dynamo=False, opset_version=17,
                          input_names=["x"], output_names=["y"])
    return out


def one_op_model(kind: str, workdir: str) -> str:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    if kind == "gemm":
        w = numpy_helper.from_array(rng.standard_normal((1024, 1024)).astype(np.float32), "w")
        nodes = [helper.make_node("MatMul", ["x", "w"], ["y"])]
        x_shape, y_shape = [1024, 1024], [1024, 1024]
    else:
        n, c, h, wd, oc, k, s, p = CONVS[kind]
        w = numpy_helper.from_array((rng.standard_normal((oc, c, k, k)) * 0.05).astype(np.float32), "w")
        nodes = [helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[k, k], strides=[s, s], pads=[p] * 4)]
        oh = (h + 2 * p - k) // s + 1
        x_shape, y_shape = [n, c, h, wd], [n, oc, oh, (wd + 2 * p - k) // s + 1]
    graph = helper.make_graph(nodes, kind, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)], [w])
    out = os.path.join(workdir, f"{kind}.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), out)
    return out


# ---------------------------------------------------------------------------
# timing: one engine per process
# ---------------------------------------------------------------------------


def time_child(engine: str, path: str, threads: int, min_repeat_ms: float, repeat: int) -> dict:
    """Runs in a fresh process: load one engine, time it, report its samples."""
    from dlc.rpc.timing import time_calls

    if engine == "ort":
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        session = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
        feeds = {}
        for i in session.get_inputs():
            feeds[i.name] = np.random.default_rng(0).standard_normal(i.shape).astype(np.float32)
        call = lambda: session.run(None, feeds)  # noqa: E731
    else:
        import dlc.runtime
        from dlc.tune.run_worker import random_inputs

        module = dlc.runtime.load(path, num_threads=threads)
        inputs = random_inputs(module.input_specs, 0)
        call = lambda: module(*inputs)  # noqa: E731
    timing = time_calls(call, repeat=repeat, number=1, min_repeat_ms=min_repeat_ms)
    return {"median": timing.median, "samples": timing.samples}


def time_side_by_side(engines: dict[str, str], threads: int, rounds: int) -> dict[str, list[float]]:
    """engine -> per-round medians; each round every engine in its own fresh process, in turn."""
    out: dict[str, list[float]] = {name: [] for name in engines}
    order = list(engines)
    for r in range(rounds):
        for name in (order if r % 2 == 0 else order[::-1]):  # alternate the order (ABC CBA ...)
            engine = "ort" if name == "ort" else "dlc"
            proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--time-child", engine, engines[name],
                                   "--threads", str(threads)], capture_output=True, text=True, timeout=600)
            if proc.returncode != 0:
                raise RuntimeError(f"timing {name} failed: {proc.stderr.strip().splitlines()[-1:]}")
            out[name].append(json.loads(proc.stdout.strip().splitlines()[-1])["median"])
    return out


def _spread(values: list[float]) -> float:
    m = statistics.median(values)
    return (max(values) - min(values)) / m if m > 0 else 0.0


# ---------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------


def fma_peak(threads: int, workdir: str, runs: int = 5) -> float | None:
    """The best of `runs` runs of fma_peak.c (a busy machine only ever lowers it)."""
    exe = os.path.join(workdir, "fma_peak")
    if not os.path.exists(exe):
        build = subprocess.run(["gcc", "-O3", "-march=native", "-fopenmp", FMA_PEAK_C, "-o", exe],
                               capture_output=True, text=True)
        if build.returncode != 0:
            print(f"fma_peak: build failed: {build.stderr.strip()}")
            return None
    best = None
    for _ in range(runs):
        run = subprocess.run([exe], capture_output=True, text=True,
                             env=dict(os.environ, OMP_NUM_THREADS=str(threads)))
        numbers = [float(tok) for line in run.stdout.splitlines() if "GFLOP" in line.upper()
                   for tok in line.replace("=", " ").split() if _is_number(tok)]
        if run.returncode != 0 or not numbers:
            print(f"fma_peak: no figure in its output: {run.stdout.strip()!r}")
            return None
        best = max(numbers) if best is None else max(best, max(numbers))
    return best


def _is_number(tok: str) -> bool:
    try:
        float(tok)
        return True
    except ValueError:
        return False


def cpu_flags() -> str:
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    wanted = ["avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16", "amx_tile"]
    return f"{name}; " + " ".join(f for f in wanted if f in flags)


def tune_model(path: str, seconds: float, threads: int, log: str):
    import dlc
    from dlc.tune.measure import MeasureOptions

    start = time.monotonic()
    records = dlc.tune(path, seconds=seconds, log=log, options=MeasureOptions(threads=threads))
    return records, time.monotonic() - start


def _records_of(log: str, no_tune: bool, path: str, seconds: float, threads: int):
    """(records, tuning seconds): a tune of `seconds` appending to `log`, or with `no_tune`
    the log as it is."""
    from dlc.lowering.schedule.records import read_records

    if no_tune:
        if not os.path.exists(log):
            raise SystemExit(f"bench_tune: --no-tune: no records '{log}'")
        return read_records(log), 0.0
    return tune_model(path, seconds, threads, log)


def bench_models(names: list[str], minutes: float, threads: int, rounds: int, workdir: str,
                 records_dir: str, no_tune: bool = False) -> list[dict]:
    import dlc

    rows = []
    for name in names:
        path = mobilenet_model(workdir) if name == "mobilenet" else light_model(name, workdir)
        log = os.path.join(records_dir, f"{name}.jsonl")
        records, took = _records_of(log, no_tune, path, minutes * 60, threads)
        untuned, tuned = os.path.join(workdir, f"{name}.untuned.so"), os.path.join(workdir, f"{name}.tuned.so")
        dlc.compile(path, num_threads=threads).export(untuned)
        compiled = dlc.compile(path, num_threads=threads, tuning_records=log)
        compiled.export(tuned)
        note = getattr(compiled, "tuning_note", "")
        times = time_side_by_side({"untuned": untuned, "tuned": tuned, "ort": path}, threads, rounds)
        med = {k: statistics.median(v) for k, v in times.items()}
        rows.append({"model": name, "trials": len(records), "errors": sum(not r.ok for r in records),
                     "tune_s": took, "note": note, **{f"{k}_ms": v * 1e3 for k, v in med.items()},
                     **{f"{k}_spread": _spread(v) for k, v in times.items()},
                     "speedup": med["untuned"] / med["tuned"], "tuned_vs_ort": med["tuned"] / med["ort"],
                     # per round (the two processes adjacent in time): the median and range of untuned / tuned
                     "round_speedups": [u / t for u, t in zip(times["untuned"], times["tuned"])]})
        print(f"  {name}: tuned {len(records)} trials in {took:.0f} s; {note}", flush=True)
    return rows


def bench_kernels(kinds: list[str], minutes: float, threads: int, workdir: str, peak: float | None,
                  records_dir: str, no_tune: bool = False, repeat: int = 15) -> list[dict]:
    from dlc.lowering.schedule.records import best_records
    from dlc.target import as_target
    from dlc.tune.measure import LocalRunner, MeasureOptions
    from dlc.tune.tasks import extract_tasks

    rows = []
    for kind in kinds:
        path = one_op_model(kind, workdir)
        tasks = extract_tasks(path)
        if not tasks:
            rows.append({"kernel": kind, "note": "no tunable kernel (its form has no schedule space)"})
            continue
        log = os.path.join(records_dir, f"{kind}.jsonl")
        records, took = _records_of(log, no_tune, path, minutes * 60, threads)
        best = best_records(records, as_target("llvm"))
        # the applied config against the default, paired again (more pairs than a trial)
        runner = LocalRunner(MeasureOptions(threads=threads, repeat=repeat, min_repeat_ms=100.0, timeout=120.0))
        runner.start(tasks)
        try:
            for index, task in enumerate(tasks):
                config = best[task.key].config if task.key in best else task.space.default()
                (result,) = runner.measure([(index, config)])
                if result.error is not None:
                    rows.append({"kernel": kind, "note": f"re-measuring {task.key.split('|')[0]}: {result.error}"})
                    continue
                t, d = statistics.median(result.costs), statistics.median(result.baseline_costs)
                ratio = statistics.median(c / b for c, b in zip(result.costs, result.baseline_costs))
                rows.append({"kernel": kind, "task": " ".join(task.key.split("|")[:2]),
                             "trials": sum(r.workload_key == task.key for r in records), "tuned": task.key in best,
                             "default_gflops": task.flops / d / 1e9, "gflops": task.flops / t / 1e9,
                             "ratio": ratio, "spread": _spread([c / b for c, b in zip(result.costs,
                                                                                     result.baseline_costs)]),
                             "tune_s": took})
        finally:
            runner.close()
    return rows


def print_report(model_rows, kernel_rows, threads, peak) -> None:
    print(f"\nhost: {cpu_flags()}; {threads} threads; load average {os.getloadavg()[0]:.1f}")
    if model_rows:
        print(f"\n{'model':<12}{'trials':>7}{'untuned ms':>16}{'tuned ms':>16}{'speedup':>9}{'ort ms':>16}"
              f"{'tuned/ort':>10}")
        for r in model_rows:
            print(f"{r['model']:<12}{r['trials']:>7}{r['untuned_ms']:>9.2f} ±{100 * r['untuned_spread']:>3.0f}%"
                  f"{r['tuned_ms']:>9.2f} ±{100 * r['tuned_spread']:>3.0f}%{r['speedup']:>8.2f}x"
                  f"{r['ort_ms']:>9.2f} ±{100 * r['ort_spread']:>3.0f}%{r['tuned_vs_ort']:>10.2f}")
        for r in model_rows:
            rs = r["round_speedups"]
            print(f"  {r['model']}: per-round untuned/tuned median {statistics.median(rs):.3f}x "
                  f"(min {min(rs):.3f}, max {max(rs):.3f}); {r['note']}")
        geo = math.exp(statistics.fmean(math.log(r["speedup"]) for r in model_rows))
        print(f"geomean tuned speedup: {geo:.3f}x (goal 1.15x); spreads are (max - min) / median over rounds")
    if kernel_rows:
        print(f"\nFMA peak (fma_peak.c, {threads} threads): " + (f"{peak:.1f} GFLOP/s" if peak else "unknown"))
        for r in kernel_rows:
            if "note" in r:
                print(f"{r['kernel']:<7} {r['note']}")
                continue
            r["peak_pct"] = 100 * r["gflops"] / peak if peak else None
            r["default_peak_pct"] = 100 * r["default_gflops"] / peak if peak else None
            pct = (f"{r['default_peak_pct']:.1f}% -> {r['peak_pct']:.1f}% of peak"
                   if r["peak_pct"] is not None else "")
            if r["peak_pct"] is not None and r["peak_pct"] > 100:
                pct += " (over 100%: the peak runs were slowed by the machine's load)"
            what = "tuned" if r["tuned"] else "default kept"
            print(f"{r['kernel']:<7} {r['task'][:58]:<58} default {r['default_gflops']:7.1f} -> {what} "
                  f"{r['gflops']:7.1f} GFLOP/s  (paired ratio {r['ratio']:.3f} ±{100 * r['spread']:.0f}%)  {pct}  "
                  f"({r['trials']} trials)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="resnet50,squeezenet,mobilenet")
    ap.add_argument("--minutes", type=float, default=15.0, help="tuning budget per model (default 15)")
    ap.add_argument("--kernels", default="gemm,conv1,conv2,conv3", help="kernels to tune, or 'none'")
    ap.add_argument("--kernel-minutes", type=float, help="tuning budget per kernel (default: --minutes / 3)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=7, help="timing rounds (a fresh process per engine each)")
    ap.add_argument("--workdir", help="keep models, logs and libraries here (default: a temporary directory)")
    ap.add_argument("--records-dir", help="the tuning logs <model>.jsonl / <kernel>.jsonl (default: the workdir)")
    ap.add_argument("--no-tune", action="store_true", help="tune nothing: compare with the records as they are")
    ap.add_argument("--kernel-repeat", type=int, default=15, help="pairs when re-measuring a kernel (default 15)")
    ap.add_argument("--time-child", nargs=2, metavar=("ENGINE", "PATH"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.time_child:
        print(json.dumps(time_child(args.time_child[0], args.time_child[1], args.threads, 200.0, 5)))
        return 0
    names = [n for n in args.models.split(",") if n and n != "none"]
    unknown = [n for n in names if n not in (*ONNX_MODELS, "mobilenet")]
    kinds = [k for k in args.kernels.split(",") if k and k != "none"]
    unknown += [k for k in kinds if k != "gemm" and k not in CONVS]
    if unknown:
        ap.error(f"unknown model or kernel {unknown[0]!r}")
    with tempfile.TemporaryDirectory(prefix="bench-tune-") as tmp:
        workdir = args.workdir or tmp
        os.makedirs(workdir, exist_ok=True)
        peak = fma_peak(args.threads, workdir) if kinds else None
        records_dir = args.records_dir or workdir
        os.makedirs(records_dir, exist_ok=True)
        model_rows = bench_models(names, args.minutes, args.threads, args.rounds, workdir, records_dir, args.no_tune)
        kernel_rows = bench_kernels(kinds, args.kernel_minutes or args.minutes / 3, args.threads, workdir, peak,
                                    records_dir, args.no_tune, args.kernel_repeat)
        if kinds:  # the peak again after the kernels: the best of both (load only lowers it)
            again = fma_peak(args.threads, workdir)
            peak = max(p for p in (peak, again, 0.0) if p is not None) or None
        print_report(model_rows, kernel_rows, args.threads, peak)
        with open(os.path.join(records_dir, "bench_tune_results.json"), "w") as f:
            json.dump({"models": model_rows, "kernels": kernel_rows, "peak": peak, "threads": args.threads,
                       "load": os.getloadavg()[0]}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
