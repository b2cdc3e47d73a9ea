"""The core of lower-to-llvm: types, the state shared by a module's functions, and
:class:`FunctionLowering`, which lowers one function body op by op through the
handler registry (:data:`HANDLERS`; the handlers live in ``scalar.py``,
``memory.py`` and ``control_flow.py`` of this package).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from xdsl.dialects import arith, llvm
from xdsl.dialects.builtin import (
    AnyFloat,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    NoneAttr,
    StridedLayoutAttr,
    StringAttr,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from dlc.dialects.graph_base import is_float
from dlc.diagnostics import OpError
from dlc.lowering.memref_layout import row_major
from dlc.registry import Registry

PTR = llvm.LLVMPointerType()
NUM_THREADS_GLOBAL = "dlc_num_threads"
SET_NUM_THREADS = "dlc_set_num_threads"
WEIGHT_ATTR = "dlc.weight_name"
LOOP_ATTR = "dlc.loop"
VECTOR_WIDTH_ATTR = "dlc.vector_width"
VECTOR_BYTES = 32  # one AVX2 register; LLVM splits wider vectors, narrower hosts still run them
HOST_ATTR = "tloop.host"
WORKSPACE_ATTR = "dlc.workspace"  # lowering/plan_workspace.py
WORKSPACE_SLOT_SUFFIX = "_workspace"
WORKSPACE_ACQUIRE = "dlc_workspace_acquire"
WORKSPACE_RELEASE = "dlc_workspace_release"
RELEASE_WORKSPACES = "dlc_release_workspaces"
NUM_INPUTS_ATTR = "tloop.num_inputs"
# status of an entry point / failing kernel (runtime/native.py reads the same numbers)
STATUS_WORKSPACE_OOM = 1
STATUS_BUFFER_OOM = 2
# status STATUS_EXTERNAL_BASE + k: the k-th external (BYOC) kernel of the module
# returned nonzero (its value goes to @dlc_alloc_failure); the metadata's "external"
# list names them in the same order (runtime/native.py)
STATUS_EXTERNAL_BASE = 256
EXTERNAL_ATTR = "dlc.external"  # a BYOC kernel's declaration (lower-to-loops)
EXTERNAL_INDEX_ATTR = "dlc.external_index"
ALLOC_FAILURE_GLOBAL = "dlc_alloc_failure"  # internal i64: the size of the last failed allocation
ALLOC_FAILURE_GETTER = "dlc_alloc_failure_bytes"  # exported i64(): reads it
ICMP_PREDICATES = arith.CMPI_COMPARISON_OPERATIONS  # llvm.icmp numbers its predicates in this order too


class UnsupportedError(Exception):
    """A type or layout the backend cannot lower (becomes a LoweringError at its op)."""


class LoweringError(OpError):
    """An op or type the LLVM backend cannot lower; the message names it and its function."""


def llvm_type(t: Attribute, where: str = "") -> Attribute:
    """The llvm-dialect type of a loop-level type."""
    if isinstance(t, MemRefType):
        return PTR
    if isinstance(t, IndexType):
        return i64
    if isinstance(t, IntegerType):
        return IntegerType(t.width.data)
    if is_float(t):  # f16, f32, f64
        return t
    raise UnsupportedError(f"type {t} is not supported{where}")


def type_suffix(t: Attribute) -> str:
    """The type's part of an intrinsic's name (``llvm.exp.f32``)."""
    if isinstance(t, IntegerType):
        return f"i{t.width.data}"
    if is_float(t):
        return str(t)  # f16, f32, f64
    raise UnsupportedError(f"no intrinsic for type {t}")


def row_major_strides(memref: MemRefType) -> tuple[list[int], int]:
    """(element strides, element offset) of a static memref type."""
    shape = list(memref.get_shape())
    if any(d < 0 for d in shape):
        raise UnsupportedError(f"dynamic memref {memref} is not supported")
    layout = memref.layout
    if isinstance(layout, StridedLayoutAttr):
        strides = layout.get_strides()
        offset = layout.get_offset()
        if any(s is None for s in strides) or offset is None:
            raise UnsupportedError(f"dynamic strides in {memref} are not supported")
        return [int(s) for s in strides], int(offset)
    if not isinstance(layout, NoneAttr):
        raise UnsupportedError(f"memref layout {layout} is not supported")
    return row_major(shape), 0


def byte_size(memref: MemRefType) -> int:
    elem = llvm_type(memref.element_type)
    width = elem.width.data if isinstance(elem, IntegerType) else elem.bitwidth
    count = 1
    for d in memref.get_shape():
        count *= d
    return count * max(1, width // 8)

@dataclass
class ModuleState:
    """What the lowering of all functions shares: declarations to add, counters."""

    module: ModuleOp
    declared: dict[str, llvm.FuncOp]
    weights: dict[str, str]  # weight name -> global symbol
    new_ops: list[Operation]
    parallel_count: int = 0
    workspace_slots: list[str] = field(default_factory=list)
    # functions returning an i32 status (0 = done), see FunctionLowering.fail_if
    status_functions: set[str] = field(default_factory=set)
    # external BYOC kernels (declarations tagged dlc.external) -> their index
    externals: dict[str, int] = field(default_factory=dict)
    # no OS (Target.bare_metal): host functions take the workspace as a trailing pointer,
    # no heap, no threads, no module globals (lower_to_llvm.py's bare-metal mode)
    bare_metal: bool = False

    def declare(self, name: str, inputs: list[Attribute], output: Attribute | None) -> None:
        if name in self.declared:
            return
        ftype = llvm.LLVMFunctionType(inputs, output or llvm.LLVMVoidType())
        op = llvm.FuncOp(name, ftype, linkage=llvm.LinkageAttr("external"))
        self.declared[name] = op
        self.new_ops.append(op)

    def weight_symbol(self, name: str, memref: MemRefType) -> str:
        if name not in self.weights:
            symbol = f"__dlc_weight_{len(self.weights)}"
            self.weights[name] = symbol
            count = 1
            for d in memref.get_shape():
                count *= d
            glob = llvm.GlobalOp(
                llvm.LLVMArrayType(max(count, 1), llvm_type(memref.element_type)),
                symbol,
                "external",
            )
            glob.attributes[WEIGHT_ATTR] = StringAttr(name)
            self.new_ops.append(glob)
        return self.weights[name]


class FunctionLowering:
    """Lowers one function body into the blocks of an llvm.func."""

    def __init__(self, state: ModuleState, fn_name: str, region: Region, in_parallel: bool):
        self.state = state
        self.fn_name = fn_name
        self.region = region
        self.entry = region.blocks[0]
        self.block = self.entry
        self._constants: dict[tuple[Attribute, str], SSAValue] = {}  # const(): (type, repr) -> value
        self._last_constant: Operation | None = None  # const()s stay in first-use order
        self.values: dict[SSAValue, SSAValue] = {}
        self.in_parallel = in_parallel
        # how a failure leaves this function: return the i32 status, or (an outlined
        # parallel body) store it to ``status_slot`` in the caller's context and return
        self.returns_status = fn_name in state.status_functions and not in_parallel
        self.status_slot: SSAValue | None = None
        self.heap_buffers: list[SSAValue] = []  # big memref.allocas on the heap, freed on return
        self.function_block: Block | None = None  # the loop IR body (set for whole functions)
        self.workspace_arg: SSAValue | None = None  # bare metal: the caller's workspace pointer

    # -- emission helpers ------------------------------------------------------------
    def emit(self, op: Operation) -> SSAValue | None:
        self.block.add_op(op)
        return op.results[0] if op.results else None

    def new_block(self, arg_types: tuple[Attribute, ...] = ()) -> Block:
        block = Block(arg_types=arg_types)
        self.region.add_block(block)
        return block

    def const(self, value: int | float, type_: Attribute) -> SSAValue:
        """``llvm.mlir.constant``, one per value and type in a function, at the start of its
        entry block (which dominates every use), in first-use order: a kernel asks for the same few constants
        thousands of times (ResNet-50: 3800 calls, a few hundred distinct), and each op
        built costs Python time here and in translation (LLVM inlines constants anyway)."""
        key = (type_, repr(value))  # repr: 0.0 and -0.0 stay apart
        cached = self._constants.get(key)
        if cached is not None:
            return cached
        attr = FloatAttr(value, type_) if isinstance(type_, AnyFloat) else IntegerAttr(value, type_)
        op = llvm.ConstantOp(attr, type_)
        first = self.entry.first_op
        if self._last_constant is not None:
            self.entry.insert_op_after(op, self._last_constant)
        elif first is None:
            self.entry.add_op(op)
        else:
            self.entry.insert_op_before(op, first)
        self._last_constant = op
        self._constants[key] = op.result
        return op.result

    def entry_alloca(self, count: int, elem: Attribute) -> SSAValue:
        """Stack buffer in the entry block (so a loop never grows the stack)."""
        size = llvm.ConstantOp(IntegerAttr(count, i64), i64)
        alloca = llvm.AllocaOp(size, elem, alignment=64)
        first = self.entry.first_op
        if first is None:
            self.entry.add_ops([size, alloca])
        else:
            self.entry.insert_ops_before([size, alloca], first)
        return alloca.results[0]

    def call(self, name: str, args: list[SSAValue], output: Attribute | None) -> SSAValue | None:
        self.state.declare(name, [a.type for a in args], output)
        return self.emit(llvm.CallOp(name, *args, return_type=output))

    def intrinsic(self, name: str, args: list[SSAValue], output: Attribute) -> SSAValue:
        return self.emit(llvm.CallIntrinsicOp(name, args, [output]))

    def icmp(self, pred: str, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(llvm.ICmpOp(a, b, IntegerAttr(ICMP_PREDICATES.index(pred), i64)))

    def where(self, op: Operation) -> str:
        return f" (in @{self.fn_name})"

    def fail(self, op: Operation, why: str = "is not supported by the LLVM backend") -> LoweringError:
        return LoweringError(op, f"'{op.name}' {why}{self.where(op)}")

    def v(self, value: SSAValue) -> SSAValue:
        return self.values[value]

    def bind(self, olds: Sequence[SSAValue], news: Sequence[SSAValue]) -> None:
        """Map values of the loop IR to their lowered values."""
        for old, new in zip(olds, news):
            self.values[old] = new

    def continue_in(self, block: Block, results: Sequence[SSAValue] = (),
                    values: Sequence[SSAValue] = ()) -> None:
        """Append ``block`` (e.g. a loop's exit) and lower what follows into it; the
        ``results`` of the op just lowered are its ``values`` (block arguments)."""
        self.region.add_block(block)
        self.block = block
        self.bind(results, values)

    # -- failure status (checked allocations, runtime/native.py's ABI) --------------------
    def fail_if(self, failed: SSAValue, status: int | SSAValue, size: int | SSAValue | None = None) -> None:
        """Leave the function reporting ``status`` when the i1 ``failed`` holds (after
        recording ``size``, the bytes asked for, in ``@dlc_alloc_failure``);
        lowering goes on in the success block."""
        fail, ok = self.new_block(), Block()
        self.emit(llvm.CondBrOp(failed, fail, [], ok, []))
        self.block = fail
        code = self.const(status, IntegerType(32)) if isinstance(status, int) else status
        if size is not None:
            detail = self.const(size, i64) if isinstance(size, int) else size
            self.emit(llvm.StoreOp(detail, self.emit(llvm.AddressOfOp(ALLOC_FAILURE_GLOBAL, PTR))))
        if self.status_slot is not None:
            self.emit(llvm.StoreOp(code, self.status_slot))
            self.emit(llvm.ReturnOp())
        elif self.returns_status:
            self.emit(llvm.ReturnOp(code))
        else:
            raise UnsupportedError(f"an allocation in @{self.fn_name}, which cannot report failure")
        self.continue_in(ok)

    def return_ok(self) -> None:
        """The normal return (status 0 where the function returns one), freeing the
        stack buffers too big for the stack (memory.py ``_alloca``)."""
        for buffer in self.heap_buffers:
            self.call("free", [buffer], None)
        self.emit(llvm.ReturnOp(self.const(0, IntegerType(32))) if self.returns_status else llvm.ReturnOp())

    # -- blocks and regions ----------------------------------------------------------
    def lower_ops(self, block: Block) -> list[SSAValue]:
        """Lower ``block``'s ops; returns the lowered operands of an scf.yield terminator."""
        for op in block.ops:
            if op.name in ("scf.yield", "tloop.yield"):
                return [self.v(o) for o in op.operands]
            self.lower_op(op)
        return []

    def lower_op(self, op: Operation) -> None:
        handler = HANDLERS.lookup(op.name)
        if handler is None:
            raise self.fail(op)
        try:
            result = handler(self, op)
        except UnsupportedError as err:
            raise LoweringError(op, f"'{op.name}': {err}{self.where(op)}") from None
        if result is not None:
            self.values[op.results[0]] = result

    # -- memory ----------------------------------------------------------------------
    def element_pointer(self, op: Operation, memref_value: SSAValue, indices) -> SSAValue:
        memref = memref_value.type
        assert isinstance(memref, MemRefType)
        strides, offset = row_major_strides(memref)
        base = self.v(memref_value)
        total: SSAValue | None = None
        if offset:
            total = self.const(offset, i64)
        for idx, stride in zip(indices, strides, strict=True):
            term = self.v(idx)
            if stride != 1:
                term = self.emit(llvm.MulOp(term, self.const(stride, i64)))
            total = term if total is None else self.emit(llvm.AddOp(total, term))
        if total is None:
            return base
        elem = llvm_type(memref.element_type)
        return self.emit(
            llvm.GEPOp(base, [llvm.GEP_USE_SSA_VAL], elem, ssa_indices=[total], inbounds=True)
        )


Handler = Callable[["FunctionLowering", Operation], SSAValue | None]
# op name -> handler ``(lowering, op) -> lowered result (or None)``
HANDLERS: Registry[Handler] = Registry("lower-to-llvm handler", modules=[
    "dlc.lowering.to_llvm.scalar", "dlc.lowering.to_llvm.memory", "dlc.lowering.to_llvm.control_flow",
])
handles = HANDLERS.register
