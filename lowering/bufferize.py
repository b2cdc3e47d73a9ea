"""Bufferization: a graph function becomes a ``tloop.host`` function.

Tensors become buffers (destination-passing style):

* graph inputs -> the host's first ``tloop.num_inputs`` memref arguments;
* graph results -> one extra memref argument each, allocated by the caller;
  the op computing a result writes straight into it;
* ``graph.weight`` and ``graph.constant`` -> ``tloop.weight "name"`` (constants
  are added to the module's weights store, never copied into IR);
* every other value -> an intermediate buffer from the memory planner
  (``memref.alloc`` before its first definition, ``memref.dealloc`` after its
  last use).

A result that is a function input, a weight/constant, or a value already
written to another result is copied into its output by a ``copy`` kernel.

Views: ``graph.reshape`` / ``squeeze`` / ``unsqueeze`` change only the shape of a
row-major buffer, so (outside fused groups) they are no kernel: the result is a
``memref.reinterpret_cast`` of the operand's buffer to the new static shape
(offset 0, row-major strides; lower-to-llvm lowers it to the same pointer). The
view has no buffer of its own: its last read counts as a read of the operand's
buffer, so the memory planner keeps that buffer alive (and unreused) as long
as any view of it is (``_view_roots``). Views of inputs and weights are fine,
as nothing writes them. A reshape whose result must land in a destination (a
function result, an if result) is no view of its operand: when that operand is
computed here and read by nothing else, it is computed straight into the
destination seen through a view with the operand's shape, and the reshape does
nothing (``_forward_into_destinations``); otherwise (an input, a weight, a
value read elsewhere too) the reshape kernel copies it there. Copies and
loop-state updates compare buffers by their root storage, so a view of a
buffer counts as that buffer (no copy onto itself, swaps staged).

A fused group (ops marked ``dlc.group`` by ``fuse-ops``, see
``lowering/fused.py``) is one kernel call at the place of its last op; its
inner results get no buffer, and buffers the group reads live until then.

Control flow (graph.if / graph.loop / graph.scan) stays control flow in the
host function. Each body is bufferized like a function of its own (same code,
``_BlockEmitter``), inside the scf region, with its own memory plan. An if branch allocates and frees its intermediates inside
the branch; a loop body's are allocated once before the loop and freed after
it (no malloc per iteration): every iteration defines them before reading
them, so nothing flows between iterations except the buffers named below.

* ``graph.if`` -> ``scf.if`` on the loaded condition; each branch writes its
  yielded values straight into the if's result buffers (as a function writes
  its outputs).
* ``graph.loop`` -> ``scf.while`` on ``i < min(M, max_iterations) and cond``
  (the ONNX rule) with ``i`` as the loop-carried i64. Carried tensors live in
  the loop's result buffers (the *state*): initialised by a copy before the
  loop, read by the body, overwritten after each iteration from the buffers
  the body yielded (the body never writes the state while it reads it). The
  condition lives in a ``memref<i1>`` and ``i`` is stored into a
  ``memref<i64>`` the body reads as its iteration argument. Scan elements are
  written row ``i`` of the stacked result by a row kernel; the stacked buffers
  are zeroed first, so rows of iterations that did not run are zero (the
  graph dialect's rule: its scan outputs have the static ``max_iterations``
  rows).
* ``graph.scan`` -> ``scf.for`` over the sequence; the row index (``t`` or
  ``length-1-t`` for reverse directions) is stored into a ``memref<i64>`` that
  the row kernels read: scan inputs are copied into row buffers before the
  body, scan elements are written into the stacked results after it.

After an iteration, rows are written before states are overwritten (a body may
yield an old state as a scan element), and a yielded value that is itself
another state buffer is copied through a temporary first (a body that swaps
two carried values).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import FusedLoc, IndexType, IntegerAttr, NoneAttr, TensorType, UnitAttr, i1, i64
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.traits import ConstantLike

from dlc.dialects import graph, tloop
from dlc.dialects.graph_base import GraphOp
from dlc.dialects.traits import ViewLike
from dlc.lowering.fused import fused_groups, group_extras
from dlc.lowering.kernels.builder import memref_of
from dlc.lowering.memory_plan import Interval, plan
from dlc.lowering.memref_layout import row_major
from dlc.weights import WeightStore

# (op, kernel name hint) -> kernel symbol (the kernel cache creates or reuses)
KernelProvider = Callable[[GraphOp, str], str]
CopyProvider = Callable[[TensorType, str], str]
# a func.call of a BYOC partition (transforms/partition_graph.py) -> the external symbol
ExternalProvider = Callable[[func.CallOp], str]
# (kind "read_row"|"write_row"|"zero", type, axis, name hint) -> kernel symbol
HelperProvider = Callable[[str, TensorType, int, str], str]

INDEX = IndexType()
_REGION_OPS = (graph.IfOp, graph.LoopOp, graph.ScanOp)


def _is_view(op) -> bool:
    """Whether ``op``'s result is its operand's row-major data under another
    static shape (it declares ``ViewLike``)."""
    return isinstance(op, Operation) and op.has_trait(ViewLike)


@dataclass
class _Context:
    """What every block of one function shares."""

    fn_name: str
    store: WeightStore
    kernel_for: KernelProvider
    copy_kernel_for: CopyProvider
    helper_kernel_for: HelperProvider | None
    reuse_buffers: bool
    views: bool = True
    external_for: ExternalProvider | None = None
    # host view value -> the buffer it reinterprets (never itself a view)
    storage: dict[SSAValue, SSAValue] = field(default_factory=dict)

    def root(self, buffer: SSAValue) -> SSAValue:
        return self.storage.get(buffer, buffer)


class _BlockEmitter:
    """Emits the host code of one graph block (a function body or a region body)
    at the end of ``target`` (before nothing: the caller adds terminators)."""

    def __init__(self, ctx: _Context, target: Block, prefix: str,
                 hoist_into: _BlockEmitter | None = None):
        self.ctx = ctx
        self.target = target
        self.prefix = prefix
        # a loop body allocates its buffers in the enclosing block, before the
        # loop, and the caller frees them after it (see scratch/free_hoisted)
        self.hoist_into = hoist_into
        self.hoisted: list[SSAValue] = []

    # -- small emission helpers --------------------------------------------------------
    def emit(self, op: Operation) -> Operation:
        self.target.add_op(op)
        return op

    def value(self, op: Operation) -> SSAValue:
        return self.emit(op).results[0]

    def copy(self, source: SSAValue, dest: SSAValue, t: TensorType) -> None:
        if self.ctx.root(source) is self.ctx.root(dest):
            return  # a view spans its whole buffer: same bytes, same order
        symbol = self.ctx.copy_kernel_for(t, f"{self.ctx.fn_name}_copy")
        self.emit(func.CallOp(symbol, [source, dest], []))

    def helper(self, kind: str, t: TensorType, axis: int, args: list[SSAValue]) -> None:
        if self.ctx.helper_kernel_for is None:
            raise AssertionError("control flow needs the kernel cache's helper kernels")
        symbol = self.ctx.helper_kernel_for(kind, t, axis, f"{self.ctx.fn_name}_{kind}")
        self.emit(func.CallOp(symbol, args, []))

    def load_scalar(self, buffer: SSAValue) -> SSAValue:
        """The one element of a one-element buffer (any rank)."""
        rank = len(buffer.type.get_shape())
        zero = [self.value(arith.ConstantOp(IntegerAttr(0, INDEX)))] if rank else []
        return self.value(memref.LoadOp.get(buffer, zero * rank))

    def view(self, source: SSAValue, t: TensorType) -> SSAValue:
        """``source``'s data as a row-major memref of ``t``'s shape (no copy)."""
        shape = list(t.get_shape())
        result = self.value(memref.ReinterpretCastOp(
            source, [], [], [], [0], shape, row_major(shape), memref_of(t)))
        result.name_hint = "view"
        self.ctx.storage[result] = self.ctx.root(source)
        return result

    def alloc(self, t, hint: str) -> SSAValue:
        buffer = self.value(memref.AllocOp([], [], t))
        buffer.name_hint = hint
        return buffer

    def scratch(self, t, hint: str) -> SSAValue:
        """A buffer used within one run of this block: in a loop body it is
        allocated once before the loop (no malloc per iteration)."""
        if self.hoist_into is None:
            return self.alloc(t, hint)
        buffer = self.hoist_into.scratch(t, hint)  # out of nested loops too
        self.hoisted.append(buffer)
        return buffer

    def release(self, buffer: SSAValue) -> None:
        """Free a ``scratch`` buffer (hoisted ones are freed by free_hoisted)."""
        if buffer not in self.hoisted:
            self.emit(memref.DeallocOp.get(buffer))

    def free_hoisted(self, body: _BlockEmitter) -> None:
        """After a loop: free what its body hoisted here (unless hoisted further)."""
        for buffer in body.hoisted:
            self.release(buffer)

    # -- one block --------------------------------------------------------------------
    def run(
        self,
        graph_block: Block,
        arg_buffers: list[SSAValue],
        destinations: list[SSAValue | None],
        after: Callable[[list[SSAValue]], None] | None = None,
    ) -> None:
        """Emit ``graph_block``'s ops. Block arguments live in ``arg_buffers``; the
        terminator's k-th value goes to ``destinations[k]`` (computed into it
        directly, or copied), or, where that is None, stays in its own buffer and
        is handed to ``after`` (which runs before the block's buffers are freed)."""
        ctx = self.ctx
        ops = [op for op in graph_block.ops if op is not graph_block.last_op]
        term = graph_block.last_op
        assert isinstance(term, (func.ReturnOp, graph.YieldOp))
        term_values = list(term.operands)
        n_steps = len(ops)
        buffer: dict[SSAValue, SSAValue] = dict(zip(graph_block.args, arg_buffers, strict=True))

        # a fused group runs at its last op's step; its inner results have no buffer
        group_of = fused_groups(ops)

        # results computed by a kernel write straight into their destination
        direct_output: dict[SSAValue, SSAValue] = {}
        copies: list[tuple[SSAValue, SSAValue]] = []  # (graph value, destination)
        for value, dest in zip(term_values, destinations, strict=True):
            if dest is None:
                continue
            if _computed(value) and value not in direct_output:
                direct_output[value] = dest
            else:
                copies.append((value, dest))
        # a reshape into a destination whose operand nothing else reads: the
        # operand is computed into the destination viewed with its own shape
        viewed_into = _forward_into_destinations(direct_output, group_of) if ctx.views else {}
        forwarded = {value.owner for value in viewed_into.values()}

        def destination(res: SSAValue) -> SSAValue | None:
            """Where ``res`` is computed when that is a destination (or a view of one)."""
            if res in viewed_into:
                return self.view(direct_output[res], res.type)
            return direct_output.get(res)
        index_of = {op: i for i, op in enumerate(ops)}
        step_of = {op: index_of[group_of[op][-1]] if op in group_of else i for i, op in enumerate(ops)}
        inner = {op for op, members in group_of.items() if op is not members[-1]}

        view_of = _view_roots(ops, group_of, direct_output) if ctx.views else {}

        # lifetimes of intermediates: step of definition .. step of last read
        # (a read of a view is a read of the value whose buffer it reinterprets)
        last_read: dict[SSAValue, int] = {}
        for i, op in enumerate(ops):
            for res in op.results:
                end = i
                for use in res.uses:
                    end = max(end, step_of.get(use.operation, n_steps))
                root = view_of.get(res, res)
                last_read[root] = max(last_read.get(root, end), end)
        intervals = []
        for i, op in enumerate(ops):
            if op.has_trait(ConstantLike) or op in inner:
                continue
            for res in op.results:
                if res in direct_output or res in view_of:
                    continue
                intervals.append(Interval(res, memref_of(res.type), i, last_read[res]))
        memory = plan(intervals, reuse=ctx.reuse_buffers)
        slots: dict[int, SSAValue] = {}

        for i, op in enumerate(ops):
            for b in memory.allocs_before(i):
                slots[b] = self.scratch(memory.buffers[b].type, f"buf{b}")
            if isinstance(op, (graph.WeightOp, graph.ConstantOp)):
                if isinstance(op, graph.WeightOp):
                    name = op.weight_name.data
                else:
                    array = op.array()
                    contiguous = array if array.flags.c_contiguous else array.copy()
                    name = ctx.store.add(f"{self.prefix}.const{i}", contiguous)
                w = self.value(tloop.WeightOp(name, memref_of(op.out.type)))
                w.name_hint = "w_" + re.sub(r"\W", "_", name)
                buffer[op.out] = w
            elif op.results and op.results[0] in view_of:
                buffer[op.results[0]] = self.view(buffer[op.operands[0]], op.results[0].type)
            elif op in forwarded:  # its operand was computed into its destination
                if op.results[0] not in viewed_into:
                    buffer[op.results[0]] = direct_output[op.results[0]]
            elif op in group_of:
                if op is group_of[op][-1]:
                    group = group_of[op]
                    res = op.results[0]
                    buffer[res] = destination(res) or slots[memory.buffer_of[res]]
                    names = "_".join(member.name.split(".", 1)[1] for member in group)
                    symbol = ctx.kernel_for(group, f"{self.prefix}_{i}_{names}")
                    inputs = list(group[0].operands) + group_extras(group)
                    call = self.emit(func.CallOp(symbol, [buffer[v] for v in inputs] + [buffer[res]], []))
                    # the call is located at its ops (source node names: the profile's table)
                    call.location = FusedLoc([member.location for member in group], NoneAttr())
            else:
                for res in op.results:
                    buffer[res] = destination(res) or slots[memory.buffer_of[res]]
                operands = [buffer[v] for v in op.operands]
                results = [buffer[r] for r in op.results]
                if isinstance(op, _REGION_OPS):
                    _CONTROL_FLOW[type(op)](self, op, operands, results, f"{self.prefix}_{i}")
                elif isinstance(op, func.CallOp):  # a BYOC partition: its external kernel
                    if ctx.external_for is None:
                        raise AssertionError("a call in a graph function needs external_for")
                    self.emit(func.CallOp(ctx.external_for(op), operands + results, [])).location = op.location
                else:
                    symbol = ctx.kernel_for(op, f"{self.prefix}_{i}_{op.name.split('.', 1)[1]}")
                    self.emit(func.CallOp(symbol, operands + results, [])).location = op.location
            for b in memory.deallocs_after(i):
                self.release(slots[b])

        for value, dest in copies:
            self.copy(buffer[value], dest, value.type)
        if after is not None:
            after([buffer[v] for v in term_values])
        for b in range(len(memory.buffers)):
            if memory.buffers[b].last >= n_steps:
                self.release(slots[b])

    # -- region bodies ----------------------------------------------------------------
    def nested(self, target: Block, prefix: str, loop: bool = False) -> _BlockEmitter:
        """The emitter of a region body (a loop body hoists its allocations here)."""
        return _BlockEmitter(self.ctx, target, prefix, self if loop else None)

    def update_states(self, yielded: list[SSAValue], states: list[SSAValue],
                      types: list[TensorType]) -> None:
        """states[k] = yielded[k], as if all at once (see the module docstring)."""
        root = self.ctx.root
        state_set = {root(s) for s in states}
        staged: list[tuple[SSAValue, bool]] = []
        for k, (source, t) in enumerate(zip(yielded, types)):
            if root(source) in state_set and root(source) is not root(states[k]):
                temp = self.scratch(memref_of(t), "staged")
                self.copy(source, temp, t)
                staged.append((temp, True))
            else:
                staged.append((source, False))
        for (source, is_temp), dest, t in zip(staged, states, types):
            self.copy(source, dest, t)
            if is_temp:
                self.release(source)


def _computed(value: SSAValue) -> bool:
    """Whether an op of the block computes ``value`` (into a buffer it is given)."""
    return (isinstance(value.owner, GraphOp) and not value.owner.has_trait(ConstantLike)) \
        or isinstance(value.owner, func.CallOp)


def _forward_into_destinations(direct_output: dict[SSAValue, SSAValue],
                               group_of) -> dict[SSAValue, SSAValue]:
    """For each reshape written into a destination whose operand is computed
    here and read by nothing else: that operand is computed into the destination
    instead (through a view), and the reshape does nothing. Adds the operands
    to ``direct_output``; returns {operand: the reshape's result} (through
    chains of reshapes)."""
    viewed_into: dict[SSAValue, SSAValue] = {}
    for value, dest in list(direct_output.items()):
        while _is_view(value.owner) and value.owner not in group_of:
            source = value.owner.operands[0]
            if not _computed(source) or source in direct_output or not source.has_one_use():
                break
            direct_output[source] = dest
            viewed_into[source] = value
            value = source
    return viewed_into


def _view_roots(ops: list[Operation], group_of, direct_output) -> dict[SSAValue, SSAValue]:
    """Results of view ops that become views -> the graph value owning their
    storage (through chains of views). Not views: members of fused groups (one
    kernel) and results written straight into a destination."""
    roots: dict[SSAValue, SSAValue] = {}
    for op in ops:
        if _is_view(op) and op not in group_of and op.results[0] not in direct_output:
            source = op.operands[0]
            roots[op.results[0]] = roots.get(source, source)
    return roots


# -- graph.if ---------------------------------------------------------------------------
def _emit_if(em: _BlockEmitter, op: graph.IfOp, operands, results, prefix: str) -> None:
    cond = em.load_scalar(operands[0])
    branches = []
    for region, tag in ((op.then_body, "then"), (op.else_body, "else")):
        block = Block()
        em.nested(block, f"{prefix}_{tag}").run(region.blocks.first, operands[1:], list(results))
        block.add_op(scf.YieldOp())
        branches.append(Region(block))
    em.emit(scf.IfOp(cond, [], branches[0], branches[1]))


# -- graph.loop -------------------------------------------------------------------------
def _emit_loop(em: _BlockEmitter, op: graph.LoopOp, operands, results, prefix: str) -> None:
    carried_n = op.num_carried
    bound = op.max_iterations
    carried_types = [r.type for r in op.results[:carried_n]]
    states, stacked = list(results[:carried_n]), list(results[carried_n:])
    stacked_types = [r.type for r in op.results[carried_n:]]
    readonly = operands[2 + carried_n:]

    trips = em.load_scalar(operands[0])
    if trips.type != i64:
        trips = em.value(arith.ExtSIOp(trips, i64)) if trips.type.width.data < 64 else trips
    limit_bound = em.value(arith.ConstantOp(IntegerAttr(bound, i64)))
    limit = em.value(arith.MinSIOp(trips, limit_bound))
    limit.name_hint = "trips"
    cond_state = em.scratch(memref_of(TensorType(i1, [])), "cond")
    em.emit(memref.StoreOp.get(em.load_scalar(operands[1]), cond_state, []))
    iteration = em.scratch(memref_of(TensorType(i64, [])), "iteration")
    for init, state, t in zip(operands[2:2 + carried_n], states, carried_types):
        em.copy(init, state, t)
    for out, t in zip(stacked, stacked_types):
        if bound:
            em.helper("zero", t, 0, [out])

    # run while i < min(M, max_iterations) and cond
    before = Block(arg_types=[i64])
    current = memref.LoadOp.get(cond_state, [])
    in_range = arith.CmpiOp(before.args[0], limit, "slt")
    go = arith.AndIOp(current, in_range)
    before.add_ops([current, in_range, go, scf.ConditionOp(go, before.args[0])])

    after = Block(arg_types=[i64])
    i = after.args[0]
    i.name_hint = "i"
    body_em = em.nested(after, f"{prefix}_body", loop=True)
    body_em.emit(memref.StoreOp.get(i, iteration, []))

    def finish_iteration(yielded: list[SSAValue]) -> None:
        scans = yielded[1 + carried_n:]
        for row, out, t in zip(scans, stacked, stacked_types):
            body_em.helper("write_row", t, 0, [row, iteration, out])
        body_em.update_states([yielded[0], *yielded[1:1 + carried_n]], [cond_state, *states],
                              [TensorType(i1, []), *carried_types])

    body = op.body.blocks.first
    body_em.run(body, [iteration, cond_state, *states, *readonly],
                [None] * len(body.last_op.operands), finish_iteration)
    one = body_em.value(arith.ConstantOp(IntegerAttr(1, i64)))
    body_em.emit(scf.YieldOp(body_em.value(arith.AddiOp(i, one))))

    start = em.value(arith.ConstantOp(IntegerAttr(0, i64)))
    em.emit(scf.WhileOp([start], [i64], Region(before), Region(after)))
    em.free_hoisted(body_em)
    em.release(cond_state)
    em.release(iteration)


# -- graph.scan -------------------------------------------------------------------------
def _emit_scan(em: _BlockEmitter, op: graph.ScanOp, operands, results, prefix: str) -> None:
    operand_types = [o.type for o in op.operands]
    num_out = len(op.results) - op.num_carried
    carried_n, n_in, in_axes, in_dirs, out_axes, out_dirs, length = graph.ScanOp.layout(
        op.attrs, operand_types, num_out)
    carried_types = operand_types[:carried_n]
    states, stacked = list(results[:carried_n]), list(results[carried_n:])
    stacked_types = [r.type for r in op.results[carried_n:]]
    scan_inputs = operands[carried_n:carried_n + n_in]
    readonly = operands[carried_n + n_in:]
    body = op.body.blocks.first
    row_args = body.args[carried_n:carried_n + n_in]
    out_axes = [a % len(t.get_shape()) for a, t in zip(out_axes, stacked_types)]

    for init, state, t in zip(operands[:carried_n], states, carried_types):
        em.copy(init, state, t)
    index_t = TensorType(i64, [])
    indices = {d: em.scratch(memref_of(index_t), "reverse_index" if d else "index")
               for d in sorted({*in_dirs, *out_dirs})}
    rows = [em.scratch(memref_of(a.type), f"slice{k}") for k, a in enumerate(row_args)]

    block = Block(arg_types=[INDEX])
    t_index = block.args[0]
    t_index.name_hint = "t"
    body_em = em.nested(block, f"{prefix}_body", loop=True)
    t_value = body_em.value(arith.IndexCastOp(t_index, i64))
    for reverse, buffer in indices.items():
        row = t_value
        if reverse:
            last = body_em.value(arith.ConstantOp(IntegerAttr(length - 1, i64)))
            row = body_em.value(arith.SubiOp(last, t_value))
        body_em.emit(memref.StoreOp.get(row, buffer, []))
    for x, x_type, axis, reverse, row in zip(scan_inputs, operand_types[carried_n:], in_axes, in_dirs, rows):
        body_em.helper("read_row", x_type, axis, [x, indices[reverse], row])

    def finish_iteration(yielded: list[SSAValue]) -> None:
        for value, out, t, axis, reverse in zip(yielded[carried_n:], stacked, stacked_types,
                                                out_axes, out_dirs):
            body_em.helper("write_row", t, axis, [value, indices[reverse], out])
        body_em.update_states(yielded[:carried_n], states, carried_types)

    body_em.run(body, [*states, *rows, *readonly], [None] * len(body.last_op.operands),
                finish_iteration)
    body_em.emit(scf.YieldOp())

    lower = em.value(arith.ConstantOp(IntegerAttr(0, INDEX)))
    upper = em.value(arith.ConstantOp(IntegerAttr(length, INDEX)))
    step = em.value(arith.ConstantOp(IntegerAttr(1, INDEX)))
    em.emit(scf.ForOp(lower, upper, step, [], block))
    em.free_hoisted(body_em)
    for buffer in [*indices.values(), *rows]:
        em.release(buffer)


_CONTROL_FLOW = {graph.IfOp: _emit_if, graph.LoopOp: _emit_loop, graph.ScanOp: _emit_scan}


def bufferize_function(
    fn: func.FuncOp,
    store: WeightStore,
    kernel_for: KernelProvider,
    copy_kernel_for: CopyProvider,
    reuse_buffers: bool = True,
    helper_kernel_for: HelperProvider | None = None,
    views: bool = True,
    external_for: ExternalProvider | None = None,
) -> func.FuncOp:
    """Build the host function of graph function ``fn`` (``fn`` is not changed)."""
    fn_name = fn.sym_name.data
    graph_block = fn.body.block
    ret = graph_block.last_op
    assert isinstance(ret, func.ReturnOp)

    in_types = [memref_of(a.type) for a in graph_block.args]
    out_types = [memref_of(v.type) for v in ret.operands]
    host = func.FuncOp(fn_name, (in_types + out_types, []))
    host.attributes["tloop.host"] = UnitAttr()
    host.attributes["tloop.num_inputs"] = IntegerAttr(len(in_types), i64)
    block = host.body.block
    for k, (arg, garg) in enumerate(zip(block.args, graph_block.args)):
        arg.name_hint = garg.name_hint or f"arg{k}"
    outputs = list(block.args[len(in_types):])
    for k, out in enumerate(outputs):
        out.name_hint = f"result{k}"

    ctx = _Context(fn_name, store, kernel_for, copy_kernel_for, helper_kernel_for, reuse_buffers, views,
                   external_for=external_for)
    _BlockEmitter(ctx, block, fn_name).run(graph_block, list(block.args[:len(in_types)]), outputs)
    block.add_op(func.ReturnOp())
    return host
