"""dlc-translate: translate between dlc IR and other formats.

    dlc-translate --to-llvm model.mlir -o model.ll      # LLVM IR text
    dlc-translate --to-cuda model.mlir|model.onnx -o m.cu  # one .cu (+ m.cu.weights.npz)
    dlc-translate --to-ptx  model.mlir --arch sm_90     # PTX
    dlc-translate --to-c    model.mlir|model.onnx       # portable C99 (the archive's src/model.c)
    dlc-translate --from-onnx model.onnx -o model.mlir  # graph IR, weights inline (dense_resource)
    dlc-translate --from-onnx model.onnx -o model.mlir --external-weights  # + model.mlir.weights.npz
    dlc-translate --from-te kernel.te                   # loop IR of a tensor expression

Translations live in :data:`TRANSLATIONS`, by flag name, each naming the
function that does the work by module path; the module is imported only when
its flag is used, so a backend that is missing or broken makes only its own
flag fail, with a clear message. A backend adds itself with
:func:`register_translation` (or an entry here, like ``dlc/passes.py``).
Why our own tool rather than xDSL's ``xdsl-opt -t``: its targets don't cover
ours and its errors print tracebacks.
"""

from __future__ import annotations

import importlib
import io
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import DiagnosticException

from dlc.diagnostics import (
    DiagnosticError,
    OpError,
    error_at_op,
    parse_module,
    read_text,
    run_tool,
    verify_module,
)
from dlc.output_files import OutputSet, check_writable
from dlc.tools.dlc_opt import (
    ArgumentParser,
    add_weights_arguments,
    check_weights_arguments,
    load_weights,
    save_weights,
)
from dlc.tools.printing import print_module

TOOL = "dlc-translate"


@dataclass(frozen=True)
class Translation:
    """``module:function`` doing one translation.

    ``direction`` "export": ``function(module, **options) -> str`` on a parsed,
    verified ModuleOp. "import": ``function(path) -> ModuleOp`` on an input
    file; the module is printed as MLIR (its weights saved next to ``-o``).
    """

    module: str
    function: str
    direction: str
    description: str
    # Exception classes (names in ``module``) that mean bad input, not a bug;
    # xDSL's DiagnosticException always does.
    user_errors: tuple[str, ...] = ()

    def load(self) -> Callable:
        try:
            mod = importlib.import_module(self.module)
        except ImportError as err:
            raise DiagnosticError(
                f"this translation is not available: cannot import {self.module} ({err})"
            ) from None
        fn = getattr(mod, self.function, None)
        if fn is None:
            raise DiagnosticError(
                f"this translation is not available: {self.module} has no {self.function}()"
            )
        return fn

    def user_error_classes(self) -> tuple[type[BaseException], ...]:
        mod = importlib.import_module(self.module)
        return (DiagnosticException, *(getattr(mod, name) for name in self.user_errors))


TRANSLATIONS: dict[str, Translation] = {
    "to-llvm": Translation("dlc.driver", "translate_to_llvm_ir", "export", "LLVM IR text (lowers graph IR as needed)"),
    "to-cuda": Translation("dlc.backends.cuda", "emit_cuda", "export", "one self-contained CUDA C++ .cu file",
                           ("CudaEmitError", "GpuLoweringError")),
    "to-c": Translation("dlc.backends.c", "emit_c_source", "export",
                        "portable C99 (src/model.c of `dlc compile --target c`; weights in src/weights.c)",
                        ("CBuildError",)),
    "to-ptx": Translation("dlc.backends.cuda", "emit_ptx", "export", "PTX assembly (--arch, default sm_90)",
                          ("PtxEmitError", "GpuLoweringError")),
    "from-onnx": Translation("dlc.frontends.onnx", "import_model", "import", "an ONNX model -> graph-dialect IR",
                             ("OnnxImportError",)),
    "from-tflite": Translation("dlc.frontends.tflite", "import_tflite", "import",
                               "a TFLite flatbuffer (.tflite) -> graph-dialect IR", ("TfliteImportError",)),
    "from-torch": Translation("dlc.frontends.torch", "load_exported_program", "import",
                              "a torch.export.save'd program (.pt2) -> graph-dialect IR", ("TorchImportError",)),
    "from-te": Translation("dlc.frontends.te", "import_te", "import", "a tensor-expression (.te) file -> loop IR",
                           ("TEError",)),
}


def register_translation(name: str, translation: Translation) -> None:
    TRANSLATIONS[name] = translation


def build_arg_parser() -> ArgumentParser:
    ap = ArgumentParser(prog=TOOL, description="Translate dlc IR to and from other formats.")
    ap.add_argument("input", nargs="?", default="-", help="input file ('-' or none: stdin)")
    group = ap.add_mutually_exclusive_group()
    for name, translation in TRANSLATIONS.items():
        group.add_argument(f"--{name}", dest="translation", action="store_const", const=name,
                           help=translation.description)
    ap.add_argument("-o", "--output", help="output file (default: stdout); written only on success")
    ap.add_argument("--arch", default="sm_90", help="GPU architecture for --to-ptx (default sm_90)")
    ap.add_argument("--elide-constants", type=int, metavar="N",
                    help="print dense constants of more than N elements as dense_resource<__elided__>")
    ap.add_argument("--generic", action="store_true", help="print imported IR in generic form")
    add_weights_arguments(ap)
    return ap


def _call(translation: Translation, fn: Callable, name: str, *args, **kwargs):
    """Run a translation; its diagnostics become ours, naming the translation."""
    try:
        return fn(*args, **kwargs)
    except DiagnosticError:
        raise
    except OpError as err:
        raise error_at_op(err.op, f"--{name}: {err.message}") from None
    except Exception as err:
        if isinstance(err, translation.user_error_classes()):
            raise DiagnosticError(f"--{name}: {_first_line(err)}") from None
        raise RuntimeError(f"in --{name}: {type(err).__name__}: {err}") from err


def _first_line(err: BaseException) -> str:
    return (str(err).strip().split("\n") or [""])[0]


def run(argv: list[str]) -> int:
    args = build_arg_parser().parse_args(argv)
    if args.translation is None:
        raise DiagnosticError("choose a translation: " + ", ".join(f"--{n}" for n in TRANSLATIONS))
    name = args.translation
    check_weights_arguments(args)
    translation = TRANSLATIONS[name]
    fn = translation.load()
    if args.output:
        check_writable(args.output)  # -o DIR, -o /missing/x: fail before the work
    files = OutputSet()
    try:
        return _translate(args, name, translation, fn, files)
    finally:
        files.discard()  # an error: no temporary file stays, nothing is published


def _translate(args, name: str, translation: Translation, fn: Callable, files: OutputSet) -> int:
    if translation.direction == "import":
        if args.input == "-":
            raise DiagnosticError(f"--{name} needs an input file")
        if not os.path.exists(args.input):
            raise DiagnosticError(f"cannot open '{args.input}': no such file")
        module = _call(translation, fn, name, args.input)
        if not isinstance(module, ModuleOp):
            raise RuntimeError(f"--{name} returned {type(module).__name__}, not a ModuleOp")
        verify_module(module, f"after --{name}")
        if args.external_weights:
            save_weights(module, args.output, files)
        out = io.StringIO()
        print_module(module, out, generic=args.generic, elide_constants=args.elide_constants,
                     inline_weights=not args.external_weights, elide_resource_chars=args.elide_resources)
        result = out.getvalue()
    else:
        from dlc.context import make_context

        if args.input.endswith(".onnx"):  # export straight from an ONNX model
            importer = TRANSLATIONS["from-onnx"]
            if not os.path.exists(args.input):
                raise DiagnosticError(f"cannot open '{args.input}': no such file")
            module = _call(importer, importer.load(), "from-onnx", args.input)
        else:
            text, source = read_text(args.input)
            module = parse_module(make_context(), text, source)
            load_weights(module, None if source == "<stdin>" else args.input, source)
        verify_module(module)
        options = {"arch": args.arch} if name == "to-ptx" else {}
        result = _call(translation, fn, name, module, **options)
        if not isinstance(result, str):
            raise RuntimeError(f"--{name} returned {type(result).__name__}, not text")
        if not result.endswith("\n"):
            result += "\n"

    if args.output:
        files.add(args.output, result)
        if name == "to-cuda":  # the host entry takes the weights: keep them beside the .cu
            save_weights(module, args.output, files)
    else:
        sys.stdout.write(result)
    files.commit()  # the output and its weights sidecar: all or none
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_tool(TOOL, run, argv)


if __name__ == "__main__":
    sys.exit(main())
