"""Kernel generators of lower-to-loops, one module per op class.

``KERNELS`` maps a graph op name to ``generate(op, name) -> func.FuncOp``; the
modules below register themselves with :func:`kernel` when imported.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import func

from dlc.dialects.graph_base import GraphOp

KernelGenerator = Callable[[GraphOp, str], func.FuncOp]
KERNELS: dict[str, KernelGenerator] = {}


def kernel(*op_names: str):
    """Register the decorated generator for ``op_names``."""

    def register(fn: KernelGenerator) -> KernelGenerator:
        for name in op_names:
            KERNELS[name] = fn
        return fn

    return register


def generator_for(op_name: str) -> KernelGenerator | None:
    _load_all()
    return KERNELS.get(op_name)


def _load_all() -> None:
    from dlc.lowering.kernels import (  # noqa: F401  (registration side effects)
        conv,
        conv_nchwc,
        elementwise,
        indexing,
        matmul,
        movement,
        nchwc_ops,
        pool,
        reduce,
        resize,
        simple,
        softmax,
        spatial,
    )
