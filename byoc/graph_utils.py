"""IR helpers the BYOC passes share: which functions they work on, composite calls,
inlining, and the stable topological reorder of a block after ops moved."""

from __future__ import annotations

import heapq
import re

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Block, Operation, SSAValue
from xdsl.traits import ConstantLike, IsTerminator

from dlc.byoc.targets import CODEGEN_ATTR, COMPOSITE_ATTR


def graph_functions(module: ModuleOp) -> list[func.FuncOp]:
    """The graph functions the passes partition: defined, not a kernel/host, not a
    composite or a partition themselves."""
    return [op for op in module.ops if isinstance(op, func.FuncOp) and not op.is_declaration
            and not any(a in op.attributes for a in ("tloop.kernel", "tloop.host", COMPOSITE_ATTR,
                                                     CODEGEN_ATTR))]


def functions_by_name(module: ModuleOp) -> dict[str, func.FuncOp]:
    return {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}


def composite_of(op: Operation, functions: dict[str, func.FuncOp]) -> tuple[func.FuncOp, str] | None:
    """(function, "<target>.<pattern>") when ``op`` calls a composite function."""
    if not isinstance(op, func.CallOp):
        return None
    fn = functions.get(op.callee.string_value())
    if fn is None or not isinstance(fn.attributes.get(COMPOSITE_ATTR), StringAttr):
        return None
    return fn, fn.attributes[COMPOSITE_ATTR].data


def is_constant_value(value: SSAValue) -> bool:
    return isinstance(value.owner, Operation) and value.owner.has_trait(ConstantLike)


def unique_symbol(base: str, taken: set[str]) -> str:
    base = re.sub(r"\W", "_", base)
    name, n = base, 0
    while name in taken:
        n += 1
        name = f"{base}_{n}"
    taken.add(name)
    return name


def clone_into(ops: list[Operation], block: Block, mapping: dict[SSAValue, SSAValue]) -> list[Operation]:
    """Clone ``ops`` (in order) at the end of ``block``, operands through ``mapping``."""
    clones = []
    for op in ops:
        new = op.clone(value_mapper=mapping)
        block.add_op(new)
        for old, res in zip(op.results, new.results):
            mapping[old] = res
        clones.append(new)
    return clones


def inline_call(call: func.CallOp, callee: func.FuncOp, attrs: dict | None = None
                ) -> tuple[list[Operation], list[SSAValue]]:
    """Replace ``call`` by ``callee``'s body (cloned before it); each inlined op gets
    ``attrs``. Returns the inlined ops and the values that replace the call's results."""
    block = callee.body.block
    mapping: dict[SSAValue, SSAValue] = dict(zip(block.args, call.operands))
    inlined = []
    returned: list[SSAValue] = []
    for op in block.ops:
        if isinstance(op, func.ReturnOp):
            returned = [mapping.get(value, value) for value in op.operands]
            for res, value in zip(call.results, returned):
                res.replace_all_uses_with(value)
            continue
        new = op.clone(value_mapper=mapping)
        for old, res in zip(op.results, new.results):
            mapping[old] = res
        for k, v in (attrs or {}).items():
            new.attributes[k] = v
        call.parent_block().insert_op_before(new, call)
        inlined.append(new)
    call.detach()
    call.erase()
    return inlined, returned


def reorder_topologically(block: Block) -> None:
    """Reorder ``block``'s ops so every value is defined before use, keeping the
    original order wherever it already is (Kahn's algorithm, the lowest original
    index first; the terminator stays last)."""
    ops = list(block.ops)
    term = ops[-1] if ops and ops[-1].has_trait(IsTerminator) else None
    body = [op for op in ops if op is not term]
    index = {op: i for i, op in enumerate(body)}
    waiting: dict[Operation, int] = {}
    users: dict[Operation, list[Operation]] = {op: [] for op in body}
    for op in body:
        producers = {v.owner for v in _used_values(op) if isinstance(v.owner, Operation) and v.owner in index}
        producers.discard(op)
        waiting[op] = len(producers)
        for producer in producers:
            users[producer].append(op)
    ready = [index[op] for op in body if waiting[op] == 0]
    heapq.heapify(ready)
    order: list[Operation] = []
    while ready:
        op = body[heapq.heappop(ready)]
        order.append(op)
        for user in users[op]:
            waiting[user] -= 1
            if waiting[user] == 0:
                heapq.heappush(ready, index[user])
    if len(order) != len(body):
        raise AssertionError("reorder_topologically: the block has a cycle")
    for op in body:
        op.detach()
    for op in order:
        if term is not None:
            block.insert_op_before(op, term)
        else:
            block.add_op(op)


def _used_values(op: Operation) -> list[SSAValue]:
    """Operands of ``op`` and of the ops nested in its regions (defined outside them)."""
    values = list(op.operands)
    for inner in op.walk():
        if inner is not op:
            values.extend(inner.operands)
    return values

