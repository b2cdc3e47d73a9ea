"""`partition-graph`: each compiler region becomes a function for its target's codegen.

The ops of region N (``dlc.region``, merge-compiler-regions) of target T move into
``func.func private @<T>_<fn>_<N>`` tagged ``dlc.codegen = "<T>"``, called from the
graph where they were (the block is reordered, stably, so every value is defined
before its use)::

    %r = func.call @c_main_0(%x, %w) : (tensor<1x8xf32>, tensor<8xf32>) -> tensor<1x8xf32>
    func.func private @c_main_0(%arg0: tensor<1x8xf32>, %arg1: tensor<8xf32> {dlc.constant})
        -> tensor<1x8xf32> attributes {dlc.codegen = "c"} { graph ops; func.return ... }

Arguments: the values the region reads from outside, in order of first use, then the
constants it reads (``ConstantLike`` ops stay in the graph, so weights stay in the
weights store) with the arg attribute ``dlc.constant``; results: the region's values
used outside, in program order.

Composites (merge-composite) are inlined: inside a partition each op keeps the
pattern name as ``dlc.composite = "<T>.<pattern>"`` and ``dlc.composite_id = K``
(which match it came from, numbered per partition), so a partition is one flat body
of graph ops; a composite left with dlc is inlined into the graph untagged. The
annotations (``dlc.target_annotation``, ``dlc.region``, ``dlc.byoc_note``) are removed
and summarised in the module attribute ``dlc.byoc_report``: one line per partition
(its ops) and one per op kind that stayed with dlc (why), which ``dlc -v`` prints.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, IntegerAttr, ModuleOp, StringAttr, UnitAttr, i64
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from dlc.byoc.graph_utils import (
    composite_of,
    functions_by_name,
    graph_functions,
    inline_call,
    is_constant_value,
    reorder_topologically,
    unique_symbol,
)
from dlc.byoc.targets import (
    ANNOTATION_ATTR,
    CODEGEN_ATTR,
    COMPOSITE_ATTR,
    COMPOSITE_ID_ATTR,
    CONSTANT_ARG_ATTR,
    NOTE_ATTR,
    REGION_ATTR,
    REPORT_ATTR,
)

_PASS_ATTRS = (ANNOTATION_ATTR, REGION_ATTR, NOTE_ATTR)


def _kinds(names: list[str]) -> str:
    counts = Counter(names)
    return ", ".join(f"{n} x{c}" if c > 1 else n for n, c in counts.items())


def partition(module: ModuleOp) -> list[str]:
    """Partition every graph function; returns (and stores) the report lines."""
    functions = functions_by_name(module)
    taken = set(functions)
    report: list[str] = []
    refused: dict[tuple[str, str], int] = {}
    for fn in graph_functions(module):
        block = fn.body.block
        regions: dict[int, list[Operation]] = {}
        for op in block.ops:
            attr = op.attributes.get(REGION_ATTR)
            if isinstance(attr, IntegerAttr):
                regions.setdefault(attr.value.data, []).append(op)
            elif isinstance(op.attributes.get(NOTE_ATTR), StringAttr):
                composite = composite_of(op, functions)
                kind = composite[1] if composite else op.name
                key = (kind, op.attributes[NOTE_ATTR].data)
                refused[key] = refused.get(key, 0) + 1
        for rid in sorted(regions):
            ops = regions[rid]
            target = ops[0].attributes[ANNOTATION_ATTR].data
            symbol = unique_symbol(f"{target}_{fn.sym_name.data}_{rid}", taken)
            names, composites = _outline(module, functions, ops, target, symbol)
            with_composites = f"; composites: {_kinds(composites)}" if composites else ""
            report.append(f"partition @{symbol} -> {target}: {len(names)} ops ({_kinds(names)}{with_composites})")
        # composites left with dlc: back into the graph
        for op in list(block.ops):
            composite = composite_of(op, functions)
            if composite is not None:
                inline_call(op, composite[0])
        for op in block.ops:
            for attr in _PASS_ATTRS:
                op.attributes.pop(attr, None)
        reorder_topologically(block)
    for (kind, why), n in refused.items():
        report.append(f"stays with dlc: {kind}" + (f" x{n}" if n > 1 else "") + f": {why}")
    # composite functions nobody calls any more
    called = {op.callee.string_value() for op in module.walk() if isinstance(op, func.CallOp)}
    for fn in list(module.ops):
        if isinstance(fn, func.FuncOp) and COMPOSITE_ATTR in fn.attributes and fn.sym_name.data not in called:
            fn.detach()
            fn.erase()
    if report:
        previous = module.attributes.get(REPORT_ATTR)
        lines = [a for a in previous.data] if isinstance(previous, ArrayAttr) else []
        module.attributes[REPORT_ATTR] = ArrayAttr(lines + [StringAttr(line) for line in report])
    return report


def _outline(module: ModuleOp, functions, ops: list[Operation], target: str, symbol: str
             ) -> tuple[list[str], list[str]]:
    """Move ``ops`` into the partition ``symbol``; returns the graph op names it holds
    and the names of the composites among them."""
    members = set(ops)
    inputs: list[SSAValue] = []
    constants: list[SSAValue] = []
    for op in ops:
        for inner in op.walk():
            for v in inner.operands:
                if isinstance(v.owner, Operation) and v.owner in members:
                    continue
                if isinstance(v.owner, Operation) and v.owner.parent_op() is not None and \
                        _inside(v.owner, members):
                    continue
                bucket = constants if is_constant_value(v) else inputs
                if v not in bucket:
                    bucket.append(v)
    outputs = [r for op in ops for r in op.results
               if any(use.operation not in members and not _inside(use.operation, members) for use in r.uses)]
    args = inputs + constants
    body = Block(arg_types=[v.type for v in args])
    mapping: dict[SSAValue, SSAValue] = dict(zip(args, body.args))
    names: list[str] = []
    composites: list[str] = []
    composite_id = 0
    for op in ops:
        new = op.clone(value_mapper=mapping)
        for attr in _PASS_ATTRS:
            new.attributes.pop(attr, None)
        body.add_op(new)
        for old, res in zip(op.results, new.results):
            mapping[old] = res
        composite = composite_of(new, functions)
        if composite is not None:
            tags = {COMPOSITE_ATTR: StringAttr(composite[1]), COMPOSITE_ID_ATTR: IntegerAttr(composite_id, i64)}
            composite_id += 1
            composites.append(composite[1])
            inlined, returned = inline_call(new, composite[0], tags)
            names += [o.name for o in inlined]
            for old, value in zip(op.results, returned):
                mapping[old] = value
        else:
            names.append(new.name)
    body.add_op(func.ReturnOp(*[mapping[v] for v in outputs]))
    arg_attrs = ArrayAttr([DictionaryAttr({}) for _ in inputs]
                          + [DictionaryAttr({CONSTANT_ARG_ATTR: UnitAttr()}) for _ in constants])
    fn = func.FuncOp(symbol, ([v.type for v in args], [v.type for v in outputs]), Region(body),
                     visibility="private", arg_attrs=arg_attrs)
    fn.attributes[CODEGEN_ATTR] = StringAttr(target)
    module.body.block.add_op(fn)
    functions[symbol] = fn
    last = ops[-1]
    call = func.CallOp(symbol, args, [v.type for v in outputs])
    call.location = ops[0].location
    last.parent_block().insert_op_after(call, last)
    for old, new in zip(outputs, call.results):
        old.replace_uses_with_if(new, lambda use: use.operation not in members)
    for op in reversed(ops):
        op.detach()
        op.erase()
    return names, composites


def _inside(op: Operation, members: set[Operation]) -> bool:
    parent = op.parent_op()
    while parent is not None:
        if parent in members:
            return True
        parent = parent.parent_op()
    return False


@dataclass(frozen=True)
class PartitionGraphPass(ModulePass):
    """Each compiler region -> its own function tagged ``dlc.codegen``."""

    name = "partition-graph"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        partition(op)
