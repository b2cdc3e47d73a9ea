"""PTX emission: GPU-lowered kernels -> LLVM IR (llvmlite) -> PTX via LLVM's NVPTX backend.

Only device code: the host side of a program is CUDA C (``emit_cuda``) or a
driver that loads this PTX. Kernels use the ``ptx_kernel`` calling convention,
shared scratch is an ``addrspace(3)`` global, thread/block ids and the barrier
are NVVM intrinsics.

Transcendentals: NVPTX has no libm, so ``exp/log/sin/cos/tanh/rsqrt`` use the
hardware approximations (``ex2/lg2/sin/cos/tanh/rsqrt.approx``, a few ulp, like
``nvcc --use_fast_math``), ``erf`` a rational approximation (|error| < 1.5e-7)
and ``powf(x, y) = 2^(y*log2 x)`` (x > 0). f64 transcendentals are rejected.

Why our own: xDSL's llvm-dialect path drops the calling convention and gives
invalid IR for GEPs in non-zero address spaces (see the facts file); emitting
llvmlite IR directly from the loop IR is as short and keeps full control.
"""

from __future__ import annotations

import llvmlite.binding as llvm
from llvmlite import ir
from xdsl.dialects import arith, func, gpu, memref, scf
from xdsl.dialects.builtin import (
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.utils.exceptions import DiagnosticException

from dlc.backends.cuda.cuda_c import CMPF, CMPI, is_shared, num_elements, strides_of
from dlc.dialects import cuda
from dlc.dialects.tloop import ForOp, YieldOp
from dlc.lowering.to_llvm.scalar import FLOAT_INSTRUCTIONS, INT_INSTRUCTIONS, INT_MINMAX_PREDICATES

TRIPLE = "nvptx64-nvidia-cuda"
DATA_LAYOUT = "e-p3:32:32-i64:64-i128:128-v16:16-v32:32-n16:32:64"
SUPPORTED_ARCHS = ("sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_120")
I1, I32, I64 = ir.IntType(1), ir.IntType(32), ir.IntType(64)
F32 = ir.FloatType()
LOG2E, LN2 = 1.4426950408889634, 0.6931471805599453

# arith op -> llvmlite IRBuilder method (the LLVM instruction; `and`/`or` are Python keywords)
FLOAT_BINARY = dict(FLOAT_INSTRUCTIONS)
INT_BINARY = {name: f"{i}_" if i in ("and", "or") else i for name, i in INT_INSTRUCTIONS.items()}
FLOAT_INTRINSIC = {"math.sqrt": "llvm.sqrt", "math.floor": "llvm.floor", "math.ceil": "llvm.ceil",
                   "math.roundeven": "llvm.rint", "math.round": "llvm.round",
                   "math.absf": "llvm.fabs", "math.fma": "llvm.fma", "math.trunc": "llvm.trunc",
                   "arith.maximumf": "llvm.maximum", "arith.minimumf": "llvm.minimum",
                   "arith.maxnumf": "llvm.maxnum", "arith.minnumf": "llvm.minnum",
                   "math.copysign": "llvm.copysign"}
# no NVVM instruction: emitted as expand-math's polynomial (f32/f16)
EXPANDED = ("math.acos", "math.asin", "math.atan")
APPROX = ("math.exp", "math.log", "math.exp2", "math.log2", "math.rsqrt", "math.tanh",
          "math.sin", "math.cos", "math.erf", "math.powf")
INT_MINMAX = {name: {"gt": ">", "lt": "<"}[p[1:]] for name, p in INT_MINMAX_PREDICATES.items()}


class PtxEmitError(DiagnosticException):
    """The module holds something the PTX emitter does not support (one-line message)."""


def llvm_type(type_: Attribute) -> ir.Type:
    if isinstance(type_, IndexType):
        return I64
    if isinstance(type_, IntegerType):
        return ir.IntType(type_.width.data)
    if isinstance(type_, Float32Type):
        return F32
    if isinstance(type_, Float64Type):
        return ir.DoubleType()
    if isinstance(type_, Float16Type):
        return ir.HalfType()
    raise PtxEmitError(f"emit-ptx: unsupported type {type_}")


class KernelCodegen:
    def __init__(self, module: ir.Module, kernel: func.FuncOp):
        self.module = module
        self.kernel = kernel
        self.where = f"kernel @{kernel.sym_name.data}"
        args = kernel.body.block.args
        fn_type = ir.FunctionType(ir.VoidType(), [ir.PointerType() for _ in args])
        self.fn = ir.Function(module, fn_type, kernel.sym_name.data)
        self.fn.calling_convention = "ptx_kernel"
        entry = self.fn.append_basic_block("entry")
        self.allocas = ir.IRBuilder(entry)
        body = self.fn.append_basic_block("body")
        self.b = ir.IRBuilder(body)
        self.values: dict[SSAValue, ir.Value] = {}
        for arg, value in zip(args, self.fn.args):
            if not isinstance(arg.type, MemRefType):
                raise PtxEmitError(f"emit-ptx: {self.where}: argument #{arg.index} is not a memref")
            value.name = arg.name_hint or f"arg{arg.index}"
            value.add_attribute("noundef")
            self.values[arg] = value
        self.shared_count = 0
        threads = kernel.attributes["gpu.block"].get_values()  # type: ignore[union-attr]
        # __launch_bounds__: NVPTX reads it from nvvm.annotations (upgraded to attributes)
        for axis, count in zip("xyz", threads):
            module.add_named_metadata(
                "nvvm.annotations", [self.fn, f"maxntid{axis}", ir.Constant(I32, count)]
            )

    def run(self) -> None:
        self.block(self.kernel.body.block)
        self.b.ret_void()
        self.allocas.branch(self.fn.blocks[1])

    # --- helpers ---------------------------------------------------------------

    def intrinsic(self, name: str, ret: ir.Type, args: list[ir.Value]) -> ir.Value:
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(ret, [a.type for a in args]), name)
        return self.b.call(fn, args)

    def float_intrinsic(self, base: str, args: list[ir.Value]) -> ir.Value:
        t = args[0].type
        suffix = {"float": "f32", "double": "f64", "half": "f16"}[str(t)]
        return self.intrinsic(f"{base}.{suffix}", t, args)

    def shuffle(self, value: ir.Value, mode: str, offset: int) -> ir.Value:
        """``shfl.sync.bfly``/``.down`` over the full warp on 32-bit pieces of ``value``."""
        b = self.b
        kind = {"xor": "bfly", "down": "down"}[mode]
        width = value.type.width if isinstance(value.type, ir.IntType) else {"half": 16, "float": 32, "double": 64}[str(value.type)]
        bits = value if isinstance(value.type, ir.IntType) else b.bitcast(value, ir.IntType(width))
        pieces = [bits] if width == 32 else [b.zext(bits, I32)] if width < 32 else [
            b.trunc(bits, I32), b.trunc(b.lshr(bits, ir.Constant(bits.type, 32)), I32)]
        moved = [self.intrinsic(f"llvm.nvvm.shfl.sync.{kind}.i32", I32,
                                [ir.Constant(I32, -1), p, ir.Constant(I32, offset), ir.Constant(I32, 0x1F)])
                 for p in pieces]
        if width == 64:
            lo, hi = (b.zext(x, I64) for x in moved)
            out = b.or_(lo, b.shl(hi, ir.Constant(I64, 32)))
        else:
            out = moved[0] if width == 32 else b.trunc(moved[0], ir.IntType(width))
        return out if out.type == value.type else b.bitcast(out, value.type)

    def error(self, op: Operation, why: str = "unsupported op") -> PtxEmitError:
        return PtxEmitError(f"emit-ptx: {self.where}: {why} '{op.name}'")

    def address(self, ref: SSAValue, indices) -> ir.Value:
        type_ = ref.type
        assert isinstance(type_, MemRefType)
        offset: ir.Value = ir.Constant(I64, 0)
        for index, stride in zip(indices, strides_of(type_)):
            term = self.values[index]
            if stride != 1:
                term = self.b.mul(term, ir.Constant(I64, stride))
            offset = term if isinstance(offset, ir.Constant) and offset.constant == 0 else self.b.add(offset, term)
        return self.b.gep(self.values[ref], [offset], source_etype=llvm_type(type_.element_type))

    # --- structure ---------------------------------------------------------------

    def block(self, block: Block) -> list[ir.Value]:
        for op in block.ops:
            if isinstance(op, (YieldOp, func.ReturnOp)):
                continue
            if isinstance(op, scf.YieldOp):
                return [self.values[v] for v in op.operands]
            self.op(op)
        return []

    def for_loop(self, op: ForOp) -> None:
        pre = self.b.block
        header = self.fn.append_basic_block("loop")
        body = self.fn.append_basic_block("body")
        exit_ = self.fn.append_basic_block("done")
        self.b.branch(header)
        self.b.position_at_end(header)
        iv = self.b.phi(I64, name=op.induction_var.name_hint or "i")
        iv.add_incoming(ir.Constant(I64, op.lower), pre)
        self.b.cbranch(self.b.icmp_signed("<", iv, ir.Constant(I64, op.upper)), body, exit_)
        self.b.position_at_end(body)
        self.values[op.induction_var] = iv
        self.block(op.body.block)
        nxt = self.b.add(iv, ir.Constant(I64, op.stride))
        iv.add_incoming(nxt, self.b.block)
        self.b.branch(header)
        self.b.position_at_end(exit_)

    def if_op(self, op: scf.IfOp) -> None:
        then = self.fn.append_basic_block("then")
        other = self.fn.append_basic_block("else")
        merge = self.fn.append_basic_block("endif")
        self.b.cbranch(self.values[op.cond], then, other)
        incoming = []
        for region, block in ((op.true_region, then), (op.false_region, other)):
            self.b.position_at_end(block)
            values = self.block(region.block) if region.blocks else []
            incoming.append((values, self.b.block))
            self.b.branch(merge)
        self.b.position_at_end(merge)
        for k, result in enumerate(op.results):
            phi = self.b.phi(llvm_type(result.type))
            for values, block in incoming:
                phi.add_incoming(values[k], block)
            self.values[result] = phi

    # --- ops -------------------------------------------------------------------

    def op(self, op: Operation) -> None:  # noqa: C901 - one dispatch table
        b, v, name = self.b, self.values, op.name
        if isinstance(op, ForOp):
            return self.for_loop(op)
        if isinstance(op, scf.IfOp):
            return self.if_op(op)
        if isinstance(op, memref.StoreOp):
            b.store(v[op.value], self.address(op.memref, op.indices))
            return
        if isinstance(op, gpu.BarrierOp):
            self.intrinsic("llvm.nvvm.barrier0", ir.VoidType(), [])
            return
        if isinstance(op, memref.AllocaOp):
            v[op.memref] = self.alloca(op.memref.type)
            return
        if isinstance(op, (cuda.MmaSyncOp, cuda.CpAsyncOp, cuda.CpAsyncCommitOp, cuda.CpAsyncWaitOp)):
            raise self.error(op, "tensor-core kernels are emitted as CUDA C only (--to-cuda); unsupported op")
        if isinstance(op, cuda.ShuffleOp):
            v[op.result] = self.shuffle(v[op.value], op.mode.data, op.offset.value.data)
            return
        result = op.results[0]
        ops = [v[x] for x in op.operands]
        if isinstance(op, arith.ConstantOp):
            attr = op.value
            if not isinstance(attr, (FloatAttr, IntegerAttr)):
                raise self.error(op, "dense constants are not supported:")
            out = ir.Constant(llvm_type(result.type), attr.value.data)
        elif name in FLOAT_BINARY:
            # `contract` lets mul+add fuse into fma, as nvcc does by default (-fmad=true)
            out = getattr(b, FLOAT_BINARY[name])(*ops, flags=("contract",))
        elif name in INT_BINARY:
            out = getattr(b, INT_BINARY[name])(*ops)
        elif name == "arith.negf":
            out = b.fneg(ops[0])
        elif name in INT_MINMAX:
            cmp = b.icmp_unsigned if name.endswith("ui") else b.icmp_signed
            out = b.select(cmp(INT_MINMAX[name], ops[0], ops[1]), ops[0], ops[1])
        elif name == "math.absi":
            out = b.select(b.icmp_signed("<", ops[0], ir.Constant(ops[0].type, 0)), b.neg(ops[0]), ops[0])
        elif isinstance(op, arith.CmpiOp):
            pred = CMPI[op.predicate.value.data]
            rel = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
            if pred in ("eq", "ne"):
                out = b.icmp_signed(rel[pred], *ops)
            elif pred[0] == "u":
                out = b.icmp_unsigned(rel[pred[1:]], *ops)
            else:
                out = b.icmp_signed(rel[pred[1:]], *ops)
        elif isinstance(op, arith.CmpfOp):
            out = self.cmpf(CMPF[op.predicate.value.data], ops)
        elif isinstance(op, arith.SelectOp):
            out = b.select(*ops)
        elif name in FLOAT_INTRINSIC:
            out = self.float_intrinsic(FLOAT_INTRINSIC[name], ops)
        elif name in APPROX:
            out = self.approx(op, ops)
        elif name in EXPANDED:
            from dlc.transforms.expand_math import expansion_of

            expansion = expansion_of(op)
            if expansion is None:
                raise self.error(op)
            for piece in expansion[0]:
                self.op(piece)
            out = v[expansion[1]]
        elif isinstance(op, memref.LoadOp):
            out = b.load(self.address(op.memref, op.indices), typ=llvm_type(result.type))
        elif isinstance(op, (gpu.ThreadIdOp, gpu.BlockIdOp, gpu.BlockDimOp, gpu.GridDimOp)):
            reg = {gpu.ThreadIdOp: "tid", gpu.BlockIdOp: "ctaid", gpu.BlockDimOp: "ntid",
                   gpu.GridDimOp: "nctaid"}[type(op)]
            raw = self.intrinsic(f"llvm.nvvm.read.ptx.sreg.{reg}.{op.dimension.data.value}", I32, [])
            out = b.zext(raw, I64)
        else:
            out = self.cast(op, ops[0] if ops else None, llvm_type(result.type))
        if result.name_hint and not isinstance(out, ir.Constant):
            out.name = result.name_hint
        v[result] = out

    def cast(self, op: Operation, x: ir.Value | None, to: ir.Type) -> ir.Value:
        b, name = self.b, op.name
        if x is None:
            raise self.error(op)
        src = op.operands[0].type
        if name == "arith.index_cast":
            width = x.type.width
            if width == to.width:
                return x
            return b.sext(x, to) if width < to.width else b.trunc(x, to)
        table = {"arith.sitofp": b.sitofp, "arith.uitofp": b.uitofp, "arith.fptosi": b.fptosi,
                 "arith.fptoui": b.fptoui, "arith.extf": b.fpext, "arith.truncf": b.fptrunc,
                 "arith.extsi": b.sext, "arith.extui": b.zext, "arith.trunci": b.trunc,
                 "arith.bitcast": b.bitcast}
        if name not in table:
            raise self.error(op)
        del src
        return table[name](x, to)

    def cmpf(self, pred: str, ops: list[ir.Value]) -> ir.Value:
        b = self.b
        if pred == "true":
            return ir.Constant(I1, 1)
        if pred == "false":
            return ir.Constant(I1, 0)
        if pred in ("ord", "uno"):
            return (b.fcmp_ordered if pred == "ord" else b.fcmp_unordered)(pred, *ops)
        rel = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[pred[1:]]
        return (b.fcmp_ordered if pred[0] == "o" else b.fcmp_unordered)(rel, *ops)

    def approx(self, op: Operation, ops: list[ir.Value]) -> ir.Value:
        b, name = self.b, op.name
        t = ops[0].type
        if isinstance(t, ir.DoubleType):
            raise self.error(op, "f64 transcendental (NVPTX has no libm) in")
        if isinstance(t, ir.HalfType):
            wide = [b.fpext(x, F32) for x in ops]
            return b.fptrunc(self.approx_f32(name, wide), t)
        return self.approx_f32(name, ops)

    def approx_f32(self, name: str, ops: list[ir.Value]) -> ir.Value:
        b = self.b

        def c(x: float) -> ir.Constant:
            return ir.Constant(F32, x)

        def nvvm(fn: str, x: ir.Value) -> ir.Value:
            return self.intrinsic(fn, F32, [x])

        x = ops[0]
        if name == "math.exp":
            return nvvm("llvm.nvvm.ex2.approx.f", b.fmul(x, c(LOG2E)))
        if name == "math.exp2":
            return nvvm("llvm.nvvm.ex2.approx.f", x)
        if name == "math.log":
            return b.fmul(nvvm("llvm.nvvm.lg2.approx.f", x), c(LN2))
        if name == "math.log2":
            return nvvm("llvm.nvvm.lg2.approx.f", x)
        if name == "math.rsqrt":
            return nvvm("llvm.nvvm.rsqrt.approx.f", x)
        if name == "math.tanh":
            return nvvm("llvm.nvvm.tanh.approx.f32", x)  # no ".f" spelling for tanh
        if name == "math.sin":
            return nvvm("llvm.nvvm.sin.approx.f", x)
        if name == "math.cos":
            return nvvm("llvm.nvvm.cos.approx.f", x)
        if name == "math.powf":
            return nvvm("llvm.nvvm.ex2.approx.f", b.fmul(ops[1], nvvm("llvm.nvvm.lg2.approx.f", x)))
        # erf: Abramowitz & Stegun 7.1.26 on |x|, sign restored
        ax = self.float_intrinsic("llvm.fabs", [x])
        t = b.fdiv(c(1.0), b.fadd(c(1.0), b.fmul(c(0.3275911), ax)))
        poly = c(1.061405429)
        for coeff in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
            poly = b.fadd(b.fmul(poly, t), c(coeff))
        poly = b.fmul(poly, t)
        e = nvvm("llvm.nvvm.ex2.approx.f", b.fmul(b.fneg(b.fmul(ax, ax)), c(LOG2E)))
        y = b.fsub(c(1.0), b.fmul(poly, e))
        return b.select(b.fcmp_ordered("<", x, c(0.0)), b.fneg(y), y)

    def alloca(self, type_: MemRefType) -> ir.Value:
        elt = llvm_type(type_.element_type)
        count = num_elements(type_)
        if is_shared(type_):
            self.shared_count += 1
            name = f"{self.fn.name}_shared{self.shared_count}"
            g = ir.GlobalVariable(self.module, ir.ArrayType(elt, count), name, addrspace=3)
            g.linkage = "internal"
            g.initializer = ir.Constant(ir.ArrayType(elt, count), ir.Undefined)
            g.align = 16
            g.type = ir.PointerType(addrspace=3)  # opaque pointer, so GEPs stay in addrspace 3
            return g
        return self.allocas.alloca(elt, size=count)


def emit_llvm_ir(module: ModuleOp) -> ir.Module:
    from dlc.backends.cuda.lower_to_gpu import ensure_gpu_lowered, is_kernel

    ensure_gpu_lowered(module)
    out = ir.Module(name="dlc_kernels")
    out.triple = TRIPLE
    out.data_layout = DATA_LAYOUT
    for op in module.ops:
        if is_kernel(op):
            KernelCodegen(out, op).run()
    return out


_TARGET_MACHINES: dict[str, object] = {}


def emit_ptx(module: ModuleOp, arch: str = "sm_90") -> str:
    """PTX for every kernel of ``module`` (graph or loop level input is lowered first, in place)."""
    if arch not in SUPPORTED_ARCHS:
        raise PtxEmitError(f"emit-ptx: arch must be one of {', '.join(SUPPORTED_ARCHS)}, got '{arch}'")
    text = str(emit_llvm_ir(module))
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    parsed = llvm.parse_assembly(text)
    parsed.verify()
    machine = _TARGET_MACHINES.get(arch)
    if machine is None:
        machine = llvm.Target.from_triple(TRIPLE).create_target_machine(cpu=arch, opt=3)
        _TARGET_MACHINES[arch] = machine
    pm = llvm.create_pass_builder(machine, llvm.create_pipeline_tuning_options(speed_level=3)) \
        if hasattr(llvm, "create_pass_builder") else None
    if pm is not None:
        pm.getModulePassManager().run(parsed, pm)
    ptx = machine.emit_assembly(parsed)  # type: ignore[attr-defined]
    # A call LLVM did not resolve to an instruction (a misspelt intrinsic) becomes an
    # .extern function that ptxas cannot link: name it here rather than there.
    for line in ptx.splitlines():
        if line.startswith(".extern .func"):
            raise PtxEmitError(f"emit-ptx: unresolved device function in the PTX: {line.split()[-1]}")
    return ptx

