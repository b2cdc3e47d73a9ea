"""ATen op packet name (``aten.add``) -> converter.

A converter takes the :class:`~.importer.ImportContext` and the node's
arguments bound by schema name (``{"self": value, "other": 2.0, "alpha": 1}``;
FX nodes already replaced by SSA values or tuples of them) and returns an SSA
value or a list (tuple results). Modules ``ops_*`` register with
``@converts("aten.add", ...)``.
"""

from __future__ import annotations

from collections.abc import Callable

CONVERTERS: dict[str, Callable] = {}
_LOADED = False


def converts(*names: str):
    def register(fn: Callable) -> Callable:
        for name in names:
            CONVERTERS[name] = fn
        return fn

    return register


def _load_all() -> None:
    global _LOADED
    if not _LOADED:
        _LOADED = True
        from dlc.frontends.torch import ops_math, ops_nn, ops_shape  # noqa: F401  (registration)


def lookup(name: str) -> Callable | None:
    _load_all()
    return CONVERTERS.get(name)


def supported_ops() -> list[str]:
    _load_all()
    return sorted(CONVERTERS)
