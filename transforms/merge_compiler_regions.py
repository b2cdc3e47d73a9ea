"""`merge-compiler-regions`: group annotated ops into maximal regions that create no cycle.

Ops annotated with the same target (``dlc.target_annotation``) that are connected
by a def-use edge join one region, marked ``dlc.region = N`` (per function, numbered
in program order), unless the merge would make a cycle between regions: when a path
leaves one of the two regions and comes back into the other through an op outside
both (another target's op, a dlc op, or a third region), the two stay apart::

    %a = graph.add ...  {target c}   ; region 0
    %b = graph.softmax %a            ; dlc
    %c = graph.mul %a, %b {target c} ; region 1: with %a it would need %b, which needs %a

Greedy in program order: each annotated op starts a region of its own and then
absorbs, operand by operand, the regions of its producers with the same target
whenever no such outside path exists. The walk of the check treats each other
region as one node (it runs whole, so entering any op of it reaches all of its
inputs).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, i64
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from dlc.byoc.graph_utils import graph_functions
from dlc.byoc.targets import ANNOTATION_ATTR, REGION_ATTR


def _target(op: Operation) -> str | None:
    attr = op.attributes.get(ANNOTATION_ATTR)
    return attr.data if isinstance(attr, StringAttr) else None


class _Regions:
    def __init__(self, ops: list[Operation]):
        self.ops = ops
        self.region_of: dict[Operation, int] = {}
        self.members: dict[int, set[Operation]] = {}

    def _producers(self, op: Operation) -> list[Operation]:
        found = []
        for inner in op.walk():
            for v in inner.operands:
                owner = v.owner
                if isinstance(owner, Operation) and owner in self.index:
                    found.append(owner)
        return found

    def reaches(self, start: set[Operation], goal: set[Operation], inside: set[Operation]) -> bool:
        """Whether a path from an op of ``goal`` into ``start`` passes through an op
        outside ``inside`` (walking backwards from ``start``'s producers)."""
        seen: set[Operation] = set()
        stack = [p for op in start for p in self._producers(op) if p not in inside]
        while stack:
            op = stack.pop()
            if op in seen:
                continue
            seen.add(op)
            if op in goal:
                return True
            group = self.members.get(self.region_of[op], {op}) if op in self.region_of else {op}
            for member in group:
                seen.add(member)
                if member in goal:
                    return True
                stack.extend(p for p in self._producers(member) if p not in seen)
        return False

    def run(self) -> None:
        self.index = {op: i for i, op in enumerate(self.ops)}
        next_id = 0
        for op in self.ops:
            target = _target(op)
            if target is None:
                continue
            rid = next_id
            next_id += 1
            self.region_of[op] = rid
            self.members[rid] = {op}
            for producer in self._producers(op):
                other = self.region_of.get(producer)
                if other is None or other == rid or _target(producer) != target:
                    continue
                mine, theirs = self.members[rid], self.members[other]
                both = mine | theirs
                if self.reaches(mine, theirs, both) or self.reaches(theirs, mine, both):
                    continue  # a cycle through an outside op: keep them apart
                for member in theirs:
                    self.region_of[member] = rid
                mine |= theirs
                del self.members[other]


def merge_regions(module: ModuleOp) -> None:
    for fn in graph_functions(module):
        ops = list(fn.body.block.ops)
        regions = _Regions(ops)
        regions.run()
        numbering: dict[int, int] = {}
        for op in ops:
            rid = regions.region_of.get(op)
            if rid is not None:
                op.attributes[REGION_ATTR] = IntegerAttr(numbering.setdefault(rid, len(numbering)), i64)


@dataclass(frozen=True)
class MergeCompilerRegionsPass(ModulePass):
    """Maximal acyclic regions of ops annotated with the same BYOC target."""

    name = "merge-compiler-regions"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        merge_regions(op)
