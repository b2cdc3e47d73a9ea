"""Property tests: graph shape inference agrees with numpy (and, for conv /
pooling, with onnx.reference's actual outputs); each example also runs the
op's reference, whose result must have the inferred type. An op must be
rejected exactly when numpy rejects the same request."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes
from xdsl.utils.exceptions import VerifyException

from dlc.dialects import graph as g
from dlc.dialects.graph_base import element_type_of, tensor_type
from test_graph_util import onnx_run, run, values

# DLC_HYPOTHESIS_SCALE=10 runs ten times the examples (a deeper, slower search).
_SCALE = int(os.environ.get("DLC_HYPOTHESIS_SCALE", "1"))
_QUIET = [HealthCheck.too_slow, HealthCheck.filter_too_much]
SETTINGS = settings(max_examples=40 * _SCALE, deadline=None, suppress_health_check=_QUIET)
SLOW_SETTINGS = settings(max_examples=15 * _SCALE, deadline=None, suppress_health_check=_QUIET)

dims = st.integers(1, 5)
shapes = st.lists(dims, min_size=0, max_size=4).map(tuple)
nonscalar_shapes = st.lists(dims, min_size=1, max_size=4).map(tuple)


def data(shape, dtype=np.float32):
    return np.random.default_rng(len(shape)).uniform(-2, 2, size=shape).astype(dtype)


def inferred_shape_or_error(op_cls, shapes_, **attrs):
    try:
        op = op_cls.make(*values(*(tensor_type(s, element_type_of(np.float32)) for s in shapes_)), **attrs)
    except VerifyException as err:
        assert str(err).startswith(op_cls.name + ": "), str(err)  # one line, names the op
        assert "\n" not in str(err)
        return "error"
    return [tuple(r.type.get_shape()) for r in op.results]


def numpy_shape_or_error(fn):
    try:
        out = fn()
    except (ValueError, IndexError, TypeError, np.exceptions.AxisError):
        return "error"
    return [np.shape(o) for o in out] if isinstance(out, list) else [np.shape(out)]


# -- broadcasting ------------------------------------------------------------------


@SETTINGS
@given(mutually_broadcastable_shapes(num_shapes=2, max_dims=4, max_side=5))
def test_binary_broadcasting_matches_numpy(bs):
    a, b = bs.input_shapes
    (out,) = run(g.AddOp, [data(a), data(b)])
    assert out.shape == np.broadcast_shapes(a, b) == bs.result_shape


@SETTINGS
@given(shapes, shapes)
def test_binary_accepts_exactly_what_numpy_broadcasts(a, b):
    got = inferred_shape_or_error(g.MulOp, [a, b])
    assert got == numpy_shape_or_error(lambda: np.zeros(a) * np.zeros(b))


@SETTINGS
@given(mutually_broadcastable_shapes(num_shapes=3, max_dims=4, max_side=4))
def test_where_broadcasts_all_three(bs):
    c, a, b = bs.input_shapes
    (out,) = run(g.WhereOp, [data(c) > 0, data(a), data(b)])
    assert out.shape == bs.result_shape


@SETTINGS
@given(shapes, shapes)
def test_matmul_matches_numpy(a, b):
    got = inferred_shape_or_error(g.MatmulOp, [a, b])
    want = numpy_shape_or_error(lambda: np.matmul(np.zeros(a), np.zeros(b)))
    assert got == want
    if got != "error":
        run(g.MatmulOp, [data(a), data(b)])


# -- reductions -----------------------------------------------------------------


@st.composite
def shape_and_axes(draw, min_rank=0):
    shape = draw(st.lists(dims, min_size=min_rank, max_size=4).map(tuple))
    rank = len(shape)
    axes = draw(st.lists(st.integers(-rank, rank - 1), unique_by=lambda a: a % rank, max_size=rank)) if rank else []
    return shape, axes


@SETTINGS
@given(shape_and_axes(), st.booleans(), st.sampled_from([g.ReduceSumOp, g.ReduceMaxOp, g.ReduceMeanOp]))
def test_reductions_match_numpy(shape_axes, keep, op_cls):
    shape, axes = shape_axes
    x = data(shape)
    (out,) = run(op_cls, [x], axes=axes or None, keepdims=keep)
    np_axes = tuple(axes) if axes else None
    want = {g.ReduceSumOp: np.sum, g.ReduceMaxOp: np.max, g.ReduceMeanOp: np.mean}[op_cls](
        x.astype(np.float64), axis=np_axes, keepdims=keep
    )
    assert out.shape == np.shape(want)
    np.testing.assert_allclose(out, want.astype(np.float32), rtol=1e-5, atol=1e-6)


@SETTINGS
@given(shape_and_axes(min_rank=1), st.booleans())
def test_argmax_matches_numpy(shape_axes, keep):
    shape, axes = shape_axes
    axis = axes[0] if axes else 0
    x = data(shape)
    (out,) = run(g.ArgMaxOp, [x], axis=axis, keepdims=keep)
    np.testing.assert_array_equal(out, np.argmax(x, axis=axis, keepdims=keep))


@SETTINGS
@given(nonscalar_shapes, st.lists(st.integers(-6, 5), min_size=1, max_size=3))
def test_reduce_rejects_exactly_what_numpy_rejects(shape, axes):
    got = inferred_shape_or_error(g.ReduceSumOp, [shape], axes=axes)
    want = numpy_shape_or_error(lambda: np.sum(np.zeros(shape), axis=tuple(axes)))
    assert got == want


# -- reshape / transpose / squeeze / unsqueeze ---------------------------------------------


@SETTINGS
@given(nonscalar_shapes, st.data())
def test_reshape_with_minus_one_matches_numpy(shape, d):
    flat = list(shape)
    target = d.draw(st.permutations(flat))
    if d.draw(st.booleans()):
        target = list(target[:-1]) + [-1] if len(target) > 1 else [-1]
    (out,) = run(g.ReshapeOp, [data(shape)], shape=target)
    assert out.shape == np.zeros(shape).reshape(target).shape


@SETTINGS
@given(nonscalar_shapes, st.lists(st.integers(-1, 7), min_size=1, max_size=3))
def test_reshape_rejects_exactly_what_numpy_rejects(shape, target):
    got = inferred_shape_or_error(g.ReshapeOp, [shape], shape=target)
    want = numpy_shape_or_error(lambda: np.zeros(shape).reshape(target))
    assert got == want


@SETTINGS
@given(shapes, st.data())
def test_transpose_matches_numpy(shape, d):
    perm = d.draw(st.permutations(range(len(shape))))
    x = data(shape)
    (out,) = run(g.TransposeOp, [x], perm=list(perm))
    np.testing.assert_array_equal(out, x.transpose(perm))


@SETTINGS
@given(st.lists(st.sampled_from([1, 1, 2, 3]), min_size=1, max_size=5).map(tuple), st.data())
def test_squeeze_matches_numpy(shape, d):
    ones = [i for i, s in enumerate(shape) if s == 1]
    axes = d.draw(st.lists(st.sampled_from(ones), unique=True)) if ones else []
    x = data(shape)
    if axes:
        (out,) = run(g.SqueezeOp, [x], axes=[a - len(shape) if d.draw(st.booleans()) else a for a in axes])
        assert out.shape == np.squeeze(x, axis=tuple(axes)).shape
    else:
        (out,) = run(g.SqueezeOp, [x])
        assert out.shape == np.squeeze(x).shape


@SETTINGS
@given(shapes, st.data())
def test_unsqueeze_matches_numpy(shape, d):
    rank = len(shape) + d.draw(st.integers(1, 3))
    axes = d.draw(st.lists(st.integers(-rank, rank - 1), min_size=rank - len(shape),
                           max_size=rank - len(shape), unique_by=lambda a: a % rank))
    x = data(shape)
    (out,) = run(g.UnsqueezeOp, [x], axes=axes)
    assert out.shape == np.expand_dims(x, tuple(axes)).shape


@SETTINGS
@given(shapes, shapes)
def test_broadcast_to_matches_numpy(shape, target):
    got = inferred_shape_or_error(g.BroadcastToOp, [shape], shape=list(target))
    assert got == numpy_shape_or_error(lambda: np.zeros(shape) + np.zeros(target))


# -- concat / split / slice / pad / gather -------------------------------------------------


@SETTINGS
@given(nonscalar_shapes, st.data())
def test_concat_matches_numpy(shape, d):
    axis = d.draw(st.integers(-len(shape), len(shape) - 1))
    parts = []
    for _ in range(d.draw(st.integers(1, 4))):
        s = list(shape)
        s[axis] = d.draw(st.integers(0, 4))
        parts.append(data(tuple(s)))
    (out,) = run(g.ConcatOp, parts, axis=axis)
    np.testing.assert_array_equal(out, np.concatenate(parts, axis=axis))


@SETTINGS
@given(nonscalar_shapes, nonscalar_shapes, st.integers(-4, 3))
def test_concat_rejects_exactly_what_numpy_rejects(a, b, axis):
    got = inferred_shape_or_error(g.ConcatOp, [a, b], axis=axis)
    want = numpy_shape_or_error(lambda: np.concatenate([np.zeros(a), np.zeros(b)], axis=axis))
    assert got == want


@SETTINGS
@given(nonscalar_shapes, st.data())
def test_split_matches_numpy(shape, d):
    axis = d.draw(st.integers(-len(shape), len(shape) - 1))
    extent = shape[axis]
    cuts = sorted(d.draw(st.lists(st.integers(0, extent), max_size=3)))
    sizes = np.diff([0, *cuts, extent]).tolist()
    x = data(shape)
    outs = run(g.SplitOp, [x], axis=axis, sizes=sizes)
    for a, b in zip(outs, np.split(x, cuts, axis=axis), strict=True):
        np.testing.assert_array_equal(a, b)


@SETTINGS
@given(st.lists(st.integers(1, 6), min_size=1, max_size=3).map(tuple), st.data())
def test_slice_matches_python_slicing_and_onnx(shape, d):
    rank = len(shape)
    axes = d.draw(st.lists(st.integers(-rank, rank - 1), min_size=1, max_size=rank, unique_by=lambda a: a % rank))
    n = len(axes)
    starts = d.draw(st.lists(st.integers(-9, 9), min_size=n, max_size=n))
    ends = d.draw(st.lists(st.integers(-9, 9), min_size=n, max_size=n))
    steps = d.draw(st.lists(st.integers(-3, 3).filter(bool), min_size=n, max_size=n))
    x = data(shape)
    (out,) = run(g.SliceOp, [x], starts=starts, ends=ends, axes=axes, steps=steps)
    index = [slice(None)] * rank
    for s, e, a, t in zip(starts, ends, axes, steps):
        index[a] = slice(s, e, t)
    np.testing.assert_array_equal(out, x[tuple(index)])
    i64 = lambda v: np.array(v, np.int64)  # noqa: E731
    (want,) = onnx_run("Slice", [x], {}, (i64(starts), i64(ends), i64(axes), i64(steps)))
    np.testing.assert_array_equal(out, want)


@SETTINGS
@given(st.lists(st.integers(1, 5), min_size=1, max_size=3).map(tuple), st.data(),
       st.sampled_from(["constant", "reflect", "edge"]))
def test_pad_matches_numpy(shape, d, mode):
    rank = len(shape)
    pads = d.draw(st.lists(st.integers(-2, 4), min_size=2 * rank, max_size=2 * rank))
    got = inferred_shape_or_error(g.PadOp, [shape], pads=pads, mode=mode)
    before, after = pads[:rank], pads[rank:]
    cropped = [s + min(b, 0) + min(a, 0) for s, b, a in zip(shape, before, after)]
    legal = all(c >= 0 for c in cropped) and (
        mode == "constant"
        or all(max(b, a, 0) in range(c) or max(b, a) <= 0 if mode == "reflect" else (c > 0 or max(b, a) <= 0)
               for c, b, a in zip(cropped, before, after))
    )
    if not legal:
        assert got == "error"
        return
    x = data(shape)
    (out,) = run(g.PadOp, [x], pads=pads, mode=mode)
    crop = tuple(slice(max(-b, 0), s - max(-a, 0)) for s, b, a in zip(shape, before, after))
    want = np.pad(x[crop], [(max(b, 0), max(a, 0)) for b, a in zip(before, after)],
                  mode=mode if mode != "constant" else "constant")
    np.testing.assert_array_equal(out, want)


@SETTINGS
@given(nonscalar_shapes, st.lists(st.integers(1, 3), max_size=2).map(tuple), st.data())
def test_gather_matches_numpy_take(shape, ishape, d):
    axis = d.draw(st.integers(-len(shape), len(shape) - 1))
    extent = shape[axis]
    idx = np.array(d.draw(st.lists(st.integers(-extent, extent - 1), min_size=int(np.prod(ishape)),
                                   max_size=int(np.prod(ishape)))), np.int64).reshape(ishape)
    x = data(shape)
    (out,) = run(g.GatherOp, [x, idx], axis=axis)
    np.testing.assert_array_equal(out, np.take(x, idx, axis=axis))


# -- convolution and pooling against onnx.reference ----------------------------------------


@st.composite
def conv_case(draw):
    groups = draw(st.sampled_from([1, 1, 2]))
    c = groups * draw(st.integers(1, 2))
    o = groups * draw(st.integers(1, 2))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    strides = [draw(st.integers(1, 3)), draw(st.integers(1, 3))]
    dil = [draw(st.integers(1, 2)), draw(st.integers(1, 2))]
    pads = draw(st.lists(st.integers(0, 2), min_size=4, max_size=4))
    h, w = draw(st.integers(1, 8)), draw(st.integers(1, 8))
    return (draw(st.integers(1, 2)), c, h, w), (o, c // groups, kh, kw), strides, dil, pads, groups


@SLOW_SETTINGS
@given(conv_case())
def test_conv2d_shape_and_values_match_onnx(case):
    xs, ws, strides, dil, pads, groups = case
    attrs = dict(strides=strides, dilations=dil, padding=pads, groups=groups)
    got = inferred_shape_or_error(g.Conv2DOp, [xs, ws], **attrs)
    span = [d * (k - 1) + 1 for d, k in zip(dil, ws[2:])]
    padded = [xs[2] + pads[0] + pads[2], xs[3] + pads[1] + pads[3]]
    if any(p < s for p, s in zip(padded, span)):
        assert got == "error"
        return
    formula = [(p - s) // st_ + 1 for p, s, st_ in zip(padded, span, strides)]
    assert got == [(xs[0], ws[0], *formula)]
    x, w = data(xs), data(ws)
    (out,) = run(g.Conv2DOp, [x, w], **attrs)
    (want,) = onnx_run("Conv", [x, w], {"strides": strides, "dilations": dil, "pads": pads, "group": groups})
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)


@SLOW_SETTINGS
@given(st.integers(1, 3), st.integers(1, 3), st.lists(st.integers(1, 3), min_size=2, max_size=2),
       st.lists(st.integers(0, 2), min_size=4, max_size=4), st.integers(1, 3), st.integers(1, 3), st.data())
def test_conv_transpose2d_matches_onnx(kh, kw, strides, pads, h, w, d):
    out_pad = [d.draw(st.integers(0, s - 1)) for s in strides]
    x, wt = data((1, 2, h, w)), data((2, 3, kh, kw))
    attrs = dict(strides=strides, padding=pads, output_padding=out_pad)
    got = inferred_shape_or_error(g.ConvTranspose2DOp, [x.shape, wt.shape], **attrs)
    ext = [(n - 1) * s - p0 - p1 + k + op for n, s, p0, p1, k, op in
           zip((h, w), strides, pads[:2], pads[2:], (kh, kw), out_pad)]
    if min(ext) < 1:
        assert got == "error"
        return
    (out,) = run(g.ConvTranspose2DOp, [x, wt], **attrs)
    (want,) = onnx_run("ConvTranspose", [x, wt], {"strides": strides, "pads": pads, "output_padding": out_pad})
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)


@SLOW_SETTINGS
@given(st.integers(1, 3), st.integers(1, 3), st.lists(st.integers(1, 3), min_size=2, max_size=2),
       st.lists(st.integers(0, 2), min_size=4, max_size=4), st.integers(1, 9), st.integers(1, 9),
       st.booleans(), st.sampled_from(["max", "avg", "avg_include_pad"]), st.integers(1, 2))
def test_pooling_matches_onnx(kh, kw, strides, pads, h, w, ceil, kind, dil):
    dils = [dil, 1] if kind == "max" else [1, 1]
    span = [dils[0] * (kh - 1) + 1, kw]
    assume(max(pads[0], pads[2]) < span[0] and max(pads[1], pads[3]) < span[1])
    assume(h + pads[0] + pads[2] >= span[0] and w + pads[1] + pads[3] >= span[1])
    assume(max(pads[0], pads[2]) < kh and max(pads[1], pads[3]) < kw)  # onnxruntime's limit
    x = data((1, 2, h, w))
    if h + pads[0] - dils[0] * (kh - 1) <= 0 and kh > 1:
        # some window may see only padding; the verifier must say so or the values must match
        try:
            run(g.MaxPool2DOp, [x], kernel=[kh, kw], strides=strides, padding=pads, ceil_mode=ceil,
                dilations=dils)
        except VerifyException as err:
            assert "covers only padding" in str(err)
            return
    attrs = dict(kernel=[kh, kw], strides=strides, padding=pads, ceil_mode=ceil, dilations=dils)
    onnx_attrs = {"kernel_shape": [kh, kw], "strides": strides, "pads": pads, "ceil_mode": int(ceil),
                  "dilations": dils}
    if kind == "max":
        (out,) = run(g.MaxPool2DOp, [x], **attrs)
        (want,) = onnx_run("MaxPool", [x], onnx_attrs, engine="ort")
    else:
        include = kind == "avg_include_pad"
        (out,) = run(g.AvgPool2DOp, [x], count_include_pad=include, **attrs)
        (want,) = onnx_run("AveragePool", [x], {**onnx_attrs, "count_include_pad": int(include)}, opset=19,
                           engine="ort")
    assert out.shape == want.shape
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("size,k,s,pad,ceil,expected", [
    (7, 3, 2, 0, False, 3), (8, 3, 2, 0, False, 3), (8, 3, 2, 0, True, 4),
    (5, 2, 2, 1, True, 3), (6, 3, 3, 1, True, 3),
])
def test_pool_output_extent_formula(size, k, s, pad, ceil, expected):
    (out,) = run(g.MaxPool2DOp, [data((1, 1, size, size))], kernel=[k, k], strides=[s, s],
                 padding=[pad] * 4, ceil_mode=ceil)
    assert out.shape[2:] == (expected, expected)


# -- every op: the inferred type is the type of the reference's result ----------------------


@SETTINGS
@given(shapes, st.sampled_from([np.float32, np.float64, np.float16]),
       st.sampled_from([op for op in g.GRAPH_OPS if issubclass(op, g.UnaryOp)]))
def test_unary_ops_keep_shape_and_dtype(shape, dtype, op_cls):
    x = data(shape, dtype)
    if op_cls.ELEMENT == "bool":
        x = x > 0
    if op_cls.ELEMENT == "int":  # bitwise_not
        x = (x * 8).astype(np.int32)
    run(op_cls, [x])


@SETTINGS
@given(mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=4),
       st.sampled_from([np.float32, np.int32, np.int64, np.uint8, np.bool_]),
       st.sampled_from([op for op in g.GRAPH_OPS if issubclass(op, g.BinaryOp)]))
def test_binary_ops_result_dtype(bs, dtype, op_cls):
    a, b = (data(s, np.float32) * 3 for s in bs.input_shapes)
    a, b = a.astype(dtype), b.astype(dtype)
    if dtype == np.bool_:
        allowed = op_cls.ELEMENT in ("bool", "any")
    else:
        allowed = op_cls.ELEMENT in ("numeric", "any") or (
            op_cls.ELEMENT == "int" and np.dtype(dtype).kind in "iu")  # bitwise ops, shifts
    if not allowed:
        with pytest.raises(VerifyException, match=f"{op_cls.name}: operand element type"):
            op_cls.make(*values(tensor_type(a.shape, element_type_of(a.dtype)),
                                tensor_type(b.shape, element_type_of(b.dtype))))
        return
    (out,) = run(op_cls, [a, b])
    assert out.dtype == (np.bool_ if op_cls.RESULT_BOOL else dtype)
