"""Registry of every pass `dlc-opt --pipeline=...` knows, by command-line name.

Each entry maps the name to a zero-argument function returning the
``ModulePass`` class (imports stay lazy so `dlc-opt --help` is fast). One pass
per file, the file named like the pass (``fold-constant`` ->
``transforms/fold_constant.py``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from xdsl.passes import ModulePass


def _lazy(module: str, cls: str) -> Callable[[], type[ModulePass]]:
    def load() -> type[ModulePass]:
        return getattr(importlib.import_module(module), cls)

    return load


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
    "lower-to-gpu": _lazy("dlc.lowering.lower_to_gpu", "LowerToGPUPass"),
    # schedule primitives on tloop kernels (dlc.lowering.schedule)
    "tloop-split": _lazy("dlc.transforms.tloop_split", "TLoopSplitPass"),
    "tloop-tile": _lazy("dlc.transforms.tloop_tile", "TLoopTilePass"),
    "tloop-reorder": _lazy("dlc.transforms.tloop_reorder", "TLoopReorderPass"),
    "tloop-fuse": _lazy("dlc.transforms.tloop_fuse", "TLoopFusePass"),
    "tloop-fuse-siblings": _lazy("dlc.transforms.tloop_fuse_siblings", "TLoopFuseSiblingsPass"),
    "tloop-distribute": _lazy("dlc.transforms.tloop_distribute", "TLoopDistributePass"),
    "tloop-split-range": _lazy("dlc.transforms.tloop_split_range", "TLoopSplitRangePass"),
    "tloop-unroll": _lazy("dlc.transforms.tloop_unroll", "TLoopUnrollPass"),
    "tloop-vectorize": _lazy("dlc.transforms.tloop_vectorize", "TLoopVectorizePass"),
    "tloop-parallel": _lazy("dlc.transforms.tloop_parallel", "TLoopParallelPass"),
    "tloop-cache-read": _lazy("dlc.transforms.tloop_cache_read", "TLoopCacheReadPass"),
    "tloop-cache-write": _lazy("dlc.transforms.tloop_cache_write", "TLoopCacheWritePass"),
    "tloop-inline": _lazy("dlc.transforms.tloop_inline", "TLoopInlinePass"),
    "tloop-compute-at": _lazy("dlc.transforms.tloop_compute_at", "TLoopComputeAtPass"),
    "tloop-default-schedule": _lazy("dlc.transforms.tloop_default_schedule", "TLoopDefaultSchedulePass"),
    # xDSL's generic passes
    "canonicalize": _lazy("xdsl.transforms.canonicalize", "CanonicalizePass"),
    "cse": _lazy("xdsl.transforms.common_subexpression_elimination", "CommonSubexpressionElimination"),
    "dce": _lazy("xdsl.transforms.dead_code_elimination", "DeadCodeElimination"),
}


def register(name: str, loader: Callable[[], type[ModulePass]]) -> None:
    PASSES[name] = loader


def available_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Registered passes whose module imports (a pass still being written is skipped)."""
    out = {}
    for name, loader in PASSES.items():
        try:
            loader()
        except (ImportError, AttributeError):
            continue
        out[name] = loader
    return out
