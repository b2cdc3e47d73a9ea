"""Decompositions of the graph dialect's composite ops into core ops.

Each composite op declares ``Composite(decompose.<fn>)`` (``dlc/dialects/traits.py``);
``legalize`` calls ``fn(op, Emitter(op.operands[0]))`` and replaces the op's result by
the value it returns. All in the operand's element type:

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
* ``attention``               -> ``transpose(softmax(Q @ transpose(K) * scale (+ mask)) @ V, out_perm)``
  with ``Q = transpose(q, q_perm)`` etc. (identity perms emit no transpose)

The op modules import this one while the package is loading, so op classes are
looked up at call time (``g.MulOp``), never bound at import.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.ir import Operation, SSAValue

from dlc.dialects import graph as g
from dlc.dialects.graph_base import GraphOp, dense_from_numpy, normalize_axis, numpy_dtype


class Emitter:
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
    return dense_from_numpy(np.asarray(value, dtype=dtype))


def _channel_shape(channels: int, axis: int, rank: int) -> list[int]:
    """Shape that broadcasts a [C] vector along ``axis`` of a rank-``rank`` tensor."""
    return [channels] + [1] * (rank - 1 - axis)


# -- the decompositions: each returns the value replacing the op's single result ------


def dense(op: g.DenseOp, e: Emitter) -> SSAValue:
    w_t = e(g.TransposeOp, op.weight, perm=[1, 0])
    y = e(g.MatmulOp, op.x, w_t)
    return e(g.AddOp, y, op.bias) if op.bias is not None else y


def batch_norm(op: g.BatchNormOp, e: Emitter) -> SSAValue:
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


def layer_norm(op: g.LayerNormOp, e: Emitter) -> SSAValue:
    rank = op.x.type.get_num_dims()
    axes = list(range(normalize_axis(op.axis, rank), rank))
    mean = e(g.ReduceMeanOp, op.x, axes=axes, keepdims=True)
    d = e(g.SubOp, op.x, mean)
    var = e(g.ReduceMeanOp, e(g.MulOp, d, d), axes=axes, keepdims=True)
    inv = e(g.RsqrtOp, e(g.AddOp, var, e.const(op.epsilon)))
    return e(g.AddOp, e(g.MulOp, e(g.MulOp, d, inv), op.scale), op.bias)


def gelu(op: g.GeluOp, e: Emitter) -> SSAValue:
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


def attention(op: g.AttentionOp, e: Emitter) -> SSAValue:
    def view(x: SSAValue, perm) -> SSAValue:
        return x if tuple(perm) == (0, 1, 2, 3) else e(g.TransposeOp, x, perm=list(perm))

    q, v = view(op.q, op.q_perm), view(op.v, op.v_perm)
    kp = op.k_perm  # K^T: swap the last two logical dims
    kt = view(op.k, [kp[0], kp[1], kp[3], kp[2]])
    scores = e(g.MulOp, e(g.MatmulOp, q, kt), e.const(op.scale))
    if op.mask is not None:
        scores = e(g.AddOp, scores, op.mask)
    return view(e(g.MatmulOp, e(g.SoftmaxOp, scores, axis=-1), v), op.out_perm)


def _shifted(op: g.SoftmaxOp | g.LogSoftmaxOp, e: Emitter) -> tuple[SSAValue, list[int]]:
    axes = [op.axis]
    peak = e(g.ReduceMaxOp, op.x, axes=axes, keepdims=True)
    return e(g.SubOp, op.x, peak), axes


def softmax(op: g.SoftmaxOp, e: Emitter) -> SSAValue:
    d, axes = _shifted(op, e)
    ex = e(g.ExpOp, d)
    return e(g.DivOp, ex, e(g.ReduceSumOp, ex, axes=axes, keepdims=True))


def log_softmax(op: g.LogSoftmaxOp, e: Emitter) -> SSAValue:
    d, axes = _shifted(op, e)
    total = e(g.ReduceSumOp, e(g.ExpOp, d), axes=axes, keepdims=True)
    return e(g.SubOp, d, e(g.LogOp, total))


def _reduce_spatial(op: GraphOp, e: Emitter, reduce: type[GraphOp]) -> SSAValue:
    axes = list(op._spatial_axes(op.x.type.get_num_dims()))
    return e(reduce, op.x, axes=axes, keepdims=True)


def global_avg_pool(op: g.GlobalAvgPoolOp, e: Emitter) -> SSAValue:
    return _reduce_spatial(op, e, g.ReduceMeanOp)


def global_max_pool(op: g.GlobalMaxPoolOp, e: Emitter) -> SSAValue:
    return _reduce_spatial(op, e, g.ReduceMaxOp)


def to_reshape(op: GraphOp, e: Emitter) -> SSAValue:
    return e(g.ReshapeOp, op.x, shape=list(op.results[0].type.get_shape()))


def hard_sigmoid(op: g.HardSigmoidOp, e: Emitter) -> SSAValue:
    alpha = e.const(op.alpha)
    beta = e.const(op.beta)
    return e(g.ClipOp, e(g.AddOp, e(g.MulOp, op.x, alpha), beta), min=0.0, max=1.0)


def elu(op: g.EluOp, e: Emitter) -> SSAValue:
    x = op.x
    negative = e(g.MulOp, e(g.SubOp, e(g.ExpOp, x), e.const(1.0)), e.const(op.alpha))
    return e(g.WhereOp, e(g.GreaterOp, x, e.const(0.0)), x, negative)


def softplus(op: g.SoftplusOp, e: Emitter) -> SSAValue:
    x = op.x
    one = e.const(1.0)
    small = e(g.ExpOp, e(g.NegOp, e(g.AbsOp, x)))  # in (0, 1]: never overflows
    u = e(g.AddOp, small, one)
    # log1p(small) = log(u) * small / (u - 1): exact ratio corrects log's rounding of u
    ratio = e(g.DivOp, e(g.MulOp, e(g.LogOp, u), small), e(g.SubOp, u, one))
    log1p = e(g.WhereOp, e(g.EqualOp, u, one), small, ratio)
    return e(g.AddOp, e(g.MaxOp, x, e.const(0.0)), log1p)


def reciprocal(op: g.ReciprocalOp, e: Emitter) -> SSAValue:
    return e(g.DivOp, e.const(1.0), op.x)
