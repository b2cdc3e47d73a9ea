"""Compile time of `dlc compile model.onnx -o model.so`, end to end, with its stages.

    python -m dlc.bench.compile_time [--runs 3] [--models resnet50,encoder]
                                     [--layers 2,4,8,12] [--jobs N]

Each run is a fresh process (``python -m dlc.tools.dlc_cli compile M -o x.so --timing``),
so the figure includes the interpreter's start and dlc's imports, as a user sees it;
runs alternate between the models (round r compiles every model once) so that a change
of the machine's load spreads over all of them. Per model: the median wall time, its
spread (min-max), the median CPU time of the process and its children (the parallel
code generation's workers, the C compiler: ``RUSAGE_CHILDREN``), the load average while
it ran, and the stages from dlc's own ``--timing`` report (wall and CPU, medians) grouped
as: start (interpreter + dlc's imports), ONNX import, graph passes, lowering to loops,
schedules (with expand-math and plan-workspace), LLVM IR emission (lower-to-llvm, the
final verify, translation), LLVM optimization + code generation, weights + link.

Models: ``resnet50`` (the onnx package's light_resnet50.onnx) and ``encoder``: the
BERT-width encoder of modern_zoo.py (d=768, 12 heads, ffn 3072, seq 128) at each of
``--layers``, exported once with torch.onnx into ``--cache``. For the encoder family the
compile times are fit as ``a + b * layers`` (least squares) and each point's relative
deviation from the fit is printed, with the largest (issue 21 asks for at most 20%).

On a shared machine the wall times swing with the load (see bench/README / the
measuring notes): the CPU column is the steadier figure, the load average says how
much to trust the wall one.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

RESNET50 = os.path.join("backend", "test", "data", "light", "light_resnet50.onnx")

# the brief's phases: --timing stage names -> phase
PHASES = [
    ("start", ("import",)),
    ("onnx import", ("load",)),
    ("graph passes", ("legalize", "widen-accumulation", "fold-qdq", "fold-constant", "simplify-inference",
                      "alter-op-layout", "fuse-ops")),
    ("lower to loops", ("lower-to-loops",)),
    ("schedules", ("schedule", "expand-math", "plan-workspace")),
    ("LLVM IR emission", ("lower-to-llvm", "verify", "translate")),
    ("LLVM opt+codegen", ("llvm-parse", "llvm-opt", "llvm-codegen", "llvm-wait-workers")),
    ("weights+link", ("write-weights", "link", "export")),
]

_ROW = re.compile(r"^\s+([0-9.]+) \(\s*[0-9.]+%\)\s+([0-9.]+) \(\s*[0-9.]+%\)\s+(\S.*)$")


def resnet50_path() -> str:
    import onnx

    return os.path.join(os.path.dirname(onnx.__file__), RESNET50)


def encoder_path(layers: int, cache: str) -> str:
    """The BERT-width encoder with ``layers`` layers as ONNX (exported once into ``cache``)."""
    from dlc.bench.modern_zoo import SIZES, _nn

    cfg = dict(SIZES["bert"]["full"], layers=layers)
    path = os.path.join(cache, f"encoder_d{cfg['d']}_s{cfg['seq']}_l{layers}.onnx")
    if os.path.exists(path):
        return path
    import torch

    torch.manual_seed(0)
    module = _nn()["bert"](**cfg).eval()
    ids = torch.randint(0, cfg["vocab"], (1, cfg["seq"]), dtype=torch.int64)
    os.makedirs(cache, exist_ok=True)
    tmp = path + ".tmp"
    with torch.no_grad():
        torch.onnx.export(module, (ids,), tmp, opset_version=17, dynamo=False,
                          input_names=["input0"], output_names=["output"])
    os.replace(tmp, path)
    return path


def compile_once(model: str, out: str, env: dict[str, str]) -> dict:
    """One ``dlc compile`` in a fresh process: wall, CPU (with its children), load, stages."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load = os.getloadavg()[0]
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "dlc.tools.dlc_cli", "compile", model, "-o", out, "--timing"],
                          capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"compile_time: dlc compile {model} failed: {proc.stderr.strip()[-500:]}")
    stages: dict[str, tuple[float, float]] = {}
    for line in proc.stderr.splitlines():
        match = _ROW.match(line)
        if match and match[3] != "Total":
            stages[match[3]] = (float(match[1]), float(match[2]))  # (cpu, wall)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu, "load": (load + os.getloadavg()[0]) / 2, "stages": stages}


def phases(run: dict) -> dict[str, tuple[float, float]]:
    """(cpu, wall) per phase; "other" is the wall the stages do not cover (interpreter start)."""
    out = {}
    for phase, names in PHASES:
        cpu = sum(run["stages"].get(n, (0.0, 0.0))[0] for n in names)
        wall = sum(run["stages"].get(n, (0.0, 0.0))[1] for n in names)
        out[phase] = (cpu, wall)
    known = set(n for _, names in PHASES for n in names)
    unknown = [n for n in run["stages"] if n not in known]
    if unknown:
        out["unlisted: " + ",".join(unknown)] = (sum(run["stages"][n][0] for n in unknown),
                                                 sum(run["stages"][n][1] for n in unknown))
    covered = sum(w for _, w in out.values())
    out["other (interpreter)"] = (0.0, max(0.0, run["wall"] - covered))
    return out


def summarize(name: str, runs: list[dict]) -> dict:
    walls = [r["wall"] for r in runs]
    cpus = [r["cpu"] for r in runs]
    loads = [r["load"] for r in runs]
    print(f"\n{name}: wall {statistics.median(walls):.2f} s (spread {min(walls):.2f}-{max(walls):.2f}), "
          f"CPU {statistics.median(cpus):.2f} s (spread {min(cpus):.2f}-{max(cpus):.2f}), "
          f"load average {statistics.median(loads):.2f}, {len(runs)} runs")
    per = [phases(r) for r in runs]
    print(f"  {'phase':22s} {'CPU s':>8s} {'wall s':>8s}   (medians; CPU of the dlc process only)")
    for phase in per[0]:
        cpu = statistics.median(p.get(phase, (0.0, 0.0))[0] for p in per)
        wall = statistics.median(p.get(phase, (0.0, 0.0))[1] for p in per)
        print(f"  {phase:22s} {cpu:8.3f} {wall:8.3f}")
    return {"wall": statistics.median(walls), "cpu": statistics.median(cpus)}


def linearity(points: list[tuple[int, float]], what: str) -> float:
    """Least-squares ``t = a + b * layers``; prints the fit and each point's relative
    deviation; returns the largest."""
    xs = [float(x) for x, _ in points]
    ys = [y for _, y in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    a = my - b * mx
    worst = 0.0
    print(f"  {what}: t = {a:.2f} s + {b:.3f} s/layer")
    for x, y in zip(xs, ys):
        fit = a + b * x
        dev = (y - fit) / fit
        worst = max(worst, abs(dev))
        print(f"    {int(x):3d} layers: {y:7.2f} s, fit {fit:7.2f} s, deviation {100 * dev:+6.1f}%, "
              f"{y / x:.3f} s per layer")
    print(f"  {what}: max |deviation| {100 * worst:.1f}% (goal: at most 20%)")
    return worst


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="compiles per model (median, spread)")
    parser.add_argument("--models", default="resnet50,encoder", help="comma list: resnet50, encoder")
    parser.add_argument("--layers", default="2,4,8,12", help="encoder sizes (layers)")
    parser.add_argument("--jobs", type=int, help="DLC_CODEGEN_JOBS for the compiles (default: dlc's own)")
    parser.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "dlc-compile-time"),
                        help="where the exported encoders are kept")
    args = parser.parse_args(argv)
    models = [m for m in args.models.split(",") if m]
    todo: list[tuple[str, str, int | None]] = []
    for m in models:
        if m == "resnet50":
            todo.append(("resnet50", resnet50_path(), None))
        elif m == "encoder":
            for n in (int(x) for x in args.layers.split(",")):
                todo.append((f"encoder {n} layers", encoder_path(n, args.cache), n))
        else:
            raise SystemExit(f"compile_time: unknown model '{m}' (resnet50, encoder)")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    if args.jobs is not None:
        env["DLC_CODEGEN_JOBS"] = str(args.jobs)
    print(f"host: {os.cpu_count()} CPUs, load average at start {os.getloadavg()[0]:.2f}; "
          f"{args.runs} rounds, models alternating")
    runs: dict[str, list[dict]] = {name: [] for name, _, _ in todo}
    with tempfile.TemporaryDirectory(prefix="dlc-compile-time-") as tmp:
        out = os.path.join(tmp, "model.so")
        for _ in range(args.runs):
            for name, path, _ in todo:
                runs[name].append(compile_once(path, out, env))
    results = {name: summarize(name, runs[name]) for name, _, _ in todo}
    family = [(n, results[name]) for name, _, n in todo if n is not None]
    if len(family) >= 3:
        print("\nencoder family (BERT width, d=768, seq 128):")
        linearity([(n, r["wall"]) for n, r in family], "wall")
        linearity([(n, r["cpu"]) for n, r in family], "CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
