"""``dlc tune``: tune a model's kernel schedules into a JSON-lines log (dlc.tune).

    dlc tune model.onnx --trials 200 -o tune.jsonl [--seconds S] [--target T]
             [--rpc-tracker HOST:PORT --rpc-key K | --ray auto|ADDRESS]
             [--cost-model xgb|random] [--threads N] [--input NAME=D0,D1,...]
    dlc compile model.onnx -o model.so --tuning-records tune.jsonl

Prints one line per task at the end (trials, errors, best time and GFLOP/s); on a terminal a
rich line per task shows the progress while it runs. An existing log is resumed.
"""

from __future__ import annotations

from dlc.diagnostics import DiagnosticError


def add_tune_command(sub) -> None:
    tune = sub.add_parser("tune", help="tune the kernel schedules of a model into a tuning log")
    tune.add_argument("model", help="model.onnx, model.mlir, model.tflite or model.pt2")
    tune.add_argument("-o", "--output", default="tune.jsonl", help="tuning log (JSON lines; appended, resumed)")
    tune.add_argument("--trials", type=int, help="measurements in all (with --seconds: whichever ends first)")
    tune.add_argument("--seconds", type=float, help="wall-time budget in seconds")
    tune.add_argument("--target", default="llvm", help="target (as dlc compile --target); a hosted llvm target")
    tune.add_argument("--cost-model", default="xgb", choices=("xgb", "random"),
                      help="xgb (XGBoost on loop features: pip install 'dlc[tune]') or random")
    tune.add_argument("--threads", type=int, help="threads of the timed kernels (default: the library's)")
    tune.add_argument("--batch", type=int, default=8, help="candidates per round (default 8)")
    tune.add_argument("--repeat", type=int, default=5,
                      help="timing samples per candidate (paired: pairs with the default; default 5)")
    tune.add_argument("--unpaired", action="store_true",
                      help="time candidates alone, not interleaved with their task's default (ranked by "
                           "absolute time; the log's best then applies even when not beyond the noise)")
    tune.add_argument("--min-repeat-ms", type=float, default=20.0,
                      help="each sample runs the kernel until it lasts this long (default 20)")
    tune.add_argument("--timeout", type=float, default=10.0, help="seconds before a candidate's run is killed")
    tune.add_argument("--input", action="append", default=[], metavar="NAME=D0,D1,...",
                      help="fix an ONNX input's shape (repeatable)")
    tune.add_argument("--seed", type=int, default=0, help="seed of the search (default 0)")
    tune.add_argument("--rpc-tracker", metavar="HOST:PORT", help="measure on a server of this RPC tracker")
    tune.add_argument("--rpc-key", metavar="KEY", help="the tracker's server pool (with --rpc-tracker)")
    tune.add_argument("--rpc-token-file", metavar="FILE", help="the servers' token (dlc rpc server --token-file)")
    tune.add_argument("--ray", metavar="auto|ADDRESS", help="measure on a Ray cluster (pip install 'dlc[ray]')")


def _shapes(items: list[str]) -> dict | None:
    if not items:
        return None
    out = {}
    for item in items:
        name, sep, dims = item.partition("=")
        try:
            out[name] = [int(d) for d in dims.split(",")]
        except ValueError:
            out[name] = None
        if not sep or not name or out[name] is None or any(d < 1 for d in out[name]):
            raise DiagnosticError(f"--input '{item}': expected NAME=D0,D1,... with positive dims")
    return out


def tune_command(args) -> int:
    from dlc.tune.measure import MeasureOptions, RayRunner, RPCRunner
    from dlc.tune.tuner import summary, tune

    if args.trials is None and args.seconds is None:
        raise DiagnosticError("dlc tune: give a budget: --trials N and/or --seconds S")
    if (args.rpc_tracker is None) != (args.rpc_key is None):
        raise DiagnosticError("dlc tune: --rpc-tracker and --rpc-key go together")
    if args.rpc_tracker is not None and args.ray is not None:
        raise DiagnosticError("dlc tune: --rpc-tracker and --ray exclude each other")
    options = MeasureOptions(repeat=args.repeat, min_repeat_ms=args.min_repeat_ms, timeout=args.timeout,
                             threads=args.threads, seed=args.seed, paired=not args.unpaired)
    if args.rpc_tracker is not None:
        runner = RPCRunner(args.rpc_tracker, args.rpc_key, options, token_file=args.rpc_token_file)
    elif args.ray is not None:
        runner = RayRunner(args.ray, options)
    else:
        runner = "local"
    records = tune(args.model, target=args.target, trials=args.trials, seconds=args.seconds, log=args.output,
                   runner=runner, input_shapes=_shapes(args.input), cost_model=args.cost_model,
                   batch_size=args.batch, options=options, seed=args.seed)
    for line in summary(records):
        print(line)
    print(f"{len(records)} records appended to {args.output}")
    return 0
