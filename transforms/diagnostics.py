"""Naming an op in a pass's one-line error message (shared by the graph passes).

xDSL ops built in Python carry no source location, so an op is named by what
a reader can find in the printed IR: its name, its result's SSA name when it
has one, and its position in the enclosing function.
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.ir import Operation


def describe_op(op: Operation) -> str:
    """E.g. ``'graph.add' %sum (op #3 of @main)``."""
    text = f"'{op.name}'"
    hint = op.results[0].name_hint if op.results else None
    if hint:
        text += f" %{hint}"
    fn = op.parent_op()
    while fn is not None and not isinstance(fn, func.FuncOp):
        fn = fn.parent_op()
    if fn is None:
        return text
    index = next((i for i, o in enumerate(fn.body.walk()) if o is op), None)
    return text + f" (op #{index} of @{fn.sym_name.data})"
