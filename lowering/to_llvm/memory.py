"""lower-to-llvm handlers of memory ops: memref loads/stores (one ``getelementptr
inbounds`` on a row-major offset), stack and heap buffers (``aligned_alloc``/``free``,
or the cached workspace of lowering/plan_workspace.py), views (the same pointer)
and ``tloop.weight`` (an external global the JIT or the exported library binds).

Every heap allocation is checked: a null block makes the function record the
size in ``@dlc_alloc_failure_bytes`` and return its failure status
(``FunctionLowering.fail_if``; the entry-point ABI is in runtime/native.py).
Allocations beyond ``MAX_ALLOCATION_BYTES`` are refused at compile time.
A ``memref.alloca`` over ``STACK_BUFFER_LIMIT`` (softmax's row scratch of a
huge tensor) would overflow the 8 MiB stack of the main thread and of libgomp's
threads (a segfault): at a function's top level it becomes a checked heap
block freed at the return; inside a loop it is a compile-time error.
"""

from __future__ import annotations

from xdsl.dialects import llvm
from xdsl.dialects.builtin import IntegerAttr, IntegerType, i64
from xdsl.ir import Block, Operation, Region

from dlc.lowering.plan_workspace import MAX_ALLOCATION_BYTES
from dlc.lowering.to_llvm.function import (
    ICMP_PREDICATES,
    PTR,
    RELEASE_WORKSPACES,
    WORKSPACE_ACQUIRE,
    WORKSPACE_ATTR,
    WORKSPACE_RELEASE,
    WORKSPACE_SLOT_SUFFIX,
    STATUS_BUFFER_OOM,
    STATUS_WORKSPACE_OOM,
    ModuleState,
    UnsupportedError,
    byte_size,
    handles,
    llvm_type,
    row_major_strides,
)


def workspace_slot(state: ModuleState, fn_name: str) -> str:
    """The global caching ``fn_name``'s workspace (an i64 address, 0 = none cached)."""
    name = f"{fn_name}{WORKSPACE_SLOT_SUFFIX}"
    if name not in state.workspace_slots:
        state.workspace_slots.append(name)
        state.new_ops.append(llvm.GlobalOp(i64, name, "internal", value=IntegerAttr(0, i64)))
        if len(state.workspace_slots) == 1:
            state.new_ops.extend(workspace_helpers(state))
    return name


@handles("memref.load")
def _load(lo, op):
    ptr = lo.element_pointer(op, op.operands[0], op.operands[1:])
    return lo.emit(llvm.LoadOp(ptr, llvm_type(op.results[0].type)))


@handles("memref.store")
def _store(lo, op):
    ptr = lo.element_pointer(op, op.operands[1], op.operands[2:])
    lo.emit(llvm.StoreOp(lo.v(op.operands[0]), ptr))


STACK_BUFFER_LIMIT = 1 << 20  # bytes; see the module docstring


def heap_alloca(op: Operation) -> bool:
    """A memref.alloca too big for the stack (lowered to a heap block)."""
    if op.name != "memref.alloca":
        return False
    try:
        return byte_size(op.results[0].type) > STACK_BUFFER_LIMIT
    except UnsupportedError:
        return False  # its lowering reports the type


def _no_heap(lo, op, what: str) -> UnsupportedError:
    """Bare metal: a buffer outside the workspace plan would need the heap (one line naming it)."""
    name = op.results[0].name_hint or "unnamed"
    return UnsupportedError(f"{what} '%{name}' ({op.results[0].type}) would need the heap, which a "
                            "bare-metal target has not: every buffer must be in the workspace plan "
                            "(plan-workspace plans only top-level buffers of a host function)")


@handles("memref.alloca")
def _alloca(lo, op):
    memref = op.results[0].type
    if lo.state.bare_metal and heap_alloca(op):
        raise _no_heap(lo, op, f"the stack buffer over {STACK_BUFFER_LIMIT} bytes")
    if not heap_alloca(op):
        return lo.entry_alloca(max(1, byte_size(memref)), IntegerType(8))
    size = (byte_size(memref) + 63) // 64 * 64
    check_allocation_size(size, "the stack buffer")
    if lo.in_parallel or op.parent_block() is not lo.function_block:
        raise UnsupportedError(f"a stack buffer of {size} bytes inside a loop or branch exceeds the "
                               f"{STACK_BUFFER_LIMIT}-byte limit for stack buffers")
    block = lo.call("aligned_alloc", [lo.const(64, i64), lo.const(size, i64)], PTR)
    address = lo.emit(llvm.PtrToIntOp(block, i64))
    lo.fail_if(lo.icmp("eq", address, lo.const(0, i64)), STATUS_BUFFER_OOM, size)
    lo.heap_buffers.append(block)
    return block


def check_allocation_size(size: int, what: str) -> None:
    if size > MAX_ALLOCATION_BYTES:
        raise UnsupportedError(f"{what} of {size} bytes is larger than the address space "
                               f"({MAX_ALLOCATION_BYTES} bytes)")


@handles("memref.alloc")
def _alloc(lo, op):
    size = (byte_size(op.results[0].type) + 63) // 64 * 64  # aligned_alloc needs a multiple
    size = max(size, 64)
    workspace = WORKSPACE_ATTR in op.attributes  # plan-workspace's reused block (lowering/plan_workspace.py)
    if lo.state.bare_metal:
        if not workspace or lo.workspace_arg is None:
            raise _no_heap(lo, op, "the buffer")
        return lo.workspace_arg  # the caller's arena (DLC_MODEL_WORKSPACE_BYTES)
    check_allocation_size(size, "the workspace" if workspace else "the buffer")
    if workspace:
        slot = lo.emit(llvm.AddressOfOp(workspace_slot(lo.state, lo.fn_name), PTR))
        block = lo.emit(llvm.CallOp(WORKSPACE_ACQUIRE, slot, lo.const(size, i64), return_type=PTR))
    else:
        block = lo.call("aligned_alloc", [lo.const(64, i64), lo.const(size, i64)], PTR)
    address = lo.emit(llvm.PtrToIntOp(block, i64))
    lo.fail_if(lo.icmp("eq", address, lo.const(0, i64)),
               STATUS_WORKSPACE_OOM if workspace else STATUS_BUFFER_OOM, size)
    return block


@handles("memref.dealloc")
def _dealloc(lo, op):
    if lo.state.bare_metal:
        return  # the caller's workspace (memref.alloc refused every other buffer)
    if WORKSPACE_ATTR in op.attributes:
        slot = lo.emit(llvm.AddressOfOp(workspace_slot(lo.state, lo.fn_name), PTR))
        lo.emit(llvm.CallOp(WORKSPACE_RELEASE, slot, lo.v(op.operands[0])))
        return
    lo.call("free", [lo.v(op.operands[0])], None)


@handles("memref.view")
def _view(lo, op):
    source, offset = lo.v(op.operands[0]), lo.v(op.operands[1])
    if len(op.operands) > 2:
        raise lo.fail(op, "with dynamic sizes is not supported")
    return lo.emit(llvm.GEPOp(source, [llvm.GEP_USE_SSA_VAL], IntegerType(8), ssa_indices=[offset], inbounds=True))


@handles("memref.reinterpret_cast", "memref.cast", "memref.collapse_shape", "memref.expand_shape")
def _same_pointer(lo, op):
    if op.name == "memref.reinterpret_cast":
        # a view (bufferize.py's reshapes): the same pointer, addressed through the
        # result type, so its offset/strides must be the ones the result type says
        if len(op.operands) > 1:
            raise lo.fail(op, "with dynamic offsets/sizes is not supported")
        try:
            strides, offset = row_major_strides(op.results[0].type)
        except UnsupportedError as err:
            raise lo.fail(op, str(err)) from None
        if list(op.static_offsets.get_values()) != [offset] or list(op.static_strides.get_values()) != strides:
            raise lo.fail(op, f"offset/strides differ from its result type's ({offset}, {strides})")
    return lo.v(op.operands[0])


@handles("tloop.weight")
def _weight(lo, op):
    symbol = lo.state.weight_symbol(op.weight_name.data, op.results[0].type)
    return lo.emit(llvm.AddressOfOp(symbol, PTR))



def workspace_helpers(state: ModuleState) -> list[Operation]:
    """``dlc_workspace_acquire(slot, bytes)``: the block cached in ``slot`` (taking it)
    or a fresh ``aligned_alloc``; ``dlc_workspace_release(slot, block)``: caches
    ``block``, freeing the one cached meanwhile (a concurrent call's). The slot is
    read and written under libgomp's unnamed critical section (a mutex), so two
    threads never get the same block (lowering/plan_workspace.py)."""
    for name, inputs, output in (("GOMP_critical_start", [], None), ("GOMP_critical_end", [], None),
                                 ("aligned_alloc", [i64, i64], PTR), ("free", [PTR], None)):
        state.declare(name, inputs, output)
    acquire = Region([Block(arg_types=(PTR, i64)), Block(), Block()])
    entry, fresh, cached_block = acquire.blocks
    slot, size = entry.args
    zero = llvm.ConstantOp(IntegerAttr(0, i64), i64)
    cached = llvm.LoadOp(slot, i64)
    is_empty = llvm.ICmpOp(cached.results[0], zero.results[0], IntegerAttr(ICMP_PREDICATES.index("eq"), i64))
    entry.add_ops([
        llvm.CallOp("GOMP_critical_start"), zero, cached, llvm.StoreOp(zero.results[0], slot),
        llvm.CallOp("GOMP_critical_end"), is_empty, llvm.CondBrOp(is_empty.results[0], fresh, [], cached_block, []),
    ])
    align = llvm.ConstantOp(IntegerAttr(64, i64), i64)
    block = llvm.CallOp("aligned_alloc", align.results[0], size, return_type=PTR)
    fresh.add_ops([align, block, llvm.ReturnOp(block.results[0])])
    pointer = llvm.IntToPtrOp(cached.results[0])
    cached_block.add_ops([pointer, llvm.ReturnOp(pointer.results[0])])

    release = Region(Block(arg_types=(PTR, PTR)))
    slot, given = release.block.args
    address = llvm.PtrToIntOp(given, i64)
    previous = llvm.LoadOp(slot, i64)
    previous_ptr = llvm.IntToPtrOp(previous.results[0])
    release.block.add_ops([
        address, llvm.CallOp("GOMP_critical_start"), previous, llvm.StoreOp(address.results[0], slot),
        llvm.CallOp("GOMP_critical_end"), previous_ptr, llvm.CallOp("free", previous_ptr.results[0]), llvm.ReturnOp(),
    ])
    internal = llvm.LinkageAttr("internal")
    return [
        llvm.FuncOp(WORKSPACE_ACQUIRE, llvm.LLVMFunctionType([PTR, i64], PTR), linkage=internal, body=acquire),
        llvm.FuncOp(WORKSPACE_RELEASE, llvm.LLVMFunctionType([PTR, PTR], llvm.LLVMVoidType()),
                    linkage=internal, body=release),
    ]


def release_workspaces(state: ModuleState) -> llvm.FuncOp:
    """Exported ``dlc_release_workspaces()``: frees every cached workspace (call it
    only when no call of the module is running, e.g. when unloading it)."""
    if state.workspace_slots:
        state.declare("free", [PTR], None)
    body = Region(Block())
    for name in state.workspace_slots:
        slot = llvm.AddressOfOp(name, PTR)
        zero = llvm.ConstantOp(IntegerAttr(0, i64), i64)
        cached = llvm.LoadOp(slot.results[0], i64)
        pointer = llvm.IntToPtrOp(cached.results[0])
        body.block.add_ops([slot, zero, cached, llvm.StoreOp(zero.results[0], slot.results[0]), pointer, llvm.CallOp("free", pointer.results[0])])
    body.block.add_op(llvm.ReturnOp())
    return llvm.FuncOp(RELEASE_WORKSPACES, llvm.LLVMFunctionType([], llvm.LLVMVoidType()),
                       linkage=llvm.LinkageAttr("external"), body=body)

