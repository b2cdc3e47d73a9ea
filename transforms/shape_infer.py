"""`shape-infer`: recompute the result types of graph ops in program order.

Use it after changing a function's argument types (e.g. fixing a batch size)
or on IR written with placeholder result types: each graph op's ``infer``
runs on its operands' current types and the result types are replaced (uses
follow, so later ops see the new types). Then each `func.func`'s
``function_type`` is rebuilt from its block arguments (the source of truth
for inputs) and its `func.return` operands, and `func.call` results follow
their callee's new signature (callees are inferred first).

`graph.weight` keeps its type (it comes from the weights store); ops of
other dialects are left as they are. An op whose inference fails stops the
pass with one line naming the op and the broken rule.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from dlc.dialects.graph import WeightOp
from dlc.dialects.graph_base import GraphOp, ShapeError
from dlc.diagnostics import op_error
from dlc.diagnostics import describe_op


def infer_op(op: GraphOp) -> None:
    """Re-infer ``op``'s result types and update them in place."""
    types = []
    for i, operand in enumerate(op.operands):
        if not isinstance(operand.type, TensorType):
            raise op_error(
                op,
                f"{describe_op(op)}: operand #{i} must be a ranked tensor, "
                f"got {operand.type}"
            )
        types.append(operand.type)
    try:
        if op.regions:  # graph.if/loop/scan: results follow the bodies' graph.yield
            inferred = op.infer_regions(types, op.attrs, list(op.regions))
        else:
            inferred = op.infer(types, op.attrs)
    except ShapeError as err:
        raise op_error(op, f"{describe_op(op)}: {err}") from None
    _retype(op, inferred, lambda: f"{describe_op(op)} has {len(op.results)} results, "
                                  f"but inference gives {len(inferred)}")


def _retype(op: Operation, new_types, mismatch) -> None:
    """Give ``op``'s results ``new_types`` (users see the new types); when the counts
    differ, raise the error ``mismatch()`` words."""
    if len(new_types) != len(op.results):
        raise op_error(op, mismatch())
    for result, new_type in zip(op.results, new_types):
        if result.type != new_type:
            Rewriter.replace_value_with_new_type(result, new_type)


@dataclass
class _FunctionInference:
    """Infers functions callee-first, so calls see their callee's new results."""

    functions: dict[str, func.FuncOp]
    done: set[str]
    active: set[str]

    def run(self, fn: func.FuncOp) -> None:
        name = fn.sym_name.data
        if name in self.done or name in self.active or fn.is_declaration:
            return  # recursion: the callee keeps its declared signature
        self.active.add(name)
        for op in fn.body.walk(region_first=True):  # bodies before the op that yields them
            self._visit(op)
        fn.update_function_type()
        self.active.discard(name)
        self.done.add(name)

    def _visit(self, op: Operation) -> None:
        if isinstance(op, GraphOp) and not isinstance(op, WeightOp):
            infer_op(op)
        elif isinstance(op, func.CallOp):
            callee = self.functions.get(op.callee.root_reference.data)
            if callee is None:
                return
            self.run(callee)
            outputs = callee.function_type.outputs.data
            _retype(op, outputs, lambda: f"{describe_op(op)} expects {len(op.results)} results "
                                         f"from @{callee.sym_name.data}, which returns {len(outputs)}")


@dataclass(frozen=True)
class ShapeInferPass(ModulePass):
    """Recompute graph result types and function signatures (see module docstring)."""

    name = "shape-infer"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        functions = [f for f in op.walk() if isinstance(f, func.FuncOp)]
        inference = _FunctionInference({f.sym_name.data: f for f in functions}, set(), set())
        for fn in functions:
            inference.run(fn)
