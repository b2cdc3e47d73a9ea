"""Kernel generators of lower-to-loops, one module per op class.

``KERNELS`` maps a graph op name to ``generate(op, name) -> func.FuncOp``; the
modules listed register themselves with :func:`kernel` when imported.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import func

from dlc.dialects.graph_base import GraphOp
from dlc.registry import Registry

KernelGenerator = Callable[[GraphOp, str], func.FuncOp]
KERNELS: Registry[KernelGenerator] = Registry(
    "kernel generator",
    modules=[
        f"dlc.lowering.kernels.{name}"
        for name in ("conv", "conv_nchwc", "det", "elementwise", "indexing", "matmul", "movement",
                     "nchwc_ops", "pool", "reduce", "resize", "softmax", "spatial")
    ],
)
kernel = KERNELS.register  # @kernel("graph.add", ...) registers a generator
generator_for = KERNELS.lookup
