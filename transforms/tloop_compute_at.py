"""`tloop-compute-at`: move elementwise producer nest `producer` into loop `consumer` of `kernel`.

Thin command-line wrapper over `dlc.lowering.schedule.producer.compute_at`
(which documents the rule): per consumer iteration only the read tile is computed.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from dlc.lowering.schedule.passes import run_primitive


@dataclass(frozen=True)
class TLoopComputeAtPass(ModulePass):
    """Compute producer nest `producer` inside loop `consumer` of `kernel`, for the tile it reads."""

    name = "tloop-compute-at"
    kernel: str
    producer: str
    consumer: str

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        run_primitive(op, self.kernel, lambda s: s.compute_at(self.producer, self.consumer))
