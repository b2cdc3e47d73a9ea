"""IR helpers the BYOC passes share: which functions they work on, composite calls,
inlining, and the stable topological reorder of a block after ops moved."""

from __future__ import annotations

import re

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Block, Operation, SSAValue
from xdsl.traits import ConstantLike

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
    original order wherever it already is (the terminator stays last)."""
    ops = list(block.ops)
    term = ops[-1] if ops and ops[-1].has_trait(_IsTerminator) else None
    body = [op for op in ops if op is not term]
    defined: set[SSAValue] = set(block.args)
    done: list[Operation] = []
    pending = list(body)
    while pending:
        for i, op in enumerate(pending):
            if all(v in defined or not _in(v, pending) for v in _used_values(op)):
                break
        else:
            raise AssertionError("reorder_topologically: the block has a cycle")
        op = pending.pop(i)
        done.append(op)
        defined.update(op.results)
    for op in body:
        op.detach()
    for op in done:
        if term is not None:
            block.insert_op_before(op, term)
        else:
            block.add_op(op)


def _in(value: SSAValue, ops: list[Operation]) -> bool:
    return isinstance(value.owner, Operation) and value.owner in ops


def _used_values(op: Operation) -> list[SSAValue]:
    """Operands of ``op`` and of the ops nested in its regions (defined outside them)."""
    values = list(op.operands)
    for inner in op.walk():
        if inner is not op:
            values.extend(inner.operands)
    return values


from xdsl.traits import IsTerminator as _IsTerminator  # noqa: E402
