"""`legalize`: rewrite composite graph ops into the core set.

An op class marked ``COMPOSITE = True`` in `dlc.dialects.graph` is expanded
here into simpler graph ops, so that ``lower-to-loops`` only handles the core
set. The rewrites (all in the operand's element type):

* ``dense(x, w, b)``          -> ``matmul(x, transpose(w)) + b``
* ``batch_norm``              -> ``x * s + t`` with ``s = scale * rsqrt(var + eps)``,
  ``t = bias - mean * s`` (graph ops on the parameters, so fold-constant
  folds them when they are constants), reshaped to broadcast on the channel axis
* ``layer_norm``              -> ``d = x - mean(x); d * rsqrt(mean(d*d) + eps) * scale + bias``
* ``gelu``                    -> ``0.5 * x * (1 + erf(x / sqrt 2))``; ``approximate="tanh"``:
  ``0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))``
* ``softmax``                 -> ``e = exp(x - reduce_max(x)); e / reduce_sum(e)``
* ``log_softmax``             -> ``d = x - reduce_max(x); d - log(reduce_sum(exp(d)))``
* ``global_avg_pool`` / ``global_max_pool`` -> ``reduce_mean`` / ``reduce_max`` over
  the spatial axes with ``keepdims``
* ``squeeze`` / ``unsqueeze`` -> ``reshape``
* ``hard_sigmoid``            -> ``clip(x * alpha + beta, 0, 1)``
* ``elu``                     -> ``where(x > 0, x, alpha * (exp(x) - 1))``
* ``softplus``                -> ``max(x, 0) + log1p(exp(-|x|))``, with log1p(e) written
  ``where(u == 1, e, log(u) * e / (u - 1))``, ``u = 1 + e`` (Goldberg's trick: plain
  ``log(1 + e)`` loses the relative accuracy of small results, x << 0)
* ``reciprocal``              -> ``1 / x``

`rsqrt` stays a core op: one ``math.rsqrt`` per element when lowered, and
``div(1, sqrt)`` would only add an op and a rounding.

Core set (the graph ops left after legalize): constant, weight; neg, abs,
sign, exp, log, sqrt, rsqrt, tanh, sigmoid, relu, erf, floor, ceil, round,
sin, cos, not, clip, leaky_relu, cast; add, sub, mul, div, pow, mod, max,
min, equal, not_equal, less, less_equal, greater, greater_equal, and, or,
xor, where; matmul; conv2d, conv_transpose2d, max_pool2d, avg_pool2d;
reduce_sum, reduce_mean, reduce_max, reduce_min, reduce_prod, argmax,
argmin; reshape, transpose, broadcast_to, slice, pad, concat, split, gather,
resize -- i.e. every graph op whose class is not marked ``COMPOSITE``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.utils.exceptions import PassFailedException

from dlc.dialects import graph as g
from dlc.dialects.graph_base import GraphOp, numpy_dtype, normalize_axis
from dlc.diagnostics import op_error
from dlc.diagnostics import describe_op


class _Emitter:
    """Collects the replacement ops of one composite op."""

    def __init__(self, like: SSAValue):
        self.ops: list[Operation] = []
        self.dtype = numpy_dtype(like.type.element_type)

    def __call__(self, op_type: type[GraphOp], *operands: SSAValue, **attrs) -> SSAValue:
        new = op_type.make(*operands, **attrs)
        self.ops.append(new)
        return new.results[0]

    def const(self, value: float) -> SSAValue:
        """A scalar (rank-0) constant of the operand's element type."""
        return self(g.ConstantOp, value=_dense_scalar(value, self.dtype))


def _dense_scalar(value: float, dtype: np.dtype):
    from dlc.dialects.graph_base import dense_from_numpy

    return dense_from_numpy(np.asarray(value, dtype=dtype))


def _channel_shape(channels: int, axis: int, rank: int) -> list[int]:
    """Shape that broadcasts a [C] vector along ``axis`` of a rank-``rank`` tensor."""
    return [channels] + [1] * (rank - 1 - axis)


# -- the rewrites: each returns the value replacing the op's single result ----------


def _dense(op: g.DenseOp, e: _Emitter) -> SSAValue:
    w_t = e(g.TransposeOp, op.weight, perm=[1, 0])
    y = e(g.MatmulOp, op.x, w_t)
    return e(g.AddOp, y, op.bias) if op.bias is not None else y


def _batch_norm(op: g.BatchNormOp, e: _Emitter) -> SSAValue:
    shape = op.x.type.get_shape()
    axis = normalize_axis(op.axis, len(shape))
    eps = e.const(op.epsilon)
    s = e(g.MulOp, op.scale, e(g.RsqrtOp, e(g.AddOp, op.var, eps)))
    t = e(g.SubOp, op.bias, e(g.MulOp, op.mean, s))
    if axis != len(shape) - 1:
        target = _channel_shape(shape[axis], axis, len(shape))
        s = e(g.ReshapeOp, s, shape=target)
        t = e(g.ReshapeOp, t, shape=target)
    return e(g.AddOp, e(g.MulOp, op.x, s), t)


def _layer_norm(op: g.LayerNormOp, e: _Emitter) -> SSAValue:
    rank = op.x.type.get_num_dims()
    axes = list(range(normalize_axis(op.axis, rank), rank))
    mean = e(g.ReduceMeanOp, op.x, axes=axes, keepdims=True)
    d = e(g.SubOp, op.x, mean)
    var = e(g.ReduceMeanOp, e(g.MulOp, d, d), axes=axes, keepdims=True)
    inv = e(g.RsqrtOp, e(g.AddOp, var, e.const(op.epsilon)))
    return e(g.AddOp, e(g.MulOp, e(g.MulOp, d, inv), op.scale), op.bias)


def _gelu(op: g.GeluOp, e: _Emitter) -> SSAValue:
    x = op.x
    half_x = e(g.MulOp, x, e.const(0.5))
    if op.approximate == "tanh":
        cube = e(g.MulOp, e(g.MulOp, x, x), x)
        inner = e(g.AddOp, x, e(g.MulOp, cube, e.const(0.044715)))
        inner = e(g.MulOp, inner, e.const(math.sqrt(2.0 / math.pi)))
        core = e(g.TanhOp, inner)
    else:
        core = e(g.ErfOp, e(g.MulOp, x, e.const(1.0 / math.sqrt(2.0))))
    return e(g.MulOp, half_x, e(g.AddOp, core, e.const(1.0)))


def _shifted(op: g.SoftmaxOp | g.LogSoftmaxOp, e: _Emitter) -> tuple[SSAValue, list[int]]:
    axes = [op.axis]
    peak = e(g.ReduceMaxOp, op.x, axes=axes, keepdims=True)
    return e(g.SubOp, op.x, peak), axes


def _softmax(op: g.SoftmaxOp, e: _Emitter) -> SSAValue:
    d, axes = _shifted(op, e)
    ex = e(g.ExpOp, d)
    return e(g.DivOp, ex, e(g.ReduceSumOp, ex, axes=axes, keepdims=True))


def _log_softmax(op: g.LogSoftmaxOp, e: _Emitter) -> SSAValue:
    d, axes = _shifted(op, e)
    total = e(g.ReduceSumOp, e(g.ExpOp, d), axes=axes, keepdims=True)
    return e(g.SubOp, d, e(g.LogOp, total))


def _global_pool(reduce: type[GraphOp]) -> Callable[[GraphOp, _Emitter], SSAValue]:
    def rewrite(op, e: _Emitter) -> SSAValue:
        axes = list(op._spatial_axes(op.x.type.get_num_dims()))
        return e(reduce, op.x, axes=axes, keepdims=True)

    return rewrite


def _to_reshape(op: GraphOp, e: _Emitter) -> SSAValue:
    return e(g.ReshapeOp, op.x, shape=list(op.results[0].type.get_shape()))


def _hard_sigmoid(op: g.HardSigmoidOp, e: _Emitter) -> SSAValue:
    alpha = e.const(op.alpha)
    beta = e.const(op.beta)
    return e(g.ClipOp, e(g.AddOp, e(g.MulOp, op.x, alpha), beta), min=0.0, max=1.0)


def _elu(op: g.EluOp, e: _Emitter) -> SSAValue:
    x = op.x
    negative = e(g.MulOp, e(g.SubOp, e(g.ExpOp, x), e.const(1.0)), e.const(op.alpha))
    return e(g.WhereOp, e(g.GreaterOp, x, e.const(0.0)), x, negative)


def _softplus(op: g.SoftplusOp, e: _Emitter) -> SSAValue:
    x = op.x
    one = e.const(1.0)
    small = e(g.ExpOp, e(g.NegOp, e(g.AbsOp, x)))  # in (0, 1]: never overflows
    u = e(g.AddOp, small, one)
    # log1p(small) = log(u) * small / (u - 1): exact ratio corrects log's rounding of u
    ratio = e(g.DivOp, e(g.MulOp, e(g.LogOp, u), small), e(g.SubOp, u, one))
    log1p = e(g.WhereOp, e(g.EqualOp, u, one), small, ratio)
    return e(g.AddOp, e(g.MaxOp, x, e.const(0.0)), log1p)


def _reciprocal(op: g.ReciprocalOp, e: _Emitter) -> SSAValue:
    return e(g.DivOp, e.const(1.0), op.x)


REWRITES: dict[type[GraphOp], Callable[[GraphOp, _Emitter], SSAValue]] = {
    g.DenseOp: _dense,
    g.BatchNormOp: _batch_norm,
    g.LayerNormOp: _layer_norm,
    g.GeluOp: _gelu,
    g.SoftmaxOp: _softmax,
    g.LogSoftmaxOp: _log_softmax,
    g.GlobalAvgPoolOp: _global_pool(g.ReduceMeanOp),
    g.GlobalMaxPoolOp: _global_pool(g.ReduceMaxOp),
    g.SqueezeOp: _to_reshape,
    g.UnsqueezeOp: _to_reshape,
    g.HardSigmoidOp: _hard_sigmoid,
    g.EluOp: _elu,
    g.SoftplusOp: _softplus,
    g.ReciprocalOp: _reciprocal,
}
"""Composite op class -> rewrite. Every class marked COMPOSITE must be here."""


class ExpandCompositeOps(RewritePattern):
    """Replace a composite graph op by its core-op expansion."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        rewrite = REWRITES.get(type(op))
        if rewrite is None or not g.is_composite(type(op)):
            return
        emitter = _Emitter(op.operands[0])
        result = rewrite(op, emitter)
        if result.type != op.results[0].type:  # a rewrite bug, not a user error
            raise PassFailedException(
                f"legalize: expansion of {describe_op(op)} gives {result.type}, "
                f"expected {op.results[0].type}"
            )
        for new in emitter.ops:
            new.location = op.location  # later diagnostics point at the composite op
        rewriter.replace(op, emitter.ops, [result])


@dataclass(frozen=True)
class LegalizePass(ModulePass):
    """Rewrite every composite graph op into core ops (see module docstring)."""

    name = "legalize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for inner in op.walk():
            if g.is_composite(type(inner)) and type(inner) not in REWRITES:
                raise op_error(inner, f"no rewrite for composite op {describe_op(inner)}")
        # one walk: expansions hold only core ops, nothing to revisit
        PatternRewriteWalker(ExpandCompositeOps(), apply_recursively=False).rewrite_module(op)
