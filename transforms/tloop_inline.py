"""`tloop-inline`: compute elementwise kernel `kernel` inside its only consumer's loads.

Thin command-line wrapper over `dlc.lowering.schedule.inline` (which documents
the rule): the intermediate buffer, the producer's call and kernel disappear.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from dlc.lowering.schedule import ScheduleError, inline
from dlc.lowering.schedule.passes import as_pass_error


@dataclass(frozen=True)
class TLoopInlinePass(ModulePass):
    """Inline elementwise kernel `kernel` into its only consumer kernel (drops its buffer)."""

    name = "tloop-inline"
    kernel: str

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        try:
            inline(op, self.kernel)
        except ScheduleError as err:
            raise as_pass_error(err) from None
