"""`tloop-cache-read`: Stage the tile of `buffer` read inside `loop` of `kernel` in a local memref.alloca.

Thin command-line wrapper over `dlc.lowering.schedule` (the primitive and its
legality rules live there)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from dlc.lowering.schedule.passes import run_primitive


@dataclass(frozen=True)
class TLoopCacheReadPass(ModulePass):
    """Stage the tile of `buffer` read inside `loop` of `kernel` in a local memref.alloca."""

    name = "tloop-cache-read"
    kernel: str
    buffer: str
    loop: str

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        run_primitive(op, self.kernel, lambda s: s.cache_read(self.buffer, self.loop))
