"""`plan-workspace`: one reusable workspace per host function instead of a heap
allocation per buffer and per call.

Why: a host function allocated each intermediate (``memref.alloc``, lowered to
``aligned_alloc``) and the flat conv kernels their scratch on every call;
glibc serves big blocks with mmap/munmap, so every inference faulted in and
zeroed fresh pages (3-8% of ResNet-50/ShuffleNet run time in ``perf``).
xDSL has no buffer-packing pass, so this is ours (~150 lines).

On loop IR (after lower-to-loops and the schedules, before lower-to-llvm):

1. *Kernel scratch moves to the caller.* A kernel's top-level ``memref.alloc``
   (static shape, freed by a top-level ``memref.dealloc`` or not at all)
   becomes a trailing memref argument; every call site allocates it just before
   the call and frees it just after. Kernels without call sites are left alone.
2. *Packing.* The top-level ``memref.alloc``s of a host function's body (its
   planned intermediates, buffers hoisted out of loops, the scratch of step 1)
   get byte offsets in one workspace: a buffer is live from its alloc to its
   dealloc (to the end when never freed); buffers live at the same time never
   overlap (greedy placement, largest first, at the lowest offset that fits;
   64-byte aligned). Each alloc becomes a ``memref.view`` of the workspace and
   its dealloc disappears; the workspace is one ``memref.alloc``/``dealloc``
   pair tagged ``dlc.workspace``, at the start and before the return.
   Allocations inside nested regions (if branches) stay as they are.

lower-to-llvm lowers a tagged alloc to ``dlc_workspace_acquire`` and its
dealloc to ``dlc_workspace_release``: each host function keeps its last
workspace in a module global, taken and put back under libgomp's unnamed
critical section, so the steady state has no allocation at all. A second
thread calling while the cached one is in use gets a fresh block (freed when it
puts its workspace back and finds one there): concurrent calls are safe and
never share memory. ``dlc_release_workspaces()`` frees the cached blocks (the
runtime calls it when a module is unloaded). Without the tag the IR is plain
memref code with the same meaning (one malloc per call).

A workspace larger than ``MAX_ALLOCATION_BYTES`` (2**48, the 48-bit virtual
address space of x86-64 and aarch64: no such block can ever be mapped) is a
compile-time error naming the host function; smaller ones that the machine
cannot provide fail at run time with a clear "out of memory" (every
allocation is checked: lowering/to_llvm/memory.py, runtime/native.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, ModuleOp, NoneAttr, UnitAttr, i8
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass

from dlc.dialects import tloop
from dlc.diagnostics import OpError

WORKSPACE_ATTR = "dlc.workspace"
HOST_ATTR = "tloop.host"
ALIGNMENT = 64
MAX_ALLOCATION_BYTES = 1 << 48  # see the module docstring; lower-to-llvm checks every alloc too


@dataclass
class _Live:
    alloc: memref.AllocOp
    dealloc: memref.DeallocOp | None
    start: int
    end: int
    size: int
    offset: int = -1


def _static_alloc(op: Operation) -> bool:
    if not isinstance(op, memref.AllocOp) or op.operands or WORKSPACE_ATTR in op.attributes:
        return False
    t = op.results[0].type
    return (isinstance(t, MemRefType) and all(d >= 0 for d in t.get_shape())
            and isinstance(t.layout, NoneAttr) and isinstance(t.memory_space, NoneAttr))


def _top_level_dealloc(alloc: Operation, block: Block) -> memref.DeallocOp | None | bool:
    """The dealloc of ``alloc`` in ``block``; None when never freed; False when freed
    elsewhere (inside a region) or more than once."""
    deallocs = [u.operation for u in alloc.results[0].uses if isinstance(u.operation, memref.DeallocOp)]
    if not deallocs:
        return None
    if len(deallocs) > 1 or deallocs[0].parent_block() is not block:
        return False
    return deallocs[0]


def hoist_kernel_scratch(module: ModuleOp) -> None:
    """Step 1: kernel-local heap scratch becomes caller-allocated trailing arguments."""
    funcs = [op for op in module.ops if isinstance(op, func.FuncOp)]
    calls: dict[str, list[func.CallOp]] = {}
    for fn in funcs:
        for op in fn.walk():
            if isinstance(op, func.CallOp):
                calls.setdefault(op.callee.string_value(), []).append(op)
    for kernel in funcs:
        name = kernel.sym_name.data
        if tloop.KERNEL_ATTR not in kernel.attributes or not kernel.body.blocks or not calls.get(name):
            continue
        block = kernel.body.block
        scratch = []
        for op in block.ops:
            if _static_alloc(op):
                dealloc = _top_level_dealloc(op, block)
                if dealloc is not False:
                    scratch.append((op, dealloc))
        if not scratch:
            continue
        for alloc, dealloc in scratch:
            arg = block.insert_arg(alloc.results[0].type, len(block.args))
            alloc.results[0].replace_all_uses_with(arg)
            if dealloc is not None:
                dealloc.detach()
                dealloc.erase()
            alloc.detach()
            alloc.erase()
        kernel.function_type = func.FunctionType.from_lists(
            [a.type for a in block.args], list(kernel.function_type.outputs.data))
        for call in calls[name]:
            buffers = [memref.AllocOp.get(alloc.results[0].type.element_type, shape=alloc.results[0].type.get_shape())
                       for alloc, _ in scratch]
            call_block = call.parent_block()
            call_block.insert_ops_before(buffers, call)
            new_call = func.CallOp(call.callee, [*call.operands, *(b.results[0] for b in buffers)],
                                   [r.type for r in call.results])
            new_call.attributes.update(call.attributes)
            call_block.insert_op_before(new_call, call)
            for old, new in zip(call.results, new_call.results):
                old.replace_all_uses_with(new)
            call.detach()
            call.erase()
            call_block.insert_ops_after([memref.DeallocOp.get(b) for b in buffers], new_call)


def _byte_size(t: MemRefType) -> int:
    from dlc.lowering.lower_to_llvm import byte_size

    return byte_size(t)


def pack(lives: list[_Live]) -> int:
    """Assign ``offset``s so that buffers live at the same step never overlap;
    returns the workspace size. Largest first, each at the lowest fitting offset."""
    placed: list[_Live] = []
    for live in sorted(lives, key=lambda l: (-l.size, l.start)):
        busy = sorted((p.offset, p.offset + p.size) for p in placed
                      if p.start <= live.end and live.start <= p.end)
        offset = 0
        for lo, hi in busy:
            if offset + live.size <= lo:
                break
            offset = max(offset, (hi + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT)
        live.offset = offset
        placed.append(live)
    return max((p.offset + p.size for p in placed), default=0)


def pack_host(fn: func.FuncOp) -> int:
    """Step 2 on one host function; returns its workspace size in bytes (0: none)."""
    block = fn.body.block
    ops = list(block.ops)
    position = {op: i for i, op in enumerate(ops)}
    lives = []
    for op in ops:
        if not _static_alloc(op):
            continue
        dealloc = _top_level_dealloc(op, block)
        if dealloc is False:
            continue
        end = position[dealloc] if dealloc is not None else len(ops)
        size = max(_byte_size(op.results[0].type), 1)
        lives.append(_Live(op, dealloc, position[op], end, (size + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT))
    if not lives:
        return 0
    total = pack(lives)
    workspace = memref.AllocOp.get(i8, shape=[total])
    workspace.attributes[WORKSPACE_ATTR] = UnitAttr()
    block.insert_op_before(workspace, block.first_op)
    for live in lives:
        offset = arith.ConstantOp(IntegerAttr(live.offset, IndexType()))
        view = memref.ViewOp(workspace, offset, [], live.alloc.results[0].type)
        block.insert_ops_before([offset, view], live.alloc)
        live.alloc.results[0].replace_all_uses_with(view.results[0])
        if live.dealloc is not None:
            live.dealloc.detach()
            live.dealloc.erase()
        live.alloc.detach()
        live.alloc.erase()
    release = memref.DeallocOp.get(workspace)
    release.attributes[WORKSPACE_ATTR] = UnitAttr()
    last = block.last_op
    if isinstance(last, func.ReturnOp):
        block.insert_op_before(release, last)
    else:
        block.add_op(release)
    return total


def plan_workspaces(module: ModuleOp) -> dict[str, int]:
    """Both steps on every host function of ``module``; returns host -> workspace bytes."""
    hoist_kernel_scratch(module)
    sizes = {}
    for fn in module.ops:
        if isinstance(fn, func.FuncOp) and HOST_ATTR in fn.attributes and fn.body.blocks:
            if len(fn.body.blocks) == 1:
                sizes[fn.sym_name.data] = pack_host(fn)
                if sizes[fn.sym_name.data] > MAX_ALLOCATION_BYTES:
                    raise OpError(fn, f"@{fn.sym_name.data} needs a workspace of {sizes[fn.sym_name.data]} "
                                      f"bytes, more than the address space ({MAX_ALLOCATION_BYTES} bytes)")
    return sizes


class PlanWorkspacePass(ModulePass):
    """Kernel scratch into the caller, host buffers packed into one reused workspace."""

    name = "plan-workspace"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        plan_workspaces(op)
