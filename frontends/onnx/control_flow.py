"""Converters for ONNX control flow: If, Loop, Scan -> graph.if / graph.loop /
graph.scan.

ONNX bodies read outer-scope values by name; graph-dialect bodies are
isolated from above. So each body is imported into a block of its own whose
arguments are the body's formal inputs followed by the outer values it reads
at run time ("captures", passed as extra operands); outer values known at
compile time are re-created inside the body as constants.

* If with a compile-time condition imports only the taken branch, inline.
* Loop needs a compile-time trip count M (it becomes ``max_iterations``, the
  static length of scan outputs); a run-time M raises NeedsConstantError
  naming the graph input to bind with ``constant_inputs=``. The condition
  may be a run-time value.
  When the body needs its iteration number at compile time (Slice starts
  computed from it), the loop is unrolled during import instead, each copy
  seeing its iteration number as a constant; its condition must then be known
  at compile time too.
* Scan: opset 9 and newer directly; opset 8 (leading batch axis) as one
  graph.scan per batch entry, results stacked; its sequence_lens must be
  absent or equal to the full length.
"""

from __future__ import annotations

import numpy as np
import onnx
from xdsl.dialects.builtin import TensorType, i1, i64
from xdsl.ir import Block, Region
from xdsl.utils.exceptions import VerifyException

from dlc.dialects import graph as g
from dlc.frontends.onnx.checks import check_graph_names
from dlc.frontends.onnx.errors import NeedsConstantError, OnnxImportError
from dlc.frontends.onnx.importer import (
    ImportContext,
    Node,
    Tensor,
    _convert_nodes,
    tensor_to_numpy,
)
from dlc.frontends.onnx.ops_shape import reshape
from dlc.frontends.onnx.registry import converts

# Loops compile to real loops; only a Loop unrolled at import (see
# _unroll_at_import) is limited to this many iterations.
MAX_TRIP_COUNT = 4096


def free_names(graph: onnx.GraphProto) -> list[str]:
    """Names ``graph`` (and its nested bodies) reads from outer scopes, in order."""
    defined = {i.name for i in graph.input} | {i.name for i in graph.initializer}
    free: list[str] = []
    for node in graph.node:
        for name in node.input:
            if name and name not in defined:
                free.append(name)
        for attr in node.attribute:
            subs = [attr.g] if attr.type == onnx.AttributeProto.GRAPH else (
                list(attr.graphs) if attr.type == onnx.AttributeProto.GRAPHS else [])
            for sub in subs:
                free.extend(n for n in free_names(sub) if n not in defined)
        defined.update(o for o in node.output if o)
    return list(dict.fromkeys(free))


def _outer(ctx: ImportContext, names: list[str], what: str) -> dict[str, Tensor]:
    values = getattr(ctx, "values", {})
    found = {}
    for name in names:
        if name not in values:
            raise ctx.error(f"{what} reads '{name}', which no outer node, initializer or input defines")
        found[name] = values[name]
    return found


def _captures(outer: dict[str, Tensor]) -> list[tuple[str, Tensor]]:
    """The outer values a body reads at run time (they become operands)."""
    return [(n, t) for n, t in outer.items() if t.const is None]


def _import_body(ctx: ImportContext, graph: onnx.GraphProto, formal_types: list[TensorType],
                 outer: dict[str, Tensor], what: str, fix_outputs=None) -> Region:
    captures = _captures(outer)
    try:
        check_graph_names(graph, what)  # (node outputs are checked by _convert_nodes)
    except OnnxImportError as err:
        raise ctx.error(str(err)) from None
    if len(graph.input) != len(formal_types):
        raise ctx.error(f"{what} takes {len(graph.input)} inputs, expected {len(formal_types)}")
    block = Block(arg_types=[*formal_types, *(t.type for _, t in captures)])
    # the node's opset (an op from a function body has the function's opset)
    sub = ImportContext(block, ctx.store, ctx.node.opset)
    values: dict[str, Tensor] = {}
    for name, t in outer.items():
        if t.const is not None:  # a fresh record: its SSA value (if any) is outside
            values[name] = Tensor(name, t.type, const=t.const)
    for arg, (name, t) in zip(block.args[len(formal_types):], captures):
        values[name] = Tensor(name, t.type, ssa=arg)
    for arg, vi in zip(block.args, graph.input):
        values[vi.name] = Tensor(vi.name, arg.type, ssa=arg)
    for init in graph.initializer:
        values[init.name] = sub.constant(tensor_to_numpy(init, f"{what} initializer '{init.name}'"),
                                         name=init.name)
    _convert_nodes(graph, sub, values, None, ctx.node.opset)
    outs = []
    for vi in graph.output:
        if vi.name not in values:
            raise ctx.error(f"{what} output '{vi.name}' is not produced by any node")
        outs.append(values[vi.name])
    if fix_outputs is not None:
        outs = fix_outputs(sub, outs)
    block.add_op(g.YieldOp.make(*[sub.value(t) for t in outs]))
    return Region(block)


def _build(ctx: ImportContext, node: Node, op_class, operands: list[Tensor], regions, **attrs):
    try:
        op = op_class.make_with_regions([ctx.value(t) for t in operands], regions, **attrs)
    except VerifyException as err:
        raise ctx.error(str(err)) from None
    ctx.block.add_op(op)
    names = list(node.proto.output) + [""] * len(op.results)
    return [Tensor(names[i], r.type, ssa=r) for i, r in enumerate(op.results)]


def _scalar_type(element) -> TensorType:
    return TensorType(element, [])


@converts("If")
def convert_if(node: Node, ctx: ImportContext):
    cond = node.input(0)
    branches = [node.required("then_branch"), node.required("else_branch")]
    if cond is None or cond.dtype != np.bool_ or int(np.prod(cond.shape)) != 1:
        raise ctx.error("condition must be one bool")
    if cond.const is not None:
        return _inline_branch(node, ctx, branches[0 if bool(cond.const.reshape(-1)[0]) else 1])
    names = list(dict.fromkeys(free_names(branches[0]) + free_names(branches[1])))
    outer = _outer(ctx, names, "If branch")
    captures = _captures(outer)
    regions = [_import_body(ctx, b, [], outer, f"If {label} branch")
               for b, label in zip(branches, ("then", "else"))]
    return _build(ctx, node, g.IfOp, [cond, *(t for _, t in captures)], regions)


def _inline_branch(node: Node, ctx: ImportContext, branch: onnx.GraphProto):
    """Import the taken branch of a compile-time If into the current block."""
    outer_values = ctx.values
    local = dict(outer_values)  # branch-local names must not leak out
    for init in branch.initializer:
        local[init.name] = ctx.constant(tensor_to_numpy(init, f"If branch initializer '{init.name}'"))
    try:
        _convert_nodes(branch, ctx, local, None, node.opset)
    finally:
        ctx.values, ctx.node = outer_values, node
    missing = [vi.name for vi in branch.output if vi.name not in local]
    if missing:
        raise ctx.error(f"If branch output '{missing[0]}' is not produced by any node")
    return [local[vi.name] for vi in branch.output]


@converts("Loop")
def convert_loop(node: Node, ctx: ImportContext):
    m, cond = node.input(0), node.input(1)
    initial = [node.input(i) for i in range(2, len(node.inputs))]
    if any(t is None for t in initial):
        raise ctx.error("loop-carried inputs must all be present")
    body = node.required("body")
    if m is None:
        raise ctx.error("a Loop without a trip count M is not supported (M is the static bound "
                        "of its scan outputs: it must be known at compile time)")
    trips = int(np.asarray(ctx.const_of(m, "M (trip count)")).reshape(-1)[0])
    trips = max(trips, 0)
    if cond is None:
        cond = ctx.constant(np.array(True))
    outer = _outer(ctx, free_names(body), "Loop body")
    captures = _captures(outer)
    formal = [_scalar_type(i64), _scalar_type(i1), *(t.type for t in initial)]

    def scalar_condition(sub: ImportContext, outs: list[Tensor]) -> list[Tensor]:
        if outs and outs[0].shape != ():
            outs = [reshape(sub, outs[0], []), *outs[1:]]
        return outs

    try:
        region = _import_body(ctx, body, formal, outer, "Loop body", scalar_condition)
    except NeedsConstantError:
        # the body needs its iteration number (or a carried value) at compile
        # time, e.g. Slice starts from the iteration: unroll it here instead
        if trips > MAX_TRIP_COUNT:
            raise ctx.error(f"trip count {trips} is too large to unroll (at most {MAX_TRIP_COUNT})") from None
        return _unroll_at_import(node, ctx, trips, cond, initial, body)
    operands = [ctx.constant(np.array(trips, np.int64)), cond, *initial, *(t for _, t in captures)]
    return _build(ctx, node, g.LoopOp, operands, [region],
                  num_carried=len(initial), max_iterations=trips)


@converts("Scan")
def convert_scan(node: Node, ctx: ImportContext):
    if node.opset < 9:
        return _convert_scan_8(node, ctx)
    body = node.required("body")
    n_in = int(node.required("num_scan_inputs"))
    inputs = list(node.inputs)
    if any(t is None for t in inputs):
        raise ctx.error("all inputs must be present")
    carried = len(inputs) - n_in
    if carried < 0:
        raise ctx.error(f"num_scan_inputs {n_in} exceeds the {len(inputs)} inputs")
    in_axes = [int(a) for a in node.attr("scan_input_axes", [0] * n_in)]
    formal = [t.type for t in inputs[:carried]]
    for t, a in zip(inputs[carried:], in_axes):
        a %= max(t.rank, 1)
        shape = list(t.shape)
        formal.append(TensorType(t.element_type, shape[:a] + shape[a + 1:]))
    outer = _outer(ctx, free_names(body), "Scan body")
    captures = _captures(outer)
    region = _import_body(ctx, body, formal, outer, "Scan body")
    attrs = {"num_carried": carried, "num_scan_inputs": n_in}
    for name in ("scan_input_axes", "scan_input_directions", "scan_output_axes",
                 "scan_output_directions"):
        if node.attr(name) is not None:
            attrs[name] = [int(v) for v in node.attr(name)]
    return _build(ctx, node, g.ScanOp, [*inputs, *(t for _, t in captures)], [region], **attrs)


def _unroll_at_import(node: Node, ctx: ImportContext, trips: int, cond: Tensor,
                      carried: list[Tensor], body: onnx.GraphProto):
    """Import ``body`` once per iteration into the current block (ONNX
    semantics exactly: scan outputs get one row per iteration that ran)."""
    outer_values = ctx.values
    rows: list[list[Tensor]] = []
    for i in range(trips):
        if not bool(np.asarray(ctx.const_of(cond, "cond (Loop unrolled at import)")).reshape(-1)[0]):
            break
        local = dict(outer_values)
        formal = [ctx.constant(np.array(i, np.int64)), cond, *carried]
        for vi, t in zip(body.input, formal, strict=True):
            local[vi.name] = t
        for init in body.initializer:
            local[init.name] = ctx.constant(tensor_to_numpy(init, f"Loop body initializer '{init.name}'"))
        try:
            _convert_nodes(body, ctx, local, None, node.opset)
        finally:
            ctx.values, ctx.node = outer_values, node
        outs = [local[vi.name] for vi in body.output]
        cond, carried = outs[0], outs[1:1 + len(carried)]
        rows.append(outs[1 + len(carried):])
    num_scans = len(body.output) - 1 - len(carried)
    if num_scans and not rows:
        raise ctx.error("a Loop with scan outputs that runs zero iterations is not supported")
    scans = []
    for k in range(num_scans):
        pieces = [reshape(ctx, r[k], [1, *r[k].shape]) for r in rows]
        scans.append(pieces[0] if len(pieces) == 1 else ctx.emit(g.ConcatOp, *pieces, axis=0))
    return [*carried, *scans]


def _convert_scan_8(node: Node, ctx: ImportContext):
    """Scan-8: every input has a leading batch axis, scan inputs [batch, seq, ...]."""
    body = node.required("body")
    n_in = int(node.required("num_scan_inputs"))
    lens, inputs = node.input(0), list(node.inputs[1:])
    if any(t is None for t in inputs):
        raise ctx.error("all inputs after sequence_lens must be present")
    carried = len(inputs) - n_in
    if carried < 0 or not inputs:
        raise ctx.error(f"num_scan_inputs {n_in} does not fit the {len(inputs)} inputs")
    batch, seq = inputs[carried].shape[0], inputs[carried].shape[1]
    if lens is not None and any(v != seq for v in ctx.const_ints(lens, "sequence_lens")):
        raise ctx.error("Scan-8 with sequence_lens shorter than the sequence is not supported")
    directions = [int(d) for d in node.attr("directions", [0] * n_in)]
    outer = _outer(ctx, free_names(body), "Scan body")
    captures = _captures(outer)
    per_batch = []
    for b in range(batch):
        rows = [_batch_row(ctx, t, b) for t in inputs]
        formal = [t.type for t in rows[:carried]]
        formal += [TensorType(t.element_type, list(t.shape[1:])) for t in rows[carried:]]
        region = _import_body(ctx, body, formal, outer, "Scan body")
        per_batch.append(_build(ctx, node, g.ScanOp, [*rows, *(t for _, t in captures)], [region],
                                num_carried=carried, num_scan_inputs=n_in,
                                scan_input_directions=directions))
    outs = []
    for k in range(len(per_batch[0])):
        pieces = [reshape(ctx, r[k], [1, *r[k].shape]) for r in per_batch]
        outs.append(pieces[0] if len(pieces) == 1 else ctx.emit(g.ConcatOp, *pieces, axis=0))
    return outs


def _batch_row(ctx: ImportContext, t: Tensor, b: int) -> Tensor:
    piece = ctx.emit(g.SliceOp, t, starts=[b], ends=[b + 1], axes=[0], steps=[1])
    return reshape(ctx, piece, list(t.shape[1:]))
