"""Elementwise kernels: unary math, binary ops with numpy broadcasting, bitwise
ops and shifts, where, cast and the parametrized activations (clip,
leaky_relu, elu, hard_sigmoid).

One loop per output dim (``%d0, %d1, ...``); an operand dim of size 1 that is
broadcast is indexed with 0.
"""

from __future__ import annotations

import math as pymath
from collections.abc import Callable, Sequence

from xdsl.dialects import arith, func
from xdsl.dialects import math as xmath
from xdsl.ir import Attribute, SSAValue

from dlc.dialects.graph_base import GraphOp, is_float, is_narrow, is_unsigned, numpy_dtype
from dlc.lowering.kernels import kernel
from dlc.lowering.kernels.builder import Index, KernelBuilder, storage_type


def broadcast_indices(ivs: Sequence[Index], in_shape: Sequence[int], out_shape: Sequence[int]) -> list[Index]:
    """Indices into an operand of ``in_shape`` broadcast to ``out_shape``."""
    offset = len(out_shape) - len(in_shape)
    return [0 if d == 1 and out_shape[offset + k] != 1 else ivs[offset + k] for k, d in enumerate(in_shape)]


def elementwise_kernel(op: GraphOp, name: str, compute: Callable[..., SSAValue]) -> func.FuncOp:
    """out[i] = compute(kb, *operands[bcast(i)]); shared by all elementwise ops."""
    in_types = [o.type for o in op.operands]
    out_type = op.results[0].type
    kb = KernelBuilder(name, in_types, [out_type], op.name)
    shape = out_type.get_shape()
    with kb.loops([f"d{k}" for k in range(len(shape))], shape) as ivs:
        values = [
            kb.load(buf, broadcast_indices(ivs, t.get_shape(), shape))
            for buf, t in zip(kb.inputs, in_types)
        ]
        kb.store(kb.epilogue_value(compute(kb, *values), ivs), kb.outputs[0], ivs)
    return kb.finish()


# -- unary -------------------------------------------------------------------------


def _float_math(op_class):
    return lambda kb, x, et: kb.emit(op_class(x))


def _neg(kb, x, et):
    return kb.neg(x, et)


def _abs(kb, x, et):
    if is_float(et):
        return kb.emit(xmath.AbsFOp(x))
    if is_unsigned(et):
        return x
    return kb.emit(xmath.AbsIOp(x))


def _sign(kb, x, et):
    zero, one, minus = kb.const(0, et), kb.const(1, et), kb.const(-1, et)
    positive = kb.cmp("gt", x, zero, et)
    if is_unsigned(et):
        return kb.select(positive, one, zero)
    negative = kb.cmp("lt", x, zero, et)
    # floats: the fallback keeps 0, -0 and NaN as they are, like np.sign
    rest = kb.select(negative, minus, x if is_float(et) else zero)
    return kb.select(positive, one, rest)


def _reciprocal(kb, x, et):
    return kb.div(kb.const(1.0, et), x, et)


def _sigmoid(kb, x, et):
    # e = exp(-|x|) never overflows: 1 / (1 + e) for x >= 0, e / (1 + e) below,
    # which keeps the tiny (denormal) results of x << 0 instead of 1 / inf = 0
    one = kb.const(1.0, et)
    e = kb.emit(xmath.ExpOp(kb.neg(kb.emit(xmath.AbsFOp(x)), et)))
    denominator = kb.add(one, e, et)
    numerator = kb.select(kb.cmp("lt", x, kb.const(0.0, et), et), e, one)
    return kb.div(numerator, denominator, et)


def _relu(kb, x, et):
    return kb.max(x, kb.const(0, et), et)


def _softplus(kb, x, et):
    # max(x, 0) + log(1 + exp(-|x|)): no overflow of exp for large x
    zero, one = kb.const(0.0, et), kb.const(1.0, et)
    ax = kb.emit(xmath.AbsFOp(x))
    tail = kb.emit(xmath.LogOp(kb.add(one, kb.emit(xmath.ExpOp(kb.neg(ax, et))), et)))
    return kb.add(kb.max(x, zero, et), tail, et)


def _softsign(kb, x, et):
    return kb.div(x, kb.add(kb.const(1.0, et), kb.emit(xmath.AbsFOp(x)), et), et)


def _not(kb, x, et):
    return kb.emit(arith.XOrIOp(x, kb.const(True, et)))


# bitwise ops and shifts, with ONNX semantics (integer tensors)


def bitwise_not(kb: KernelBuilder, x: SSAValue, et: Attribute) -> SSAValue:
    return kb.emit(arith.XOrIOp(x, kb.const(-1, et)))


def _count_out_of_range(kb: KernelBuilder, count: SSAValue, et: Attribute) -> SSAValue:
    # an unsigned compare also catches negative counts (they are huge unsigned)
    width = storage_type(et).width.data
    return kb.emit(arith.CmpiOp(count, kb.const(width, et), "uge"))


def shift_left(kb: KernelBuilder, a: SSAValue, count: SSAValue, et: Attribute) -> SSAValue:
    # LLVM's shl is poison for count >= width: shift by 0 there, then select 0
    out_of_range = _count_out_of_range(kb, count, et)
    safe = kb.select(out_of_range, kb.const(0, et), count)
    return kb.select(out_of_range, kb.const(0, et), kb.emit(arith.ShLIOp(a, safe)))


def shift_right(kb: KernelBuilder, a: SSAValue, count: SSAValue, et: Attribute) -> SSAValue:
    out_of_range = _count_out_of_range(kb, count, et)
    if is_unsigned(et):
        safe = kb.select(out_of_range, kb.const(0, et), count)
        return kb.select(out_of_range, kb.const(0, et), kb.emit(arith.ShRUIOp(a, safe)))
    # signed: an out-of-range count fills with the sign bit, i.e. a >> (width - 1)
    width = storage_type(et).width.data
    safe = kb.select(out_of_range, kb.const(width - 1, et), count)
    return kb.emit(arith.ShRSIOp(a, safe))


UNARY: dict[str, Callable[[KernelBuilder, SSAValue, Attribute], SSAValue]] = {
    "graph.neg": _neg,
    "graph.abs": _abs,
    "graph.sign": _sign,
    "graph.exp": _float_math(xmath.ExpOp),
    "graph.log": _float_math(xmath.LogOp),
    "graph.sqrt": _float_math(xmath.SqrtOp),
    "graph.rsqrt": _float_math(xmath.RsqrtOp),
    "graph.reciprocal": _reciprocal,
    "graph.tanh": _float_math(xmath.TanhOp),
    "graph.sigmoid": _sigmoid,
    "graph.relu": _relu,
    "graph.erf": _float_math(xmath.ErfOp),
    "graph.floor": _float_math(xmath.FloorOp),
    "graph.ceil": _float_math(xmath.CeilOp),
    "graph.round": _float_math(xmath.RoundEvenOp),
    "graph.sin": _float_math(xmath.SinOp),
    "graph.cos": _float_math(xmath.CosOp),
    "graph.acos": _float_math(xmath.AcosOp),
    "graph.asin": _float_math(xmath.AsinOp),
    "graph.atan": _float_math(xmath.AtanOp),
    "graph.softplus": _softplus,
    "graph.softsign": _softsign,
    "graph.not": _not,
    "graph.bitwise_not": bitwise_not,
}


def _unary_compute(op: GraphOp):
    et = op.operands[0].type.element_type
    fn = UNARY[op.name]
    return lambda kb, x: fn(kb, x, et)


@kernel(*UNARY)
def lower_unary(op: GraphOp, name: str) -> func.FuncOp:
    return elementwise_kernel(op, name, _unary_compute(op))


def _cast_bound(value: float, et: Attribute) -> float | int:
    """An attribute bound converted like ``np.asarray(v).astype(dtype)``."""
    import numpy as np

    return np.asarray(value).astype(numpy_dtype(et)).item()


def _clip_compute(op: GraphOp):
    et = op.operands[0].type.element_type
    lo = op.min
    hi = op.max

    def compute(kb: KernelBuilder, x):
        if lo != -pymath.inf:
            x = kb.max(x, kb.const(_cast_bound(lo, et), et), et)
        if hi != pymath.inf:
            x = kb.min(x, kb.const(_cast_bound(hi, et), et), et)
        return x

    return compute


@kernel("graph.leaky_relu")
def lower_leaky_relu(op: GraphOp, name: str) -> func.FuncOp:
    return elementwise_kernel(op, name, _leaky_relu_compute(op))


@kernel("graph.clip")
def lower_clip(op: GraphOp, name: str) -> func.FuncOp:
    return elementwise_kernel(op, name, _clip_compute(op))


def _leaky_relu_compute(op: GraphOp):
    et = op.operands[0].type.element_type
    alpha = op.alpha

    def compute(kb: KernelBuilder, x):
        scaled = kb.mul(kb.const(alpha, et), x, et)
        return kb.select(kb.cmp("ge", x, kb.const(0.0, et), et), x, scaled)

    return compute


@kernel("graph.elu")
def lower_elu(op: GraphOp, name: str) -> func.FuncOp:
    et = op.operands[0].type.element_type
    alpha = op.alpha

    def compute(kb: KernelBuilder, x):
        em1 = kb.sub(kb.emit(xmath.ExpOp(x)), kb.const(1.0, et), et)
        neg = kb.mul(kb.const(alpha, et), em1, et)
        return kb.select(kb.cmp("gt", x, kb.const(0.0, et), et), x, neg)

    return elementwise_kernel(op, name, compute)


@kernel("graph.hard_sigmoid")
def lower_hard_sigmoid(op: GraphOp, name: str) -> func.FuncOp:
    et = op.operands[0].type.element_type
    alpha, beta = op.alpha, op.beta

    def compute(kb: KernelBuilder, x):
        y = kb.add(kb.mul(kb.const(alpha, et), x, et), kb.const(beta, et), et)
        return kb.min(kb.max(y, kb.const(0.0, et), et), kb.const(1.0, et), et)

    return elementwise_kernel(op, name, compute)


@kernel("graph.cast")
def lower_cast(op: GraphOp, name: str) -> func.FuncOp:
    src = op.operands[0].type.element_type
    dst = op.results[0].type.element_type
    if is_narrow(src) or is_narrow(dst):
        from dlc.lowering.kernels.narrow import lower_narrow_cast

        return lower_narrow_cast(op, name)
    return elementwise_kernel(op, name, lambda kb, x: kb.convert(x, src, dst))


# -- binary ------------------------------------------------------------------------


def _pow(kb: KernelBuilder, a, b, et):
    if is_float(et):
        return kb.emit(xmath.PowFOp(a, b))
    # integers go through f64 like the reference (np.power on float64, astype)
    from xdsl.dialects.builtin import f64

    r = kb.emit(xmath.PowFOp(kb.convert(a, et, f64), kb.convert(b, et, f64)))
    return kb.convert(r, f64, et)


BINARY: dict[str, Callable[..., SSAValue]] = {
    "graph.add": lambda kb, a, b, et: kb.add(a, b, et),
    "graph.sub": lambda kb, a, b, et: kb.sub(a, b, et),
    "graph.mul": lambda kb, a, b, et: kb.mul(a, b, et),
    "graph.div": lambda kb, a, b, et: kb.div(a, b, et),
    "graph.pow": _pow,
    "graph.mod": lambda kb, a, b, et: kb.rem(a, b, et),
    "graph.max": lambda kb, a, b, et: kb.max(a, b, et),
    "graph.min": lambda kb, a, b, et: kb.min(a, b, et),
    "graph.equal": lambda kb, a, b, et: kb.cmp("eq", a, b, et),
    "graph.not_equal": lambda kb, a, b, et: kb.cmp("ne", a, b, et),
    "graph.less": lambda kb, a, b, et: kb.cmp("lt", a, b, et),
    "graph.less_equal": lambda kb, a, b, et: kb.cmp("le", a, b, et),
    "graph.greater": lambda kb, a, b, et: kb.cmp("gt", a, b, et),
    "graph.greater_equal": lambda kb, a, b, et: kb.cmp("ge", a, b, et),
    "graph.and": lambda kb, a, b, et: kb.emit(arith.AndIOp(a, b)),
    "graph.or": lambda kb, a, b, et: kb.emit(arith.OrIOp(a, b)),
    "graph.xor": lambda kb, a, b, et: kb.emit(arith.XOrIOp(a, b)),
    "graph.bitwise_and": lambda kb, a, b, et: kb.emit(arith.AndIOp(a, b)),
    "graph.bitwise_or": lambda kb, a, b, et: kb.emit(arith.OrIOp(a, b)),
    "graph.bitwise_xor": lambda kb, a, b, et: kb.emit(arith.XOrIOp(a, b)),
    "graph.shift_left": shift_left,
    "graph.shift_right": shift_right,
}


def _binary_compute(op: GraphOp):
    et = op.operands[0].type.element_type
    fn = BINARY[op.name]
    return lambda kb, a, b: fn(kb, a, b, et)


@kernel(*BINARY)
def lower_binary(op: GraphOp, name: str) -> func.FuncOp:
    return elementwise_kernel(op, name, _binary_compute(op))


def scalar_compute(op: GraphOp) -> Callable[..., SSAValue] | None:
    """``compute(kb, *operand_values) -> value`` of an elementwise op (fuse-ops
    chains these into another kernel's epilogue), or None for other ops."""
    if op.name in UNARY:
        return _unary_compute(op)
    if op.name in BINARY:
        return _binary_compute(op)
    if op.name == "graph.clip":
        return _clip_compute(op)
    if op.name == "graph.leaky_relu":
        return _leaky_relu_compute(op)
    if op.name == "graph.where":
        return lambda kb, c, a, b: kb.select(c, a, b)
    return None


@kernel("graph.where")
def lower_where(op: GraphOp, name: str) -> func.FuncOp:
    return elementwise_kernel(op, name, lambda kb, c, a, b: kb.select(c, a, b))

