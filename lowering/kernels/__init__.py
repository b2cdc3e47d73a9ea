"""Kernel generators of lower-to-loops, one module per op class.

``KERNELS`` maps a graph op name to ``generate(op, name) -> func.FuncOp``; the
modules listed register themselves with :func:`kernel` when imported. Generators
registered with ``options=True`` also take lower-to-loops' ``KernelOptions``
(kernels/forms.py): call every generator through :func:`generate`.
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
        for name in ("attention", "conv", "conv_nchwc", "data_dependent", "det", "elementwise", "indexing", "layer_norm", "matmul", "movement",
                     "nchwc_ops", "pool", "quantized", "quantized_depthwise_nchwc", "quantized_nchwc", "reduce", "resize", "softmax", "spatial")
    ],
)
generator_for = KERNELS.lookup
_TAKES_OPTIONS: set[str] = set()  # ops whose generator is generate(op, name, options)


def kernel(*names: str, options: bool = False) -> Callable[[KernelGenerator], KernelGenerator]:
    """@kernel("graph.add", ...) registers a generator; ``options=True``: it takes the
    lower-to-loops options as a third argument."""
    if options:
        _TAKES_OPTIONS.update(names)
    return KERNELS.register(*names)


def generate(op: GraphOp, name: str, options) -> func.FuncOp:
    """The kernel of `op` named `name`, built with lower-to-loops' ``options``."""
    from dlc.lowering.kernels.forms import KernelOptions

    options = KernelOptions() if options is None else options
    generator = KERNELS[op.name]
    return generator(op, name, options) if op.name in _TAKES_OPTIONS else generator(op, name)
