"""Registry of every pass `dlc-opt --pipeline=...` knows, by command-line name.

Each entry maps the name to a zero-argument function returning the
``ModulePass`` class (imports stay lazy so `dlc-opt --help` is fast). One pass
per file, the file named like the pass (``fold-constant`` ->
``transforms/fold_constant.py``), except the ``tloop-*`` schedule primitives,
which are rows of one table (``transforms/tloop_schedule.py``).

A registered pass that does not load (its module fails to import, or lacks the
class) is a bug: `load_pass` and `available_passes` raise `PassLoadError`
naming the pass instead of skipping it.

Also here, so every layer can read them: the graph pipelines of the targets.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from xdsl.passes import ModulePass

# graph.if/loop/scan stay control flow (host-level scf, lowering/bufferize.py); the
# passes below reach into their bodies. expand-control-flow (unrolling) is opt-in,
# and the GPU target runs it first (GPU_GRAPH_PASSES).
GRAPH_PASSES = ("legalize",
                "widen-accumulation",  # f16 matmul/conv/reduce accumulate in f32
                "fold-constant",  # fold after legalize: batch_norm parameters fold too
                "simplify-inference",  # then per-channel scales go into conv/matmul weights
                "fuse-ops")  # elementwise epilogues join their producer's kernel
# lower-to-gpu has no host-level control flow: bodies are unrolled first
GPU_GRAPH_PASSES = ("expand-control-flow", *GRAPH_PASSES)


class PassLoadError(Exception):
    """A registered pass cannot be loaded (a bug in dlc, not in the input)."""


def _lazy(module: str, cls: str) -> Callable[[], type[ModulePass]]:
    def load() -> type[ModulePass]:
        return getattr(importlib.import_module(module), cls)

    return load


_SCHEDULE = "dlc.transforms.tloop_schedule"

PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    # graph level
    "fold-constant": _lazy("dlc.transforms.fold_constant", "FoldConstantPass"),
    "legalize": _lazy("dlc.transforms.legalize", "LegalizePass"),
    "shape-infer": _lazy("dlc.transforms.shape_infer", "ShapeInferPass"),
    "expand-control-flow": _lazy("dlc.transforms.expand_control_flow", "ExpandControlFlowPass"),
    "simplify-inference": _lazy("dlc.transforms.simplify_inference", "SimplifyInferencePass"),
    "widen-accumulation": _lazy("dlc.transforms.widen_accumulation", "WidenAccumulationPass"),
    "fuse-ops": _lazy("dlc.transforms.fuse_ops", "FuseOpsPass"),
    "alter-op-layout": _lazy("dlc.transforms.alter_op_layout", "AlterOpLayoutPass"),
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
