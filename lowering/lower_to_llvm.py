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
  (schedules set ``contract`` on accumulations: FMA rounds once, within 1e-5).
* ``memref.alloc``/``dealloc`` become ``aligned_alloc``/``free``, except the workspace
  ``plan-workspace`` tags ``dlc.workspace``: ``dlc_workspace_acquire``/``release`` keep
  it cached in an internal global per host function (``<fn>_workspace``) between calls;
  the exported ``dlc_release_workspaces()`` frees the cached blocks
  (lowering/plan_workspace.py).
* ``tloop.weight "w"`` becomes an external global ``@__dlc_weight_<i>`` tagged
  ``dlc.weight_name = "w"``; the JIT binds it to the weights-store array, an
  exported library embeds the bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func, llvm
from xdsl.dialects.utils.fast_math import FastMathFlag
from xdsl.dialects.builtin import (
    AnyFloat,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    NoneAttr,
    StridedLayoutAttr,
    StringAttr,
    UnitAttr,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from dlc.dialects import tloop
from dlc.diagnostics import OpError
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

# libm functions for math ops LLVM has no intrinsic for (f32 name, f64 name).
_LIBM = {
    "math.erf": ("erff", "erf"),
    "math.tanh": ("tanhf", "tanh"),
    "math.atan": ("atanf", "atan"),
    "math.tan": ("tanf", "tan"),
    "math.asin": ("asinf", "asin"),
    "math.acos": ("acosf", "acos"),
    "math.sinh": ("sinhf", "sinh"),
    "math.cosh": ("coshf", "cosh"),
    "math.log1p": ("log1pf", "log1p"),
    "math.expm1": ("expm1f", "expm1"),
    "math.cbrt": ("cbrtf", "cbrt"),
    "math.atan2": ("atan2f", "atan2"),
    "math.acosh": ("acoshf", "acosh"),
    "math.asinh": ("asinhf", "asinh"),
    "math.atanh": ("atanhf", "atanh"),
}
_UNARY_INTRINSIC = {
    "math.exp": "llvm.exp",
    "math.exp2": "llvm.exp2",
    "math.log": "llvm.log",
    "math.log2": "llvm.log2",
    "math.log10": "llvm.log10",
    "math.sqrt": "llvm.sqrt",
    "math.floor": "llvm.floor",
    "math.ceil": "llvm.ceil",
    "math.roundeven": "llvm.roundeven",
    "math.round": "llvm.round",
    "math.trunc": "llvm.trunc",
    "math.sin": "llvm.sin",
    "math.cos": "llvm.cos",
    "math.absf": "llvm.fabs",
}
_BINARY_INTRINSIC = {
    "math.powf": "llvm.pow",
    "arith.maximumf": "llvm.maximum",
    "arith.minimumf": "llvm.minimum",
    "arith.maxnumf": "llvm.maxnum",
    "arith.minnumf": "llvm.minnum",
    "math.copysign": "llvm.copysign",
}
_FLOAT_BINARY = {
    "arith.addf": llvm.FAddOp,
    "arith.subf": llvm.FSubOp,
    "arith.mulf": llvm.FMulOp,
    "arith.divf": llvm.FDivOp,
    "arith.remf": llvm.FRemOp,
}
_INT_BINARY = {
    "arith.addi": llvm.AddOp,
    "arith.subi": llvm.SubOp,
    "arith.muli": llvm.MulOp,
    "arith.divsi": llvm.SDivOp,
    "arith.divui": llvm.UDivOp,
    "arith.remsi": llvm.SRemOp,
    "arith.remui": llvm.URemOp,
    "arith.andi": llvm.AndOp,
    "arith.ori": llvm.OrOp,
    "arith.xori": llvm.XOrOp,
    "arith.shli": llvm.ShlOp,
    "arith.shrsi": llvm.AShrOp,
    "arith.shrui": llvm.LShrOp,
}
# predicate of an icmp + select pair
_INT_MINMAX = {"arith.maxsi": "sgt", "arith.minsi": "slt", "arith.maxui": "ugt", "arith.minui": "ult"}
_ICMP_PREDICATES = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")


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
    if isinstance(t, (Float16Type, Float32Type, Float64Type)):
        return t
    raise UnsupportedError(f"type {t} is not supported{where}")


def _type_suffix(t: Attribute) -> str:
    if isinstance(t, IntegerType):
        return f"i{t.width.data}"
    if isinstance(t, Float16Type):
        return "f16"
    if isinstance(t, Float32Type):
        return "f32"
    if isinstance(t, Float64Type):
        return "f64"
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
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= d
    return list(reversed(strides)), 0


def byte_size(memref: MemRefType) -> int:
    elem = llvm_type(memref.element_type)
    width = elem.width.data if isinstance(elem, IntegerType) else elem.bitwidth
    count = 1
    for d in memref.get_shape():
        count *= d
    return count * max(1, width // 8)


@dataclass
class _ModuleState:
    """What the lowering of all functions shares: declarations to add, counters."""

    module: ModuleOp
    declared: dict[str, llvm.FuncOp]
    weights: dict[str, str]  # weight name -> global symbol
    new_ops: list[Operation]
    parallel_count: int = 0
    workspace_slots: list[str] = field(default_factory=list)

    def workspace_slot(self, fn_name: str) -> str:
        """The global caching ``fn_name``'s workspace (an i64 address, 0 = none cached)."""
        name = f"{fn_name}{WORKSPACE_SLOT_SUFFIX}"
        if name not in self.workspace_slots:
            self.workspace_slots.append(name)
            self.new_ops.append(llvm.GlobalOp(i64, name, "internal", value=IntegerAttr(0, i64)))
            if len(self.workspace_slots) == 1:
                self.new_ops.extend(_workspace_helpers(self))
        return name

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


class _FunctionLowering:
    """Lowers one function body into the blocks of an llvm.func."""

    def __init__(self, state: _ModuleState, fn_name: str, region: Region, in_parallel: bool):
        self.state = state
        self.fn_name = fn_name
        self.region = region
        self.entry = region.blocks[0]
        self.block = self.entry
        self.values: dict[SSAValue, SSAValue] = {}
        self.in_parallel = in_parallel

    # -- emission helpers ------------------------------------------------------------
    def emit(self, op: Operation) -> SSAValue | None:
        self.block.add_op(op)
        return op.results[0] if op.results else None

    def new_block(self, arg_types: tuple[Attribute, ...] = ()) -> Block:
        block = Block(arg_types=arg_types)
        self.region.add_block(block)
        return block

    def const(self, value: int | float, type_: Attribute) -> SSAValue:
        attr = FloatAttr(value, type_) if isinstance(type_, AnyFloat) else IntegerAttr(value, type_)
        return self.emit(llvm.ConstantOp(attr, type_))

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
        return self.emit(llvm.ICmpOp(a, b, IntegerAttr(_ICMP_PREDICATES.index(pred), i64)))

    def where(self, op: Operation) -> str:
        return f" (in @{self.fn_name})"

    def fail(self, op: Operation, why: str = "is not supported by the LLVM backend") -> LoweringError:
        return LoweringError(op, f"'{op.name}' {why}{self.where(op)}")

    def v(self, value: SSAValue) -> SSAValue:
        return self.values[value]

    # -- blocks and regions ----------------------------------------------------------
    def lower_ops(self, block: Block) -> list[SSAValue]:
        """Lower ``block``'s ops; returns the lowered operands of an scf.yield terminator."""
        for op in block.ops:
            if op.name in ("scf.yield", "tloop.yield"):
                return [self.v(o) for o in op.operands]
            self.lower_op(op)
        return []

    def lower_op(self, op: Operation) -> None:
        handler = _HANDLERS.lookup(op.name)
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

    # -- loops -----------------------------------------------------------------------
    def lower_for(self, op: tloop.ForOp) -> None:
        if op.loop_kind == "parallel" and not self.in_parallel and op.trip_count > 1:
            self.lower_parallel_for(op)
            return
        hints: dict[str, Attribute] = {}
        if op.loop_kind in ("vectorized", "unrolled"):
            hints[LOOP_ATTR] = StringAttr(op.loop_kind)
        if op.loop_kind == "vectorized":
            if any(nested.name in _LIBM for nested in op.walk()):
                # a libm call cannot be vectorized: a hint would only make LLVM print a remark
                hints.pop(LOOP_ATTR)
            else:
                hints[VECTOR_WIDTH_ATTR] = IntegerAttr(_vector_width(op), i64)
                if "dlc.strided_vector" in op.attributes:
                    # a pool's strided interior (defaults_elementwise.STRIDED_VECTOR_ATTR): often
                    # under 16 iterations, which LLVM leaves scalar when it needs alias checks
                    hints[LOOP_ATTR] = StringAttr("vectorized-forced")
                if "dlc.whole_vector" in op.attributes:  # the loop is one vector (defaults_nchwc.py)
                    hints[VECTOR_WIDTH_ATTR] = IntegerAttr(op.trip_count, i64)
                    hints[LOOP_ATTR] = StringAttr("vectorized-whole")
        start = self.const(op.lower, i64)
        self.serial_loop(start, self.const(op.upper, i64), op.stride, hints,
                         lambda iv: self.loop_body(op, iv))

    def serial_loop(self, start: SSAValue, stop: SSAValue, step: int, hints: dict[str, Attribute],
                    body: Callable[[SSAValue], None]) -> None:
        header = self.new_block((i64,))
        body_block = self.new_block()
        exit_block = Block()  # added after the body's blocks: printed in program order
        self.emit(llvm.BrOp(header, start))
        self.block = header
        iv = header.args[0]
        self.emit(llvm.CondBrOp(self.icmp("slt", iv, stop), body_block, [], exit_block, []))
        self.block = body_block
        body(iv)
        step_value = self.const(step, i64)
        latch = llvm.BrOp(header, self.emit(llvm.AddOp(iv, step_value)))
        latch.attributes.update(hints)
        self.emit(latch)
        self.region.add_block(exit_block)
        self.block = exit_block

    def loop_body(self, op: tloop.ForOp, iv: SSAValue) -> None:
        self.values[op.induction_var] = iv
        self.lower_ops(op.body.block)

    def lower_parallel_for(self, op: tloop.ForOp) -> None:
        state = self.state
        outlined_name = f"{self.fn_name}_par{state.parallel_count}"
        state.parallel_count += 1
        # constants are re-created in the outlined function, not passed: a value read
        # from the context struct is opaque to LLVM (a constant stride would become a
        # runtime one: no folding, no interleaved vectorization)
        known = [v for v in _live_ins(op) if _static_live_in(v) is not None]
        live_ins = [v for v in _live_ins(op) if _static_live_in(v) is None]
        # caller: pack live-ins into a struct, run GOMP_parallel
        context_type = llvm.LLVMStructType.from_type_list(
            [llvm_type(v.type) for v in live_ins] or [i64])
        ctx = self.entry_alloca(1, context_type)
        for i, value in enumerate(live_ins):
            slot = self.emit(llvm.GEPOp(ctx, [0, i], context_type, inbounds=True))
            self.emit(llvm.StoreOp(self.v(value), slot))
        fn_ptr = self.emit(llvm.AddressOfOp(outlined_name, PTR))
        threads_ptr = self.emit(llvm.AddressOfOp(NUM_THREADS_GLOBAL, PTR))
        threads = self.emit(llvm.LoadOp(threads_ptr, i32))
        self.call("GOMP_parallel", [fn_ptr, ctx, threads, self.const(0, i32)], None)

        # callee: unpack, take this thread's chunk, run the serial loop
        body = Region(Block(arg_types=(PTR,)))
        inner = _FunctionLowering(state, self.fn_name, body, in_parallel=True)
        arg = body.blocks[0].args[0]
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
            inner.loop_body(op, iv)

        inner.serial_loop(begin, end, 1, {}, run_iteration)
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


# ---------------------------------------------------------------------------
# op handlers: (lowering, op) -> lowered result (or None)
# ---------------------------------------------------------------------------

Handler = Callable[[_FunctionLowering, Operation], SSAValue | None]
_HANDLERS: Registry[Handler] = Registry("lower-to-llvm handler")
_handles = _HANDLERS.register


@_handles("arith.constant")
def _constant(lo: _FunctionLowering, op: Operation) -> SSAValue:
    value = op.properties.get("value")
    if value is None:  # (not `or`: a zero IntegerAttr is falsy)
        value = op.attributes.get("value")
    type_ = llvm_type(op.results[0].type, lo.where(op))
    if isinstance(value, FloatAttr):
        return lo.const(value.value.data, type_)
    if isinstance(value, IntegerAttr):
        raw = value.value.data
        if isinstance(type_, IntegerType) and type_.width.data > 1 and raw >= 2 ** (type_.width.data - 1):
            raw -= 2 ** type_.width.data  # unsigned constant as a signless bit pattern
        return lo.const(raw, type_)
    raise lo.fail(op, f"with value {value} is not supported")


@_handles(*_FLOAT_BINARY)
def _float_binary(lo, op):
    # arith's fastmath flags (set only where a schedule allows it, e.g. `contract` on a
    # matmul accumulation so mul + add fuse into one FMA) carry over to LLVM unchanged
    flags = op.properties.get("fastmath")
    fast = llvm.FastMathAttr([FastMathFlag(str(f)) for f in flags.data]) if flags is not None and flags.data else None
    return lo.emit(_FLOAT_BINARY[op.name](lo.v(op.operands[0]), lo.v(op.operands[1]), fast))


@_handles(*_INT_BINARY)
def _int_binary(lo, op):
    return lo.emit(_INT_BINARY[op.name](lo.v(op.operands[0]), lo.v(op.operands[1])))


@_handles("arith.negf")
def _negf(lo, op):
    return lo.emit(llvm.FNegOp(lo.v(op.operands[0])))


@_handles(*_INT_MINMAX)
def _int_minmax(lo, op):
    a, b = lo.v(op.operands[0]), lo.v(op.operands[1])
    return lo.emit(llvm.SelectOp(lo.icmp(_INT_MINMAX[op.name], a, b), a, b))


@_handles("arith.cmpf")
def _cmpf(lo, op):
    predicate = op.properties["predicate"].value.data  # arith and llvm share the order
    if predicate in (0, 15):  # false, true: llvmlite has no such fcmp
        return lo.const(predicate // 15, i1)
    return lo.emit(llvm.FCmpOp(lo.v(op.operands[0]), lo.v(op.operands[1]), IntegerAttr(predicate, i64)))


@_handles("arith.cmpi")
def _cmpi(lo, op):
    predicate = op.properties["predicate"].value.data
    return lo.icmp(_ICMP_PREDICATES[predicate], lo.v(op.operands[0]), lo.v(op.operands[1]))


@_handles("arith.select")
def _select(lo, op):
    return lo.emit(llvm.SelectOp(*(lo.v(o) for o in op.operands)))


def _int_width(t: Attribute) -> int:
    return 64 if isinstance(t, IndexType) else t.width.data


@_handles("arith.index_cast", "arith.extsi", "arith.extui", "arith.trunci", "arith.index_castui")
def _int_cast(lo, op):
    source, target = op.operands[0].type, op.results[0].type
    value = lo.v(op.operands[0])
    src_w, dst_w = _int_width(source), _int_width(target)
    if src_w == dst_w:
        return value
    if dst_w < src_w:
        return lo.emit(llvm.TruncOp(value, llvm_type(target)))
    unsigned = op.name in ("arith.extui", "arith.index_castui") or src_w == 1
    cls = llvm.ZExtOp if unsigned else llvm.SExtOp
    return lo.emit(cls(value, llvm_type(target)))


@_handles("arith.extf")
def _extf(lo, op):
    return lo.emit(llvm.FPExtOp(lo.v(op.operands[0]), llvm_type(op.results[0].type)))


@_handles("arith.truncf")
def _truncf(lo, op):
    value, target = lo.v(op.operands[0]), llvm_type(op.results[0].type)
    if isinstance(target, Float16Type) and isinstance(value.type, Float64Type):
        return _f64_to_f16(lo, value)
    return lo.emit(llvm.FPTruncOp(value, target))


_FCMP_ONE = 6  # ordered and not equal (false for NaN)


def _f64_to_f16(lo, value: SSAValue) -> SSAValue:
    """f64 -> f16 without LLVM's ``__truncdfhf2`` libcall (x86 has no such
    instruction and the MCJIT process cannot resolve the helper: the call hung).

    Round to f32 with round-to-odd (truncate toward zero, then set the last bit
    when inexact), then f32 -> f16 natively: round-to-odd to 24 >= 11 + 2 bits
    makes the second rounding exact-as-once (no double-rounding error)."""
    nearest = lo.emit(llvm.FPTruncOp(value, Float32Type()))
    back = lo.emit(llvm.FPExtOp(nearest, Float64Type()))
    inexact = lo.emit(llvm.FCmpOp(back, value, IntegerAttr(_FCMP_ONE, i64)))
    # magnitudes compare as unsigned integers once the sign bit is cleared
    no_sign = lo.const(0x7FFF_FFFF_FFFF_FFFF, i64)
    back_mag = lo.emit(llvm.AndOp(lo.emit(llvm.BitcastOp(back, i64)), no_sign))
    value_mag = lo.emit(llvm.AndOp(lo.emit(llvm.BitcastOp(value, i64)), no_sign))
    rounded_away = lo.emit(llvm.AndOp(inexact, lo.icmp("ugt", back_mag, value_mag)))
    bits = lo.emit(llvm.BitcastOp(nearest, i32))
    toward_zero = lo.emit(llvm.SelectOp(rounded_away, lo.emit(llvm.SubOp(bits, lo.const(1, i32))), bits))
    odd = lo.emit(llvm.SelectOp(inexact, lo.emit(llvm.OrOp(toward_zero, lo.const(1, i32))), toward_zero))
    return lo.emit(llvm.FPTruncOp(lo.emit(llvm.BitcastOp(odd, Float32Type())), Float16Type()))


@_handles("arith.bitcast")
def _bitcast(lo, op):
    return lo.emit(llvm.BitcastOp(lo.v(op.operands[0]), llvm_type(op.results[0].type)))


@_handles("arith.sitofp")
def _sitofp(lo, op):
    return lo.emit(llvm.SIToFPOp(lo.v(op.operands[0]), llvm_type(op.results[0].type)))


@_handles("arith.uitofp")
def _uitofp(lo, op):
    """xDSL's llvm dialect has no uitofp: widen to i64 and convert signed; for i64,
    halve (keeping the low bit for rounding), convert and double when the top bit is set."""
    value = lo.v(op.operands[0])
    target = llvm_type(op.results[0].type)
    width = _int_width(op.operands[0].type)
    if width < 64:
        return lo.emit(llvm.SIToFPOp(lo.emit(llvm.ZExtOp(value, i64)), target))
    direct = lo.emit(llvm.SIToFPOp(value, target))
    one = lo.const(1, i64)
    halved = lo.emit(llvm.OrOp(lo.emit(llvm.LShrOp(value, one)), lo.emit(llvm.AndOp(value, one))))
    as_float = lo.emit(llvm.SIToFPOp(halved, target))
    doubled = lo.emit(llvm.FAddOp(as_float, as_float))
    negative = lo.icmp("slt", value, lo.const(0, i64))
    return lo.emit(llvm.SelectOp(negative, doubled, direct))


@_handles("arith.fptosi", "arith.fptoui")
def _fptoi(lo, op):
    """xDSL's llvm dialect has no fptosi/fptoui: the saturating intrinsics agree on
    every in-range value (out-of-range is undefined for the plain instructions)."""
    target = llvm_type(op.results[0].type)
    source = llvm_type(op.operands[0].type)
    sign = "s" if op.name == "arith.fptosi" else "u"
    name = f"llvm.fpto{sign}i.sat.{_type_suffix(target)}.{_type_suffix(source)}"
    return lo.intrinsic(name, [lo.v(op.operands[0])], target)


@_handles(*_UNARY_INTRINSIC)
def _unary_intrinsic(lo, op):
    type_ = llvm_type(op.results[0].type)
    return lo.intrinsic(f"{_UNARY_INTRINSIC[op.name]}.{_type_suffix(type_)}", [lo.v(op.operands[0])], type_)


@_handles(*_BINARY_INTRINSIC)
def _binary_intrinsic(lo, op):
    type_ = llvm_type(op.results[0].type)
    args = [lo.v(o) for o in op.operands]
    return lo.intrinsic(f"{_BINARY_INTRINSIC[op.name]}.{_type_suffix(type_)}", args, type_)


@_handles("math.fma")
def _fma(lo, op):
    type_ = llvm_type(op.results[0].type)
    return lo.intrinsic(f"llvm.fma.{_type_suffix(type_)}", [lo.v(o) for o in op.operands], type_)


@_handles("math.rsqrt")
def _rsqrt(lo, op):
    type_ = llvm_type(op.results[0].type)
    root = lo.intrinsic(f"llvm.sqrt.{_type_suffix(type_)}", [lo.v(op.operands[0])], type_)
    return lo.emit(llvm.FDivOp(lo.const(1.0, type_), root))


@_handles("math.absi")
def _absi(lo, op):
    type_ = llvm_type(op.results[0].type)
    return lo.intrinsic(f"llvm.abs.{_type_suffix(type_)}", [lo.v(op.operands[0]), lo.const(0, i1)], type_)


@_handles("math.ctlz", "math.cttz", "math.ctpop")
def _bit_count(lo, op):
    type_ = llvm_type(op.results[0].type)
    args = [lo.v(op.operands[0])]
    if op.name != "math.ctpop":
        args.append(lo.const(0, i1))  # defined result (the width) for a zero input
    return lo.intrinsic(f"llvm.{op.name[5:]}.{_type_suffix(type_)}", args, type_)


@_handles("arith.floordivsi", "arith.ceildivsi")
def _rounded_division(lo, op):
    """Truncating division corrected by one when the remainder is non-zero and the
    exact quotient is negative (floor) or positive (ceil)."""
    a, b = lo.v(op.operands[0]), lo.v(op.operands[1])
    type_ = llvm_type(op.results[0].type)
    quotient = lo.emit(llvm.SDivOp(a, b))
    remainder = lo.emit(llvm.SRemOp(a, b))
    zero = lo.const(0, type_)
    inexact = lo.icmp("ne", remainder, zero)
    signs_differ = lo.emit(llvm.XOrOp(lo.icmp("slt", remainder, zero), lo.icmp("slt", b, zero)))
    if op.name == "arith.floordivsi":
        adjust, delta = lo.emit(llvm.AndOp(inexact, signs_differ)), -1
    else:
        same_sign = lo.emit(llvm.XOrOp(signs_differ, lo.const(1, i1)))
        adjust, delta = lo.emit(llvm.AndOp(inexact, same_sign)), 1
    moved = lo.emit(llvm.AddOp(quotient, lo.const(delta, type_)))
    return lo.emit(llvm.SelectOp(adjust, moved, quotient))


@_handles(*_LIBM)
def _libm(lo, op):
    type_ = llvm_type(op.results[0].type)
    args = [lo.v(o) for o in op.operands]
    if isinstance(type_, Float16Type):  # libm has no half functions: compute in f32
        args = [lo.emit(llvm.FPExtOp(a, Float32Type())) for a in args]
        result = lo.call(_LIBM[op.name][0], args, Float32Type())
        return lo.emit(llvm.FPTruncOp(result, type_))
    name = _LIBM[op.name][0 if isinstance(type_, Float32Type) else 1]
    return lo.call(name, args, type_)


@_handles("memref.load")
def _load(lo, op):
    ptr = lo.element_pointer(op, op.operands[0], op.operands[1:])
    return lo.emit(llvm.LoadOp(ptr, llvm_type(op.results[0].type)))


@_handles("memref.store")
def _store(lo, op):
    ptr = lo.element_pointer(op, op.operands[1], op.operands[2:])
    lo.emit(llvm.StoreOp(lo.v(op.operands[0]), ptr))


@_handles("memref.alloca")
def _alloca(lo, op):
    memref = op.results[0].type
    return lo.entry_alloca(max(1, byte_size(memref)), IntegerType(8))


@_handles("memref.alloc")
def _alloc(lo, op):
    size = (byte_size(op.results[0].type) + 63) // 64 * 64  # aligned_alloc needs a multiple
    if WORKSPACE_ATTR in op.attributes:  # plan-workspace's reused block (lowering/plan_workspace.py)
        slot = lo.emit(llvm.AddressOfOp(lo.state.workspace_slot(lo.fn_name), PTR))
        return lo.emit(llvm.CallOp(WORKSPACE_ACQUIRE, slot, lo.const(max(size, 64), i64), return_type=PTR))
    return lo.call("aligned_alloc", [lo.const(64, i64), lo.const(max(size, 64), i64)], PTR)


@_handles("memref.dealloc")
def _dealloc(lo, op):
    if WORKSPACE_ATTR in op.attributes:
        slot = lo.emit(llvm.AddressOfOp(lo.state.workspace_slot(lo.fn_name), PTR))
        lo.emit(llvm.CallOp(WORKSPACE_RELEASE, slot, lo.v(op.operands[0])))
        return
    lo.call("free", [lo.v(op.operands[0])], None)


@_handles("memref.view")
def _view(lo, op):
    source, offset = lo.v(op.operands[0]), lo.v(op.operands[1])
    if len(op.operands) > 2:
        raise lo.fail(op, "with dynamic sizes is not supported")
    return lo.emit(llvm.GEPOp(source, [llvm.GEP_USE_SSA_VAL], IntegerType(8), ssa_indices=[offset], inbounds=True))


@_handles("memref.reinterpret_cast", "memref.cast", "memref.collapse_shape", "memref.expand_shape")
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


@_handles("tloop.weight")
def _weight(lo, op):
    symbol = lo.state.weight_symbol(op.weight_name.data, op.results[0].type)
    return lo.emit(llvm.AddressOfOp(symbol, PTR))


@_handles("tloop.for")
def _for(lo, op):
    lo.lower_for(op)


@_handles("scf.if")
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
    lo.region.add_block(merge)
    lo.block = merge
    for result, arg in zip(op.results, merge.args):
        lo.values[result] = arg


@_handles("scf.for")
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
    for old, new in zip(body.args, header.args):
        lo.values[old] = new
    yielded = lo.lower_ops(body)
    lo.emit(llvm.BrOp(header, lo.emit(llvm.AddOp(header.args[0], step)), *yielded))
    lo.region.add_block(exit_block)
    lo.block = exit_block
    for result, arg in zip(op.results, header.args[1:]):
        lo.values[result] = arg


@_handles("scf.while")
def _scf_while(lo, op):
    """Host-level loop of graph.loop: ``before`` computes the condition
    (scf.condition), ``after`` is the body; both take block arguments."""
    before, after = op.regions[0].block, op.regions[1].block
    header = lo.new_block(tuple(llvm_type(a.type) for a in before.args))
    lo.emit(llvm.BrOp(header, *(lo.v(o) for o in op.operands)))
    lo.block = header
    for old, new in zip(before.args, header.args):
        lo.values[old] = new
    condition = before.last_op
    for inner in before.ops:
        if inner is not condition:
            lo.lower_op(inner)
    forwarded = [lo.v(o) for o in condition.operands[1:]]
    body_block = lo.new_block(tuple(llvm_type(a.type) for a in after.args))
    exit_block = Block(arg_types=tuple(llvm_type(r.type) for r in op.results))
    lo.emit(llvm.CondBrOp(lo.v(condition.operands[0]), body_block, forwarded, exit_block, forwarded))
    lo.block = body_block
    for old, new in zip(after.args, body_block.args):
        lo.values[old] = new
    yielded = lo.lower_ops(after)
    lo.emit(llvm.BrOp(header, *yielded))
    lo.region.add_block(exit_block)
    lo.block = exit_block
    for result, arg in zip(op.results, exit_block.args):
        lo.values[result] = arg


@_handles("func.call")
def _call(lo, op):
    if len(op.results) > 1:
        raise lo.fail(op, "with several results is not supported")
    result = llvm_type(op.results[0].type, lo.where(op)) if op.results else None
    return lo.emit(llvm.CallOp(op.callee.string_value(), *(lo.v(o) for o in op.operands), return_type=result))


@_handles("func.return")
def _return(lo, op):
    if op.operands:
        raise lo.fail(op, "with values is not supported (results are passed as output memrefs)")
    lo.emit(llvm.ReturnOp())


# ---------------------------------------------------------------------------
# the pass
# ---------------------------------------------------------------------------


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


def _lower_function(state: _ModuleState, fn: func.FuncOp, may_alias: bool = False) -> llvm.FuncOp:
    name = fn.sym_name.data
    where = f" in the signature of @{name}"
    outputs = fn.function_type.outputs.data
    if outputs and (fn.body.blocks or len(outputs) > 1):
        raise LoweringError(fn, f"@{name} returns values; kernels and host functions must not")
    try:
        result = llvm_type(outputs[0], where) if outputs else llvm.LLVMVoidType()
        inputs = [llvm_type(t, where) for t in fn.function_type.inputs.data]
        for t in fn.function_type.inputs.data:
            if isinstance(t, MemRefType):
                row_major_strides(t)
    except UnsupportedError as err:
        raise LoweringError(fn, str(err)) from None
    body = Region(Block(arg_types=inputs))
    lo = _FunctionLowering(state, name, body, in_parallel=False)
    if fn.body.blocks:
        if len(fn.body.blocks) > 1:
            raise LoweringError(fn, f"@{name} has several blocks; expected structured loops")
        for old, new in zip(fn.body.block.args, body.block.args):
            lo.values[old] = new
        lo.lower_ops(fn.body.block)
    else:
        body = Region()
    new = llvm.FuncOp(name, llvm.LLVMFunctionType(inputs, result),
                      linkage=llvm.LinkageAttr("external"), body=body)
    if tloop.KERNEL_ATTR in fn.attributes and not may_alias:
        # noalias only on buffers: the contract forbids a kernel reading what it writes
        from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr

        new.arg_attrs = ArrayAttr([
            DictionaryAttr({"llvm.noalias": UnitAttr()} if isinstance(t, MemRefType) else {})
            for t in fn.function_type.inputs.data
        ])
    for attr in (tloop.KERNEL_ATTR, HOST_ATTR, NUM_INPUTS_ATTR, "tloop.source"):
        if attr in fn.attributes:
            new.attributes[attr] = fn.attributes[attr]
    return new


def _workspace_helpers(state: _ModuleState) -> list[Operation]:
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
    is_empty = llvm.ICmpOp(cached.results[0], zero.results[0], IntegerAttr(_ICMP_PREDICATES.index("eq"), i64))
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


def _release_workspaces(state: _ModuleState) -> llvm.FuncOp:
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


def lower_module(module: ModuleOp) -> None:
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
    state = _ModuleState(module, {}, {}, [])
    if not any(op.sym_name.data == SET_NUM_THREADS for op in module.ops if isinstance(op, llvm.FuncOp)):
        state.new_ops.extend(_thread_count_support())
    aliased = _kernels_called_with_aliases(funcs)
    lowered = [(fn, _lower_function(state, fn, fn.sym_name.data in aliased)) for fn in funcs]
    defined = {fn.sym_name.data for fn in funcs}
    for fn, new in lowered:
        module.body.block.insert_op_before(new, fn)
        fn.detach()
        fn.erase()
    if not any(op.sym_name.data == RELEASE_WORKSPACES for op in module.ops if isinstance(op, llvm.FuncOp)):
        state.new_ops.append(_release_workspaces(state))
    for op in state.new_ops:
        name = op.sym_name.data
        if isinstance(op, llvm.FuncOp) and not op.body.blocks and name in defined:
            continue  # a call to a function of this module, not an external one
        module.body.block.add_op(op)


class LowerToLLVMPass(ModulePass):
    """Lower loop-level IR (tloop kernels + host functions) to the llvm dialect."""

    name = "lower-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        lower_module(op)
