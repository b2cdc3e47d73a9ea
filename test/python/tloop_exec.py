"""Run one kernel or host function of loop IR on numpy arrays, for tests.

A thin wrapper over the package's loop-IR executor (``dlc.lowering.interp``,
whose scalar semantics are ``dlc.lowering.scalar_semantics``): it calls any
function by name on copies of the arrays, where ``LoopProgram.run`` calls a
host function on its inputs and allocates the outputs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from dlc.lowering.interp import LoopProgram


def run_kernel(module: ModuleOp, name: str, arrays: Sequence[np.ndarray],
               weights: Mapping[str, np.ndarray] | None = None) -> list[np.ndarray]:
    """Run kernel/host ``@name`` on copies of ``arrays``; returns the arrays after the call."""
    copies = [np.array(a, copy=True) for a in arrays]
    # the executor holds integers signed (signless iN): unsigned arrays are viewed so
    buffers = [c.view(f"i{c.dtype.itemsize}") if c.dtype.kind == "u" else c for c in copies]
    LoopProgram(module, weights).call(name, buffers)
    return copies
