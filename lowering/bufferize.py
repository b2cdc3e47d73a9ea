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

A fused group (ops marked ``dlc.group`` by ``fuse-ops``, see
``lowering/fused.py``) is one kernel call at the place of its last op; its
inner results get no buffer, and buffers the group reads live until then.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from xdsl.dialects import func, memref
from xdsl.dialects.builtin import IntegerAttr, TensorType, UnitAttr, i64
from xdsl.ir import Operation, SSAValue

from dlc.dialects import graph, tloop
from dlc.dialects.graph_base import GraphOp
from dlc.lowering.fused import fused_groups, group_extras
from dlc.lowering.kernels.builder import memref_of
from dlc.lowering.memory_plan import Interval, plan
from dlc.weights import WeightStore

# (op, kernel name hint) -> kernel symbol (the kernel cache creates or reuses)
KernelProvider = Callable[[GraphOp, str], str]
CopyProvider = Callable[[TensorType, str], str]


def bufferize_function(
    fn: func.FuncOp,
    store: WeightStore,
    kernel_for: KernelProvider,
    copy_kernel_for: CopyProvider,
    reuse_buffers: bool = True,
) -> func.FuncOp:
    """Build the host function of graph function ``fn`` (``fn`` is not changed)."""
    fn_name = fn.sym_name.data
    graph_block = fn.body.block
    ops = [op for op in graph_block.ops if not isinstance(op, func.ReturnOp)]
    ret = graph_block.last_op
    assert isinstance(ret, func.ReturnOp)
    n_steps = len(ops)

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

    buffer: dict[SSAValue, SSAValue] = dict(zip(graph_block.args, block.args))

    # results computed by a kernel write straight into their output argument
    direct_output: dict[SSAValue, SSAValue] = {}
    copies: list[tuple[SSAValue, SSAValue]] = []  # (graph value, output arg)
    for value, out in zip(ret.operands, outputs):
        computed = isinstance(value.owner, GraphOp) and not isinstance(
            value.owner, (graph.ConstantOp, graph.WeightOp)
        )
        if computed and value not in direct_output:
            direct_output[value] = out
        else:
            copies.append((value, out))

    # a fused group runs at its last op's step; its inner results have no buffer
    group_of = fused_groups(ops)
    index_of = {op: i for i, op in enumerate(ops)}
    step_of = {op: index_of[group_of[op][-1]] if op in group_of else i for i, op in enumerate(ops)}
    inner = {op for op, members in group_of.items() if op is not members[-1]}

    # lifetimes of intermediates: step of definition .. step of last read
    intervals = []
    for i, op in enumerate(ops):
        if isinstance(op, (graph.ConstantOp, graph.WeightOp)) or op in inner:
            continue
        for res in op.results:
            if res in direct_output:
                continue
            end = i
            for use in res.uses:
                user = use.operation
                end = max(end, step_of.get(user, n_steps))
            intervals.append(Interval(res, memref_of(res.type), i, end))
    memory = plan(intervals, reuse=reuse_buffers)
    slots: dict[int, SSAValue] = {}

    def emit(op: Operation) -> Operation:
        block.add_op(op)
        return op

    for i, op in enumerate(ops):
        for b in memory.allocs_before(i):
            alloc = emit(memref.AllocOp([], [], memory.buffers[b].type))
            alloc.results[0].name_hint = f"buf{b}"
            slots[b] = alloc.results[0]
        if isinstance(op, (graph.WeightOp, graph.ConstantOp)):
            if isinstance(op, graph.WeightOp):
                name = op.weight_name.data
            else:
                array = op.array()
                contiguous = array if array.flags.c_contiguous else array.copy()
                name = store.add(f"{fn_name}.const{i}", contiguous)
            w = emit(tloop.WeightOp(name, memref_of(op.out.type)))
            w.results[0].name_hint = "w_" + re.sub(r"\W", "_", name)
            buffer[op.out] = w.results[0]
        elif op in group_of:
            if op is group_of[op][-1]:
                group = group_of[op]
                res = op.results[0]
                buffer[res] = direct_output.get(res) or slots[memory.buffer_of[res]]
                names = "_".join(member.name.split(".", 1)[1] for member in group)
                symbol = kernel_for(group, f"{fn_name}_{i}_{names}")
                inputs = list(group[0].operands) + group_extras(group)
                emit(func.CallOp(symbol, [buffer[v] for v in inputs] + [buffer[res]], []))
        else:
            for res in op.results:
                buffer[res] = direct_output.get(res) or slots[memory.buffer_of[res]]
            symbol = kernel_for(op, f"{fn_name}_{i}_{op.name.split('.', 1)[1]}")
            args = [buffer[v] for v in op.operands] + [buffer[r] for r in op.results]
            emit(func.CallOp(symbol, args, []))
        for b in memory.deallocs_after(i):
            emit(memref.DeallocOp.get(slots[b]))

    for value, out in copies:
        source = buffer[value]
        symbol = copy_kernel_for(value.type, f"{fn_name}_copy")
        emit(func.CallOp(symbol, [source, out], []))
    for b in range(len(memory.buffers)):
        if memory.buffers[b].last >= n_steps:
            emit(memref.DeallocOp.get(slots[b]))
    emit(func.ReturnOp())
    return host

