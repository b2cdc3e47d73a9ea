"""dlc-opt: parse IR, run a pass pipeline, print IR (dlc's mlir-opt).

    dlc-opt model.mlir --pipeline='fold-constant{size-limit=1024},legalize,cse' -o out.mlir

Built on xDSL's Parser/Printer, ModulePass and pipeline syntax
(``xdsl.utils.arg_spec.parse_pipeline``); not on ``xDSLOptMain``, whose error
reporting prints Python tracebacks (see diagnostics.py). Passes come from
``dlc.passes.available_passes()``. Run ``dlc-opt --help`` for the flags.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import os
import re
import sys
import time
from dataclasses import dataclass, field

from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import parse_pipeline
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException

from dlc.diagnostics import (
    DiagnosticError,
    OpError,
    error_at_op,
    parse_module,
    pipeline_error,
    read_text,
    register_source,
    run_tool,
    verify_module,
)
import dlc.frontends.te  # noqa: F401  (graph.custom's "te" language and kernel: dlc-cli/translate import this module too)
from dlc.output_files import OutputSet, check_writable, is_file_output
from dlc.tools.printing import print_module

TOOL = "dlc-opt"
SPLIT_MARKER = re.compile(r"^\s*// -----\s*$")


class ArgumentParser(argparse.ArgumentParser):
    """argparse whose usage errors are ordinary diagnostics (exit 1)."""

    def error(self, message: str):  # type: ignore[override]
        raise DiagnosticError(f"{message} (see {self.prog} --help)")


def build_arg_parser() -> ArgumentParser:
    ap = ArgumentParser(prog=TOOL, description="Run dlc passes on MLIR text.")
    ap.add_argument("input", nargs="?", default="-", help="input .mlir file ('-' or none: stdin)")
    ap.add_argument("-p", "--pipeline", default="", help="passes to run, e.g. 'fold-constant{size-limit=1024},cse'")
    ap.add_argument("-o", "--output", help="output file (default: stdout); written only on success")
    ap.add_argument("--print-ir-after-all", action="store_true", help="print the IR after each pass to stderr")
    ap.add_argument("--pass-timing", action="store_true", help="print the wall time of each pass to stderr")
    ap.add_argument("--generic", action="store_true", help="print ops in generic form")
    ap.add_argument("--split-input-file", action="store_true", help="process each '// -----' chunk on its own")
    ap.add_argument("--verify-diagnostics", action="store_true", help="check '// expected-error {{...}}' annotations")
    ap.add_argument("--elide-constants", type=int, metavar="N", help="print dense constants of more than N elements as dense_resource<__elided__>")
    add_weights_arguments(ap)
    ap.add_argument("--list-passes", action="store_true", help="list the registered passes and exit")
    return ap


# ---------------------------------------------------------------------------
# passes
# ---------------------------------------------------------------------------


def pass_description(cls: type) -> str:
    doc = (cls.__doc__ or "").strip()
    if not doc or doc.startswith(cls.__name__ + "("):  # dataclass's generated doc
        # fall back on the pass module's docstring (some xDSL passes have only that)
        doc = (getattr(sys.modules.get(cls.__module__), "__doc__", None) or "").strip()
    if not doc:  # name it by its class: "CommonSubexpressionElimination" -> words
        words = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", cls.__name__.removesuffix("Pass"))
        return f"{words[:1].upper()}{words[1:].lower()} (xDSL's {cls.__name__})"
    return doc.split("\n")[0].strip()


def list_passes(out) -> None:
    from dlc.passes import PassLoadError, available_passes

    try:
        passes = available_passes()
    except PassLoadError as err:  # a registered pass that does not load is a bug: say which
        raise DiagnosticError(str(err)) from None
    width = max((len(n) for n in passes), default=0)
    for name in sorted(passes):
        out.write(f"  {name:<{width}}  {pass_description(passes[name]())}\n")


def build_pipeline(spec: str) -> list[tuple[str, ModulePass]]:
    """The (name, pass) list of a pipeline string; errors name the bad part."""
    from dlc.passes import PASSES, PassLoadError, PassOptionError, make_pass

    try:
        specs = list(parse_pipeline(spec))
    except ArgSpecParseError as err:
        raise pipeline_error(err, spec) from None
    pipeline = []
    for pass_spec in specs:
        if pass_spec.name not in PASSES:
            raise DiagnosticError(
                f"unknown pass '{pass_spec.name}' (not registered; see {TOOL} --list-passes)"
            )
        try:
            pipeline.append((pass_spec.name, make_pass(pass_spec)))
        except (PassLoadError, PassOptionError) as err:  # a broken pass (a bug) or a bad option
            raise DiagnosticError(str(err)) from None
    return pipeline


def apply_pass(name: str, pass_: ModulePass, ctx, module: ModuleOp, source: str) -> None:
    try:
        pass_.apply(ctx, module)
    except DiagnosticError:
        raise
    except OpError as err:
        raise error_at_op(err.op, f"pass '{name}' failed: {err.message}") from None
    except DiagnosticException as err:
        first = (str(err).strip().split("\n") or [""])[0]
        raise DiagnosticError(f"pass '{name}' failed: {first}", source) from None
    except RecursionError:  # nesting check_nesting did not count (a backstop)
        raise DiagnosticError(f"pass '{name}' failed: nesting too deep (more than the "
                              f"{sys.getrecursionlimit()}-frame recursion limit allows)", source) from None
    except Exception as err:  # a bug in the pass: internal error, name the pass
        raise RuntimeError(f"in pass '{name}': {type(err).__name__}: {err}") from err
    verify_module(module, f"after pass '{name}'")


# ---------------------------------------------------------------------------
# one chunk of input
# ---------------------------------------------------------------------------


@dataclass
class Options:
    pipeline: list[tuple[str, ModulePass]]
    generic: bool = False
    elide: int | None = None
    elide_resources: int | None = None
    print_after_all: bool = False
    timings: dict[str, float] = field(default_factory=dict)


def _timed(timings: dict[str, float], key: str, start: float) -> None:
    timings[key] = timings.get(key, 0.0) + time.perf_counter() - start


def add_weights_arguments(ap: argparse.ArgumentParser) -> None:
    """The options of where printed IR puts the weights (dlc-opt, dlc-translate)."""
    ap.add_argument("--external-weights", action="store_true",
                    help="with -o OUT: save the weights as OUT.weights.npz and name it in the IR "
                         "(default: inline, as dense_resource blobs in the text)")
    ap.add_argument("--mlir-elide-resource-strings-if-larger", type=int, metavar="N", dest="elide_resources",
                    help="print weights whose blob has more than N characters as dense_resource<__elided__>")


def check_weights_arguments(args) -> None:
    if args.external_weights and not args.output:
        raise DiagnosticError("--external-weights needs -o (the .npz is written beside the output)")
    if args.elide_resources is not None and args.elide_resources < 0:
        raise DiagnosticError("--mlir-elide-resource-strings-if-larger needs a number >= 0")


def load_weights(module: ModuleOp, input_path: str | None, source: str) -> None:
    from dlc.weights import WEIGHTS_ATTR, WeightResourceError, load_for_module

    if WEIGHTS_ATTR not in module.attributes:
        return
    try:
        load_for_module(module, input_path)
    except WeightResourceError as err:  # inline weights: the message names the weight
        raise DiagnosticError(str(err), source) from None
    except (OSError, ValueError) as err:
        attr = module.attributes[WEIGHTS_ATTR]
        name = attr.data if isinstance(attr, StringAttr) else str(attr)
        raise DiagnosticError(f"cannot load weights '{name}': {getattr(err, 'strerror', None) or err}", source) from None


def save_weights(module: ModuleOp, output_path: str, outputs: OutputSet | None = None) -> None:
    """Save the module's weights next to ``output_path`` (``PATH.weights.npz``)
    and name them in it; staged in ``outputs`` (published with the IR, all or
    none), else written now. An output that is no regular file (a FIFO,
    /dev/stdout) gets no sidecar, as stdout gets none."""
    from dlc.weights import WEIGHTS_ATTR, store_of

    store = store_of(module, create=False)
    if store is None or len(store) == 0 or not is_file_output(output_path):
        return
    npz = output_path + ".weights.npz"
    if outputs is None:
        with OutputSet() as now:
            now.add_writer(npz, store.write)
    else:
        outputs.add_writer(npz, store.write)
    module.attributes[WEIGHTS_ATTR] = StringAttr(os.path.basename(npz))


def process_chunk(ctx, text: str, source: str, input_path: str | None, opts: Options) -> ModuleOp:
    """Parse, verify and run the pipeline on one chunk."""
    start = time.perf_counter()
    module = parse_module(ctx, text, source)
    _timed(opts.timings, "parse", start)
    load_weights(module, input_path, source)
    start = time.perf_counter()
    if not (opts.pipeline and opts.pipeline[0][0] == "shape-infer"):
        verify_module(module)  # (shape-infer repairs result types: it verifies after)
    _timed(opts.timings, "verify", start)
    for name, pass_ in opts.pipeline:
        start = time.perf_counter()
        apply_pass(name, pass_, ctx, module, source)
        _timed(opts.timings, name, start)
        if opts.print_after_all:
            sys.stderr.write(f"// -----// IR Dump After {name} //----- //\n")
            print_module(module, sys.stderr, generic=opts.generic, elide_constants=opts.elide,
                         elide_resource_chars=opts.elide_resources)
    return module


def split_chunks(text: str) -> list[str]:
    """Chunks at '// -----' lines, each padded with blank lines so that its
    line numbers are those of the original file."""
    chunks, current, first_line = [], [], 0
    for number, line in enumerate(text.split("\n")):
        if SPLIT_MARKER.match(line):
            chunks.append("\n" * first_line + "\n".join(current))
            current, first_line = [], number + 1
        else:
            current.append(line)
    chunks.append("\n" * first_line + "\n".join(current))
    return chunks


# ---------------------------------------------------------------------------
# --verify-diagnostics
# ---------------------------------------------------------------------------

EXPECTATION = re.compile(
    r"//\s*expected-(error|warning|note|remark)\s*(?:@([+-]\d+|above|below|unknown))?\s*\{\{(.*?)\}\}"
)


@dataclass
class Expectation:
    kind: str
    line: int | None  # the line it expects a diagnostic on; None: @unknown (no location)
    annotation_line: int
    annotation_col: int
    text: str
    seen: bool = False


def expectations(chunk: str) -> list[Expectation]:
    found = []
    for number, line in enumerate(chunk.split("\n"), start=1):
        for match in EXPECTATION.finditer(line):
            kind, where, message = match.groups()
            target: int | None = number
            if where == "unknown":
                target = None
            elif where == "above":
                target = number - 1
            elif where == "below":
                target = number + 1
            elif where:
                target = number + int(where)
            found.append(Expectation(kind, target, number, match.start() + 1, message))
    return found


def check_diagnostics(chunk: str, source: str, error: DiagnosticError | None) -> list[str]:
    """Mismatches between ``chunk``'s annotations and the ``error`` produced."""
    expected = expectations(chunk)
    problems = []
    if error is not None:
        at_line = error.line if error.file == source else None
        match = next(
            (e for e in expected if e.kind == "error" and e.line == at_line and e.text in error.message),
            None,
        )
        if match is None:
            unexpected = dataclasses.replace(error, message=f"unexpected error: {error.message}")
            problems.append(unexpected.format(TOOL))
        else:
            match.seen = True
    for e in expected:
        if not e.seen:
            problems.append(DiagnosticError(
                f'expected {e.kind} "{e.text}" was not produced', source,
                e.annotation_line, e.annotation_col, caret_len=len("// expected-" + e.kind),
            ).format(TOOL))
    return problems


# ---------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------


def print_timings(timings: dict[str, float], out, cpu: dict[str, float] | None = None) -> None:
    """MLIR's ``-mlir-timing`` report: each stage's wall time (and, given ``cpu``, its
    user+system CPU time first, as MLIR's "User Time" column) and share of the total."""
    total = sum(timings.values()) or 1e-12
    rule = "===" + "-" * 73 + "==="
    out.write(f"{rule}\n{'... Execution time report ...':^79}\n{rule}\n")
    out.write(f"  Total Execution Time: {total:.4f} seconds\n\n")
    if cpu is None:
        out.write("  ----Wall Time----  ----Name----\n")
        for name, seconds in timings.items():
            out.write(f"  {seconds:10.4f} ({100 * seconds / total:5.1f}%)  {name}\n")
        out.write(f"  {total:10.4f} (100.0%)  Total\n")
        return
    cpu_total = sum(cpu.get(name, 0.0) for name in timings) or 1e-12
    out.write("  ----User+Sys Time----  ----Wall Time----  ----Name----\n")
    for name, seconds in timings.items():
        used = cpu.get(name, 0.0)
        out.write(f"  {used:10.4f} ({100 * used / cpu_total:5.1f}%)  "
                  f"{seconds:10.4f} ({100 * seconds / total:5.1f}%)  {name}\n")
    out.write(f"  {cpu_total:10.4f} (100.0%)  {total:10.4f} (100.0%)  Total\n")


def run(argv: list[str]) -> int:
    args = build_arg_parser().parse_args(argv)
    if args.list_passes:
        list_passes(sys.stdout)
        return 0
    if args.elide_constants is not None and args.elide_constants < 0:
        raise DiagnosticError("--elide-constants needs a number >= 0")
    check_weights_arguments(args)
    opts = Options(
        pipeline=build_pipeline(args.pipeline), generic=args.generic,
        elide=args.elide_constants, elide_resources=args.elide_resources,
        print_after_all=args.print_ir_after_all,
    )
    text, source = read_text(args.input)
    register_source(source, text)
    if args.output:
        check_writable(args.output)  # -o DIR, -o /missing/x: fail before the passes
    input_path = None if source == "<stdin>" else args.input
    chunks = split_chunks(text) if args.split_input_file else [text]

    from dlc.context import make_context

    ctx = make_context()
    modules: list[ModuleOp] = []
    failed = False
    for chunk in chunks:
        error = None
        try:
            modules.append(process_chunk(ctx, chunk, source, input_path, opts))
        except DiagnosticError as err:
            error = err
        if args.verify_diagnostics:
            for problem in check_diagnostics(chunk, source, error):
                print(problem, file=sys.stderr)
                failed = True
        elif error is not None:
            print(error.format(TOOL), file=sys.stderr)
            failed = True

    if failed:
        if args.pass_timing:
            print_timings(opts.timings, sys.stderr)
        return 1
    start = time.perf_counter()
    outputs = []
    with OutputSet() as files:  # -o and its weights sidecars: all or none
        for index, module in enumerate(modules):
            if args.external_weights:
                save_weights(module, args.output if len(modules) == 1 else f"{args.output}.{index}", files)
            out = io.StringIO()
            print_module(module, out, generic=opts.generic, elide_constants=opts.elide, ctx=ctx,
                         inline_weights=not args.external_weights, elide_resource_chars=opts.elide_resources)
            outputs.append(out.getvalue())
        result = "// -----\n".join(outputs)
        if args.output:
            files.add(args.output, result)
        else:
            sys.stdout.write(result)
    _timed(opts.timings, "output", start)
    if args.pass_timing:
        print_timings(opts.timings, sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_tool(TOOL, run, argv)


if __name__ == "__main__":
    sys.exit(main())
