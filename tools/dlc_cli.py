"""dlc: compile and run models from the command line.

    dlc compile model.onnx -o model.so [--target llvm|aarch64|riscv64|TARGET] [--pass-timing]
    dlc compile model.onnx -o model.tar --target c   # C99 source archive (bare metal)
    dlc run model.mlir|model.onnx|model.so [--entry NAME] [--input x.npy | --input x=x.npy ...]
            [--check] [--repeat N] [--threads N] [--seed S] [--bisect]
            [--profile TRACE.json]
    dlc view model.onnx|model.mlir -o graph.html [--profile trace.json]
    dlc rpc server|tracker ...; dlc run model.so --rpc HOST:PORT   (tools/rpc_cli.py)
    dlc tune model.onnx --trials N -o tune.jsonl [--rpc-tracker H:P --rpc-key K | --ray auto]  (tools/tune_cli.py)
    dlc build-runtime -o DIR [--target aarch64]   (the C runtime and dlc-run: backends/c_runtime.py)
    dlc quantize model.onnx --calibrate inputs.npz -o model.int8.onnx [--method percentile] [--per-tensor]

``compile`` and ``run`` on .mlir/.onnx go through ``dlc.driver.compile`` (MLIR
is parsed here first, so syntax and verifier errors point at the source line);
``run`` on a .so uses the numpy+ctypes runtime ``dlc.runtime.load``. ``run``
feeds seeded random inputs unless given ``--input``, prints each output's
shape, dtype and a checksum and the median run time; ``--check`` compares
with the reference evaluator (graph-level MLIR), the loop-IR interpreter
``dlc.lowering.interp`` (loop-level MLIR, e.g. ``dlc-opt -p lower-to-loops``
output), torch (.pt2) or onnxruntime (ONNX); ``--profile`` compiles
with per-kernel timestamps, writes a Chrome trace and prints the kernel table. On a
terminal compiling shows its progress on stderr (tools/progress.py); piped, nothing.
"""

from __future__ import annotations

import time

_STARTED = (time.perf_counter(), time.process_time())  # --pass-timing's "import" row starts here

import importlib  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402

import numpy as np

from dlc.diagnostics import DiagnosticError, parse_module, read_text, run_tool, verify_module
from dlc.output_files import OutputSet, check_writable, publish_file
from dlc.target import PRESETS
from dlc.tools.dlc_opt import ArgumentParser, load_weights, print_timings

TOOL = "dlc"
Spec = tuple[str, tuple[int, ...], np.dtype]


TARGET_HELP = ("target: 'llvm' (this host, the default), 'cuda', 'c' (C99 source, bare metal), a TVM-style string ('llvm "
               "-mtriple=aarch64-linux-gnu -mcpu=cortex-a72 -mattr=+dotprod -num-cores=4') or a "
               f"preset: {', '.join(PRESETS)}")


def build_arg_parser() -> ArgumentParser:
    ap = ArgumentParser(prog=TOOL, description="Compile and run models with dlc.")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    comp = sub.add_parser("compile", help="compile .mlir/.onnx to a shared library")
    comp.add_argument("model", help="model.mlir or model.onnx")
    comp.add_argument("-o", "--output", required=True,
                      help="output shared library (.so; --target c: a .tar of C source)")
    comp.add_argument("--target", default="llvm", help=TARGET_HELP)
    comp.add_argument("--entry", help="function to export as the default entry (default: @main)")
    comp.add_argument("--threads", type=int, help="thread count baked in as default")
    comp.add_argument("--pass-timing", "--timing", action="store_true",
                      help="print the wall and CPU time of each stage to stderr (MLIR's -mlir-timing report)")
    comp.add_argument("--tuning-records", metavar="TUNE.JSONL",
                      help="apply the best config per kernel of this tuning log (dlc tune); others: default")

    run = sub.add_parser("run", help="run a model on given or random inputs")
    for parser in (comp, run):  # bring your own codegen (dlc.byoc)
        parser.add_argument("--byoc", action="append", default=[], metavar="TARGET[,TARGET]",
                            help="offload what the BYOC target(s) accept (e.g. dnnl, c), in priority order")
        parser.add_argument("-v", "--verbose", action="store_true",
                            help="print which ops went to which BYOC codegen and why the rest did not, "
                                 "and how many kernels --tuning-records tuned")
        parser.add_argument("--allow-tf32", action="store_true",
                            help="--target cuda: f32 matmuls may use tf32 tensor cores (as torch's allow_tf32)")
    run.add_argument("model", help="model.mlir, model.onnx or model.so")
    run.add_argument("--entry", help="function to run (default: @main)")
    run.add_argument("--input", action="append", default=[], metavar="[NAME=]FILE.npy",
                     help="an input array, in order or by name (repeatable)")
    run.add_argument("--check", action="store_true",
                     help="compare with the reference evaluator (MLIR) or onnxruntime (ONNX)")
    run.add_argument("--repeat", type=int, default=5, help="timed runs (default 5)")
    run.add_argument("--threads", type=int, help="threads for parallel loops")
    run.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    run.add_argument("--target", default="llvm", help=TARGET_HELP + "; run needs one this host runs")
    run.add_argument("--expect", action="append", default=[], metavar="FILE.npy|FILE.pb",
                     help="a stored expected output (.npy, or an ONNX TensorProto .pb), in output order "
                          "(repeatable); the run fails when an output differs")
    run.add_argument("--output", action="append", default=[], metavar="FILE.npy",
                     help="save an output as .npy, in output order (repeatable)")
    run.add_argument("--rtol", type=float, default=1e-4, help="--check/--expect relative tolerance (floats)")
    run.add_argument("--atol", type=float, default=1e-5, help="--check/--expect absolute tolerance (floats)")
    run.add_argument("--bisect", action="store_true",  # tools/numeric_bisect.py
                     help="compare every intermediate value with onnxruntime (.onnx) or torch (.pt2) "
                          "and name the first node that diverges (--rtol/--atol)")

    view = sub.add_parser("view", help="write an HTML page of the graph after the graph passes")  # tools/graph_view.py
    view.add_argument("model", help="model.onnx or graph-level model.mlir")
    view.add_argument("-o", "--output", required=True, help="output page (.html)")
    view.add_argument("--profile", metavar="TRACE.json", help="a Chrome trace: kernel times as colours")
    brt = sub.add_parser("build-runtime", help="build the C runtime and dlc-run for a target")
    brt.add_argument("-o", "--output", required=True, metavar="DIR", help="output directory")
    brt.add_argument("--target", help="architecture, triple or target string (default: this machine)")
    run.add_argument("--profile", metavar="TRACE.json",
                     help="time every kernel (--repeat runs): write a Chrome trace, print a table")
    from dlc.tools import rpc_cli  # dlc rpc server|tracker, dlc run --rpc (tools/rpc_cli.py)

    rpc_cli.add_run_arguments(run)
    rpc_cli.add_rpc_command(sub)
    from dlc.tools import tune_cli  # dlc tune (tools/tune_cli.py)

    tune_cli.add_tune_command(sub)
    from dlc.tools import quantize_cli  # dlc quantize (tools/quantize_cli.py)

    quantize_cli.add_command(sub)
    return ap


# ---------------------------------------------------------------------------
# loading models
# ---------------------------------------------------------------------------


def _kind(path: str) -> str:
    ext = os.path.splitext(path)[1].lower()
    if ext in (".mlir", ".onnx", ".so", ".te", ".tflite", ".pt2"):
        return ext[1:]
    raise DiagnosticError(f"'{path}': unknown model kind '{ext or '(none)'}' "
                          "(expected .mlir, .onnx, .tflite, .pt2, .te or .so)")


def _user_errors() -> tuple[type[BaseException], ...]:
    """Exception classes that mean bad input (not a dlc bug)."""
    from xdsl.utils.exceptions import DiagnosticException

    from dlc.evaluator import EvaluationError
    from dlc.runtime import DlcRuntimeError

    classes: list[type[BaseException]] = [DiagnosticException, DlcRuntimeError, EvaluationError]
    for module, name in (("dlc.frontends.onnx", "OnnxImportError"), ("dlc.driver", "CompileError")):
        try:
            cls = getattr(importlib.import_module(module), name, None)
        except Exception:  # a module still being written: nothing to add
            cls = None
        if isinstance(cls, type):
            classes.append(cls)
    return tuple(classes)


def _guard(what: str, fn, *args, **kwargs):
    """Call ``fn``; errors that mean bad input become one diagnostic."""
    try:
        return fn(*args, **kwargs)
    except DiagnosticError:
        raise
    except RecursionError:  # a backstop: parse_module's MAX_NESTING check comes first
        raise DiagnosticError(f"{what}: nesting too deep (more than the "
                              f"{sys.getrecursionlimit()}-frame recursion limit allows)") from None
    except Exception as err:
        if isinstance(err, _user_errors()):
            first = (str(err).strip().split("\n") or [""])[0]
            raise DiagnosticError(f"{what}: {first}") from None
        raise


def _driver():
    try:
        return importlib.import_module("dlc.driver")
    except ImportError as err:
        raise DiagnosticError(
            f"compiling needs dlc.driver, which is not available here ({err})"
        ) from None


def parse_mlir(path: str):
    """Parse + verify a .mlir file with located diagnostics, weights loaded."""
    from dlc.context import make_context

    text, source = read_text(path)
    module = parse_module(make_context(), text, source)
    load_weights(module, path, source)
    verify_module(module)
    return module


def load_te(path: str, target: str = "llvm"):
    """A tensor-expression file lowered to loop IR, with the default schedules for ``target``."""
    from dlc.frontends.te import import_te
    from dlc.lowering.schedule import apply_default_schedules
    from dlc.target import Target, TargetError

    try:
        planned_for = Target.from_string(target)
    except TargetError as err:
        raise DiagnosticError(f"compiling '{path}': {err}") from None
    return apply_default_schedules(import_te(path), planned_for)


def compile_model(path: str, target: str, entry: str | None, threads: int | None, profile: bool = False,
                  byoc: list[str] | None = None, verbose: bool = False, tuning_records: str | None = None,
                  jit: bool = True, allow_tf32: bool = False):
    kind = _kind(path)
    if kind == "so":
        raise DiagnosticError(f"'{path}' is already compiled")
    if not os.path.exists(path):
        raise DiagnosticError(f"cannot open '{path}': no such file")
    source = parse_mlir(path) if kind == "mlir" else load_te(path, target) if kind == "te" else path
    driver = _driver()
    from dlc.tools.progress import compile_progress

    extra = {"profile": True} if profile else {}
    if not jit:
        extra["jit"] = False  # export only: LLVM runs once, for the library
    if allow_tf32:
        extra["allow_tf32"] = True
    targets = [t for item in byoc or () for t in item.split(",") if t]
    if targets:
        extra["byoc"] = targets
    if tuning_records is not None:
        extra["tuning_records"] = tuning_records
    with compile_progress() as progress:  # None (no output) when stderr is not a terminal
        if progress is not None:
            extra["progress"] = progress
        compiled = _guard(f"compiling '{path}'", driver.compile, source, target=target, entry=entry,
                          num_threads=threads, **extra)
    if verbose and targets:
        for line in getattr(compiled, "byoc_report", []):
            print(f"byoc: {line}", file=sys.stderr)
    if verbose and getattr(compiled, "tuning_note", None):
        print(compiled.tuning_note, file=sys.stderr)  # tuning: 12 of 17 kernels from tune.jsonl, 5 default
    if verbose:
        for line in getattr(compiled, "qdq_report", []):
            print(line, file=sys.stderr)
    for line in getattr(compiled, "schedule_report", []):  # always: a fallback is never silent
        print(f"note: schedule: {line}", file=sys.stderr)
    return compiled


# ---------------------------------------------------------------------------
# dlc compile
# ---------------------------------------------------------------------------


def cmd_compile(args) -> int:
    check_writable(args.output)  # -o DIR, -o /missing/x.so: fail before compiling
    imported = (time.perf_counter() - _STARTED[0], time.process_time() - _STARTED[1])
    compiled = compile_model(args.model, args.target, args.entry, args.threads, byoc=args.byoc,
                             verbose=args.verbose or args.pass_timing, tuning_records=args.tuning_records,
                             jit=False, allow_tf32=args.allow_tf32)
    # the library is linked into a temporary path, then put at -o by the rule of
    # dlc.output_files (renamed over a file, written through a device or FIFO)
    publish_file(lambda tmp: _guard(f"exporting '{args.output}'", compiled.export, tmp), args.output)
    summary = getattr(compiled, "summary", None)  # the C target: its arena size
    if summary is not None:
        print(summary(), file=sys.stderr)
    if args.pass_timing:
        timings = dict(getattr(compiled, "timings", {}) or {})
        cpu = getattr(getattr(compiled, "timings", None), "cpu", None)
        # the tool's own start (its imports, the arguments) as the first row
        timings = {"import": imported[0], **timings}
        cpu = {"import": imported[1], **cpu} if cpu is not None else None
        print_timings(timings, sys.stderr, cpu)
    return 0


# ---------------------------------------------------------------------------
# dlc run
# ---------------------------------------------------------------------------


def random_input(spec: Spec, rng: np.random.Generator) -> np.ndarray:
    name, shape, dtype = spec
    dtype = np.dtype(dtype)
    try:
        if dtype == np.bool_:
            return rng.random(shape) < 0.5
        if dtype.kind == "f":
            return rng.uniform(-1.0, 1.0, shape).astype(dtype)
        if dtype.kind == "u":
            return rng.integers(0, 10, shape).astype(dtype)
        if dtype.kind == "i":
            return rng.integers(-10, 10, shape).astype(dtype)
    except (ValueError, MemoryError):  # numpy: "array is too big" / "Unable to allocate"
        from dlc.runtime.native import format_bytes

        raise DiagnosticError(f"cannot make a random input '{name}' of shape {tuple(shape)} {dtype}: "
                              f"{format_bytes(int(np.prod(shape, dtype=object)) * dtype.itemsize)} "
                              "do not fit in memory (pass it with --input)") from None
    raise DiagnosticError(f"cannot make a random input of dtype {dtype}")


def load_inputs(specs: list[Spec], given: list[str], seed: int) -> list[np.ndarray]:
    """Inputs from ``--input`` (positional or NAME=FILE), the rest random."""
    names = [name for name, _, _ in specs]
    chosen: dict[int, np.ndarray] = {}
    position = 0
    for item in given:
        name, sep, path = item.partition("=")
        if sep and not name.endswith(".npy"):
            if name not in names:
                raise DiagnosticError(f"--input {item}: no input named '{name}' (inputs: {', '.join(names)})")
            index = names.index(name)
        else:
            path, index = item, position
            position += 1
        if index >= len(specs):
            raise DiagnosticError(f"--input {item}: the model takes only {len(specs)} inputs")
        try:
            array = np.load(path, allow_pickle=False)
        except FileNotFoundError:
            raise DiagnosticError(f"cannot open '{path}': no such file") from None
        except (OSError, ValueError, EOFError) as err:
            raise DiagnosticError(f"cannot read '{path}' as a .npy array: {err}") from None
        _, shape, dtype = specs[index]
        if tuple(array.shape) != tuple(shape):
            raise DiagnosticError(
                f"--input {item}: shape {tuple(array.shape)} does not match input '{names[index]}' {tuple(shape)}")
        if array.dtype != np.dtype(dtype):
            raise DiagnosticError(
                f"--input {item}: dtype {array.dtype} does not match input '{names[index]}' {np.dtype(dtype)}")
        chosen[index] = array
    rng = np.random.default_rng(seed)
    inputs = []
    for i, spec in enumerate(specs):
        if i in chosen:
            inputs.append(chosen[i])
            continue
        inputs.append(random_input(spec, rng))  # a one-line error when it cannot fit in memory
    return inputs


def describe_output(index: int, name: str, array: np.ndarray) -> str:
    with np.errstate(all="ignore"):  # inf + -inf: a nan sum, not a warning
        return _describe_output(index, name, array)


def _describe_output(index: int, name: str, array: np.ndarray) -> str:
    flat = array.reshape(-1)
    first = ", ".join(f"{v:.6g}" if array.dtype.kind == "f" else str(v) for v in flat[:4])
    more = ", ..." if flat.size > 4 else ""
    total = flat.astype(np.float64).sum() if flat.size else 0.0
    return (f"output {index} '{name}': shape {tuple(array.shape)} {array.dtype} "
            f"sum={total:.6g} first=[{first}{more}]")


def reference_outputs(path: str, kind: str, entry: str | None, inputs: list[np.ndarray]) -> list[np.ndarray]:
    if kind == "te":
        from dlc.frontends.te import import_te, reference

        import_te(path)  # located diagnostics first
        return _guard("reference (TE interpreter)", reference, read_text(path)[0], *inputs)
    if kind == "mlir":
        module = parse_mlir(path)
        level = ir_level(module)
        if level == "loop":  # lower-to-loops output: host functions take their outputs as arguments
            from dlc.lowering.interp import run as run_loops

            return _guard("reference (loop-IR interpreter)", run_loops, module, inputs, entry)
        if level == "llvm":
            raise DiagnosticError(f"--check needs graph- or loop-level IR; '{path}' is llvm-dialect IR, "
                                  "which no reference runs (check the IR before lower-to-llvm)")
        from dlc.evaluator import evaluate

        return _guard("reference evaluator", evaluate, module, inputs, entry)
    if kind == "pt2":  # torch itself runs the exported program
        return _guard("torch reference", _run_pt2, path, inputs)
    if kind == "tflite":  # no TFLite runtime here: the evaluator runs the imported graph
        from dlc.driver import load_module
        from dlc.evaluator import evaluate

        module = _guard(f"importing '{path}'", load_module, path)
        return _guard("reference evaluator", evaluate, module, inputs, entry)
    try:
        import onnxruntime as ort
    except ImportError:
        raise DiagnosticError("--check on ONNX needs onnxruntime (pip install onnxruntime)") from None
    try:
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        feeds = {i.name: a for i, a in zip(session.get_inputs(), inputs)}
        return [np.asarray(o) for o in session.run(None, feeds)]
    except Exception as err:
        raise DiagnosticError(f"onnxruntime: {str(err).strip().splitlines()[0]}") from None


def ir_level(module) -> str:
    """"graph", "loop" (tloop.host functions: lower-to-loops output) or "llvm"."""
    from xdsl.dialects import func

    ops = list(module.ops)
    if any(isinstance(op, func.FuncOp) and "tloop.host" in op.attributes for op in ops):
        return "loop"
    if ops and all(op.name.startswith("llvm.") for op in ops):
        return "llvm"
    return "graph"


def _run_pt2(path: str, inputs: list[np.ndarray]) -> list[np.ndarray]:
    import torch

    with torch.no_grad():
        out = torch.export.load(path).module()(*[torch.from_numpy(a) for a in inputs])
    return [o.numpy() for o in (out if isinstance(out, (tuple, list)) else [out])]


def compare(outputs: list[np.ndarray], expected: list[np.ndarray], rtol: float, atol: float) -> bool:
    if len(outputs) != len(expected):
        print(f"check: FAILED: {len(outputs)} outputs, the reference has {len(expected)}")
        return False
    ok = True
    for i, (got, want) in enumerate(zip(outputs, expected)):
        want = np.asarray(want)
        if got.shape != want.shape:
            print(f"check: output {i}: FAILED: shape {got.shape}, reference {want.shape}")
            ok = False
            continue
        g, w = got.astype(np.float64), want.astype(np.float64)
        same = (g == w) | (np.isnan(g) & np.isnan(w))  # equal infinities and nans agree
        with np.errstate(all="ignore"):  # inf - inf
            abs_err = np.where(same, 0.0, np.abs(g - w))
            rel = abs_err / np.maximum(np.abs(w), 1e-30)
        max_abs = float(abs_err.max()) if abs_err.size else 0.0  # nan: a nan against a number
        max_rel = float(rel.max()) if rel.size else 0.0
        if got.dtype.kind == "f":
            good = bool(np.all(same | (abs_err <= atol + rtol * np.abs(w))))
        else:
            good = bool(np.array_equal(g, w))
        print(f"check: output {i}: max abs err {max_abs:.3g}, max rel err {max_rel:.3g}: "
              f"{'ok' if good else 'FAILED'}")
        ok &= good
    return ok


def check_run_args(args) -> None:
    """Option values that parse but mean nothing: one line naming the option."""
    import math

    if args.repeat < 1:
        raise DiagnosticError(f"--repeat needs a number >= 1, got {args.repeat}")
    if args.seed < 0:
        raise DiagnosticError(f"--seed needs a number >= 0, got {args.seed}")
    for flag, value in (("--rtol", args.rtol), ("--atol", args.atol)):
        if not (math.isfinite(value) and value >= 0):
            raise DiagnosticError(f"{flag} needs a finite number >= 0, got {value}")


def check_target_runs_here(text: str) -> None:
    """``dlc run --target T`` needs a T this host runs (a bad T is the compile's error)."""
    from dlc.target import Target, TargetError

    try:
        target = Target.from_string(text)
    except TargetError:
        return
    if target.kind == "llvm" and not target.runs_on_host():
        raise DiagnosticError(f"--target {text}: {_driver().cannot_run_here(target, built=False)}")


def cmd_run(args) -> int:
    from dlc.tools import rpc_cli

    if rpc_cli.wants_remote(args):
        return rpc_cli.cmd_run_remote(args)
    if args.bisect:
        from dlc.tools.numeric_bisect import bisect_command

        return bisect_command(args)
    kind = _kind(args.model)
    check_run_args(args)
    for path in args.output:
        check_writable(path)  # --output DIR, --output /missing/x.npy: fail before the run
    if args.profile and args.target.split(" ", 1)[0] != "llvm":
        raise DiagnosticError(f"--profile needs an llvm target, not '{args.target}'")
    if kind == "so":
        if args.profile:
            raise DiagnosticError("--profile needs the .onnx/.mlir model (a .so is not instrumented)")
        if args.check:
            raise DiagnosticError("--check needs the .mlir or .onnx model (a .so has no reference)")
        if args.byoc:
            raise DiagnosticError("--byoc needs the .mlir or .onnx model (a .so is compiled already)")
        from dlc.runtime import load

        module = _guard(f"loading '{args.model}'", load, args.model, num_threads=args.threads)
        entry = args.entry or module.default_entry
        if entry not in module.entries:
            raise DiagnosticError(f"no entry point named @{entry} in '{args.model}' "
                                  f"(have {', '.join('@' + e for e in module.entries)})")
        point = module.entries[entry]
        call, in_specs, out_specs = point, list(point.inputs), list(point.outputs)
    else:
        check_target_runs_here(args.target)  # before the compile, which would be for nothing
        compiled = compile_model(args.model, args.target, args.entry, args.threads, bool(args.profile),
                                 byoc=args.byoc, verbose=args.verbose, allow_tf32=args.allow_tf32)
        call, in_specs = compiled, list(compiled.input_specs)
        out_specs = list(compiled.output_specs)

    inputs = load_inputs(in_specs, args.input, args.seed)
    expected_stored = [load_expected(path) for path in args.expect]  # bad files fail before the run
    if len(args.output) > len(out_specs) or len(args.expect) > len(out_specs):
        raise DiagnosticError(f"the model has {len(out_specs)} outputs; got "
                              f"{max(len(args.output), len(args.expect))} --output/--expect files")
    outputs = _guard("running", call, *inputs)
    times = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        _guard("running", call, *inputs)
        times.append(time.perf_counter() - start)
    for i, array in enumerate(outputs):
        name = out_specs[i][0] if i < len(out_specs) else f"#{i}"
        print(describe_output(i, name, np.asarray(array)))
    print(f"median run time: {statistics.median(times) * 1e3:.3f} ms over {args.repeat} runs")
    if args.profile:
        profile = _guard("profiling", compiled.profile, *inputs, repeat=args.repeat, entry=args.entry)
        try:
            profile.save(args.profile)
        except OSError as err:
            raise DiagnosticError(f"cannot write '{args.profile}': {err.strerror or err}") from None
        print(profile.table())
        print(f"profile: {args.profile}")
    if args.check:
        expected = reference_outputs(args.model, kind, args.entry, inputs)
        if not compare([np.asarray(o) for o in outputs], expected, args.rtol, args.atol):
            raise DiagnosticError("outputs differ from the reference")
    if expected_stored:
        got = [np.asarray(o) for o in outputs[:len(expected_stored)]]
        if not compare(got, expected_stored, args.rtol, args.atol):
            raise DiagnosticError("outputs differ from the --expect files")
    with OutputSet() as files:  # every --output or none; each at its path as given
        for path, array in zip(args.output, outputs):
            files.add_writer(path, lambda f, a=np.asarray(array): np.lib.format.write_array(f, a, allow_pickle=False))
    return 0


def load_expected(path: str) -> np.ndarray:
    """A stored output: .npy, or a serialized ONNX TensorProto (the onnx test data's .pb)."""
    if not os.path.exists(path):
        raise DiagnosticError(f"cannot open '{path}': no such file")
    if path.endswith(".pb"):
        import onnx
        from onnx import numpy_helper

        try:
            return numpy_helper.to_array(onnx.load_tensor(path))
        except Exception as err:  # protobuf raises several types on garbage
            raise DiagnosticError(f"cannot read '{path}' as an ONNX TensorProto: {err}") from None
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as err:
        raise DiagnosticError(f"cannot read '{path}' as a .npy array: {err}") from None


def check_threads(threads: int | None) -> None:
    """``--threads`` in the runtime's range (``dlc.runtime.check_thread_count``)."""
    from dlc.runtime import DlcRuntimeError, check_thread_count

    if threads is not None:
        try:
            check_thread_count(threads, "--threads")
        except DlcRuntimeError as err:
            raise DiagnosticError(str(err)) from None


def run(argv: list[str]) -> int:
    args = build_arg_parser().parse_args(argv)
    check_threads(getattr(args, "threads", None))  # `dlc view` has no --threads
    if args.command == "compile":
        return cmd_compile(args)
    if args.command == "view":
        from dlc.tools.graph_view import view_command

        return view_command(args)
    if args.command == "rpc":
        from dlc.tools.rpc_cli import rpc_command

        return rpc_command(args)
    if args.command == "build-runtime":
        return cmd_build_runtime(args)
    if args.command == "tune":
        from dlc.tools.tune_cli import tune_command

        return tune_command(args)
    if args.command == "quantize":
        from dlc.tools.quantize_cli import quantize_command

        return quantize_command(args)
    return cmd_run(args)


def cmd_build_runtime(args) -> int:
    from dlc.backends.c_runtime import RuntimeBuildError, build_runtime

    try:
        built = build_runtime(args.output, args.target)
    except RuntimeBuildError as err:
        raise DiagnosticError(str(err)) from None
    print(f"{built.triple}: {built.runner}, {built.static_library}, {built.shared_library}, {built.header}")
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_tool(TOOL, run, argv)


if __name__ == "__main__":
    sys.exit(main())
