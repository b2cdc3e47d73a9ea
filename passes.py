"""Registry of every pass `dlc-opt --pipeline=...` knows, by command-line name.

Each entry maps the name to a zero-argument function returning the
``ModulePass`` class (imports stay lazy so `dlc-opt --help` is fast). One pass
per file, the file named like the pass (``fold-constant`` ->
``transforms/fold_constant.py``), except the ``tloop-*`` schedule primitives,
which are rows of one table (``transforms/tloop_schedule.py``).

A registered pass that does not load (its module fails to import, or lacks the
class) is a bug: `load_pass` and `available_passes` raise `PassLoadError`
naming the pass instead of skipping it.

`make_pass(spec)` builds a pass from one element of a parsed pipeline; a bad
option (unknown, or a value of the wrong type) raises `PassOptionError` naming
the pass, the option and the type it takes, for every pass alike.

Also here, so every layer can read them: the graph pipelines of the targets.
"""

from __future__ import annotations

import dataclasses
import importlib
import types
import typing
from collections.abc import Callable

from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import ArgSpec

# graph.if/loop/scan stay control flow (host-level scf, lowering/bufferize.py); the
# passes below reach into their bodies. expand-control-flow (unrolling) is opt-in on
# every target (the CUDA host code branches and loops too, backends/cuda/host_code.py).
GRAPH_PASSES = ("legalize",
                "widen-accumulation",  # f16 matmul/conv/reduce accumulate in f32
                "fold-constant",  # fold after legalize: batch_norm parameters fold too
                "simplify-inference",  # then per-channel scales go into conv/matmul weights
                "fuse-ops")  # elementwise epilogues join their producer's kernel
# lower-to-gpu keeps host-level control flow (host branches and loops launch kernels)
GPU_GRAPH_PASSES = GRAPH_PASSES


class PassLoadError(Exception):
    """A registered pass cannot be loaded (a bug in dlc, not in the input)."""


class PassOptionError(ValueError):
    """A pipeline gives a pass an option it lacks or a value it cannot take."""


def _lazy(module: str, cls: str) -> Callable[[], type[ModulePass]]:
    def load() -> type[ModulePass]:
        return getattr(importlib.import_module(module), cls)

    return load


_SCHEDULE = "dlc.transforms.tloop_schedule"

PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    # graph level
    "fold-constant": _lazy("dlc.transforms.fold_constant", "FoldConstantPass"),
    "fold-qdq": _lazy("dlc.transforms.fold_qdq", "FoldQdqPass"),
    "legalize": _lazy("dlc.transforms.legalize", "LegalizePass"),
    "shape-infer": _lazy("dlc.transforms.shape_infer", "ShapeInferPass"),
    "expand-control-flow": _lazy("dlc.transforms.expand_control_flow", "ExpandControlFlowPass"),
    "simplify-inference": _lazy("dlc.transforms.simplify_inference", "SimplifyInferencePass"),
    "widen-accumulation": _lazy("dlc.transforms.widen_accumulation", "WidenAccumulationPass"),
    "fuse-ops": _lazy("dlc.transforms.fuse_ops", "FuseOpsPass"),
    "fuse-attention": _lazy("dlc.transforms.fuse_attention", "FuseAttention"),
    "alter-op-layout": _lazy("dlc.transforms.alter_op_layout", "AlterOpLayoutPass"),
    "pack-matmul-weights": _lazy("dlc.transforms.pack_matmul_weights", "PackMatmulWeightsPass"),
    # bring your own codegen (dlc.byoc): composites, targets, regions, partitions
    "merge-composite": _lazy("dlc.transforms.merge_composite", "MergeCompositePass"),
    "annotate-target": _lazy("dlc.transforms.annotate_target", "AnnotateTargetPass"),
    "merge-compiler-regions": _lazy("dlc.transforms.merge_compiler_regions", "MergeCompilerRegionsPass"),
    "partition-graph": _lazy("dlc.transforms.partition_graph", "PartitionGraphPass"),
    # graph -> tensor loops -> llvm
    "lower-to-loops": _lazy("dlc.lowering.lower_to_loops", "LowerToLoopsPass"),
    "lower-to-llvm": _lazy("dlc.lowering.lower_to_llvm", "LowerToLLVMPass"),
    "expand-math": _lazy("dlc.transforms.expand_math", "ExpandMathPass"),
    "plan-workspace": _lazy("dlc.lowering.plan_workspace", "PlanWorkspacePass"),
    "lower-to-gpu": _lazy("dlc.backends.cuda.lower_to_gpu", "LowerToGPUPass"),  # CUDA's own lowering
    # schedule primitives on tloop kernels (dlc.lowering.schedule), one table
    "tloop-split": _lazy(_SCHEDULE, "TLoopSplitPass"),
    "tloop-tile": _lazy(_SCHEDULE, "TLoopTilePass"),
    "tloop-reorder": _lazy(_SCHEDULE, "TLoopReorderPass"),
    "tloop-fuse": _lazy(_SCHEDULE, "TLoopFusePass"),
    "tloop-fuse-siblings": _lazy(_SCHEDULE, "TLoopFuseSiblingsPass"),
    "tloop-distribute": _lazy(_SCHEDULE, "TLoopDistributePass"),
    "tloop-split-range": _lazy(_SCHEDULE, "TLoopSplitRangePass"),
    "tloop-unroll": _lazy(_SCHEDULE, "TLoopUnrollPass"),
    "tloop-vectorize": _lazy(_SCHEDULE, "TLoopVectorizePass"),
    "tloop-parallel": _lazy(_SCHEDULE, "TLoopParallelPass"),
    "tloop-cache-read": _lazy(_SCHEDULE, "TLoopCacheReadPass"),
    "tloop-cache-write": _lazy(_SCHEDULE, "TLoopCacheWritePass"),
    "tloop-inline": _lazy(_SCHEDULE, "TLoopInlinePass"),
    "tloop-compute-at": _lazy(_SCHEDULE, "TLoopComputeAtPass"),
    "tloop-default-schedule": _lazy("dlc.transforms.tloop_default_schedule", "TLoopDefaultSchedulePass"),
    # xDSL's generic passes
    "canonicalize": _lazy("xdsl.transforms.canonicalize", "CanonicalizePass"),
    "cse": _lazy("xdsl.transforms.common_subexpression_elimination", "CommonSubexpressionElimination"),
    "dce": _lazy("xdsl.transforms.dead_code_elimination", "DeadCodeElimination"),
}


def register(name: str, loader: Callable[[], type[ModulePass]]) -> None:
    PASSES[name] = loader


def load_pass(name: str) -> type[ModulePass]:
    """The pass class registered as ``name``; PassLoadError if it is unknown or does not load."""
    if name not in PASSES:
        raise PassLoadError(f"pass '{name}' is not registered")
    try:
        return PASSES[name]()
    except Exception as err:  # ImportError, AttributeError, a SyntaxError in the pass...
        raise PassLoadError(f"pass '{name}' is registered but cannot be loaded: {type(err).__name__}: {err}") from err


def available_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Every registered pass, each checked to load (PassLoadError names the first that does not)."""
    for name in PASSES:
        load_pass(name)
    return dict(PASSES)


# ---------------------------------------------------------------------------
# passes from pipeline specs, their options checked
# ---------------------------------------------------------------------------


def pass_options(cls: type[ModulePass]) -> dict[str, object]:
    """The options of pass class ``cls``: field name -> declared type."""
    hints = typing.get_type_hints(cls)
    return {f.name: hints.get(f.name, f.type) for f in dataclasses.fields(cls)
            if f.init and f.name != "name"}


def make_pass(spec: ArgSpec) -> ModulePass:
    """The pass ``spec`` names (one element of ``parse_pipeline``), options checked.

    PassLoadError: the pass is unknown or does not load. PassOptionError: an
    option the pass lacks, or a value that does not convert to the option's type,
    e.g. "option 'size-limit' of pass 'fold-constant' takes an integer, got 'abc'"."""
    # xDSL's own conversion, option by option, so that a failure names the option
    # (from_pass_spec's message names neither the option nor the pass).
    from xdsl.utils.arg_spec import _convert_arg_to_type

    cls = load_pass(spec.name)
    options = pass_options(cls)
    for option, value in spec.normalize_parameter_names().parameters.items():
        if option not in options:
            takes = ", ".join(k.replace("_", "-") for k in options)
            takes = f"its options: {takes}" if takes else "it takes no options"
            raise PassOptionError(f"pass '{spec.name}' has no option '{option.replace('_', '-')}' ({takes})")
        try:
            _convert_arg_to_type(value, options[option])
        except (ValueError, TypeError):
            raise PassOptionError(
                f"invalid options for pass '{spec.name}': option '{option.replace('_', '-')}' takes "
                f"{describe_option_type(options[option])}, got {_show_value(value)}") from None
    try:
        return cls.from_pass_spec(spec)
    except (ValueError, TypeError) as err:  # a missing option, or the pass's own check of a value
        raise PassOptionError(f"invalid options for pass '{spec.name}': {err}") from None


_TYPE_WORDS = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}
_PLURAL_WORDS = {int: "integers", float: "numbers", bool: "booleans", str: "strings"}


def describe_option_type(tp) -> str:
    """``int`` -> "an integer", ``tuple[int, ...]`` -> "a comma-separated list of integers"..."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        words = [describe_option_type(a) for a in args if a is not type(None)]
        return " or ".join(words) + (" (or nothing)" if type(None) in args else "")
    if origin is tuple:
        element = args[0] if args else str
        return f"a comma-separated list of {_PLURAL_WORDS.get(element, getattr(element, '__name__', str(element)))}"
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    return _TYPE_WORDS.get(tp, getattr(tp, "__name__", str(tp)))


def _show_value(value: tuple) -> str:
    if not value:
        return "no value"
    shown = [str(v).lower() if isinstance(v, bool) else repr(v) if isinstance(v, str) else str(v)
             for v in value]
    return ",".join(shown)
