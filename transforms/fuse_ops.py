"""`fuse-ops`: group elementwise ops with their producer (TVM-style operator fusion).

``fuse-ops{dense=true}``

Each elementwise op (unary/binary math, comparisons, clip, leaky_relu,
where) whose operand comes from a *fusable producer* joins the producer's
group when

* that operand has no other user (the intermediate tensor disappears), and
* the op's result has the producer's type (same shape and element type: the
  chain is computed in the producer's output loop, in place).

Fusable producers are the ops declaring ``FusionAnchor`` (conv2d, matmul and
conv2d_nchwc with ``dense``: ``dense=false`` leaves those alone; max/avg pools,
reductions) and elementwise ops (``Elementwise``, see ``dialects/traits.py``), so
``conv2d -> add(bias) -> relu`` and ``sub -> exp`` become one group each, and
injective chains are fused together. The chain's other operands (a bias, a
residual) may come from anywhere before the group's last op.

A value read by several elementwise ops joins too when they close again into
one result (``single_exit_region``: erf-GELU, ``x * 0.5 * (1 + erf(x / sqrt 2))``,
reads the bias add's ``x`` twice): ``matmul -> add(bias) -> GELU`` is one group,
its epilogue a small DAG (``lowering/fused.py``).

An elementwise group then absorbs the elementwise producers of its members' other
operands whose one result it is the only user of (ungrouped ops, or the last op of another
elementwise group): an LSTM cell's ``c' = sigmoid(f) * c + sigmoid(i) * tanh(g)`` is one
group, not three (``_absorb_elementwise_producers``).

A group is marked, readably, by a discardable attribute on each member::

    %y = graph.conv2d %x, %w {dlc.group = 0 : i64} : ...
    %b = graph.add %y, %bias {dlc.group = 0 : i64} : ...
    %r = graph.relu %b {dlc.group = 0 : i64} : ...

Members appear in program order; the first is the anchor, the rest its
epilogue; only the last result is used outside. The graph's meaning does not
change (the evaluator ignores the attribute); ``lower-to-loops`` turns each
group into one kernel (``lowering/fused.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from dlc.dialects import graph as g
from dlc.dialects.graph import _reduce_axes
from dlc.dialects.graph_base import GraphOp, is_float
from dlc.dialects.traits import Elementwise, FusionAnchor
from dlc.lowering.fused import GROUP_ATTR


def is_elementwise(op: Operation) -> bool:
    return isinstance(op, GraphOp) and len(op.results) == 1 and op.has_trait(Elementwise)


def is_anchor(op: Operation, dense: bool) -> bool:
    """Can ``op`` start a group (``dense``: conv2d and matmul too)?"""
    anchor = op.get_trait(FusionAnchor)
    return is_elementwise(op) or (anchor is not None and (dense or not anchor.dense))


def _only_user(value: SSAValue) -> Operation | None:
    users = {use.operation for use in value.uses}
    return next(iter(users)) if len(users) == 1 else None


def _row_reduction(op: Operation | None, name: str, x: SSAValue) -> int | None:
    """The axis of ``op = <name>(x)`` over one axis with keepdims, else None."""
    if op is None or op.name != name or op.operands[0] is not x or not op.keepdims:
        return None
    axes = _reduce_axes(op.attrs, len(x.type.get_shape()))
    return axes[0] if len(axes) == 1 else None


def raise_softmax(fn: func.FuncOp) -> int:
    """Rewrite legalize's softmax / log_softmax expansion back into one op (one kernel,
    ``lowering/kernels/softmax.py``) when its intermediates have no other users::

        m = reduce_max(x); d = x - m; e = exp(d); s = reduce_sum(e)
        softmax: e / s                         log_softmax: d - log(s)

    Returns the number of rewrites."""
    count = 0
    for peak in list(fn.body.block.ops):
        if peak.parent is None or not isinstance(peak, g.ReduceMaxOp) or not is_float(peak.results[0].type.element_type):
            continue
        x = peak.operands[0]
        axis = _row_reduction(peak, "graph.reduce_max", x)
        d = _only_user(peak.results[0])
        if axis is None or not isinstance(d, g.SubOp) or list(d.operands) != [x, peak.results[0]]:
            continue
        d_users = {use.operation for use in d.results[0].uses}
        e = next((u for u in d_users if isinstance(u, g.ExpOp)), None)
        e_users = {use.operation for use in e.results[0].uses} if e is not None else set()
        total = next((u for u in e_users if isinstance(u, g.ReduceSumOp)), None)
        if e is None or _row_reduction(total, "graph.reduce_sum", e.results[0]) != axis:
            continue
        if len(d_users) == 1 and len(e_users) == 2:  # softmax: e / s
            last = _only_user(total.results[0])
            if not (isinstance(last, g.DivOp) and list(last.operands) == [e.results[0], total.results[0]]):
                continue
            dead, new = [last, total, e, d, peak], g.SoftmaxOp.make(x, axis=axis)
        elif len(d_users) == 2 and len(e_users) == 1:  # log_softmax: d - log(s)
            log = _only_user(total.results[0])
            last = _only_user(log.results[0]) if isinstance(log, g.LogOp) else None
            if not (isinstance(last, g.SubOp) and list(last.operands) == [d.results[0], log.results[0]]
                    and last in d_users):
                continue
            dead, new = [last, log, total, e, d, peak], g.LogSoftmaxOp.make(x, axis=axis)
        else:
            continue
        if new.results[0].type != last.results[0].type:
            continue
        _replace_chain(fn, new, last, dead)
        count += 1
    return count


def _replace_chain(fn: func.FuncOp, new: Operation, last: Operation, dead: list[Operation]) -> None:
    """`new` in place of the matched chain `dead` (consumers first) ending in `last`."""
    fn.body.block.insert_op_before(new, last)
    new.results[0].name_hint = last.results[0].name_hint
    new.location = last.location  # the source node (legalize located the expansion at it)
    last.results[0].replace_all_uses_with(new.results[0])
    for op in dead:
        op.detach()
        op.erase()


def _trailing_reduction(op: Operation | None, name: str, x: SSAValue) -> int | None:
    """The first axis of ``op = <name>(x)`` over the trailing axes from it, with keepdims."""
    if op is None or op.name != name or op.operands[0] is not x or not op.keepdims:
        return None
    rank = len(x.type.get_shape())
    axes = sorted(_reduce_axes(op.attrs, rank))
    return axes[0] if axes and axes == list(range(axes[0], rank)) else None


def scalar_constant(value: SSAValue) -> float | None:
    """The value of a one-element graph.constant, else None."""
    owner = value.owner
    if not isinstance(owner, g.ConstantOp):
        return None
    try:
        array = owner.array()
    except Exception:  # an elided value: nothing to read
        return None
    return float(array.reshape(-1)[0]) if array.size == 1 else None


def raise_layer_norm(fn: func.FuncOp) -> int:
    """Rewrite legalize's layer_norm expansion back into one op (one kernel,
    ``lowering/kernels/layer_norm.py``: one read of x per pass, no intermediates in memory)
    when its intermediates have no other users::

        m = reduce_mean(x); d = x - m; v = reduce_mean(d * d); r = rsqrt(v + eps)
        y = d * r * scale + bias                 (over the trailing axes from one axis)

    ``scale`` and ``bias`` must broadcast to the normalized shape alone (the op's rule).
    Returns the number of rewrites."""
    count = 0
    for first in list(fn.body.block.ops):
        if first.parent is None or not isinstance(first, g.ReduceMeanOp) or not is_float(first.results[0].type.element_type):
            continue
        x = first.operands[0]
        axis = _trailing_reduction(first, "graph.reduce_mean", x)
        d = _only_user(first.results[0])
        if axis is None or not isinstance(d, g.SubOp) or list(d.operands) != [x, first.results[0]]:
            continue
        d_users = {use.operation for use in d.results[0].uses}
        square = next((u for u in d_users if isinstance(u, g.MulOp) and list(u.operands) == [d.results[0]] * 2), None)
        var = _only_user(square.results[0]) if square is not None else None
        if len(d_users) != 2 or _trailing_reduction(var, "graph.reduce_mean", square.results[0]) != axis:
            continue
        plus = _only_user(var.results[0])
        eps = scalar_constant(plus.operands[1]) if isinstance(plus, g.AddOp) and plus.operands[0] is var.results[0] else None
        inv = _only_user(plus.results[0]) if eps is not None else None
        normed = _only_user(inv.results[0]) if isinstance(inv, g.RsqrtOp) else None
        if not (isinstance(normed, g.MulOp) and list(normed.operands) == [d.results[0], inv.results[0]] and normed in d_users):
            continue
        scaled = _only_user(normed.results[0])
        last = _only_user(scaled.results[0]) if isinstance(scaled, g.MulOp) and scaled.operands[0] is normed.results[0] else None
        if not (isinstance(last, g.AddOp) and last.operands[0] is scaled.results[0]):
            continue
        scale, bias = scaled.operands[1], last.operands[1]
        try:
            new = g.LayerNormOp.make(x, scale, bias, axis=axis, epsilon=eps)
        except Exception:  # scale / bias broadcast with the rows too: not the op's form
            continue
        if new.results[0].type != last.results[0].type:
            continue
        eps_op = plus.operands[1].owner
        _replace_chain(fn, new, last, [last, scaled, normed, inv, plus, var, square, d, first])
        if not eps_op.results[0].uses:
            eps_op.detach()
            eps_op.erase()
        count += 1
    return count


REGION_LIMIT = 16  # ops a single-exit region may hold (erf-GELU needs 4, tanh-GELU 7)


def single_exit_region(value: SSAValue, position: dict[Operation, int],
                       taken: dict[Operation, list[Operation]]) -> list[Operation] | None:
    """The elementwise ops, in program order, that read ``value`` (several times) and
    close into one result nothing else in them feeds: grown one op at a time (the
    earliest user outside the region of a value still read outside it) until exactly
    one value, not ``value`` itself, is read outside. None if an op on the way is not an
    elementwise op of ``value``'s type, is grouped already, or the region grows past
    REGION_LIMIT."""
    region: list[Operation] = []
    inside: set[Operation] = set()
    while True:
        open_values = [v for v in [value] + [op.results[0] for op in region]
                       if any(use.operation not in inside for use in v.uses)]
        if len(open_values) == 1 and open_values[0] is not value:
            return sorted(region, key=position.__getitem__)
        if len(region) >= REGION_LIMIT or not open_values:
            return None
        user = min((use.operation for v in open_values for use in v.uses if use.operation not in inside),
                   key=lambda op: position.get(op, len(position)))
        if (not is_elementwise(user) or user.results[0].type != value.type or user in taken
                or user.attributes.get(GROUP_ATTR) is not None):
            return None
        region.append(user)
        inside.add(user)


def fuse_function(fn: func.FuncOp, dense: bool, first_id: int = 0) -> int:
    """Mark the groups of ``fn`` and of the bodies of its control-flow ops (a scan's body
    is a recurrent cell: its kernels run once per step); returns the next free group id."""
    raise_softmax(fn)
    raise_layer_norm(fn)
    next_id = fuse_block(fn.body.block, dense, first_id)
    for op in fn.walk():
        if isinstance(op, GraphOp) and op.regions:
            for region in op.regions:
                if len(region.blocks) == 1:
                    next_id = fuse_block(region.blocks.first, dense, next_id)
    return next_id


def fuse_block(block: Block, dense: bool, first_id: int = 0) -> int:
    """Mark the groups among ``block``'s ops; returns the next free group id."""
    group_of: dict[Operation, list[Operation]] = {}
    groups: list[list[Operation]] = []
    position = {op: i for i, op in enumerate(block.ops)}
    for op in block.ops:
        if not is_elementwise(op) or op.attributes.get(GROUP_ATTR) is not None or op in group_of:
            continue
        for value in op.operands:
            producer = value.owner
            if not isinstance(producer, GraphOp) or len(producer.results) != 1:
                continue
            if not is_anchor(producer, dense) or value.type != op.results[0].type:
                continue
            if producer in group_of and group_of[producer][-1] is not producer:
                continue  # the producer is inside a group already (defensive)
            joining = [op] if value.has_one_use() else single_exit_region(value, position, group_of)
            if not joining or op not in joining:
                continue
            group = group_of.get(producer)
            if group is None:
                group = [producer]
                groups.append(group)
                group_of[producer] = group
            for member in joining:
                group.append(member)
                group_of[member] = group
            break
    _absorb_elementwise_producers(groups, group_of, position)
    next_id = first_id
    for group in groups:
        for member in group:
            member.attributes[GROUP_ATTR] = IntegerAttr(next_id, i64)
        next_id += 1
    return next_id


def _absorb_elementwise_producers(groups: list[list[Operation]], group_of: dict[Operation, list[Operation]],
                                  position: dict[Operation, int]) -> None:
    """Grow each elementwise group by the elementwise producers of its members' other
    operands: an ungrouped op, or the last op of another elementwise group, whose one
    result has the group's type and no other user. An LSTM cell's ``sigmoid(f) * c +
    sigmoid(i) * tanh(g)`` was three kernels (the tanh and the ``sigmoid(i) * tanh(g)``
    group feeding the add's group), now one per step. The group stays in program order
    and still has one result used outside (its last op, after everything it absorbs)."""
    changed = True
    while changed:
        changed = False
        for group in groups:
            if not is_elementwise(group[0]):
                continue
            out_type = group[-1].results[0].type
            members = set(group)
            for member in list(group):
                for value in member.operands:
                    producer = value.owner
                    if (producer in members or not isinstance(producer, GraphOp) or len(producer.results) != 1
                            or not is_elementwise(producer) or not value.has_one_use() or value.type != out_type):
                        continue
                    other = group_of.get(producer)
                    if other is None:
                        absorbed = [producer]
                    elif other[-1] is producer and is_elementwise(other[0]):
                        absorbed = other
                        groups.remove(other)
                    else:
                        continue
                    group.extend(absorbed)
                    group.sort(key=position.__getitem__)
                    for op in absorbed:
                        group_of[op] = group
                    members.update(absorbed)
                    changed = True
            if changed:
                break


@dataclass(frozen=True)
class FuseOpsPass(ModulePass):
    """Group elementwise ops with their producers (see module docstring)."""

    name = "fuse-ops"

    dense: bool = True
    """Fuse epilogues into conv2d and matmul too."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        next_id = 0
        for fn in op.ops:
            if isinstance(fn, func.FuncOp) and fn.body.blocks and len(fn.body.blocks) == 1:
                next_id = fuse_function(fn, self.dense, next_id)
