"""dlc's fuzz suite: seeded mutations of ONNX models, MLIR text and run-time
arguments, each run through the tools (or the Python API) and judged by one
oracle (``case.judge``): no crash signal or hang, no traceback, no ``internal
error``; a refused input exits non-zero with a one-line located message and
writes nothing.

Run it: ``python test/fuzz`` (summary), ``python test/fuzz --case onnx-17``
(one case, with its full stderr), ``python test/fuzz --family mlir``.
``test/python/test_fuzz.py`` runs the whole suite under pytest. (``test`` is not
importable as a package -- the standard library owns that name -- so the suite
is loaded by path, as ``dlc_fuzz``.)
"""

from __future__ import annotations

from .case import Case
from .runner import Result, run_cases, summary


def all_cases(families: tuple[str, ...] = ("onnx", "mlir", "runtime")) -> list[Case]:
    cases: list[Case] = []
    if "onnx" in families:
        from .onnx_cases import onnx_cases

        cases += onnx_cases()
    if "mlir" in families:
        from .mlir_cases import mlir_cases

        cases += mlir_cases()
    if "runtime" in families:
        from .runtime_cases import runtime_cases

        cases += runtime_cases()
    ids = [c.id for c in cases]
    assert len(ids) == len(set(ids)), "duplicate case ids"
    return cases


__all__ = ["Case", "Result", "all_cases", "run_cases", "summary"]
