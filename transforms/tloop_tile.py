"""`tloop-tile`: Tile the nested loops `outer`/`inner` of `kernel` by `outer-factor` x `inner-factor`.

Thin command-line wrapper over `dlc.lowering.schedule` (the primitive and its
legality rules live there)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from dlc.lowering.schedule.passes import run_primitive


@dataclass(frozen=True)
class TLoopTilePass(ModulePass):
    """Tile the nested loops `outer`/`inner` of `kernel` by `outer-factor` x `inner-factor`."""

    name = "tloop-tile"
    kernel: str
    outer: str
    inner: str
    outer_factor: int
    inner_factor: int

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        run_primitive(op, self.kernel, lambda s: s.tile(self.outer, self.inner, self.outer_factor, self.inner_factor))
