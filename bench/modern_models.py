"""Modern-model benchmark (issue 21): dlc vs onnxruntime, each engine alone in its own process.

    python -m dlc.bench.modern_models [--models bert,gpt] [--threads 2,1] [--rounds 5] [--block 3]
                                      [--quick] [--profile] [--cache DIR] [--baseline DIR]
    python -m dlc.bench.modern_models --light [--models light:vgg19,...]   # the nine light models
    python -m dlc.bench.modern_models --models light:resnet50,onnx:examples/small_cnn.onnx,bert

Models (``bench/modern_zoo.py``, torch.nn with seeded random weights, exported
with ``torch.onnx.export(dynamo=False, opset 17)``): a BERT-base-width encoder,
a GPT-style decoder, MobileNetV2, a 2-layer LSTM LM and a ViT patch embedding +
encoder. For each model two worker processes are started (spawn): one compiles
it with ``dlc.compile`` (once; the thread count is set per measurement with
``set_num_threads``), the other builds an onnxruntime session per thread count.
The parent then alternates rounds between them: in each round an engine first
runs untimed for ``--settle`` seconds (the other engine's pool is asleep in its
own process, but its own pool must be awake) and then ``--block`` timed calls;
the round's median is kept. The table shows the median over rounds, the spread
(max-min of the round medians over their median), the dlc/onnxruntime ratio
(lower is better) and the outputs' max abs and max relative error against
onnxruntime (relative to max |ort output|); a geomean of the ratios per thread
count closes it. ``--quick`` uses tiny sizes and 2 rounds: a smoke test, not a
measurement. ``--profile`` compiles dlc with ``profile=True`` and prints its
per-kernel table (at the first thread count) after the model's rows.
``--baseline DIR`` (a directory holding another ``dlc`` package, e.g. an older
commit's ``git archive`` under ``DIR/dlc``) adds a third engine in the same
alternating rounds: the table then shows its time and dlc / baseline, a
before/after measurement from one run.

ONNX files run in the same harness: ``light:NAME`` is onnx's
``backend/test/data/light/light_NAME.onnx`` (``--light`` selects all nine:
AlexNet, DenseNet-121, Inception v1/v2, ResNet-50, ShuffleNet, SqueezeNet, VGG-19,
ZFNet-512, each at its one shipped size, weights as shipped), ``onnx:PATH`` any
ONNX file with static input shapes; their inputs are seeded standard-normal
arrays (``--quick`` changes nothing for them but the rounds). The table closes
with a geomean per group (modern, light, onnx) and thread count.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import time

import numpy as np

ERR_LIMIT = 1e-3  # max |dlc - ort| / max |ort| accepted as a match


def _worker(conn, engine: str, path: str, inputs_path: str, profile: bool, root: str | None = None) -> None:
    """One engine in its own process: commands arrive on ``conn``. ``root``: import dlc from there."""
    if root is not None:  # spawn imported this module's dlc to find _worker: drop it, import root's
        sys.path.insert(0, root)
        for name in [m for m in sys.modules if m == "dlc" or m.startswith("dlc.")]:
            del sys.modules[name]
    data = np.load(inputs_path)
    inputs = [data[f"arg{i}"] for i in range(len(data.files))]
    try:
        if engine == "dlc":
            import dlc

            if root is not None and not os.path.abspath(dlc.__file__).startswith(os.path.abspath(root)):
                raise ImportError(f"--baseline: dlc came from {dlc.__file__}, not from {root}")

            start = time.perf_counter()
            compiled = dlc.compile(path, profile=profile)
            compile_s = time.perf_counter() - start
            outputs = [np.empty(shape, dtype) for _, shape, dtype in compiled.output_specs]

            def prepare(threads):
                compiled.set_num_threads(threads)
                return lambda: compiled(*inputs, outputs=outputs)
        else:
            import onnxruntime as ort

            compile_s = 0.0
            sessions = {}

            def prepare(threads):
                if threads not in sessions:
                    options = ort.SessionOptions()
                    options.intra_op_num_threads = threads
                    options.inter_op_num_threads = 1
                    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
                    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
                    feeds = {i.name: x for i, x in zip(session.get_inputs(), inputs)}
                    sessions[threads] = lambda: session.run(None, feeds)
                return sessions[threads]
    except Exception as err:  # noqa: BLE001 - reported as the model's row, the parent goes on
        conn.send(("error", f"{type(err).__name__}: {str(err).splitlines()[0][:160]}"))
        return
    conn.send(("ready", compile_s))
    while True:
        cmd, *args = conn.recv()
        if cmd == "quit":
            return
        if cmd == "output":
            fn = prepare(args[0])
            result = fn()
            conn.send(("output", [np.array(r) for r in (result if engine == "ort" else outputs)]))
        elif cmd == "time":
            threads, block, settle_s = args
            fn = prepare(threads)
            until = time.perf_counter() + settle_s
            fn()
            while time.perf_counter() < until:
                fn()
            times = []
            for _ in range(block):
                t = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t)
            conn.send(("times", times))
        elif cmd == "profile":
            compiled.set_num_threads(args[0])
            conn.send(("profile", compiled.profile(*inputs, repeat=args[1]).table()))


class Engine:
    def __init__(self, engine: str, path: str, inputs_path: str, profile: bool = False, root: str | None = None):
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker, args=(child, engine, path, inputs_path, profile, root),
                                daemon=True)
        self.proc.start()
        kind, value = self.conn.recv()
        self.error = value if kind == "error" else None
        self.compile_s = value if kind == "ready" else None

    def ask(self, *cmd):
        self.conn.send(cmd)
        return self.conn.recv()[1]

    def close(self):
        if self.error is None:
            self.conn.send(("quit",))
        self.proc.join(timeout=30)


def compare(ours: list, theirs: list) -> tuple[float, float]:
    """(max abs error, max abs error / max |theirs|) over all outputs."""
    worst_abs = worst_rel = 0.0
    for a, b in zip(ours, theirs):
        if a.shape != b.shape:
            return math.inf, math.inf
        diff = float(np.max(np.abs(a.astype(np.float64) - b))) if a.size else 0.0
        worst_abs = max(worst_abs, diff)
        worst_rel = max(worst_rel, diff / max(float(np.max(np.abs(b))), 1e-30))
    return worst_abs, worst_rel


LIGHT_DIR = os.path.join(os.path.dirname(__import__("onnx").__file__), "backend", "test", "data", "light")
LIGHT_MODELS = ["bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50", "shufflenet",
                "squeezenet", "vgg19", "zfnet512"]
GROUPS = ("modern", "light", "onnx")


def group_of(name: str) -> str:
    """``modern`` (bench/modern_zoo.py), ``light`` (``light:NAME``) or ``onnx`` (``onnx:PATH``)."""
    return name.split(":", 1)[0] if ":" in name else "modern"


def label(name: str) -> str:
    """The table's name of a model: ``onnx:PATH`` shows the file's stem."""
    if group_of(name) == "onnx":
        return "onnx:" + os.path.basename(name.split(":", 1)[1]).removesuffix(".onnx")
    return name


def onnx_path(name: str) -> str:
    """The file of a ``light:`` or ``onnx:`` model name."""
    kind, rest = name.split(":", 1)
    return os.path.join(LIGHT_DIR, f"light_{rest}.onnx") if kind == "light" else os.path.abspath(rest)


def random_inputs(path: str, seed: int = 0) -> list[np.ndarray]:
    """Seeded standard-normal inputs for the graph inputs of ``path`` that are not initializers
    (integer inputs: zeros); a dim that is not a fixed size is an error naming it."""
    import onnx
    from onnx import helper

    model = onnx.load(path, load_external_data=False)
    known = {t.name for t in model.graph.initializer}
    rng = np.random.default_rng(seed)
    inputs = []
    for value in model.graph.input:
        if value.name in known:
            continue
        tensor = value.type.tensor_type
        shape = []
        for dim in tensor.shape.dim:
            if not dim.HasField("dim_value"):
                raise ValueError(f"{os.path.basename(path)}: input '{value.name}' has a dim "
                                 f"'{dim.dim_param or '?'}' that is not a fixed size")
            shape.append(dim.dim_value)
        dtype = helper.tensor_dtype_to_np_dtype(tensor.elem_type)
        inputs.append(rng.standard_normal(shape).astype(dtype) if np.issubdtype(dtype, np.floating)
                      else np.zeros(shape, dtype))
    return inputs


def model_files(name: str, args, cache: str) -> tuple[str, str]:
    """(onnx path, inputs .npz path) of model ``name``, exported / drawn into ``cache`` once."""
    if group_of(name) == "modern":
        from dlc.bench.modern_zoo import export

        size = "quick" if args.quick else "full"
        path = os.path.join(cache, f"{name}_{size}.onnx")
        inputs_path = os.path.join(cache, f"{name}_{size}_inputs.npz")
        if not (os.path.exists(path) and os.path.exists(inputs_path)):
            inputs = export(name, path, size)
            np.savez(inputs_path, **{f"arg{i}": x for i, x in enumerate(inputs)})
        return path, inputs_path
    path = onnx_path(name)
    stem = name.replace(":", "_").replace(os.sep, "_")
    inputs_path = os.path.join(cache, f"{stem}_inputs.npz")
    if not os.path.exists(inputs_path):
        np.savez(inputs_path, **{f"arg{i}": x for i, x in enumerate(random_inputs(path))})
    return path, inputs_path


def bench_model(name: str, args, cache: str) -> list[dict]:
    try:
        path, inputs_path = model_files(name, args, cache)
    except (OSError, ValueError) as err:
        return [{"model": name, "threads": t, "error": f"{type(err).__name__}: {err}"} for t in args.threads]
    ort_engine = Engine("ort", path, inputs_path)
    dlc_engine = Engine("dlc", path, inputs_path, args.profile)
    engines = [("dlc", dlc_engine), ("ort", ort_engine)]
    if args.baseline:
        engines.append(("base", Engine("dlc", path, inputs_path, root=args.baseline)))
    try:
        error = next((e.error for _, e in engines if e.error), None)
        if error:
            return [{"model": name, "threads": t, "error": error} for t in args.threads]
        rows = []
        abs_err, rel_err = compare(dlc_engine.ask("output", args.threads[0]), ort_engine.ask("output", args.threads[0]))
        for threads in args.threads:
            medians = {key: [] for key, _ in engines}
            for r in range(args.rounds):
                for key, engine in (engines if r % 2 == 0 else engines[::-1]):  # alternate who goes first
                    medians[key].append(statistics.median(engine.ask("time", threads, args.block, args.settle)))
            row = {"model": name, "threads": threads, "compile_s": dlc_engine.compile_s,
                   "abs_err": abs_err, "rel_err": rel_err}
            for key, values in medians.items():
                mid = statistics.median(values)
                row[f"{key}_ms"] = mid * 1e3
                row[f"{key}_spread"] = (max(values) - min(values)) / mid
            row["ratio"] = row["dlc_ms"] / row["ort_ms"]
            if "base_ms" in row:
                row["vs_base"] = row["dlc_ms"] / row["base_ms"]
                row["base_compile_s"] = engines[2][1].compile_s
            rows.append(row)
        if args.profile:
            print(f"\n{name}: dlc per-kernel profile, threads={args.threads[0]}")
            print(dlc_engine.ask("profile", args.threads[0], max(2, args.block)))
        return rows
    finally:
        for _, engine in engines:
            engine.close()


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def print_table(rows: list[dict], quick: bool) -> None:
    print("\n(ratio = dlc time / onnxruntime time, lower is better; spread = (max-min)/median of the"
          " round medians; rel err = max|dlc-ort| / max|ort|)" + ("  [--quick: tiny sizes, not a measurement]"
                                                                    if quick else ""))
    header = (f"{'model':<20}{'thr':>4}{'compile s':>10}{'dlc ms':>10}{'spread':>8}{'ort ms':>10}{'spread':>8}"
              f"{'ratio':>7}{'max abs err':>13}{'rel err':>9}  match")
    print(header)
    print("-" * len(header))
    for threads in sorted({r["threads"] for r in rows}, reverse=True):
        ratios, vs_base = {g: [] for g in GROUPS}, {g: [] for g in GROUPS}
        for r in (r for r in rows if r["threads"] == threads):
            if "error" in r:
                print(f"{label(r['model']):<20}{threads:>4}  {r['error']}")
                continue
            ratios[group_of(r["model"])].append(r["ratio"])
            if "vs_base" in r:
                vs_base[group_of(r["model"])].append(r["vs_base"])
            match = "ok" if r["rel_err"] <= ERR_LIMIT else "MISMATCH"
            base = (f"  base {r['base_ms']:.2f} ms ({r['base_spread']:.0%}), dlc/base {r['vs_base']:.2f}"
                    if "base_ms" in r else "")
            print(f"{label(r['model']):<20}{threads:>4}{r['compile_s']:>10.1f}{r['dlc_ms']:>10.2f}{r['dlc_spread']:>7.0%} "
                  f"{r['ort_ms']:>10.2f}{r['ort_spread']:>7.0%} {r['ratio']:>7.2f}{r['abs_err']:>13.2e}"
                  f"{r['rel_err']:>9.1e}  {match}{base}")
        for group in GROUPS:
            if ratios[group]:
                title = f"geomean {group} ({len(ratios[group])})"
                print(f"{title:<20}{threads:>4}{'':>46}{geomean(ratios[group]):>7.2f}"
                      + (f"{'':>38}dlc/base {geomean(vs_base[group]):.2f}" if vs_base[group] else ""))


def parse_args(argv):
    from dlc.bench.modern_zoo import MODELS

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=None,
                        help=f"comma-separated, of {', '.join(MODELS)} (the default), light:NAME "
                             f"(NAME of {', '.join(LIGHT_MODELS)}) and onnx:PATH")
    parser.add_argument("--light", action="store_true", help="the nine light models (with --models: added)")
    parser.add_argument("--threads", default="2,1", help="comma-separated thread counts")
    parser.add_argument("--rounds", type=int, default=None, help="alternating rounds (default 5; --quick 2)")
    parser.add_argument("--block", type=int, default=3, help="timed calls per round")
    parser.add_argument("--settle", type=float, default=0.1, help="untimed seconds before each block")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, 2 rounds: a smoke test")
    parser.add_argument("--profile", action="store_true", help="print dlc's per-kernel profile per model")
    parser.add_argument("--baseline", default=None, metavar="DIR",
                        help="also time the dlc package under DIR/dlc (before/after in one run)")
    parser.add_argument("--cache", default=None, help="directory for the exported .onnx (default: a temp dir)")
    args = parser.parse_args(argv)
    if args.models is None:
        args.models = [] if args.light else list(MODELS)
    else:
        args.models = [m.strip() for m in args.models.split(",") if m.strip()]
    if args.light:
        args.models += [f"light:{m}" for m in LIGHT_MODELS if f"light:{m}" not in args.models]
    for m in args.models:
        group = group_of(m)
        known = group == "onnx" or (m in MODELS if group == "modern" else
                                    group == "light" and m.split(":", 1)[1] in LIGHT_MODELS)
        if not known:
            parser.error(f"unknown model {m!r}; known: {', '.join(MODELS)}, "
                         f"light:NAME for NAME of {', '.join(LIGHT_MODELS)}, onnx:PATH")
        if group == "onnx" and not os.path.isfile(onnx_path(m)):
            parser.error(f"{m!r}: no such file {onnx_path(m)}")
    args.threads = [int(t) for t in args.threads.split(",")]
    if any(t < 1 for t in args.threads):
        parser.error("--threads: counts must be >= 1")
    if args.rounds is None:
        args.rounds = 2 if args.quick else 5
    if args.quick:
        args.settle = min(args.settle, 0.02)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        cache = args.cache or tmp
        os.makedirs(cache, exist_ok=True)
        for name in args.models:
            model_rows = bench_model(name, args, cache)
            for row in model_rows:
                print(f"  {name} threads={row['threads']}: " + ", ".join(
                    f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()
                    if k not in ("model", "threads")), file=sys.stderr, flush=True)
            rows += model_rows
    print_table(rows, args.quick)
    bad = [r for r in rows if "error" in r or r["rel_err"] > ERR_LIMIT]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
