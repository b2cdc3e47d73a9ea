"""Converters for ONNX elementwise ops: math, comparisons, logic, bitwise ops
and BitShift, activations, Cast, Clip, Where and the variadic Min/Max/Sum/Mean."""

from __future__ import annotations

import math

import numpy as np

from dlc.dialects import graph as g
from dlc.frontends.onnx.importer import ImportContext, Node, graph_element_type
from dlc.frontends.onnx.registry import converts

UNARY = {
    "Abs": g.AbsOp, "Neg": g.NegOp, "Sign": g.SignOp, "Exp": g.ExpOp, "Log": g.LogOp,
    "Sqrt": g.SqrtOp, "Reciprocal": g.ReciprocalOp, "Tanh": g.TanhOp,
    "Sigmoid": g.SigmoidOp, "Relu": g.ReluOp, "Erf": g.ErfOp, "Floor": g.FloorOp,
    "Ceil": g.CeilOp, "Round": g.RoundOp, "Sin": g.SinOp, "Cos": g.CosOp,
    "Softplus": g.SoftplusOp, "Softsign": g.SoftsignOp, "Not": g.NotOp,
    "Acos": g.AcosOp, "Asin": g.AsinOp, "Atan": g.AtanOp, "BitwiseNot": g.BitwiseNotOp,
}

BINARY = {
    "Add": g.AddOp, "Sub": g.SubOp, "Mul": g.MulOp, "Div": g.DivOp,
    "Equal": g.EqualOp, "Less": g.LessOp, "LessOrEqual": g.LessEqualOp,
    "Greater": g.GreaterOp, "GreaterOrEqual": g.GreaterEqualOp,
    "And": g.AndOp, "Or": g.OrOp, "Xor": g.XorOp,
    "BitwiseAnd": g.BitwiseAndOp, "BitwiseOr": g.BitwiseOrOp, "BitwiseXor": g.BitwiseXorOp,
}

VARIADIC = {"Max": g.MaxOp, "Min": g.MinOp, "Sum": g.AddOp, "Mean": g.AddOp}


@converts(*UNARY)
def convert_unary(node: Node, ctx: ImportContext):
    return [ctx.emit(UNARY[node.op_type], node.input(0))]


@converts(*BINARY)
def convert_binary(node: Node, ctx: ImportContext):
    return [ctx.emit(BINARY[node.op_type], node.input(0), node.input(1))]


@converts(*VARIADIC)
def convert_variadic(node: Node, ctx: ImportContext):
    inputs = [t for t in node.inputs if t is not None]
    if not inputs:
        raise ctx.error("needs at least one input")
    acc = inputs[0]
    for t in inputs[1:]:
        acc = ctx.emit(VARIADIC[node.op_type], acc, t)
    if node.op_type == "Mean" and len(inputs) > 1:
        acc = ctx.emit(g.DivOp, acc, ctx.constant(len(inputs), like=acc))
    return [acc]


@converts("BitShift")
def convert_bit_shift(node: Node, ctx: ImportContext):
    x, count = node.input(0), node.input(1)
    if x.dtype.kind not in "iu":
        raise ctx.error(f"BitShift takes integer tensors, got {x.dtype}")
    direction = node.required("direction")
    if direction not in ("LEFT", "RIGHT"):
        raise ctx.error(f"direction must be LEFT or RIGHT, got '{direction}'")
    return [ctx.emit(g.ShiftLeftOp if direction == "LEFT" else g.ShiftRightOp, x, count)]


@converts("Pow")
def convert_pow(node: Node, ctx: ImportContext):
    base, exponent = node.input(0), node.input(1)
    if exponent.element_type != base.element_type:
        # ONNX lets the exponent have its own type (opset 12+); the graph op does not
        exponent = ctx.emit(g.CastOp, exponent, to=base.element_type)
    return [ctx.emit(g.PowOp, base, exponent)]


@converts("Mod")
def convert_mod(node: Node, ctx: ImportContext):
    a, b = node.input(0), node.input(1)
    if node.attr("fmod", 0):
        return [ctx.emit(g.ModOp, a, b)]
    # Python-style remainder (sign of the divisor) from C's fmod:
    # r = fmod(a, b); r + b where r != 0 and sign(r) != sign(b)
    r = ctx.emit(g.ModOp, a, b)
    if a.dtype.kind == "u":
        return [r]
    zero = ctx.constant(0, like=a)
    r_neg = ctx.emit(g.LessOp, r, zero)
    b_neg = ctx.emit(g.LessOp, b, zero)
    nonzero = ctx.emit(g.NotEqualOp, r, zero)
    fix = ctx.emit(g.AndOp, nonzero, ctx.emit(g.XorOp, r_neg, b_neg))
    return [ctx.emit(g.WhereOp, fix, ctx.emit(g.AddOp, r, b), r)]


@converts("Where")
def convert_where(node: Node, ctx: ImportContext):
    return [ctx.emit(g.WhereOp, node.input(0), node.input(1), node.input(2))]


def narrow_cast_attrs(node: Node, src, dst) -> dict:
    """ONNX Cast-19/24 `saturate` and `round_mode`, kept when a side is narrow."""
    from dlc.dialects.graph_base import is_narrow

    if not (is_narrow(src) or is_narrow(dst)):
        return {}
    attrs = {}
    if not node.attr("saturate", 1):
        attrs["saturate"] = False
    if node.attr("round_mode", "up") != "up":
        attrs["round_mode"] = node.attr("round_mode")
    return attrs


@converts("Cast")
def convert_cast(node: Node, ctx: ImportContext):
    to = graph_element_type(node.required("to"), node.where)
    x = node.input(0)
    if x.element_type == to:
        return [x]
    return [ctx.emit(g.CastOp, x, to=to, **narrow_cast_attrs(node, x.element_type, to))]


@converts("CastLike")
def convert_cast_like(node: Node, ctx: ImportContext):
    x, like = node.input(0), node.input(1)
    if x.element_type == like.element_type:
        return [x]
    to = like.element_type
    return [ctx.emit(g.CastOp, x, to=to, **narrow_cast_attrs(node, x.element_type, to))]


@converts("Clip")
def convert_clip(node: Node, ctx: ImportContext):
    x = node.input(0)
    if node.opset < 11:
        lo, hi = node.attr("min"), node.attr("max")
        lo_t = None if lo is None else ctx.constant(lo, like=x)
        hi_t = None if hi is None else ctx.constant(hi, like=x)
    else:
        lo_t, hi_t = node.input(1), node.input(2)
    if x.dtype.kind == "f" and all(t is None or t.const is not None for t in (lo_t, hi_t)):
        bounds = {}
        if lo_t is not None:
            bounds["min"] = float(ctx.const_scalar(lo_t, "min"))
        if hi_t is not None:
            bounds["max"] = float(ctx.const_scalar(hi_t, "max"))
        return [ctx.emit(g.ClipOp, x, **bounds)]
    # integers (exact bounds) or run-time bounds: max then min
    out = x
    if lo_t is not None:
        out = ctx.emit(g.MaxOp, out, lo_t)
    if hi_t is not None:
        out = ctx.emit(g.MinOp, out, hi_t)
    return [out]


@converts("LeakyRelu")
def convert_leaky_relu(node: Node, ctx: ImportContext):
    return [ctx.emit(g.LeakyReluOp, node.input(0), alpha=float(node.attr("alpha", 0.01)))]


@converts("Elu")
def convert_elu(node: Node, ctx: ImportContext):
    return [ctx.emit(g.EluOp, node.input(0), alpha=float(node.attr("alpha", 1.0)))]


@converts("Selu")
def convert_selu(node: Node, ctx: ImportContext):
    x = node.input(0)
    alpha = float(node.attr("alpha", 1.67326319217681884765625))
    gamma = float(node.attr("gamma", 1.05070102214813232421875))
    elu = ctx.emit(g.EluOp, x, alpha=alpha)
    return [ctx.emit(g.MulOp, elu, ctx.constant(gamma, like=x))]


@converts("Celu")
def convert_celu(node: Node, ctx: ImportContext):
    # celu(x) = max(0, x) + min(0, alpha * (exp(x / alpha) - 1)) = alpha * elu(x / alpha)
    x = node.input(0)
    alpha = float(node.attr("alpha", 1.0))
    scaled = ctx.emit(g.DivOp, x, ctx.constant(alpha, like=x))
    return [ctx.emit(g.MulOp, ctx.emit(g.EluOp, scaled, alpha=1.0), ctx.constant(alpha, like=x))]


@converts("HardSigmoid")
def convert_hard_sigmoid(node: Node, ctx: ImportContext):
    return [ctx.emit(g.HardSigmoidOp, node.input(0), alpha=float(node.attr("alpha", 0.2)),
                     beta=float(node.attr("beta", 0.5)))]


@converts("HardSwish")
def convert_hard_swish(node: Node, ctx: ImportContext):
    x = node.input(0)
    return [ctx.emit(g.MulOp, x, ctx.emit(g.HardSigmoidOp, x, alpha=1.0 / 6, beta=0.5))]


@converts("ThresholdedRelu")
def convert_thresholded_relu(node: Node, ctx: ImportContext):
    x = node.input(0)
    keep = ctx.emit(g.GreaterOp, x, ctx.constant(node.attr("alpha", 1.0), like=x))
    return [ctx.emit(g.WhereOp, keep, x, ctx.constant(0, like=x))]


@converts("PRelu")
def convert_prelu(node: Node, ctx: ImportContext):
    x, slope = node.input(0), node.input(1)
    negative = ctx.emit(g.LessOp, x, ctx.constant(0, like=x))
    return [ctx.emit(g.WhereOp, negative, ctx.emit(g.MulOp, x, slope), x)]


@converts("Gelu")
def convert_gelu(node: Node, ctx: ImportContext):
    return [ctx.emit(g.GeluOp, node.input(0), approximate=node.attr("approximate", "none"))]


@converts("Mish")
def convert_mish(node: Node, ctx: ImportContext):
    x = node.input(0)
    return [ctx.emit(g.MulOp, x, ctx.emit(g.TanhOp, ctx.emit(g.SoftplusOp, x)))]


@converts("Swish")
def convert_swish(node: Node, ctx: ImportContext):
    x = node.input(0)
    alpha = float(node.attr("alpha", 1.0))
    scaled = x if alpha == 1.0 else ctx.emit(g.MulOp, x, ctx.constant(alpha, like=x))
    return [ctx.emit(g.MulOp, x, ctx.emit(g.SigmoidOp, scaled))]


@converts("Shrink")
def convert_shrink(node: Node, ctx: ImportContext):
    x = node.input(0)
    lambd, bias = float(node.attr("lambd", 0.5)), float(node.attr("bias", 0.0))
    below = ctx.emit(g.LessOp, x, ctx.constant(-lambd, like=x))
    above = ctx.emit(g.GreaterOp, x, ctx.constant(lambd, like=x))
    zero = ctx.constant(0, like=x)
    up = ctx.emit(g.AddOp, x, ctx.constant(bias, like=x))
    down = ctx.emit(g.SubOp, x, ctx.constant(bias, like=x))
    return [ctx.emit(g.WhereOp, below, up, ctx.emit(g.WhereOp, above, down, zero))]


@converts("IsNaN")
def convert_isnan(node: Node, ctx: ImportContext):
    x = node.input(0)
    return [ctx.emit(g.NotEqualOp, x, x)]


@converts("IsInf")
def convert_isinf(node: Node, ctx: ImportContext):
    x = node.input(0)
    pos = ctx.emit(g.EqualOp, x, ctx.constant(math.inf, like=x))
    neg = ctx.emit(g.EqualOp, x, ctx.constant(-math.inf, like=x))
    want_pos, want_neg = node.attr("detect_positive", 1), node.attr("detect_negative", 1)
    if want_pos and want_neg:
        return [ctx.emit(g.OrOp, pos, neg)]
    if want_pos:
        return [pos]
    if want_neg:
        return [neg]
    return [ctx.emit(g.AndOp, pos, neg)]  # never true


@converts("Tan")
def convert_tan(node: Node, ctx: ImportContext):
    x = node.input(0)
    return [ctx.emit(g.DivOp, ctx.emit(g.SinOp, x), ctx.emit(g.CosOp, x))]


@converts("Sinh", "Cosh")
def convert_sinh_cosh(node: Node, ctx: ImportContext):
    # (exp(x) -+ exp(-x)) / 2
    x = node.input(0)
    up, down = ctx.emit(g.ExpOp, x), ctx.emit(g.ExpOp, ctx.emit(g.NegOp, x))
    both = ctx.emit(g.SubOp if node.op_type == "Sinh" else g.AddOp, up, down)
    return [ctx.emit(g.MulOp, both, ctx.constant(0.5, like=x))]


@converts("Asinh", "Acosh")
def convert_asinh_acosh(node: Node, ctx: ImportContext):
    # log(x + sqrt(x*x +- 1))
    x = node.input(0)
    square = ctx.emit(g.MulOp, x, x)
    one = ctx.constant(1, like=x)
    root = ctx.emit(g.SqrtOp, ctx.emit(g.AddOp if node.op_type == "Asinh" else g.SubOp, square, one))
    return [ctx.emit(g.LogOp, ctx.emit(g.AddOp, x, root))]


@converts("Atanh")
def convert_atanh(node: Node, ctx: ImportContext):
    # 0.5 * log((1 + x) / (1 - x))
    x = node.input(0)
    one = ctx.constant(1, like=x)
    ratio = ctx.emit(g.DivOp, ctx.emit(g.AddOp, one, x), ctx.emit(g.SubOp, one, x))
    return [ctx.emit(g.MulOp, ctx.emit(g.LogOp, ratio), ctx.constant(0.5, like=x))]

