"""lower-to-loops kernel of ``graph.custom``: the op's TE program lowered by
``frontends/te/lowering.py`` (registered with ``lowering.kernels.kernel``
when ``dlc.frontends.te`` is imported: the frontend registers its op's kernel,
lower-to-loops does not import a frontend)."""

from __future__ import annotations

from xdsl.dialects import func

from dlc.diagnostics import recursion_headroom
from dlc.dialects.graph_base import GraphOp
from dlc.frontends.te import custom_program
from dlc.frontends.te.lowering import build_kernel
from dlc.frontends.te.syntax import RECURSION_FRAMES
from dlc.lowering.kernels import kernel


@kernel("graph.custom")
def lower_custom(op: GraphOp, name: str) -> func.FuncOp:
    program = custom_program(op.te, [o.type for o in op.operands])
    with recursion_headroom(RECURSION_FRAMES):  # the expression tree is walked recursively
        return build_kernel(program, name, op.name)
