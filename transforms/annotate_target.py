"""`annotate-target{targets=dnnl,c}`: mark each op with the first BYOC target that takes it.

An op (or a composite call from merge-composite) gets
``dlc.target_annotation = "<target>"`` from the first target of ``targets`` whose
support predicate accepts it (``dlc.byoc.supports(target, op_name)``, returning
True or a reason string). A composite ``"<t>.<pattern>"`` can go only to ``t``
(when ``t`` is listed); its predicate, if one is registered under the composite's
name, may still refuse it. Ops that no target takes stay with dlc and get
``dlc.byoc_note`` listing each target's reason (no predicate, or the predicate's
answer); partition-graph puts them in the report (``dlc -v``).

Never annotated, by kind: constants (``ConstantLike``: they stay in the graph and
are passed to a partition as ``dlc.constant`` arguments) and ops with regions
(graph.if/loop/scan: control flow stays with dlc). Top-level ops only.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.traits import ConstantLike

from dlc.byoc.graph_utils import composite_of, functions_by_name, graph_functions
from dlc.byoc.targets import ANNOTATION_ATTR, NOTE_ATTR, check_targets, predicate_of
from dlc.diagnostics import DiagnosticError
from dlc.dialects.graph_base import GraphOp


def _verdict(target: str, key: str, op: Operation, default: bool | str) -> bool | str:
    pred = predicate_of(target, key)
    if pred is None:
        return default
    verdict = pred(op)
    if verdict is True:
        return True
    return verdict if isinstance(verdict, str) and verdict else "its support predicate refused it"


def annotate(module: ModuleOp, targets: list[str]) -> None:
    check_targets(targets)
    functions = functions_by_name(module)
    for fn in graph_functions(module):
        for op in fn.body.block.ops:
            if isinstance(op, func.ReturnOp) or op.has_trait(ConstantLike) or op.regions:
                continue
            reasons = []
            composite = composite_of(op, functions)
            if composite is not None:
                owner = composite[1].split(".", 1)[0]
                if owner not in targets:
                    reasons.append(f"composite {composite[1]} belongs to target '{owner}', not annotated")
                else:
                    verdict = _verdict(owner, composite[1], op, True)
                    if verdict is True:
                        op.attributes[ANNOTATION_ATTR] = StringAttr(owner)
                        op.attributes.pop(NOTE_ATTR, None)
                        continue
                    reasons.append(f"{owner}: {verdict}")
            elif isinstance(op, GraphOp):
                for target in targets:
                    verdict = _verdict(target, op.name, op, f"no support predicate for {op.name}")
                    if verdict is True:
                        op.attributes[ANNOTATION_ATTR] = StringAttr(target)
                        break
                    reasons.append(f"{target}: {verdict}")
                if ANNOTATION_ATTR in op.attributes:
                    op.attributes.pop(NOTE_ATTR, None)
                    continue
            else:
                continue  # calls of other functions stay with dlc
            previous = op.attributes.get(NOTE_ATTR)
            note = "; ".join(reasons)
            if isinstance(previous, StringAttr) and previous.data not in note:
                note = f"{previous.data}; {note}"
            op.attributes[NOTE_ATTR] = StringAttr(note)


@dataclass(frozen=True)
class AnnotateTargetPass(ModulePass):
    """Mark ops with the first BYOC target (of ``targets``) whose predicate takes them."""

    name = "annotate-target"
    targets: tuple[str, ...] = ()

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not self.targets:
            raise DiagnosticError("annotate-target needs targets: annotate-target{targets=NAME,...}")
        annotate(op, list(self.targets))
