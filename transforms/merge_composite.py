"""`merge-composite{target=c}`: each match of the target's pattern table becomes a composite.

A composite is a private function tagged ``dlc.composite = "<target>.<pattern>"``
whose body is the matched ops, called from the graph where the match's output was::

    %r = func.call @composite_c_add_relu_0(%x, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    func.func private @composite_c_add_relu_0(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32>
        attributes {dlc.composite = "c.add_relu"} {
      %0 = graph.add %a, %b : ...
      %1 = graph.relu %0 : ...
      func.return %1 : tensor<4xf32>
    }

Why a function rather than a region op: it is plain func IR (prints, parses and
verifies with no new op), the composite is one op (a ``func.call``) in the graph,
so annotate-target and merge-compiler-regions treat it as a unit with no special
case, and its body is isolated from above, as a codegen wants to see it.
partition-graph inlines composites back (into a partition, each op tagged with the
pattern name, or into the graph when the target refused them).

Patterns are tried in the table's priority order, each over the whole function,
matches rooted at the last op first; the leaves (wildcards, constants) are the
composite's arguments, constants included (so weights stay in the weights store).
A match whose ``check`` refuses it stays as it was, with a ``dlc.byoc_note`` on its
root saying so. Graph functions' top-level ops only.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Block, Region
from xdsl.passes import ModulePass

from dlc.byoc.graph_utils import clone_into, graph_functions, unique_symbol
from dlc.byoc.patterns import Match, match
from dlc.byoc.targets import COMPOSITE_ATTR, NOTE_ATTR, check_targets, patterns_of
from dlc.diagnostics import DiagnosticError


def merge_composites(module: ModuleOp, target: str) -> int:
    """Wrap every match of ``target``'s patterns; returns how many."""
    check_targets([target])
    table = patterns_of(target)
    taken = {op.sym_name.data for op in module.ops if isinstance(op, func.FuncOp)}
    count = 0
    for fn in graph_functions(module):
        for name, pattern, check in table:
            for root in reversed(list(fn.body.block.ops)):
                if root.parent_block() is None:
                    continue  # absorbed by an earlier match of this sweep
                m = match(pattern, root)
                if m is None:
                    continue
                verdict = True if check is None else check(m)
                if verdict is not True:
                    why = verdict if isinstance(verdict, str) else "its check refused the match"
                    root.attributes[NOTE_ATTR] = StringAttr(f"{target}.{name}: {why}")
                    continue
                _wrap(module, m, f"{target}.{name}", unique_symbol(f"composite_{target}_{name}_{count}", taken))
                count += 1
    return count


def _wrap(module: ModuleOp, m: Match, composite: str, symbol: str) -> None:
    root = m.root
    block = Block(arg_types=[v.type for v in m.inputs])
    mapping = dict(zip(m.inputs, block.args))
    clones = clone_into(m.ops, block, mapping)
    for op in clones:
        op.attributes.pop(NOTE_ATTR, None)
    block.add_op(func.ReturnOp(*clones[-1].results))
    fn = func.FuncOp(symbol, ([v.type for v in m.inputs], [r.type for r in root.results]),
                     Region(block), visibility="private")
    fn.attributes[COMPOSITE_ATTR] = StringAttr(composite)
    module.body.block.add_op(fn)
    call = func.CallOp(symbol, list(m.inputs), [r.type for r in root.results])
    call.location = root.location
    root.parent_block().insert_op_before(call, root)
    for old, new in zip(root.results, call.results):
        old.replace_all_uses_with(new)
    for op in reversed(m.ops):
        op.detach()
        op.erase()


@dataclass(frozen=True)
class MergeCompositePass(ModulePass):
    """Wrap each match of a BYOC target's pattern table in a composite function."""

    name = "merge-composite"
    target: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not self.target:
            raise DiagnosticError("merge-composite needs a target: merge-composite{target=NAME}")
        merge_composites(op, self.target)
