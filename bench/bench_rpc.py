"""Remote timing (``RemoteModule.time_evaluator`` over loopback RPC) against local
timing of the same exported library, measured the same way.

    python bench/bench_rpc.py                       # small_cnn and squeezenet, 1 thread
    python bench/bench_rpc.py --rounds 7 --repeat 30 --threads 2 --models small_cnn

Both sides use rpc/timing.py's ``time_calls`` (one warm-up, ``repeat`` samples of
``number`` back-to-back calls) around the same native entry point: locally in a
fresh process (``--local`` mode of this script, ``dlc.runtime.load``), remotely
in the server's worker process. ``number`` is calibrated once (a sample of at
least 20 ms) and then fixed for both. The machine is shared, so rounds alternate
local and remote (in ABBA order), each round in new processes, and the table gives the median
of the rounds' medians, their spread ((max - min) / median over the rounds)
and remote / local; then the fastest single sample of each side (the least
disturbed by other load) and their ratio. The issue's goal: remote within 10% of local.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def model_input(specs, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, shape).astype(dtype) for _, shape, dtype in specs]


def local_main(args) -> int:
    """One local measurement in this (fresh) process; prints the samples as JSON."""
    from dlc.rpc.timing import time_calls
    from dlc.runtime import load

    module = load(args.local, num_threads=args.threads)
    inputs = model_input(module.input_specs)
    entry = module.entries[module.default_entry]
    result = time_calls(lambda: entry(*inputs), args.repeat, args.number, args.min_repeat_ms)
    print(json.dumps(result.to_wire()))
    return 0


def pinned(args) -> list[str]:
    return ["taskset", "-c", args.cpus] if args.cpus else []


def local_round(path: str, args, number: int, min_repeat_ms: float = 0) -> dict:
    out = subprocess.run([*pinned(args), sys.executable, os.path.abspath(__file__), "--local", path, "--repeat", str(args.repeat),
                          "--number", str(number), "--threads", str(args.threads),
                          "--min-repeat-ms", str(min_repeat_ms)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def compile_models(names: list[str], workdir: str) -> dict[str, str]:
    import dlc

    sys.path.insert(0, os.path.join(REPO, "conformance"))
    import run_light_models

    paths = {}
    for name in names:
        source = (os.path.join(REPO, "examples", "small_cnn.onnx") if name == "small_cnn"
                  else os.path.join(run_light_models.LIGHT_DIR, f"light_{name}.onnx"))
        paths[name] = os.path.join(workdir, f"{name}.so")
        dlc.compile(source).export(paths[name])
    return paths


def start_server(workdir: str, args) -> tuple[subprocess.Popen, int]:
    port_file = os.path.join(workdir, "port")
    proc = subprocess.Popen([*pinned(args), sys.executable, "-m", "dlc.rpc", "server", "--port", "0", "--port-file", port_file,
                             "--work-dir", workdir], stdout=subprocess.DEVNULL)
    for _ in range(600):
        if os.path.exists(port_file):
            with open(port_file) as f:
                return proc, int(f.read())
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    raise SystemExit("bench_rpc: the server did not start")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="+", default=["small_cnn", "squeezenet"])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--number", type=int, default=0, help="calls per sample (0: calibrate to >= 20 ms)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--cpus", help="pin the server (so its workers) and the local runs to these CPUs, e.g. 1 or 0-1")
    ap.add_argument("--min-repeat-ms", type=float, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--local", help=argparse.SUPPRESS)  # internal: one local measurement
    args = ap.parse_args(argv)
    if args.local:
        return local_main(args)

    import dlc.rpc

    with tempfile.TemporaryDirectory(prefix="bench-rpc-") as workdir:
        paths = compile_models(args.models, workdir)
        server, port = start_server(workdir, args)
        try:
            print(f"{'model':<12} {'number':>6} {'local ms':>9} {'spread':>7} {'remote ms':>9} {'spread':>7} "
                  f"{'remote/local':>12} {'best local':>10} {'best remote':>11} {'ratio':>6}")
            worst = 0.0
            for name, path in paths.items():
                number = args.number or local_round(path, args, 1, min_repeat_ms=20)["number"]
                local, remote = [], []
                best = {"local": float("inf"), "remote": float("inf")}  # the least disturbed sample
                with dlc.rpc.connect("127.0.0.1", port) as session:
                    session.upload(path, "model.so")
                    inputs = model_input(session.load("model.so").input_specs)
                    def remote_round():
                        model = session.load("model.so", num_threads=args.threads)  # a fresh worker
                        timing = model.time_evaluator(*inputs, repeat=args.repeat, number=number)
                        remote.append(timing.median)
                        best["remote"] = min(best["remote"], timing.min)
                        model.free()

                    for i in range(args.rounds):  # ABBA order: a drifting load favours neither side
                        if i % 2:
                            remote_round()
                        samples = local_round(path, args, number)["samples"]
                        local.append(statistics.median(samples))
                        best["local"] = min(best["local"], min(samples))
                        if not i % 2:
                            remote_round()
                lm, rm = statistics.median(local), statistics.median(remote)
                ratio = rm / lm
                worst = max(worst, abs(ratio - 1))
                print(f"{name:<12} {number:>6} {lm * 1e3:>9.4f} {(max(local) - min(local)) / lm * 100:>6.1f}% "
                      f"{rm * 1e3:>9.4f} {(max(remote) - min(remote)) / rm * 100:>6.1f}% {ratio:>12.3f} "
                      f"{best['local'] * 1e3:>10.4f} {best['remote'] * 1e3:>11.4f} "
                      f"{best['remote'] / best['local']:>6.3f}")
            print(f"rounds {args.rounds} x repeat {args.repeat}, {args.threads} thread(s), "
                  f"cpus {args.cpus or 'any'}; largest "
                  f"|remote/local - 1| = {worst * 100:.1f}% (goal: within 10%)")
        finally:
            server.terminate()
            server.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
