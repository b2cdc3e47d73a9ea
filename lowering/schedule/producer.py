"""Producer placement: `inline` (across kernels) and `compute_at` (within a kernel).

inline: an elementwise producer kernel computed inside its consumer's loads.

Module-level (it changes kernel signatures and the host function): the
producer's output buffer disappears, its consumer kernel takes the producer's
inputs instead and recomputes each element where it used to load it. TVM's
``compute_inline``.
"""

from __future__ import annotations

from xdsl.dialects import func, memref
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.rewriter import InsertPoint, Rewriter

from dlc.dialects.tloop import ForOp
from dlc.lowering.schedule.affine import accesses
from dlc.lowering.schedule.cache import emit_affine, in_bounds_always, tile_box, tile_nest
from dlc.lowering.schedule.loop_nest import (
    KernelLoops,
    ScheduleError,
    append_to_body,
    body_ops,
    enclosing_loops,
    find_kernel,
    inner_loops,
    is_pure_scalar,
    loop_name,
    make_if,
    value_name,
)


def _elementwise_body(kernel: func.FuncOp) -> tuple[list[ForOp], list[Operation], memref.StoreOp]:
    """The nest, the innermost ops and the single output store of an elementwise kernel."""
    name = kernel.sym_name.data
    out = kernel.body.block.args[-1]
    ops = [op for op in kernel.body.block.ops if not isinstance(op, func.ReturnOp)]
    nest: list[ForOp] = []
    while len(ops) == 1 and isinstance(ops[0], ForOp):
        nest.append(ops[0])
        ops = body_ops(ops[0])
    shape = list(out.type.get_shape())
    if len(nest) != len(shape) or any(isinstance(o, ForOp) for op in ops for o in op.walk()) or any(
        (l.lower, l.upper, l.stride) != (0, n, 1) for l, n in zip(nest, shape)
    ):
        raise ScheduleError(f"inline: @{name} is not an elementwise kernel "
                            f"(one perfect loop nest over its output's shape)")
    stores = [op for op in ops if isinstance(op, memref.StoreOp)]
    if len(stores) != 1 or stores[0] is not ops[-1] or stores[0].memref is not out or \
            list(stores[0].indices) != [l.induction_var for l in nest]:
        raise ScheduleError(f"inline: @{name} must end its innermost body with one store to its "
                            f"output at the loop indices")
    for op in ops[:-1]:
        if not (is_pure_scalar(op) or (isinstance(op, memref.LoadOp) and op.memref is not out)):
            raise ScheduleError(f"inline: @{name} has '{op.name}' in its body (only loads of inputs "
                                f"and scalar arithmetic can be inlined)")
    return nest, ops[:-1], stores[0]


def _calls(module: ModuleOp, callee: str) -> list[func.CallOp]:
    return [op for op in module.walk() if isinstance(op, func.CallOp)
            and op.callee.root_reference.data == callee]


def inline(module: ModuleOp, producer: str) -> str:
    """Inline elementwise kernel @producer into its only consumer; returns the consumer's name."""
    kernel = find_kernel(module, producer)
    nest, compute, store = _elementwise_body(kernel)
    calls = _calls(module, producer)
    if len(calls) != 1:
        raise ScheduleError(f"inline: @{producer} is called {len(calls)} times (exactly one call is supported)")
    call = calls[0]
    buffer = call.arguments[-1]
    if not isinstance(buffer.owner, memref.AllocOp):
        raise ScheduleError(f"inline: the output of @{producer} is not an intermediate buffer "
                            f"(memref.alloc in the host function)")
    users = [u.operation for u in buffer.uses if u.operation is not call]
    consumers = [u for u in users if isinstance(u, func.CallOp)]
    others = [u for u in users if not isinstance(u, (func.CallOp, memref.DeallocOp))]
    if len(consumers) != 1 or others:
        raise ScheduleError(f"inline: the output of @{producer} must feed exactly one kernel call "
                            f"(it has {len(consumers)} and {len(others)} other uses)")
    consumer_call = consumers[0]
    consumer_name = consumer_call.callee.root_reference.data
    consumer = find_kernel(module, consumer_name)
    if len(_calls(module, consumer_name)) != 1:
        raise ScheduleError(f"inline: consumer @{consumer_name} is called more than once")
    positions = [i for i, a in enumerate(consumer_call.arguments) if a is buffer]
    if len(positions) != 1:
        raise ScheduleError(f"inline: @{consumer_name} takes the output of @{producer} more than once")
    position = positions[0]
    param = consumer.body.block.args[position]
    if any(isinstance(u.operation, memref.StoreOp) and u.operation.memref is param for u in param.uses) or \
            any(not isinstance(u.operation, memref.LoadOp) for u in param.uses):
        raise ScheduleError(f"inline: @{consumer_name} does more than load the output of @{producer}")
    # consumer signature: the producer's inputs replace the intermediate buffer
    block = consumer.body.block
    new_params = []
    for k, arg in enumerate(kernel.body.block.args[:-1]):
        new = block.insert_arg(arg.type, position + k)
        new.name_hint = arg.name_hint
        new_params.append(new)
    for use in list(param.uses):
        load = use.operation
        mapping = {l.induction_var: i for l, i in zip(nest, load.indices)}
        mapping |= dict(zip(kernel.body.block.args[:-1], new_params))
        clones = [op.clone(mapping) for op in compute]
        Rewriter.insert_op(clones, InsertPoint.before(load))
        load.results[0].replace_all_uses_with(mapping.get(store.value, store.value))
        load.detach()
        load.erase()
    block.erase_arg(param)
    consumer.update_function_type()
    # host: call the consumer with the producer's inputs, drop the producer and its buffer
    args = list(consumer_call.arguments)
    args[position:position + 1] = list(call.arguments[:-1])
    Rewriter.replace_op(consumer_call, func.CallOp(consumer_name, args, []))
    call.detach()
    call.erase()
    for user in [u.operation for u in buffer.uses]:
        user.detach()
        user.erase()
    buffer.owner.detach()
    buffer.owner.erase()
    kernel.detach()
    kernel.erase()
    return consumer_name


def compute_at(s: KernelLoops, producer, consumer) -> ForOp:
    """Compute the elementwise producer nest `producer` inside loop `consumer`, per iteration
    only for the elements of its buffer that the consumer's body reads (TVM's compute_at).

    The producer is a top-level loop nest of the kernel storing ``t[p1, ..., pr]``
    (one store, at its loop indices, over all of ``t``); it moves to the top of the
    consumer's body as a nest over the read tile (guards keep it in bounds), and
    recomputes overlapping elements, which is exact: the recomputed values are the
    same pure function of inputs nobody writes in between (checked).
    """
    top = s.loop(producer)
    consumer = s.loop(consumer)
    if top.parent is not s.kernel.body.block:
        raise s.fail(top, "compute_at: the producer must be a top-level loop nest of the kernel")
    nest = [top]
    while len(body_ops(nest[-1])) == 1 and isinstance(body_ops(nest[-1])[0], ForOp):
        nest.append(body_ops(nest[-1])[0])
    ops = body_ops(nest[-1])
    store = ops[-1] if ops else None
    if not isinstance(store, memref.StoreOp) or list(store.indices) != [l.induction_var for l in nest]:
        raise s.fail(top, "compute_at: the producer must end its innermost body with one store at its loop indices")
    buffer = store.memref
    shape = list(buffer.type.get_shape())
    if [(l.lower, l.upper, l.stride) for l in nest] != [(0, n, 1) for n in shape]:
        raise s.fail(top, f"compute_at: the producer does not cover {value_name(buffer)} exactly once")
    compute = ops[:-1]
    for op in compute:
        if not (is_pure_scalar(op) or (isinstance(op, memref.LoadOp) and op.memref is not buffer)):
            raise s.fail(top, f"compute_at: the producer has '{op.name}' (only loads and scalar arithmetic move)")
    consumer_top = (enclosing_loops(consumer) + [consumer])[0]
    if consumer_top.parent is not top.parent or s.kernel.body.block.get_operation_index(consumer_top) <= \
            s.kernel.body.block.get_operation_index(top):
        raise s.fail(consumer, f"compute_at: it does not come after the producer nest '{loop_name(top)}'")
    # what the producer reads must not change before the consumer runs; its buffer is read
    # only inside the consumer loop and written only by the producer
    inputs = [op.memref for op in compute if isinstance(op, memref.LoadOp)]
    after = []
    op = top.next_op
    while op is not None:
        after.append(op)
        op = op.next_op
    for op in after:
        for walked in op.walk():
            if not isinstance(walked, (memref.LoadOp, memref.StoreOp)):
                continue
            if isinstance(walked, memref.StoreOp) and any(walked.memref is b for b in inputs + [buffer]):
                raise s.fail(consumer, f"compute_at: {value_name(walked.memref)} is written after the producer")
            if walked.memref is buffer and not any(p is consumer for p in enclosing_loops(walked)):
                raise s.fail(consumer, f"compute_at: {value_name(buffer)} is also read outside the loop")
    parallel = [l for l in enclosing_loops(consumer) + [consumer] if l.loop_kind == "parallel"]
    if parallel:
        raise s.fail(consumer, f"compute_at: {value_name(buffer)} would be written by all iterations of "
                               f"parallel loop '{loop_name(parallel[0])}' (apply compute_at before parallel)")
    reads = [a for a in accesses(consumer) if a.buffer is buffer]
    if not reads:
        raise s.fail(consumer, f"compute_at: {value_name(buffer)} is not read inside the loop")
    if any(a.index is None for a in reads):
        raise s.fail(consumer, f"compute_at: an index of {value_name(buffer)} is not affine in the loops")
    inner_ids = {id(l) for l in inner_loops(consumer)}
    prologue, starts, extents, guarded = [], [], [], []
    for d in range(len(shape)):
        box = tile_box([a.index for a in reads], d, inner_ids)
        if box is None:
            raise s.fail(consumer, f"compute_at: the reads of {value_name(buffer)} have different origins in dimension {d}")
        origin, extent = box
        emitted, value = emit_affine(origin)
        prologue += emitted
        starts.append(value)
        extents.append(extent)
        guarded.append(not in_bounds_always(origin, extent, shape[d]))
    # the moved nest keeps the producer's loop names (the old nest goes away)
    loops, body, indices, cond = tile_nest([loop_name(l) for l in nest], extents, starts, shape, guarded)
    mapping = {old.induction_var: index for old, index in zip(nest, indices)}
    moved = [op.clone(mapping) for op in compute]
    moved.append(memref.StoreOp.get(mapping.get(store.value, store.value), buffer, [mapping[l.induction_var] for l in nest]))
    append_to_body(loops[-1], body + ([make_if(cond, moved)] if cond is not None else moved))
    top.detach()
    top.erase(safe_erase=False)
    Rewriter.insert_op(prologue + [loops[0]], InsertPoint.at_start(consumer.body.block))
    return loops[0]
