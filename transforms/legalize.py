"""`legalize`: rewrite composite graph ops into the core set.

An op declaring the ``Composite(decompose)`` trait (``dlc/dialects/traits.py``) is
replaced here by ``decompose(op, emitter)``: simpler graph ops, built by the
decomposition next to the op (``dlc/dialects/graph/decompose.py`` lists them all),
so that ``lower-to-loops`` only handles the core set.

`rsqrt` stays a core op: one ``math.rsqrt`` per element when lowered, and
``div(1, sqrt)`` would only add an op and a rounding.

Core set (the graph ops left after legalize): constant, weight; neg, abs,
sign, exp, log, sqrt, rsqrt, tanh, sigmoid, relu, erf, floor, ceil, round,
sin, cos, not, clip, leaky_relu, cast; add, sub, mul, div, pow, mod, max,
min, equal, not_equal, less, less_equal, greater, greater_equal, and, or,
xor, where; matmul; conv2d, conv_transpose2d, max_pool2d, avg_pool2d;
reduce_sum, reduce_mean, reduce_max, reduce_min, reduce_prod, argmax,
argmin; reshape, transpose, broadcast_to, slice, pad, concat, split, gather,
resize -- i.e. every graph op that does not declare ``Composite``.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.utils.exceptions import PassFailedException

from dlc.diagnostics import describe_op
from dlc.dialects.graph.decompose import Emitter
from dlc.dialects.traits import Composite


def expand(op: Operation) -> tuple[list[Operation], SSAValue]:
    """``op``'s core-op expansion (ops, result): its ``decompose``, with any composite op
    that decomposition built (attention builds a softmax) expanded in place, depth first."""
    emitter = Emitter(op.operands[0])
    result = op.get_trait(Composite).decompose(op, emitter)
    if result.type != op.results[0].type:  # a decomposition bug, not a user error
        raise PassFailedException(
            f"legalize: expansion of {describe_op(op)} gives {result.type}, "
            f"expected {op.results[0].type}"
        )
    ops: list[Operation] = []
    for new in emitter.ops:
        if new.get_trait(Composite) is None:
            ops.append(new)
            continue
        inner_ops, inner = expand(new)
        ops.extend(inner_ops)
        if result is new.results[0]:
            result = inner
        new.results[0].replace_all_uses_with(inner)
        new.erase()
    return ops, result


class ExpandCompositeOps(RewritePattern):
    """Replace a composite graph op by its core-op expansion."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if op.get_trait(Composite) is None:
            return
        ops, result = expand(op)
        for new in ops:
            new.location = op.location  # later diagnostics point at the composite op
        rewriter.replace(op, ops, [result])


@dataclass(frozen=True)
class LegalizePass(ModulePass):
    """Rewrite every composite graph op into core ops (see module docstring)."""

    name = "legalize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        # one walk: expand() leaves only core ops, nothing to revisit
        PatternRewriteWalker(ExpandCompositeOps(), apply_recursively=False).rewrite_module(op)
