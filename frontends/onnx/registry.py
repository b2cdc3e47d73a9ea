"""ONNX op type -> converter function.

A converter takes the resolved :class:`~.importer.Node` and the
:class:`~.importer.ImportContext` and returns one :class:`~.importer.Tensor`
(or ``None`` for an output it does not produce) per node output. Modules
``ops_*`` register their converters with ``@converts("OpType", ...)``.
"""

from __future__ import annotations

from collections.abc import Callable

from dlc.registry import Registry

CONVERTERS: Registry[Callable] = Registry(
    "ONNX converter",
    modules=[
        f"dlc.frontends.onnx.{name}"
        for name in ("ops_data_dependent", "ops_elementwise", "ops_indexing", "ops_loss", "ops_nn", "ops_quantized",
                     "ops_reduce", "ops_shape", "ops_spatial", "rnn", "control_flow")
    ],
)
converts = CONVERTERS.register
lookup = CONVERTERS.lookup
supported_op_types = CONVERTERS.names
