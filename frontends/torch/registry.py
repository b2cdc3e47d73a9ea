"""ATen op packet name (``aten.add``) -> converter.

A converter takes the :class:`~.importer.ImportContext` and the node's
arguments bound by schema name (``{"self": value, "other": 2.0, "alpha": 1}``;
FX nodes already replaced by SSA values or tuples of them) and returns an SSA
value or a list (tuple results). Modules ``ops_*`` register with
``@converts("aten.add", ...)``.
"""

from __future__ import annotations

from collections.abc import Callable

from dlc.registry import Registry

CONVERTERS: Registry[Callable] = Registry(
    "torch converter",
    modules=[f"dlc.frontends.torch.{name}" for name in ("ops_math", "ops_nn", "ops_shape")],
)
converts = CONVERTERS.register
lookup = CONVERTERS.lookup
supported_ops = CONVERTERS.names
