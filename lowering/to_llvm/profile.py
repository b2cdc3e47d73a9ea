"""The profile instrumentation of ``lower-to-llvm{profile=true}``: timestamps around every
kernel call of the host functions, recorded natively (no Python per kernel).

Before the lowering, :func:`instrument` rewrites each host function (loop level):

    %t0 = func.call @dlc_profile_now() : () -> i64
    func.call @kernel(...)
    %t1 = func.call @dlc_profile_now() : () -> i64
    func.call @dlc_profile_record(%site, %t0, %t1)

and brackets the whole host function the same way (its own site, kind "entry"), so the
runtime can compare the kernels' sum with the entry's time. A parallel kernel is timed
from the host: its wall time including its parallel region. :func:`support_ops` defines
the functions in the llvm dialect:

* ``dlc_profile_now()``: ``clock_gettime(CLOCK_MONOTONIC)`` in nanoseconds;
* ``dlc_profile_record(site, t0, t1)``: appends ``(site, t0, t1)`` (three i64) to the
  buffer while there is room, and counts every record (so the runtime sees truncation);
* exported ``dlc_profile_begin(ptr buffer, i64 capacity_events)``: sets the buffer and
  zeroes the count; exported ``dlc_profile_end() -> i64``: the count since begin.

The buffer belongs to the caller (``dlc.runtime.profile``); with none set nothing is
written. One global buffer: profile one call at a time (the runtime holds a lock).

The record table (site -> kernel, source ops, form, schedule, FLOPs, bytes) is the JSON
string :data:`SITES_ATTR` on the module, read by the driver after lowering.
"""

from __future__ import annotations

import json

from xdsl.dialects import arith, func, llvm
from xdsl.dialects.builtin import FusedLoc, IntegerAttr, ModuleOp, NameLoc, StringAttr, i32, i64
from xdsl.ir import Attribute, Block, Operation, Region

from dlc.dialects import tloop
from dlc.lowering.to_llvm.function import HOST_ATTR, ICMP_PREDICATES, PTR, ModuleState

SITES_ATTR = "dlc.profile_sites"
NOW = "dlc_profile_now"
RECORD = "dlc_profile_record"
BEGIN = "dlc_profile_begin"
END = "dlc_profile_end"
_BUFFER, _CAPACITY, _COUNT = "dlc_profile_buffer", "dlc_profile_capacity", "dlc_profile_count"
CLOCK_MONOTONIC = 1  # Linux <time.h>
FIELDS = 3  # i64 per record: site, start ns, end ns


def schedule_summary(kernel: func.FuncOp) -> str:
    """The kernel's schedule in short: its parallel loops (name and trip count) and how
    many loops are vectorized and unrolled: ``parallel oc_oh(32), 5 vectorized, 4 unrolled``."""
    parallel, counts = [], {"vectorized": 0, "unrolled": 0}
    for op in kernel.walk():
        if isinstance(op, tloop.ForOp) and op.loop_kind == "parallel":
            parallel.append(f"parallel {op.induction_var.name_hint or '?'}({op.trip_count})")
        elif isinstance(op, tloop.ForOp) and op.loop_kind in counts:
            counts[op.loop_kind] += 1
    parts = parallel + [f"{n} {kind}" for kind, n in counts.items() if n]
    return ", ".join(parts) or "serial"


def _int_attr(fn: func.FuncOp, name: str) -> int | None:
    attr = fn.attributes.get(name)
    return attr.value.data if isinstance(attr, IntegerAttr) else None


def _str_attr(fn: func.FuncOp, name: str) -> str | None:
    attr = fn.attributes.get(name)
    return attr.data if isinstance(attr, StringAttr) else None


def kernel_record(kernel: func.FuncOp) -> dict:
    """What the profile table says about ``kernel`` (all known at compile time)."""
    return {
        "kind": "kernel",
        "kernel": kernel.sym_name.data,
        # tloop.fused: the group's ops ("graph.conv2d+graph.add+graph.relu"), else the op
        "source": _str_attr(kernel, "tloop.fused") or _str_attr(kernel, "tloop.source") or "",
        "form": _str_attr(kernel, tloop.FORM_ATTR),
        "schedule": schedule_summary(kernel),
        "flops": _int_attr(kernel, "tloop.flops"),
        "bytes": _int_attr(kernel, "tloop.bytes"),
    }


def source_nodes(location: Attribute) -> list[str]:
    """The source-model node names (``NameLoc``: the ONNX importer sets them) in a call's
    location; a fused group's call has one per member (``FusedLoc``), repeats dropped."""
    if isinstance(location, NameLoc):
        return [location.desc.data]
    if isinstance(location, FusedLoc):
        return list(dict.fromkeys(name for loc in location.locations.data for name in source_nodes(loc)))
    return []


def _now(before: Operation) -> func.CallOp:
    call = func.CallOp(NOW, [], [i64])
    before.parent_block().insert_op_before(call, before)
    return call


def _record(after: Operation, site: int, start: func.CallOp, end: func.CallOp) -> None:
    """``record(site, start, end)`` right after ``after`` (itself right after ``end``)."""
    const = arith.ConstantOp(IntegerAttr(site, i64))
    call = func.CallOp(RECORD, [const.result, start.res[0], end.res[0]], [])
    after.parent_block().insert_ops_after([const, call], after)


def instrument(funcs: list[func.FuncOp]) -> list[dict]:
    """Time every kernel call and every host function of ``funcs`` (in place); returns
    the record table, indexed by site number."""
    kernels = {f.sym_name.data: f for f in funcs if tloop.KERNEL_ATTR in f.attributes}
    sites: list[dict] = []
    for host in funcs:
        if HOST_ATTR not in host.attributes or not host.body.blocks:
            continue
        calls = [op for op in host.walk()
                 if isinstance(op, func.CallOp) and op.callee.string_value() in kernels]
        for call in calls:
            start = _now(call)
            end = func.CallOp(NOW, [], [i64])
            call.parent_block().insert_op_after(end, call)
            _record(end, len(sites), start, end)
            sites.append({**kernel_record(kernels[call.callee.string_value()]),
                          "host": host.sym_name.data, "nodes": source_nodes(call.location)})
        block = host.body.block
        first = block.first_op
        entry_start = func.CallOp(NOW, [], [i64])
        block.insert_op_before(entry_start, first)
        for ret in [op for op in block.ops if isinstance(op, func.ReturnOp)]:
            entry_end = _now(ret)
            _record(entry_end, len(sites), entry_start, entry_end)
        sites.append({"kind": "entry", "kernel": host.sym_name.data, "host": host.sym_name.data})
    return sites


def _internal_global(name: str) -> llvm.GlobalOp:
    return llvm.GlobalOp(i64, name, "internal", value=IntegerAttr(0, i64))


def _const(block: Block, value: int, type_=i64):
    op = llvm.ConstantOp(IntegerAttr(value, type_), type_)
    block.add_op(op)
    return op.results[0]


def _add(block: Block, op: Operation):
    block.add_op(op)
    return op.results[0] if op.results else None


def _now_function() -> llvm.FuncOp:
    body = Region(Block())
    b = body.block
    spec = _add(b, llvm.AllocaOp(_const(b, 2), i64, alignment=16))  # struct timespec
    _add(b, llvm.CallOp("clock_gettime", _const(b, CLOCK_MONOTONIC, i32), spec, return_type=i32))
    seconds = _add(b, llvm.LoadOp(spec, i64))
    nanos_ptr = _add(b, llvm.GEPOp(spec, [1], i64, inbounds=True))
    nanos = _add(b, llvm.LoadOp(nanos_ptr, i64))
    total = _add(b, llvm.AddOp(_add(b, llvm.MulOp(seconds, _const(b, 1_000_000_000))), nanos))
    b.add_op(llvm.ReturnOp(total))
    return llvm.FuncOp(NOW, llvm.LLVMFunctionType([], i64), linkage=llvm.LinkageAttr("internal"), body=body)


def _record_function() -> llvm.FuncOp:
    body = Region([Block(arg_types=(i64, i64, i64)), Block(), Block()])
    entry, store, done = body.blocks
    site, start, end = entry.args
    count_ptr = _add(entry, llvm.AddressOfOp(_COUNT, PTR))
    count = _add(entry, llvm.LoadOp(count_ptr, i64))
    _add(entry, llvm.StoreOp(_add(entry, llvm.AddOp(count, _const(entry, 1))), count_ptr))
    capacity = _add(entry, llvm.LoadOp(_add(entry, llvm.AddressOfOp(_CAPACITY, PTR)), i64))
    room = _add(entry, llvm.ICmpOp(count, capacity, IntegerAttr(ICMP_PREDICATES.index("slt"), i64)))
    entry.add_op(llvm.CondBrOp(room, store, [], done, []))
    address = _add(store, llvm.LoadOp(_add(store, llvm.AddressOfOp(_BUFFER, PTR)), i64))
    buffer = _add(store, llvm.IntToPtrOp(address))
    base = _add(store, llvm.MulOp(count, _const(store, FIELDS)))
    for i, value in enumerate((site, start, end)):
        index = _add(store, llvm.AddOp(base, _const(store, i))) if i else base
        slot = _add(store, llvm.GEPOp(buffer, [llvm.GEP_USE_SSA_VAL], i64, ssa_indices=[index], inbounds=True))
        store.add_op(llvm.StoreOp(value, slot))
    store.add_op(llvm.BrOp(done))
    done.add_op(llvm.ReturnOp())
    return llvm.FuncOp(RECORD, llvm.LLVMFunctionType([i64, i64, i64], llvm.LLVMVoidType()),
                       linkage=llvm.LinkageAttr("internal"), body=body)


def _begin_function() -> llvm.FuncOp:
    body = Region(Block(arg_types=(PTR, i64)))
    b = body.block
    buffer, capacity = b.args
    b.add_op(llvm.StoreOp(_add(b, llvm.PtrToIntOp(buffer, i64)), _add(b, llvm.AddressOfOp(_BUFFER, PTR))))
    b.add_op(llvm.StoreOp(capacity, _add(b, llvm.AddressOfOp(_CAPACITY, PTR))))
    b.add_op(llvm.StoreOp(_const(b, 0), _add(b, llvm.AddressOfOp(_COUNT, PTR))))
    b.add_op(llvm.ReturnOp())
    return llvm.FuncOp(BEGIN, llvm.LLVMFunctionType([PTR, i64], llvm.LLVMVoidType()),
                       linkage=llvm.LinkageAttr("external"), body=body)


def _end_function() -> llvm.FuncOp:
    body = Region(Block())
    b = body.block
    b.add_op(llvm.ReturnOp(_add(b, llvm.LoadOp(_add(b, llvm.AddressOfOp(_COUNT, PTR)), i64))))
    return llvm.FuncOp(END, llvm.LLVMFunctionType([], i64), linkage=llvm.LinkageAttr("external"), body=body)


def support_ops(state: ModuleState) -> list[Operation]:
    """The globals and functions the instrumented calls use (see the module docstring)."""
    state.declare("clock_gettime", [i32, PTR], i32)
    return [_internal_global(_BUFFER), _internal_global(_CAPACITY), _internal_global(_COUNT),
            _now_function(), _record_function(), _begin_function(), _end_function()]


def attach_sites(module: ModuleOp, sites: list[dict]) -> None:
    module.attributes[SITES_ATTR] = StringAttr(json.dumps(sites))


def sites_of(module: ModuleOp) -> list[dict] | None:
    """The record table a profiled lowering attached to ``module`` (None: not profiled)."""
    attr = module.attributes.get(SITES_ATTR)
    return json.loads(attr.data) if isinstance(attr, StringAttr) else None
