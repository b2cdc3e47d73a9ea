"""lower-to-llvm handlers of control flow: ``tloop.for`` (header/body/exit blocks; the
latch carries ``dlc.loop``/``dlc.vector_width`` hints that backends/llvm/translate.py
turns into ``llvm.loop`` metadata), parallel loops outlined onto libgomp's
``GOMP_parallel``, ``scf.if``/``scf.for``/``scf.while`` and ``func.call``/``return``.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import llvm
from xdsl.dialects.builtin import IntegerAttr, IntegerType, StringAttr, i32, i64
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from dlc.dialects import tloop
from dlc.dialects.tloop import VECTOR_LANES_ATTR
from dlc.lowering.to_llvm.function import (
    STATUS_EXTERNAL_BASE,
    LOOP_ATTR,
    NUM_THREADS_GLOBAL,
    PTR,
    VECTOR_BYTES,
    VECTOR_WIDTH_ATTR,
    FunctionLowering,
    UnsupportedError,
    handles,
    llvm_type,
)
from dlc.lowering.to_llvm.scalar import LIBM


# a serial loop the schedule wants kept rolled (llvm.loop.unroll.disable): LLVM's full
# unroll of a short reduction loop lets it reassociate the integer sums of every step
# into one tree of live partial sums (defaults_quantized.py: the AVX2 dot)
ROLLED_ATTR = "dlc.rolled"


def lower_for(lo: FunctionLowering, op: tloop.ForOp) -> None:
    """A serial loop with its schedule's hints, or an outlined parallel one."""
    if "dlc.int8_dot" in op.attributes:  # the u8 x s8 dot of the integer GEMMs (int8_dot.py)
        from dlc.lowering.to_llvm.int8_dot import lower_dot_loop

        lower_dot_loop(lo, op)
        return
    if op.loop_kind == "parallel" and not lo.in_parallel and op.trip_count > 1 and not lo.state.bare_metal:
        lower_parallel_for(lo, op)  # (bare metal: no threads, the plain loop below)
        return
    hints: dict[str, Attribute] = {}
    if op.loop_kind in ("vectorized", "unrolled"):
        hints[LOOP_ATTR] = StringAttr(op.loop_kind)
    elif ROLLED_ATTR in op.attributes:
        hints[LOOP_ATTR] = StringAttr("rolled")
    if op.loop_kind == "vectorized":
        if any(nested.name in LIBM for nested in op.walk()):
            # a libm call cannot be vectorized: a hint would only make LLVM print a remark
            hints.pop(LOOP_ATTR)
        else:
            lanes = op.attributes.get(VECTOR_LANES_ATTR)
            width = lanes.value.data if isinstance(lanes, IntegerAttr) else _vector_width(op)
            hints[VECTOR_WIDTH_ATTR] = IntegerAttr(width, i64)
            if "dlc.strided_vector" in op.attributes:
                # a pool's strided interior (defaults_elementwise.STRIDED_VECTOR_ATTR): often
                # under 16 iterations, which LLVM leaves scalar when it needs alias checks
                hints[LOOP_ATTR] = StringAttr("vectorized-forced")
            if "dlc.whole_vector" in op.attributes:  # the loop is one vector (defaults_nchwc.py)
                hints[VECTOR_WIDTH_ATTR] = IntegerAttr(op.trip_count, i64)
                hints[LOOP_ATTR] = StringAttr("vectorized-whole")
    start = lo.const(op.lower, i64)
    serial_loop(lo, start, lo.const(op.upper, i64), op.stride, hints,
                lambda iv: loop_body(lo, op, iv))


def serial_loop(lo: FunctionLowering, start: SSAValue, stop: SSAValue, step: int,
                hints: dict[str, Attribute], body: Callable[[SSAValue], None]) -> None:
    header = lo.new_block((i64,))
    body_block = lo.new_block()
    exit_block = Block()  # added after the body's blocks: printed in program order
    lo.emit(llvm.BrOp(header, start))
    lo.block = header
    iv = header.args[0]
    lo.emit(llvm.CondBrOp(lo.icmp("slt", iv, stop), body_block, [], exit_block, []))
    lo.block = body_block
    body(iv)
    step_value = lo.const(step, i64)
    latch = llvm.BrOp(header, lo.emit(llvm.AddOp(iv, step_value)))
    latch.attributes.update(hints)
    lo.emit(latch)
    lo.continue_in(exit_block)


def loop_body(lo: FunctionLowering, op: tloop.ForOp, iv: SSAValue) -> None:
    lo.values[op.induction_var] = iv
    lo.lower_ops(op.body.block)


def lower_parallel_for(lo: FunctionLowering, op: tloop.ForOp) -> None:
    """``op`` outlined into ``@<fn>_par<N>(ptr ctx)``, run through ``GOMP_parallel``:
    each thread takes one contiguous chunk of the iterations."""
    state = lo.state
    outlined_name = f"{lo.fn_name}_par{state.parallel_count}"
    state.parallel_count += 1
    # constants are re-created in the outlined function, not passed: a value read
    # from the context struct is opaque to LLVM (a constant stride would become a
    # runtime one: no folding, no interleaved vectorization)
    known = [v for v in _live_ins(op) if _static_live_in(v) is not None]
    live_ins = [v for v in _live_ins(op) if _static_live_in(v) is None]
    # caller: pack live-ins into a struct, run GOMP_parallel
    # a body that may fail (a checked allocation, a call of a status function) gets an
    # i32 status field after the live-ins, which a failing thread sets
    may_fail = any(o.name == "memref.alloc" or (o.name == "func.call" and o.callee.string_value()
                   in state.status_functions) for o in op.walk())
    fields = [llvm_type(v.type) for v in live_ins] + ([i32] if may_fail else [])
    context_type = llvm.LLVMStructType.from_type_list(fields or [i64])
    ctx = lo.entry_alloca(1, context_type)
    for i, value in enumerate(live_ins):
        slot = lo.emit(llvm.GEPOp(ctx, [0, i], context_type, inbounds=True))
        lo.emit(llvm.StoreOp(lo.v(value), slot))
    if may_fail:
        status_ptr = lo.emit(llvm.GEPOp(ctx, [0, len(live_ins)], context_type, inbounds=True))
        lo.emit(llvm.StoreOp(lo.const(0, i32), status_ptr))
    fn_ptr = lo.emit(llvm.AddressOfOp(outlined_name, PTR))
    threads_ptr = lo.emit(llvm.AddressOfOp(NUM_THREADS_GLOBAL, PTR))
    threads = lo.emit(llvm.LoadOp(threads_ptr, i32))
    # 1 thread: a plain call, libgomp's pool is never entered (a forked child's
    # must not be: runtime/native.py "fork"); omp_get_num_threads() is 1 outside a region
    serial, parallel, joined = lo.new_block(), lo.new_block(), Block()
    lo.emit(llvm.CondBrOp(lo.icmp("eq", threads, lo.const(1, i32)), serial, [], parallel, []))
    lo.block = serial
    lo.emit(llvm.CallOp(outlined_name, ctx))
    lo.emit(llvm.BrOp(joined))
    lo.block = parallel
    lo.call("GOMP_parallel", [fn_ptr, ctx, threads, lo.const(0, i32)], None)
    lo.emit(llvm.BrOp(joined))
    lo.continue_in(joined)
    if may_fail:
        status = lo.emit(llvm.LoadOp(status_ptr, i32))
        lo.fail_if(lo.icmp("ne", status, lo.const(0, i32)), status)

    # callee: unpack, take this thread's chunk, run the serial loop
    body = Region(Block(arg_types=(PTR,)))
    inner = FunctionLowering(state, lo.fn_name, body, in_parallel=True)
    arg = body.blocks[0].args[0]
    if may_fail:
        inner.status_slot = inner.emit(llvm.GEPOp(arg, [0, len(live_ins)], context_type, inbounds=True))
    for i, value in enumerate(live_ins):
        slot = inner.emit(llvm.GEPOp(arg, [0, i], context_type, inbounds=True))
        inner.values[value] = inner.emit(llvm.LoadOp(slot, llvm_type(value.type)))
    for value in known:
        constant = _static_live_in(value)
        if isinstance(constant, int):  # the induction variable of a 1-trip loop
            inner.values[value] = inner.const(constant, i64)
        else:
            inner.lower_op(constant)
    tid = inner.emit(llvm.SExtOp(inner.call("omp_get_thread_num", [], i32), i64))
    nth = inner.emit(llvm.SExtOp(inner.call("omp_get_num_threads", [], i32), i64))
    trips = inner.const(op.trip_count, i64)
    chunk = inner.emit(llvm.SDivOp(inner.emit(llvm.AddOp(trips, inner.emit(
        llvm.SubOp(nth, inner.const(1, i64))))), nth))
    begin = inner.emit(llvm.MulOp(tid, chunk))
    end = inner.emit(llvm.AddOp(begin, chunk))
    end = inner.emit(llvm.SelectOp(inner.icmp("slt", end, trips), end, trips))

    def run_iteration(t: SSAValue) -> None:
        iv = inner.emit(llvm.MulOp(t, inner.const(op.stride, i64))) if op.stride != 1 else t
        if op.lower:
            iv = inner.emit(llvm.AddOp(iv, inner.const(op.lower, i64)))
        loop_body(inner, op, iv)

    serial_loop(inner, begin, end, 1, {}, run_iteration)
    inner.emit(llvm.ReturnOp())
    outlined = llvm.FuncOp(
        outlined_name, llvm.LLVMFunctionType([PTR], llvm.LLVMVoidType()),
        linkage=llvm.LinkageAttr("internal"), body=body,
    )
    state.new_ops.append(outlined)


def _vector_width(loop: tloop.ForOp) -> int:
    """Lanes of one 32-byte vector of the widest element the loop loads or stores."""
    widest = 1
    for op in loop.walk():
        if op.name in ("memref.load", "memref.store"):
            memref = op.operands[0 if op.name == "memref.load" else 1].type
            try:
                elem = llvm_type(memref.element_type)
            except UnsupportedError:
                continue
            bits = elem.width.data if isinstance(elem, IntegerType) else elem.bitwidth
            widest = max(widest, bits // 8)
    return max(2, VECTOR_BYTES // widest)


def _static_live_in(value: SSAValue) -> Operation | int | None:
    """The arith.constant defining ``value``, or the only value of a 1-trip loop's
    induction variable; None for other values."""
    owner = value.owner
    if isinstance(owner, Operation) and owner.name == "arith.constant":
        return owner
    if isinstance(owner, Block) and isinstance(owner.parent_op(), tloop.ForOp):
        loop = owner.parent_op()
        if loop.trip_count == 1 and value is loop.induction_var:
            return loop.lower
    return None


def _live_ins(op: Operation) -> list[SSAValue]:
    """Values used inside ``op``'s regions but defined outside ``op`` (in first-use order)."""
    inside: set[SSAValue] = set()
    for nested in op.walk():
        inside.update(nested.results)
        for region in nested.regions:
            for block in region.blocks:
                inside.update(block.args)
    seen: dict[SSAValue, None] = {}
    for nested in op.walk():
        for operand in nested.operands:
            if operand not in inside:
                seen.setdefault(operand, None)
    return list(seen)


@handles("tloop.for")
def _for(lo, op):
    lower_for(lo, op)


@handles("scf.if")
def _if(lo, op):
    result_types = tuple(llvm_type(r.type) for r in op.results)
    then_block, merge = lo.new_block(), Block(arg_types=result_types)
    else_region = op.regions[1] if len(op.regions) > 1 and op.regions[1].blocks else None
    else_block = Block() if else_region is not None else merge
    lo.emit(llvm.CondBrOp(lo.v(op.operands[0]), then_block, [], else_block, []))
    for region, block in ((op.regions[0], then_block), (else_region, else_block)):
        if region is None:
            continue
        if block.parent is None:
            lo.region.add_block(block)
        lo.block = block
        yielded = lo.lower_ops(region.block)
        lo.emit(llvm.BrOp(merge, *yielded))
    lo.continue_in(merge, op.results, merge.args)


@handles("scf.for")
def _scf_for(lo, op):
    """Host-level loop of graph.scan (lowering/bufferize.py): header block with the
    induction variable and iteration values as block arguments."""
    lower, upper, step = (lo.v(o) for o in op.operands[:3])
    inits = [lo.v(o) for o in op.operands[3:]]
    body = op.regions[0].block
    header = lo.new_block(tuple(llvm_type(a.type) for a in body.args))
    body_block, exit_block = lo.new_block(), Block()
    lo.emit(llvm.BrOp(header, lower, *inits))
    lo.block = header
    lo.emit(llvm.CondBrOp(lo.icmp("slt", header.args[0], upper), body_block, [], exit_block, []))
    lo.block = body_block
    lo.bind(body.args, header.args)
    yielded = lo.lower_ops(body)
    lo.emit(llvm.BrOp(header, lo.emit(llvm.AddOp(header.args[0], step)), *yielded))
    lo.continue_in(exit_block, op.results, header.args[1:])


@handles("scf.while")
def _scf_while(lo, op):
    """Host-level loop of graph.loop: ``before`` computes the condition
    (scf.condition), ``after`` is the body; both take block arguments."""
    before, after = op.regions[0].block, op.regions[1].block
    header = lo.new_block(tuple(llvm_type(a.type) for a in before.args))
    lo.emit(llvm.BrOp(header, *(lo.v(o) for o in op.operands)))
    lo.block = header
    lo.bind(before.args, header.args)
    condition = before.last_op
    for inner in before.ops:
        if inner is not condition:
            lo.lower_op(inner)
    forwarded = [lo.v(o) for o in condition.operands[1:]]
    body_block = lo.new_block(tuple(llvm_type(a.type) for a in after.args))
    exit_block = Block(arg_types=tuple(llvm_type(r.type) for r in op.results))
    lo.emit(llvm.CondBrOp(lo.v(condition.operands[0]), body_block, forwarded, exit_block, forwarded))
    lo.block = body_block
    lo.bind(after.args, body_block.args)
    yielded = lo.lower_ops(after)
    lo.emit(llvm.BrOp(header, *yielded))
    lo.continue_in(exit_block, op.results, exit_block.args)


@handles("func.call")
def _call(lo, op):
    if len(op.results) > 1:
        raise lo.fail(op, "with several results is not supported")
    result = llvm_type(op.results[0].type, lo.where(op)) if op.results else None
    callee = op.callee.string_value()
    if callee in lo.state.externals:  # a BYOC kernel: nonzero -> STATUS_EXTERNAL_BASE + its index
        status = lo.emit(llvm.CallOp(callee, *(lo.v(o) for o in op.operands), return_type=i32))
        detail = lo.emit(llvm.SExtOp(status, i64))
        lo.fail_if(lo.icmp("ne", status, lo.const(0, i32)),
                   STATUS_EXTERNAL_BASE + lo.state.externals[callee], detail)
        return None
    if callee in lo.state.status_functions:  # it may fail: pass its status up
        status = lo.emit(llvm.CallOp(callee, *(lo.v(o) for o in op.operands), return_type=i32))
        lo.fail_if(lo.icmp("ne", status, lo.const(0, i32)), status)
        return None
    return lo.emit(llvm.CallOp(callee, *(lo.v(o) for o in op.operands), return_type=result))


@handles("func.return")
def _return(lo, op):
    if op.operands:
        raise lo.fail(op, "with values is not supported (results are passed as output memrefs)")
    lo.return_ok()

