"""ResNet-50 with dnnl BYOC partitions vs dlc's own kernels vs onnxruntime (not part of CI).

    python bench/bench_byoc.py [--model resnet50] [--threads 2] [--rounds 7] [--block 3]

Each engine runs in its own process (so one's thread pool, spinning threads and caches
do not sit in another's process; dlc and oneDNN would share one libgomp otherwise): the
parent starts the three workers, each compiles or loads its engine and checks its output
against onnxruntime's, then the parent runs alternating rounds: in each round every
engine in turn (the order rotates) runs untimed for 0.1 s (to settle after the previous
engine's threads) and then ``--block`` timed calls. Only one engine runs at a time; the
others wait on a pipe. The table gives each engine's median over all timed calls, its
spread (min, max of the per-round medians), and the ratio to onnxruntime. Threads: dlc's
``num_threads``, onnxruntime's ``intra_op_num_threads`` and, for oneDNN's OpenMP runtime,
``OMP_NUM_THREADS`` in the dnnl worker (dlc's set_num_threads does not reach oneDNN).
The model is onnx's light ResNet-50 (the real graph and shapes; its weights are
constants, which does not change the work); the input is random.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

LIGHT = os.path.join(os.path.dirname(__import__("onnx").__file__), "backend", "test", "data", "light")
ENGINES = ("dlc+dnnl", "dlc", "onnxruntime")


def _input(path: str) -> np.ndarray:
    import onnx

    model = onnx.load(path, load_external_data=False)
    init = {t.name for t in model.graph.initializer}
    inp = next(i for i in model.graph.input if i.name not in init)
    shape = [d.dim_value for d in inp.type.tensor_type.shape.dim]
    return np.random.default_rng(0).standard_normal(shape).astype(np.float32)


def _engine(name: str, path: str, threads: int):
    """(run() -> output, note) for engine ``name``."""
    x = _input(path)
    if name == "onnxruntime":
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        feed = {session.get_inputs()[0].name: x}
        return (lambda: session.run(None, feed)[0]), f"onnxruntime {ort.__version__}"
    import dlc

    start = time.perf_counter()
    module = dlc.compile(path, num_threads=threads, byoc=["dnnl"] if name == "dlc+dnnl" else None)
    note = f"compile {time.perf_counter() - start:.1f} s"
    if name == "dlc+dnnl":
        from dlc.backends.dnnl.library import find_onednn

        lib = find_onednn()
        parts = [line for line in module.byoc_report if line.startswith("partition")]
        note += f"; oneDNN {lib.version} ({lib.cpu_runtime}); " + "; ".join(parts)
    outputs = [np.empty(shape, dtype) for _, shape, dtype in module.output_specs]
    return (lambda: module(x, outputs=outputs)[0]), note


def worker(name: str, path: str, threads: int) -> None:
    """Serve the parent: 'check' -> output saved to a file, 'run BLOCK' -> timings."""
    run, note = _engine(name, path, threads)
    print(json.dumps({"ready": note}), flush=True)
    for line in sys.stdin:
        cmd = line.split()
        if cmd[0] == "check":
            np.save(cmd[1], run())
            print(json.dumps({"ok": True}), flush=True)
        elif cmd[0] == "run":
            block = int(cmd[1])
            settle_until = time.perf_counter() + 0.1
            run()
            while time.perf_counter() < settle_until:
                run()
            times = []
            for _ in range(block):
                t = time.perf_counter()
                run()
                times.append(time.perf_counter() - t)
            print(json.dumps({"times": times}), flush=True)
        else:
            return


def _ask(proc, command: str) -> dict:
    proc.stdin.write(command + "\n")
    proc.stdin.flush()
    line = proc.stdout.readline()
    if not line:
        raise SystemExit(f"a worker died (exit {proc.wait()}) on '{command}'")
    return json.loads(line)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="resnet50", help="an onnx light model name or an .onnx path")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--block", type=int, default=3, help="timed calls per engine per round")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    path = args.model if args.model.endswith(".onnx") else os.path.join(LIGHT, f"light_{args.model}.onnx")
    if args.worker:
        worker(args.worker, path, args.threads)
        return 0
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    procs = {}
    for name in ENGINES:
        procs[name] = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--worker", name, "--model", path,
             "--threads", str(args.threads)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    try:
        notes = {}
        for name, proc in procs.items():  # compile one at a time: the others wait
            line = proc.stdout.readline()
            if not line:
                raise SystemExit(f"{name}: the worker failed to start (exit {proc.wait()})")
            notes[name] = json.loads(line)["ready"]
        import tempfile

        outs = {}
        with tempfile.TemporaryDirectory() as tmp:
            for name, proc in procs.items():
                file = os.path.join(tmp, f"{len(outs)}.npy")
                _ask(proc, f"check {file}")
                outs[name] = np.load(file)
        ref = outs["onnxruntime"]
        scale = max(float(np.abs(ref).max()), 1e-30)
        samples = {name: [] for name in ENGINES}
        round_medians = {name: [] for name in ENGINES}
        order = list(ENGINES)
        for r in range(args.rounds):
            for name in order:
                times = _ask(procs[name], f"run {args.block}")["times"]
                samples[name] += times
                round_medians[name].append(statistics.median(times))
            order = order[1:] + order[:1]
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.stdin.write("quit\n")
                proc.stdin.flush()
                proc.wait(timeout=30)
    model = os.path.basename(path).removesuffix(".onnx").removeprefix("light_")
    print(f"{model}, {args.threads} threads, {args.rounds} rounds x {args.block} calls per engine "
          f"(each engine in its own process, alternating)")
    for name in ENGINES:
        print(f"  {name}: {notes[name]}")
    t_ort = statistics.median(samples["onnxruntime"])
    print(f"{'engine':<14}{'median ms':>10}{'spread ms (round medians)':>28}{'vs ort':>8}  max |diff| / scale")
    for name in ENGINES:
        med = statistics.median(samples[name])
        lo, hi = min(round_medians[name]), max(round_medians[name])
        diff = float(np.abs(outs[name].astype(np.float64) - ref).max()) / scale
        print(f"{name:<14}{med * 1e3:>10.1f}{f'{lo * 1e3:.1f} .. {hi * 1e3:.1f}':>28}{med / t_ort:>8.2f}  {diff:.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
