"""`lower-to-llvm`: loop-level IR (tloop kernels + host functions) -> xDSL's llvm dialect.

Input contract (see dialects/tloop.py and the lowering docs): `func.func`s over
static-shape memrefs with `tloop.for` nests, `scf.if`, `arith`, `math`,
`memref.load/store/alloca` (kernels, ``tloop.kernel``) and host functions
(``tloop.host``) with `tloop.weight`, `memref.alloc/dealloc/view`,
`memref.reinterpret_cast` (reshape views: the same pointer),
`func.call` and the control flow of graph.if/loop/scan (`scf.if`, `scf.for`,
`scf.while` around kernel calls, conditions loaded from `memref<i1>`).

Why our own: xDSL 0.75 has no arith/math/func/cf/index -> llvm conversions and
no memref.alloc lowering; its memref-to-ptr route addresses through
ptrtoint/inttoptr, which defeats LLVM's vectorizer. This pass is one structured
walk (not a pattern set) because every op maps to a short, fixed llvm sequence
and loops/ifs must become blocks anyway:

* memrefs become bare ``!llvm.ptr``; loads/stores use one ``getelementptr
  inbounds`` with a row-major offset from the static strides; kernel arguments
  are ``noalias`` (the contract forbids a kernel reading a buffer it writes).
  A kernel that some call site passes overlapping buffers, one of which it
  stores to (an in-place kernel), gets no ``noalias`` at all.
* ``index`` becomes ``i64``; unsigned integer types become signless.
* ``tloop.for`` becomes header/body/exit blocks; the latch branch carries
  ``dlc.loop = "vectorized"|"unrolled"`` (and ``dlc.vector_width``: lanes of
  a 32-byte vector of the loop's widest element) which the llvmlite translator
  (backends/llvm/translate.py) turns into ``llvm.loop`` metadata.
* a ``parallel`` loop (outermost one in a function) is outlined into
  ``@<fn>_par<N>(ptr ctx)``; its live-in values travel in a struct and the loop runs through libgomp's ``GOMP_parallel``, each thread
  taking one contiguous chunk. The thread count comes from the module global
  ``@dlc_num_threads`` (0 = libgomp's default, i.e. all cores), set through the
  exported ``dlc_set_num_threads(i32)``.
* math ops become LLVM intrinsics (exp, log, sqrt, ...) or libm calls (erf ->
  erff, tanh -> tanhf); no fast-math flags except those an arith op carries
  (schedules set ``contract`` on accumulations: FMA rounds once, within 1e-5); an
  ``addf`` of a ``mulf``, both ``contract``, becomes ``llvm.fmuladd``, so every lane
  and every loop remainder rounds the same way.
* ``memref.alloc``/``dealloc`` become ``aligned_alloc``/``free``, except the workspace
  ``plan-workspace`` tags ``dlc.workspace``: ``dlc_workspace_acquire``/``release`` keep
  it cached in an internal global per host function (``<fn>_workspace``) between calls;
  the exported ``dlc_release_workspaces()`` frees the cached blocks
  (lowering/plan_workspace.py).
* entry points (every function that is not a kernel) and kernels that allocate
  (or call one that does) return an i32 status: 0, or the failure code of a
  heap allocation that returned null (its size goes to the exported
  ``@dlc_alloc_failure_bytes``); callers pass a failure up at once
  (runtime/native.py documents the ABI, ``_status_functions`` picks them).
* ``profile=true`` (``dlc.compile(profile=True)``): every kernel call of a host function,
  and the host function itself, is bracketed by ``clock_gettime`` timestamps recorded into
  a caller-given buffer; the module gets the record table ``dlc.profile_sites``
  (lowering/to_llvm/profile.py). Without it the output is unchanged.
* a BYOC kernel (a declaration tagged ``dlc.external``, lower-to-loops) returns an
  i32 status: nonzero becomes the host's status ``256 + k`` (k: its index,
  ``dlc.external_index``; its own value goes to ``@dlc_alloc_failure``).
* ``bare-metal=true`` (a target with no OS, ``Target.bare_metal``: backends/llvm/bare_metal.py):
  every host function takes the workspace as a trailing ``ptr`` argument (the planned
  ``dlc.workspace`` alloc is that pointer, its dealloc nothing); any other buffer that
  would need the heap is an error naming it; parallel loops stay plain loops (no
  libgomp); no ``dlc_set_num_threads``, workspace cache or allocation-failure globals.
* ``tloop.weight "w"`` becomes an external global ``@__dlc_weight_<i>`` tagged
  ``dlc.weight_name = "w"``; the JIT binds it to the weights-store array, an
  exported library embeds the bytes, and the LLVM IR text of
  ``dlc-translate --to-llvm`` defines it with them (backends/llvm/translate.py).

Layout: this module is the pass (which kernels may alias, function signatures,
module-level support code); the walk itself is ``lowering/to_llvm/``:
``function.py`` (types, module state, :class:`FunctionLowering` and the handler
registry), ``scalar.py`` (arith/math), ``memory.py`` (memref, weights,
workspaces), ``control_flow.py`` (loops, parallel outlining, scf, calls).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func, llvm
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, IntegerAttr, MemRefType, ModuleOp, UnitAttr, i32, i64
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from dlc.dialects import tloop
from dlc.dialects.tloop_bounds import first_out_of_bounds
from dlc.lowering.to_llvm.function import (
    ALLOC_FAILURE_GETTER,
    ALLOC_FAILURE_GLOBAL,
    EXTERNAL_ATTR,
    EXTERNAL_INDEX_ATTR,
    HOST_ATTR,
    NUM_INPUTS_ATTR,
    NUM_THREADS_GLOBAL,
    PTR,
    RELEASE_WORKSPACES,
    SET_NUM_THREADS,
    FunctionLowering,
    LoweringError,
    ModuleState,
    UnsupportedError,
    byte_size,
    llvm_type,
    row_major_strides,
)
from dlc.lowering.to_llvm.memory import heap_alloca, release_workspaces


def _written_arguments(fn: func.FuncOp) -> set[int]:
    """Indices of the memref arguments ``fn`` stores to (directly or through a view of one)."""
    args = {arg: i for i, arg in enumerate(fn.body.block.args)} if fn.body.blocks else {}
    stored = (_buffer_range(op.operands[1])[0] for op in fn.walk() if op.name == "memref.store")
    return {args[buf] for buf in stored if buf in args}


def _buffer_range(value: SSAValue) -> tuple[SSAValue, float, float]:
    """(root buffer, first byte, end byte) of a memref value, looking through views."""
    owner = value.owner
    if isinstance(owner, Operation) and owner.name == "memref.view":
        root, start, _ = _buffer_range(owner.operands[0])
        offset = owner.operands[1].owner
        value_attr = offset.properties.get("value") if isinstance(offset, Operation) else None
        if isinstance(value_attr, IntegerAttr):
            first = start + value_attr.value.data
            return root, first, first + byte_size(value.type)
        return root, start, float("inf")
    if isinstance(owner, Operation) and owner.name in (
        "memref.reinterpret_cast", "memref.cast", "memref.collapse_shape", "memref.expand_shape"
    ):
        return _buffer_range(owner.operands[0])
    size = byte_size(value.type) if isinstance(value.type, MemRefType) else 0
    return value, 0, size


def _kernels_called_with_aliases(funcs: list[func.FuncOp]) -> set[str]:
    """Kernels some call site passes overlapping buffers, one of them written by the kernel."""
    kernels = {f.sym_name.data: f for f in funcs if tloop.KERNEL_ATTR in f.attributes}
    written = {name: _written_arguments(f) for name, f in kernels.items()}
    out: set[str] = set()
    for fn in funcs:
        for call in fn.walk():
            if not isinstance(call, func.CallOp) or call.callee.string_value() not in kernels:
                continue
            name = call.callee.string_value()
            try:
                ranges = [_buffer_range(v) if isinstance(v.type, MemRefType) else None for v in call.operands]
            except UnsupportedError:
                out.add(name)
                continue
            for i, a in enumerate(ranges):
                for j in range(i + 1, len(ranges)):
                    b = ranges[j]
                    if a is None or b is None or (i not in written[name] and j not in written[name]):
                        continue
                    if a[0] is b[0] and a[1] < b[2] and b[1] < a[2]:
                        out.add(name)
    return out


def _lower_function(state: ModuleState, fn: func.FuncOp, may_alias: bool = False) -> llvm.FuncOp:
    name = fn.sym_name.data
    where = f" in the signature of @{name}"
    outputs = fn.function_type.outputs.data
    if outputs and (fn.body.blocks or len(outputs) > 1):
        raise LoweringError(fn, f"@{name} returns values; kernels and host functions must not")
    try:
        result = llvm_type(outputs[0], where) if outputs else i32 if name in state.status_functions \
            else llvm.LLVMVoidType()
        inputs = [llvm_type(t, where) for t in fn.function_type.inputs.data]
        for t in fn.function_type.inputs.data:
            if isinstance(t, MemRefType):
                row_major_strides(t)
    except UnsupportedError as err:
        raise LoweringError(fn, str(err)) from None
    if state.bare_metal and HOST_ATTR in fn.attributes and fn.body.blocks:
        inputs.append(PTR)  # the caller's workspace (lowering/to_llvm/memory.py _alloc)
    body = Region(Block(arg_types=inputs))
    lo = FunctionLowering(state, name, body, in_parallel=False)
    if len(body.block.args) > len(fn.function_type.inputs.data):
        lo.workspace_arg = body.block.args[-1]
    if fn.body.blocks:
        if len(fn.body.blocks) > 1:
            raise LoweringError(fn, f"@{name} has several blocks; expected structured loops")
        lo.bind(fn.body.block.args, body.block.args)
        lo.function_block = fn.body.block
        lo.lower_ops(fn.body.block)
    else:
        body = Region()
    new = llvm.FuncOp(name, llvm.LLVMFunctionType(inputs, result),
                      linkage=llvm.LinkageAttr("external"), body=body)
    if tloop.KERNEL_ATTR in fn.attributes and not may_alias:
        # noalias only on buffers: the contract forbids a kernel reading what it writes
        new.arg_attrs = ArrayAttr([
            DictionaryAttr({"llvm.noalias": UnitAttr()} if isinstance(t, MemRefType) else {})
            for t in fn.function_type.inputs.data
        ])
    for attr in (tloop.KERNEL_ATTR, HOST_ATTR, NUM_INPUTS_ATTR, "tloop.source"):
        if attr in fn.attributes:
            new.attributes[attr] = fn.attributes[attr]
    if name in state.externals:
        new.attributes[EXTERNAL_ATTR] = fn.attributes[EXTERNAL_ATTR]
        new.attributes[EXTERNAL_INDEX_ATTR] = IntegerAttr(state.externals[name], i64)
    return new



def _thread_count_support() -> list[Operation]:
    """The ``@dlc_num_threads`` global and the exported ``dlc_set_num_threads`` setter."""
    glob = llvm.GlobalOp(i32, NUM_THREADS_GLOBAL, "internal", value=IntegerAttr(0, i32))
    body = Region(Block(arg_types=(i32,)))
    block = body.blocks[0]
    ptr = llvm.AddressOfOp(NUM_THREADS_GLOBAL, PTR)
    block.add_ops([ptr, llvm.StoreOp(block.args[0], ptr), llvm.ReturnOp()])
    setter = llvm.FuncOp(SET_NUM_THREADS, llvm.LLVMFunctionType([i32], llvm.LLVMVoidType()),
                         linkage=llvm.LinkageAttr("external"), body=body)
    return [glob, setter]


def _alloc_failure_support() -> list[Operation]:
    """The internal ``@dlc_alloc_failure`` global (the size of the last failed heap
    allocation) and its exported getter ``i64 dlc_alloc_failure_bytes()`` (a function,
    not an exported global: MCJIT and dlsym resolve those alike)."""
    glob = llvm.GlobalOp(i64, ALLOC_FAILURE_GLOBAL, "internal", value=IntegerAttr(0, i64))
    body = Region(Block())
    ptr = llvm.AddressOfOp(ALLOC_FAILURE_GLOBAL, PTR)
    value = llvm.LoadOp(ptr.results[0], i64)
    body.block.add_ops([ptr, value, llvm.ReturnOp(value.results[0])])
    getter = llvm.FuncOp(ALLOC_FAILURE_GETTER, llvm.LLVMFunctionType([], i64),
                         linkage=llvm.LinkageAttr("external"), body=body)
    return [glob, getter]


def _status_functions(funcs: list[func.FuncOp]) -> set[str]:
    """Functions that return an i32 status: the entry points (every defined function
    that is not a kernel: runtime/native.py calls them) and the kernels that may fail
    (a heap allocation, a stack buffer too big for the stack, or a call of a
    function that may fail)."""
    status = {f.sym_name.data for f in funcs if f.body.blocks and tloop.KERNEL_ATTR not in f.attributes}
    kernels = [f for f in funcs if f.body.blocks and tloop.KERNEL_ATTR in f.attributes]
    changed = True
    while changed:
        changed = False
        for kernel in kernels:
            name = kernel.sym_name.data
            if name not in status and any(
                op.name == "memref.alloc" or heap_alloca(op)
                or (isinstance(op, func.CallOp) and op.callee.string_value() in status)
                for op in kernel.walk()
            ):
                status.add(name)
                changed = True
    return status


def lower_module(module: ModuleOp, profile: bool = False, bare_metal: bool = False) -> None:
    """``profile``: time every kernel call (lowering/to_llvm/profile.py); ``bare_metal``:
    no OS under the code (see the module docstring)."""
    funcs = [op for op in module.ops if isinstance(op, func.FuncOp)]
    others = [op for op in module.ops if not isinstance(op, (func.FuncOp, llvm.FuncOp, llvm.GlobalOp))]
    if others:
        raise LoweringError(
            others[0], f"'{others[0].name}' at module level is not supported; "
            "expected loop-level func.func kernels and host functions"
        )
    for op in module.walk():
        if op.name.startswith("graph."):
            raise LoweringError(
                op, f"'{op.name}' is a graph-level op; run lower-to-loops first"
            )
        if isinstance(op, tloop.ForOp) and not isinstance(op.parent_op(), tloop.ForOp):
            # the verifier's bounds check, for IR built in Python and never verified
            if (found := first_out_of_bounds(op)) is not None:
                raise LoweringError(*found)
    state = ModuleState(module, {}, {}, [], bare_metal=bare_metal)
    state.status_functions = _status_functions(funcs)
    # BYOC kernels (lower-to-loops declared them): i32 status, numbered for the runtime
    externals = [f for f in funcs if f.is_declaration and EXTERNAL_ATTR in f.attributes]
    if bare_metal and (externals or profile):
        what = f"the BYOC kernel @{externals[0].sym_name.data}" if externals else "profile=true"
        raise LoweringError(externals[0] if externals else module,
                            f"lower-to-llvm{{bare-metal=true}}: {what} needs an OS (it is for hosted targets)")
    state.externals = {f.sym_name.data: k for k, f in enumerate(externals)}
    state.status_functions |= set(state.externals)
    if not bare_metal and not any(op.sym_name.data == SET_NUM_THREADS for op in module.ops
                                  if isinstance(op, llvm.FuncOp)):
        state.new_ops.extend(_thread_count_support())
    if not bare_metal and not any(op.sym_name.data == ALLOC_FAILURE_GLOBAL for op in module.ops
                                  if isinstance(op, llvm.GlobalOp)):
        state.new_ops.extend(_alloc_failure_support())
    aliased = _kernels_called_with_aliases(funcs)
    if profile:
        from dlc.lowering.to_llvm import profile as prof

        prof.attach_sites(module, prof.instrument(funcs))
        state.new_ops.extend(prof.support_ops(state))
    lowered = [(fn, _lower_function(state, fn, fn.sym_name.data in aliased)) for fn in funcs]
    defined = {fn.sym_name.data for fn in funcs}
    for fn, new in lowered:
        module.body.block.insert_op_before(new, fn)
        fn.detach()
        fn.erase()
    if not bare_metal and not any(op.sym_name.data == RELEASE_WORKSPACES for op in module.ops
                                  if isinstance(op, llvm.FuncOp)):
        state.new_ops.append(release_workspaces(state))
    for op in state.new_ops:
        name = op.sym_name.data
        if isinstance(op, llvm.FuncOp) and not op.body.blocks and name in defined:
            continue  # a call to a function of this module, not an external one
        module.body.block.add_op(op)


@dataclass(frozen=True)
class LowerToLLVMPass(ModulePass):
    """Lower loop-level IR (tloop kernels + host functions) to the llvm dialect."""

    name = "lower-to-llvm"
    # timestamps around every kernel call into a caller-given buffer, and the record
    # table as the module's dlc.profile_sites (lowering/to_llvm/profile.py)
    profile: bool = False
    # no OS (Target.bare_metal): the workspace is the host function's last argument,
    # no heap, no threads, no module globals (backends/llvm/bare_metal.py)
    bare_metal: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        lower_module(op, self.profile, self.bare_metal)

