"""Converters: elementwise math, matmul family, reductions, softmax, dtype
conversion, identity-like ops and tensor creation."""

from __future__ import annotations

import numpy as np
import torch

from dlc.dialects import graph as g
from dlc.frontends.torch.importer import ImportContext, Unavailable, numpy_to_torch_dtype, torch_to_numpy_dtype
from dlc.frontends.torch.registry import converts

F32 = np.dtype(np.float32)


def _float_input(cx: ImportContext, x):
    """Float ops on integer tensors compute in torch's default float type."""
    x = cx.tensor(x)
    return x if cx.dtype(x).kind == "f" else cx.cast(x, F32)


def _np_dtype(dtype) -> np.dtype | None:
    return None if dtype is None else torch_to_numpy_dtype(dtype)


# ---------------------------------------------------------------------------
# elementwise unary
# ---------------------------------------------------------------------------

_FLOAT_UNARY = {
    "aten.exp": g.ExpOp, "aten.log": g.LogOp, "aten.sqrt": g.SqrtOp, "aten.rsqrt": g.RsqrtOp,
    "aten.tanh": g.TanhOp, "aten.sigmoid": g.SigmoidOp, "aten.erf": g.ErfOp,
    "aten.sin": g.SinOp, "aten.cos": g.CosOp, "aten.reciprocal": g.ReciprocalOp,
}
_NUMERIC_UNARY = {
    "aten.relu": g.ReluOp, "aten.neg": g.NegOp, "aten.abs": g.AbsOp, "aten.sign": g.SignOp,
}
_ROUNDING = {"aten.floor": g.FloorOp, "aten.ceil": g.CeilOp, "aten.round": g.RoundOp}


@converts(*_FLOAT_UNARY)
def _float_unary(cx: ImportContext, a):
    return cx.emit(_FLOAT_UNARY[_name(cx)], _float_input(cx, a["self"]))


@converts(*_NUMERIC_UNARY)
def _numeric_unary(cx: ImportContext, a):
    return cx.emit(_NUMERIC_UNARY[_name(cx)], cx.tensor(a["self"]))


@converts(*_ROUNDING)
def _rounding(cx: ImportContext, a):
    x = cx.tensor(a["self"])
    if cx.dtype(x).kind != "f":
        return x  # rounding an integer is the identity
    if a.get("decimals"):
        raise cx.error("round with decimals != 0 is not supported")
    return cx.emit(_ROUNDING[_name(cx)], x)


def _name(cx: ImportContext) -> str:
    ns, name = cx.node.target._schema.name.split("::")
    return f"{ns}.{name}"


@converts("aten.logical_not")
def _logical_not(cx, a):
    return cx.emit(g.NotOp, _as_bool(cx, a["self"]))


def _as_bool(cx: ImportContext, x):
    x = cx.tensor(x)
    if cx.dtype(x) == np.bool_:
        return x
    return cx.emit(g.NotEqualOp, x, cx.scalar(0, cx.dtype(x)))


@converts("aten.gelu")
def _gelu(cx, a):
    return cx.emit(g.GeluOp, _float_input(cx, a["self"]), approximate=a.get("approximate") or "none")


@converts("aten.silu")
def _silu(cx, a):
    x = _float_input(cx, a["self"])
    return cx.emit(g.MulOp, x, cx.emit(g.SigmoidOp, x))


@converts("aten.hardsigmoid")
def _hardsigmoid(cx, a):
    return cx.emit(g.HardSigmoidOp, _float_input(cx, a["self"]), alpha=1.0 / 6.0, beta=0.5)


@converts("aten.hardswish")
def _hardswish(cx, a):
    x = _float_input(cx, a["self"])
    return cx.emit(g.MulOp, x, cx.emit(g.HardSigmoidOp, x, alpha=1.0 / 6.0, beta=0.5))


@converts("aten.hardtanh")
def _hardtanh(cx, a):
    return cx.emit(g.ClipOp, cx.tensor(a["self"]), min=float(a["min_val"]), max=float(a["max_val"]))


@converts("aten.relu6")
def _relu6(cx, a):
    return cx.emit(g.ClipOp, cx.tensor(a["self"]), min=0.0, max=6.0)


@converts("aten.leaky_relu")
def _leaky_relu(cx, a):
    return cx.emit(g.LeakyReluOp, _float_input(cx, a["self"]), alpha=float(a["negative_slope"]))


@converts("aten.elu")
def _elu(cx, a):
    if float(a.get("scale", 1)) != 1.0 or float(a.get("input_scale", 1)) != 1.0:
        raise cx.error("elu with scale or input_scale != 1 is not supported")
    return cx.emit(g.EluOp, _float_input(cx, a["self"]), alpha=float(a["alpha"]))


@converts("aten.softplus")
def _softplus(cx, a):
    x = _float_input(cx, a["self"])
    beta = float(a.get("beta", 1))
    if beta == 1.0:
        return cx.emit(g.SoftplusOp, x)
    scaled = cx.emit(g.SoftplusOp, cx.emit(g.MulOp, x, cx.scalar(beta, cx.dtype(x))))
    return cx.emit(g.DivOp, scaled, cx.scalar(beta, cx.dtype(x)))


@converts("aten.clamp", "aten.clamp_min", "aten.clamp_max")
def _clamp(cx, a):
    x = cx.tensor(a["self"])
    lo = a.get("min")
    hi = a.get("max")
    if _name(cx) == "aten.clamp_max":
        lo, hi = None, a.get("max")
    if isinstance(lo, (int, float, type(None))) and isinstance(hi, (int, float, type(None))):
        attrs = {}
        if lo is not None:
            attrs["min"] = float(lo)
        if hi is not None:
            attrs["max"] = float(hi)
        return cx.emit(g.ClipOp, x, **attrs)
    if lo is not None:
        x, lo_t = cx.promoted(x, lo)
        x = cx.emit(g.MaxOp, x, lo_t)
    if hi is not None:
        x, hi_t = cx.promoted(x, hi)
        x = cx.emit(g.MinOp, x, hi_t)
    return x


# ---------------------------------------------------------------------------
# elementwise binary
# ---------------------------------------------------------------------------


def _scaled(cx, value, alpha):
    if alpha is None or alpha == 1:
        return value
    if isinstance(value, (int, float)):
        return value * alpha
    return cx.emit(g.MulOp, value, cx.scalar(alpha, cx.dtype(value)))


@converts("aten.add")
def _add(cx, a):
    lhs, rhs = cx.promoted(a["self"], a["other"])
    return cx.emit(g.AddOp, lhs, _scaled(cx, rhs, a.get("alpha")))


@converts("aten.sub")
def _sub(cx, a):
    lhs, rhs = cx.promoted(a["self"], a["other"])
    return cx.emit(g.SubOp, lhs, _scaled(cx, rhs, a.get("alpha")))


@converts("aten.rsub")
def _rsub(cx, a):
    lhs, rhs = cx.promoted(a["self"], a["other"])
    return cx.emit(g.SubOp, rhs, _scaled(cx, lhs, a.get("alpha")))


@converts("aten.mul")
def _mul(cx, a):
    return cx.emit(g.MulOp, *cx.promoted(a["self"], a["other"]))


@converts("aten.div")
def _div(cx, a):
    mode = a.get("rounding_mode")
    lhs, rhs = cx.promoted(a["self"], a["other"])
    if mode is None and cx.dtype(lhs).kind != "f":  # true division of integers
        lhs, rhs = cx.cast(lhs, F32), cx.cast(rhs, F32)
    q = cx.emit(g.DivOp, lhs, rhs)
    if mode == "floor":
        if cx.dtype(q).kind != "f":
            raise cx.error("floor division of integer tensors is not supported")
        return cx.emit(g.FloorOp, q)
    if mode == "trunc" and cx.dtype(q).kind == "f":
        return cx.emit(g.CastOp, cx.emit(g.CastOp, q, to=g.i64), to=lhs.type.element_type)
    return q


@converts("aten.pow")
def _pow(cx, a):
    base, exponent = a["self"], a["exponent"]
    if isinstance(exponent, (int, float)) and not isinstance(base, (int, float)):
        x = cx.tensor(base)
        if exponent == 2:
            return cx.emit(g.MulOp, x, x)
        if exponent == 1:
            return x
        if exponent == 0.5 and cx.dtype(x).kind == "f":
            return cx.emit(g.SqrtOp, x)
    return cx.emit(g.PowOp, *cx.promoted(base, exponent))


_BINARY = {
    "aten.maximum": g.MaxOp, "aten.minimum": g.MinOp, "aten.fmod": g.ModOp,
    "aten.eq": g.EqualOp, "aten.ne": g.NotEqualOp, "aten.lt": g.LessOp, "aten.le": g.LessEqualOp,
    "aten.gt": g.GreaterOp, "aten.ge": g.GreaterEqualOp,
}


@converts(*_BINARY)
def _binary(cx, a):
    return cx.emit(_BINARY[_name(cx)], *cx.promoted(a["self"], a["other"]))


_LOGICAL = {"aten.logical_and": g.AndOp, "aten.logical_or": g.OrOp, "aten.logical_xor": g.XorOp}


@converts(*_LOGICAL)
def _logical(cx, a):
    return cx.emit(_LOGICAL[_name(cx)], _as_bool(cx, a["self"]), _as_bool(cx, a["other"]))


@converts("aten.where")
def _where(cx, a):
    if a.get("self") is None:
        raise cx.error("where(condition) with one argument (nonzero) is not supported")
    lhs, rhs = cx.promoted(a["self"], a["other"])
    return cx.emit(g.WhereOp, _as_bool(cx, a["condition"]), lhs, rhs)


@converts("aten.masked_fill")
def _masked_fill(cx, a):
    x = cx.tensor(a["self"])
    value = cx.cast(cx.tensor(a["value"], dtype=cx.dtype(x)), cx.dtype(x))
    return cx.emit(g.WhereOp, _as_bool(cx, a["mask"]), value, x)


# ---------------------------------------------------------------------------
# matmul family
# ---------------------------------------------------------------------------


@converts("aten.mm", "aten.bmm", "aten.matmul")
def _matmul(cx, a):
    return cx.emit(g.MatmulOp, *cx.promoted(a["self"], a["other"] if "other" in a else a["mat2"]))


@converts("aten.linear")
def _linear(cx, a):
    x, w = cx.promoted(a["input"], a["weight"])
    bias = a.get("bias")
    return cx.emit(g.DenseOp, x, w, None if bias is None else cx.cast(bias, cx.dtype(x)))


@converts("aten.addmm", "aten.baddbmm")
def _addmm(cx, a):
    m1, m2 = cx.promoted(a["mat1"] if "mat1" in a else a["batch1"], a["mat2"] if "mat2" in a else a["batch2"])
    product = _scaled(cx, cx.emit(g.MatmulOp, m1, m2), a.get("alpha"))
    beta = a.get("beta", 1)
    if beta == 0:
        return product
    bias = _scaled(cx, cx.cast(cx.tensor(a["self"]), cx.dtype(product)), beta)
    return cx.emit(g.AddOp, product, bias)


# ---------------------------------------------------------------------------
# reductions and softmax
# ---------------------------------------------------------------------------


def _dims(value, rank: int) -> list[int]:
    if value is None:
        return list(range(rank))
    if isinstance(value, int):
        return [value]
    return list(value) or list(range(rank))


_REDUCE = {"aten.mean": g.ReduceMeanOp, "aten.sum": g.ReduceSumOp, "aten.amax": g.ReduceMaxOp,
           "aten.amin": g.ReduceMinOp, "aten.prod": g.ReduceProdOp}


@converts(*_REDUCE)
def _reduce(cx, a):
    x = cx.tensor(a["self"])
    dtype = _np_dtype(a.get("dtype"))
    if dtype is not None:
        x = cx.cast(x, dtype)
    elif _name(cx) in ("aten.sum", "aten.prod") and cx.dtype(x).kind in "biu":
        x = cx.cast(x, np.int64)  # torch sums integers and bools in int64
    elif _name(cx) == "aten.mean" and cx.dtype(x).kind != "f":
        raise cx.error("mean of an integer tensor needs dtype= (as in torch)")
    rank = len(cx.shape(x))
    if rank == 0:
        return x
    return cx.emit(_REDUCE[_name(cx)], x, axes=_dims(a.get("dim"), rank),
                   keepdims=bool(a.get("keepdim", False)))


@converts("aten.max", "aten.min")
def _max_min(cx, a):
    x = cx.tensor(a["self"])
    maximum = _name(cx) == "aten.max"
    other = a.get("other")
    if other is not None:  # max.other: elementwise
        return cx.emit(g.MaxOp if maximum else g.MinOp, *cx.promoted(x, other))
    dim = a.get("dim")
    reduce = g.ReduceMaxOp if maximum else g.ReduceMinOp
    if dim is None:
        return cx.emit(reduce, x, axes=list(range(len(cx.shape(x)))))
    keep = bool(a.get("keepdim", False))
    values = cx.emit(reduce, x, axes=[dim], keepdims=keep)
    indices = cx.emit(g.ArgMaxOp if maximum else g.ArgMinOp, x, axis=dim, keepdims=keep)
    return [values, indices]


@converts("aten.argmax", "aten.argmin")
def _argmax(cx, a):
    x = cx.tensor(a["self"])
    dim, keep = a.get("dim"), bool(a.get("keepdim", False))
    op = g.ArgMaxOp if _name(cx) == "aten.argmax" else g.ArgMinOp
    if dim is None:
        flat = cx.emit(g.ReshapeOp, x, shape=[-1])
        out = cx.emit(op, flat, axis=0)
        return cx.emit(g.ReshapeOp, out, shape=[1] * len(cx.shape(x))) if keep else out
    return cx.emit(op, x, axis=dim, keepdims=keep)


@converts("aten.var", "aten.std")
def _var(cx, a):
    x = _float_input(cx, a["self"])
    shape = cx.shape(x)
    dims = _dims(a.get("dim"), len(shape))
    correction = a.get("correction")
    if correction is None:
        correction = 1 if a.get("unbiased", True) else 0
    count = int(np.prod([shape[d] for d in dims]))
    mean = cx.emit(g.ReduceMeanOp, x, axes=dims, keepdims=True)
    diff = cx.emit(g.SubOp, x, mean)
    total = cx.emit(g.ReduceSumOp, cx.emit(g.MulOp, diff, diff), axes=dims,
                    keepdims=bool(a.get("keepdim", False)))
    var = cx.emit(g.DivOp, total, cx.scalar(max(count - correction, 0), cx.dtype(x)))
    return cx.emit(g.SqrtOp, var) if _name(cx) == "aten.std" else var


@converts("aten.softmax", "aten._softmax", "aten.log_softmax", "aten._log_softmax")
def _softmax(cx, a):
    x = cx.tensor(a["self"])
    dtype = _np_dtype(a.get("dtype"))
    x = cx.cast(x, dtype) if dtype is not None else _float_input(cx, x)
    op = g.LogSoftmaxOp if "log" in _name(cx) else g.SoftmaxOp
    return cx.emit(op, x, axis=a["dim"])


# ---------------------------------------------------------------------------
# dtype conversion and identities
# ---------------------------------------------------------------------------


@converts("aten._to_copy", "aten.to", "aten._to_dtype")
def _to(cx, a):
    x = cx.tensor(a["self"])
    dtype = a.get("dtype")
    if isinstance(dtype, torch.dtype):
        return cx.cast(x, torch_to_numpy_dtype(dtype))
    other = a.get("other")
    if other is not None:  # to.other
        return cx.cast(x, cx.dtype(cx.tensor(other)))
    return x


@converts("aten.type_as")
def _type_as(cx, a):
    return cx.cast(cx.tensor(a["self"]), cx.dtype(cx.tensor(a["other"])))


@converts("aten.clone", "aten.alias", "aten.detach", "aten.contiguous", "aten.lift_fresh_copy",
          "aten.lift_fresh", "aten.view_copy_identity", "aten.positive", "aten.resolve_conj",
          "aten.resolve_neg")
def _identity(cx, a):
    return cx.tensor(a["self"])


@converts("aten.copy")
def _copy(cx, a):
    dst = cx.tensor(a["self"])
    src = cx.cast(cx.tensor(a["src"]), cx.dtype(dst))
    if cx.shape(src) != cx.shape(dst):
        src = cx.emit(g.BroadcastToOp, src, shape=cx.shape(dst))
    return src


@converts("aten.dropout", "aten.feature_dropout", "aten.alpha_dropout")
def _dropout(cx, a):
    if a.get("train"):
        raise cx.error("dropout in training mode is random; call model.eval() before export")
    return cx.tensor(a["input"])


@converts("aten.native_dropout")
def _native_dropout(cx, a):
    if a.get("train"):
        raise cx.error("dropout in training mode is random; call model.eval() before export")
    return [cx.tensor(a["input"]), Unavailable("the dropout mask")]


@converts("aten._assert_tensor_metadata", "aten._assert_scalar", "aten.sym_constrain_range_for_size",
          "aten._assert_async")
def _assertion(cx, a):
    return None  # checks torch made at export time; nothing to compute


# ---------------------------------------------------------------------------
# creation (compile-time constants; shape and dtype from torch's metadata)
# ---------------------------------------------------------------------------


def _created(cx: ImportContext, fill) -> object:
    expected = cx.expected()
    if expected is None:
        raise cx.error("needs torch's shape metadata (meta['val']) on the node")
    shape, dtype = expected
    return cx.constant(np.full(shape, fill, dtype=dtype), name=cx.node.name)


@converts("aten.scalar_tensor")
def _scalar_tensor(cx, a):
    return _created(cx, a["s"])


@converts("aten.full", "aten.full_like", "aten.new_full")
def _full(cx, a):
    return _created(cx, a["fill_value"])


@converts("aten.zeros", "aten.zeros_like", "aten.new_zeros", "aten.empty", "aten.empty_like",
          "aten.new_empty")
def _zeros(cx, a):
    return _created(cx, 0)  # empty: uninitialized in torch; zeros here


@converts("aten.ones", "aten.ones_like", "aten.new_ones")
def _ones(cx, a):
    return _created(cx, 1)


@converts("aten.arange")
def _arange(cx, a):
    expected = cx.expected()
    if expected is None:
        raise cx.error("needs torch's shape metadata (meta['val']) on the node")
    start = a.get("start", 0) if a.get("start") is not None else 0
    end = a["end"]
    step = a.get("step", 1) if a.get("step") is not None else 1
    values = torch.arange(start, end, step, dtype=numpy_to_torch_dtype(expected[1])).numpy()
    return cx.constant(values, name=cx.node.name)


@converts("aten.any", "aten.all")
def _any_all(cx, a):
    """any/all as max/min of the 0/1 values (bool tensors have no max)."""
    x = cx.cast(_as_bool(cx, a["self"]), np.int32)
    rank = len(cx.shape(x))
    reduce = g.ReduceMaxOp if _name(cx) == "aten.any" else g.ReduceMinOp
    if rank:
        x = cx.emit(reduce, x, axes=_dims(a.get("dim"), rank), keepdims=bool(a.get("keepdim", False)))
    return _as_bool(cx, x)
