"""`tloop-fuse`: Fuse loop `inner`, perfectly nested in `outer`, into one loop `<outer>_<inner>_fused`.

Thin command-line wrapper over `dlc.lowering.schedule` (the primitive and its
legality rules live there)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from dlc.lowering.schedule.passes import run_primitive


@dataclass(frozen=True)
class TLoopFusePass(ModulePass):
    """Fuse loop `inner`, perfectly nested in `outer`, into one loop `<outer>_<inner>_fused`."""

    name = "tloop-fuse"
    kernel: str
    outer: str
    inner: str

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        run_primitive(op, self.kernel, lambda s: s.fuse(self.outer, self.inner))
