"""ONNX op type -> converter function.

A converter takes the resolved :class:`~.importer.Node` and the
:class:`~.importer.ImportContext` and returns one :class:`~.importer.Tensor`
(or ``None`` for an output it does not produce) per node output. Modules
``ops_*`` register their converters with ``@converts("OpType", ...)``.
"""

from __future__ import annotations

from collections.abc import Callable

CONVERTERS: dict[str, Callable] = {}
_LOADED = False


def converts(*op_types: str):
    def register(fn: Callable) -> Callable:
        for op_type in op_types:
            CONVERTERS[op_type] = fn
        return fn

    return register


def _load_all() -> None:
    global _LOADED
    if not _LOADED:
        _LOADED = True
        from dlc.frontends.onnx import (  # noqa: F401  (registration side effects)
            ops_elementwise,
            ops_indexing,
            ops_loss,
            ops_nn,
            ops_reduce,
            ops_shape,
            ops_spatial,
            ops_simple,
            rnn,
            control_flow,
        )


def lookup(op_type: str) -> Callable | None:
    _load_all()
    return CONVERTERS.get(op_type)


def supported_op_types() -> list[str]:
    _load_all()
    return sorted(CONVERTERS)
