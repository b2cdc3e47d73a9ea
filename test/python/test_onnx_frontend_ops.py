"""ONNX converters, op by op: import one-node models on odd shapes (primes, 1,
broadcasting) and compare dlc's evaluator with onnx's ReferenceEvaluator;
attribute->input migrations are checked at the opsets on both sides."""

from __future__ import annotations

import numpy as np
import pytest

from test_onnx_frontend_util import Init, check_against_reference, node_model, run_dlc

RNG = np.random.default_rng(7)


def rand(*shape, dtype=np.float32, lo=-2.0, hi=2.0):
    return RNG.uniform(lo, hi, size=shape).astype(dtype)


def ints(*shape, lo=-5, hi=6, dtype=np.int64):
    return RNG.integers(lo, hi, size=shape).astype(dtype)


def check(op, inputs, opset=17, initializers=None, outputs=1, rtol=1e-4, atol=1e-5, **attrs):
    model = node_model(op, inputs, outputs=outputs, opset=opset, initializers=initializers, **attrs)
    feeds = {k: v for k, v in inputs.items() if v is not None and not isinstance(v, Init)}
    return check_against_reference(model, feeds, rtol=rtol, atol=atol)


UNARY = ["Abs", "Neg", "Exp", "Sqrt", "Reciprocal", "Tanh", "Sigmoid", "Relu", "Erf", "Floor",
         "Ceil", "Round", "Sin", "Cos", "Softplus", "Softsign", "Tan", "Sinh", "Cosh", "Asinh",
         "Mish", "HardSwish", "Sign", "Log", "Selu", "Elu", "Celu", "LeakyRelu", "HardSigmoid",
         "ThresholdedRelu", "Shrink"]


@pytest.mark.parametrize("op", UNARY)
def test_unary(op):
    x = rand(3, 1, 5)
    if op in ("Sqrt", "Log"):
        x = np.abs(x) + 0.1
    check(op, {"x": x}, opset=18 if op != "Mish" else 18)


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "Max", "Min", "Pow"])
def test_binary_broadcast(op):
    a, b = rand(2, 1, 7), rand(3, 1)
    if op == "Pow":
        a = np.abs(a) + 0.5
    check(op, {"a": a, "b": b})


@pytest.mark.parametrize("op", ["Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"])
def test_comparisons(op):
    check(op, {"a": ints(5, 3), "b": ints(3)})


@pytest.mark.parametrize("op", ["And", "Or", "Xor"])
def test_logical(op):
    check(op, {"a": ints(2, 3, lo=0, hi=2).astype(bool), "b": ints(1, 3, lo=0, hi=2).astype(bool)})


def test_not_where_cast():
    check("Not", {"a": ints(7, lo=0, hi=2).astype(bool)})
    check("Where", {"c": ints(3, 1, lo=0, hi=2).astype(bool), "a": rand(1, 5), "b": rand(3, 5)})
    check("Cast", {"x": rand(2, 3) * 10}, to=6)  # float -> int32, toward zero
    check("CastLike", {"x": ints(4), "like": rand(1)})


@pytest.mark.parametrize("fmod", [0, 1])
def test_mod(fmod):
    check("Mod", {"a": ints(11, lo=-20, hi=20), "b": ints(11, lo=1, hi=7) * np.where(ints(11) > 0, 1, -1)},
          fmod=fmod)


@pytest.mark.parametrize("op", ["Sum", "Mean", "Max", "Min"])
def test_variadic(op):
    # (the reference Mean accumulates in place: the first input has the full shape)
    check(op, {"a": rand(3, 4), "b": rand(3, 1), "c": rand(4)})


def test_pow_mixed_types():
    check("Pow", {"a": rand(5) + 3, "b": ints(5, lo=0, hi=3)})


@pytest.mark.parametrize("opset", [9, 11, 13])
def test_clip_migration(opset):
    x = rand(2, 7)
    if opset < 11:
        check("Clip", {"x": x}, opset=opset, min=-0.5, max=0.75)
    else:
        check("Clip", {"x": x}, opset=opset,
              initializers={"lo": np.float32(-0.5), "hi": np.float32(0.75)})


def test_clip_integer_and_runtime_bounds():
    check("Clip", {"x": ints(9)}, opset=13, initializers={"lo": np.int64(-2), "hi": np.int64(3)})
    check("Clip", {"x": rand(4), "lo": rand(1).reshape(())}, opset=13)


def test_prelu_gelu():
    check("PRelu", {"x": rand(2, 3, 1, 5)}, initializers={"slope": rand(3, 1, 1)})
    check("Gelu", {"x": rand(13)}, opset=20)
    check("Gelu", {"x": rand(13)}, opset=20, approximate="tanh")


# -- shapes and data movement ---------------------------------------------------------


@pytest.mark.parametrize("opset", [5, 14])
def test_reshape(opset):
    check("Reshape", {"x": rand(2, 3, 5)}, opset=opset,
          initializers={"shape": np.array([0, -1], dtype=np.int64)})


def test_reshape_allowzero():
    check("Reshape", {"x": rand(0, 3)}, opset=14, allowzero=1,
          initializers={"shape": np.array([3, 0], dtype=np.int64)})


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_flatten(axis):
    check("Flatten", {"x": rand(2, 3, 5)}, axis=axis)


def test_transpose_concat_split():
    check("Transpose", {"x": rand(2, 3, 5)}, perm=[2, 0, 1])
    check("Transpose", {"x": rand(2, 3, 5)})
    check("Concat", {"a": rand(2, 3), "b": rand(2, 1)}, axis=-1)


@pytest.mark.parametrize("opset", [11, 13, 18])
def test_split_migration(opset):
    x = rand(7, 3)
    if opset == 11:
        check("Split", {"x": x}, opset=opset, outputs=2, split=[3, 4])
    elif opset == 13:
        check("Split", {"x": x}, opset=opset, outputs=2,
              initializers={"split": np.array([3, 4], dtype=np.int64)})
    else:
        check("Split", {"x": x}, opset=opset, outputs=3, num_outputs=3)  # 3, 3, 1


@pytest.mark.parametrize("opset", [9, 13])
def test_slice_migration(opset):
    x = rand(5, 7, 3)
    if opset == 9:
        check("Slice", {"x": x}, opset=opset, starts=[1, -4], ends=[100, -1], axes=[0, 1])
    else:
        i64 = lambda *v: np.array(v, dtype=np.int64)  # noqa: E731
        check("Slice", {"x": x}, opset=opset, initializers={
            "starts": i64(-1, 0), "ends": i64(-100, 7), "axes": i64(1, 2), "steps": i64(-2, 2)})


def test_pad_wrap():
    check("Pad", {"x": rand(3, 5)}, opset=19, mode="wrap",
          initializers={"pads": np.array([1, 0, 2, 3], dtype=np.int64)})


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
@pytest.mark.parametrize("opset", [9, 13, 18])
def test_pad_migration(mode, opset):
    x = rand(3, 5)
    if opset == 9:
        check("Pad", {"x": x}, opset=opset, mode=mode, pads=[1, 2, 2, 1], value=1.5)
    elif opset == 13:
        check("Pad", {"x": x}, opset=opset, mode=mode, initializers={
            "pads": np.array([1, 2, 2, 1], dtype=np.int64), "value": np.float32(1.5)})
    else:
        check("Pad", {"x": x, "pads": Init(np.array([2, 1], dtype=np.int64)), "value": None,
                      "axes": Init(np.array([-1], dtype=np.int64))}, opset=opset, mode=mode)


@pytest.mark.parametrize("opset", [11, 13])
def test_squeeze_unsqueeze_migration(opset):
    x = rand(1, 3, 1, 5)
    axes = np.array([0, -2], dtype=np.int64)
    if opset == 11:
        check("Squeeze", {"x": x}, opset=opset, axes=[0, -2])
        check("Unsqueeze", {"x": rand(3, 5)}, opset=opset, axes=[0, 3])
    else:
        check("Squeeze", {"x": x}, opset=opset, initializers={"axes": axes})
        check("Unsqueeze", {"x": rand(3, 5)}, opset=opset,
              initializers={"axes": np.array([0, 3], dtype=np.int64)})
    check("Squeeze", {"x": x}, opset=opset)


def test_gather_expand_tile():
    check("Gather", {"x": rand(5, 3), "i": np.array([[4, -1], [0, 2]], dtype=np.int64)}, axis=0)
    check("Gather", {"x": rand(5, 3), "i": np.array([2, 0], dtype=np.int64)}, axis=1)
    check("Expand", {"x": rand(3, 1)}, initializers={"s": np.array([2, 1, 5], dtype=np.int64)})
    check("Tile", {"x": rand(2, 3)}, initializers={"r": np.array([3, 1], dtype=np.int64)})


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_depth_space(mode):
    check("DepthToSpace", {"x": rand(1, 8, 3, 5)}, blocksize=2, mode=mode)
    check("SpaceToDepth", {"x": rand(2, 3, 4, 6)}, blocksize=2)


def test_shape_size_constant_of_shape_range():
    check("Shape", {"x": rand(2, 3, 5)}, opset=15, start=1)
    check("Size", {"x": rand(2, 3, 5)})
    check("ConstantOfShape", {}, initializers={"s": np.array([2, 3], dtype=np.int64)},
          value=np.array([7], dtype=np.int64).view(np.int64) if False else None)
    check("Range", {}, initializers={"a": np.int64(2), "b": np.int64(11), "d": np.int64(3)})


def test_identity_dropout():
    check("Identity", {"x": rand(3)})
    check("Dropout", {"x": rand(3, 2)}, opset=13)


@pytest.mark.parametrize("opset", [10, 13])
def test_resize_nearest_migration(opset):
    x = rand(1, 2, 3, 5)
    scales = np.array([1, 1, 2, 3], dtype=np.float32)
    if opset == 10:
        # (onnx's ReferenceEvaluator mistakes Resize-10's scales for roi: numpy oracle)
        model = node_model("Resize", {"x": x}, opset=opset, initializers={"scales": scales})
        out = run_dlc(model, {"x": x})[0]
        np.testing.assert_array_equal(out, x.repeat(2, axis=2).repeat(3, axis=3))
    else:
        check("Resize", {"x": x, "roi": None}, opset=opset, initializers={"scales": scales})
        check("Resize", {"x": x, "roi": None, "scales": None}, opset=opset, mode="linear",
              initializers={"sizes": np.array([1, 2, 6, 10], dtype=np.int64)})


def test_upsample():
    check("Upsample", {"x": rand(1, 1, 2, 3)}, opset=9,
          initializers={"scales": np.array([1, 1, 2, 2], dtype=np.float32)})


# -- reductions ----------------------------------------------------------------------


REDUCE = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
          "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"]


@pytest.mark.parametrize("op", REDUCE)
@pytest.mark.parametrize("opset", [11, 18])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_migration(op, opset, keepdims):
    x = np.abs(rand(3, 1, 5)) + 0.1
    if opset == 11:
        check(op, {"x": x}, opset=opset, axes=[0, -1], keepdims=keepdims)
    else:
        check(op, {"x": x}, opset=opset, keepdims=keepdims,
              initializers={"axes": np.array([0, -1], dtype=np.int64)})
    check(op, {"x": x}, opset=opset, keepdims=keepdims)  # all axes


def test_reduce_sum_13_noop():
    check("ReduceSum", {"x": rand(3, 2)}, opset=13, noop_with_empty_axes=1)


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
def test_arg(op):
    x = ints(3, 5, lo=0, hi=3).astype(np.float32)
    check(op, {"x": x}, axis=1)
    check(op, {"x": x}, axis=0, keepdims=0, select_last_index=1)


# -- neural-network ops ----------------------------------------------------------------


@pytest.mark.parametrize("attrs", [
    {},
    {"pads": [1, 0, 2, 1], "strides": [2, 1]},
    {"auto_pad": "SAME_UPPER", "strides": [2, 2]},
    {"auto_pad": "SAME_LOWER", "dilations": [2, 1]},
    {"auto_pad": "VALID"},
    {"group": 3},
])
def test_conv2d(attrs):
    check("Conv", {"x": rand(2, 3, 7, 5)}, initializers={"w": rand(6, 3 // attrs.get("group", 1), 3, 2),
                                                        "b": rand(6)}, **attrs)


def test_conv_transpose_output_shape():
    # output_shape fixes the pads (the reference evaluator rejects this form: numpy oracle
    # through the explicit-pads form, which it handles)
    x, w = rand(1, 2, 3, 5), rand(2, 3, 3, 3)
    got = run_dlc(node_model("ConvTranspose", {"x": x}, initializers={"w": w}, strides=[2, 2],
                             output_shape=[6, 10]), {"x": x})[0]
    want = check("ConvTranspose", {"x": x}, initializers={"w": w}, strides=[2, 2],
                 pads=[1, 1, 0, 0])[0]  # totals 7 - 6 and 11 - 10: the begin side gets the 1
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_conv1d():
    check("Conv", {"x": rand(1, 2, 11)}, initializers={"w": rand(3, 2, 3)}, pads=[1, 2], strides=[2])


@pytest.mark.parametrize("attrs", [
    {"strides": [2, 2]},
    {"strides": [2, 1], "output_padding": [1, 0], "pads": [1, 0, 0, 1]},
    {"strides": [2, 2], "auto_pad": "SAME_UPPER"},
])
def test_conv_transpose(attrs):
    check("ConvTranspose", {"x": rand(1, 2, 3, 5)}, initializers={"w": rand(2, 3, 3, 3), "b": rand(3)},
          **attrs)


@pytest.mark.parametrize("op", ["MaxPool", "AveragePool", "LpPool"])
@pytest.mark.parametrize("attrs", [
    {"kernel_shape": [3, 2]},
    {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
    {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1},
    {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_UPPER"},
])
def test_pool(op, attrs):
    if op == "AveragePool":
        attrs = dict(attrs, count_include_pad=1) if "pads" in attrs else attrs
    if op == "LpPool" and attrs.get("ceil_mode"):
        pytest.skip("LpPool has ceil_mode only from opset 18 on")
    check(op, {"x": rand(1, 2, 7, 6)}, opset=18, **attrs)


def test_pool_1d_and_global():
    check("MaxPool", {"x": rand(1, 2, 9)}, kernel_shape=[3], strides=[2])
    check("GlobalAveragePool", {"x": rand(2, 3, 5, 1)})
    check("GlobalMaxPool", {"x": rand(2, 3, 5, 7)})


@pytest.mark.parametrize("attrs", [{}, {"transA": 1}, {"transB": 1, "alpha": 0.5, "beta": 2.0}])
def test_gemm(attrs):
    a = rand(5, 3) if attrs.get("transA") else rand(3, 5)
    b = rand(7, 5) if attrs.get("transB") else rand(5, 7)
    check("Gemm", {"a": a, "b": b}, initializers={"c": rand(7)}, **attrs)


def test_matmul_broadcasting():
    check("MatMul", {"a": rand(2, 1, 3, 5), "b": rand(7, 5, 2)})
    check("MatMul", {"a": rand(5), "b": rand(3, 5, 2)})


@pytest.mark.parametrize("equation,shapes", [
    ("ij,jk->ik", [(3, 5), (5, 2)]),
    ("bij,bjk->bik", [(2, 3, 5), (2, 5, 7)]),
    ("ij->ji", [(3, 5)]),
    ("ij->i", [(3, 5)]),
    ("i,j->ij", [(3,), (5,)]),
    ("bhqd,bhkd->bhqk", [(1, 2, 3, 4), (1, 2, 5, 4)]),
])
def test_einsum(equation, shapes):
    check("Einsum", {f"x{i}": rand(*s) for i, s in enumerate(shapes)}, equation=equation)


def test_normalizations():
    check("BatchNormalization", {"x": rand(2, 3, 5)}, initializers={
        "s": rand(3), "b": rand(3), "m": rand(3), "v": np.abs(rand(3)) + 0.5})
    check("LayerNormalization", {"x": rand(2, 3, 5)}, initializers={"s": rand(5), "b": rand(5)})
    check("LayerNormalization", {"x": rand(2, 3, 5)}, outputs=3, axis=1,
          initializers={"s": rand(3, 5), "b": rand(3, 5)})
    check("InstanceNormalization", {"x": rand(2, 3, 5, 1)}, initializers={"s": rand(3), "b": rand(3)})
    check("GroupNormalization", {"x": rand(2, 4, 3)}, opset=21, num_groups=2,
          initializers={"s": rand(4), "b": rand(4)})
    check("RMSNormalization", {"x": rand(2, 3, 5)}, opset=23, axis=1, initializers={"s": rand(3, 5)})
    check("LpNormalization", {"x": rand(3, 5)}, axis=0, p=2)
    # (the reference's p=1 forgets the absolute value: numpy oracle)
    x = rand(3, 5)
    out = run_dlc(node_model("LpNormalization", {"x": x}, axis=0, p=1), {"x": x})[0]
    np.testing.assert_allclose(out, x / np.abs(x).sum(axis=0, keepdims=True), rtol=1e-5)
    check("MeanVarianceNormalization", {"x": rand(2, 3, 5, 1)})
    # (the reference's LRN loops over the batch instead of the channels: numpy oracle)
    x = rand(1, 5, 3, 2)
    out = run_dlc(node_model("LRN", {"x": x}, size=3, alpha=0.01, beta=0.6, bias=1.5), {"x": x})[0]
    padded = np.pad(x.astype(np.float64) ** 2, ((0, 0), (1, 1), (0, 0), (0, 0)))
    window = padded[:, :-2] + padded[:, 1:-1] + padded[:, 2:]
    np.testing.assert_allclose(out, x / (1.5 + 0.01 / 3 * window) ** 0.6, rtol=1e-5)


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax", "Hardmax"])
def test_softmax_opset13(op):
    check(op, {"x": rand(2, 3, 5)}, opset=13, axis=1)


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax", "Hardmax"])
def test_softmax_legacy_flattens_at_axis(op):
    # opset < 13: the op works on the 2-D flattening at axis (here the last two
    # dims together); onnx's ReferenceEvaluator only has the opset-13 form
    x = rand(2, 3, 5)
    out = run_dlc(node_model(op, {"x": x}, opset=11, axis=1), {"x": x})[0]
    flat = x.reshape(2, 15).astype(np.float64)
    if op == "Hardmax":
        want = np.eye(15)[flat.argmax(axis=1)]
    else:
        e = np.exp(flat - flat.max(axis=1, keepdims=True))
        want = e / e.sum(axis=1, keepdims=True)
        if op == "LogSoftmax":
            want = np.log(want)
    np.testing.assert_allclose(out, want.reshape(x.shape).astype(np.float32), rtol=1e-5, atol=1e-6)


def test_misc_ops():
    check("Trilu", {"x": rand(2, 4, 5)}, opset=14, initializers={"k": np.int64(1)})
    check("Trilu", {"x": rand(4, 5)}, opset=14, upper=0)
    check("CumSum", {"x": rand(3, 5)}, opset=14, initializers={"a": np.int64(1)}, exclusive=1)
    check("CumSum", {"x": ints(7)}, opset=14, initializers={"a": np.int64(0)}, reverse=1)
    check("CumProd", {"x": rand(2, 5)}, opset=26, initializers={"a": np.int64(-1)}, exclusive=1)
    check("CumProd", {"x": ints(3, 4, lo=-3, hi=4)}, opset=26, initializers={"a": np.int64(0)}, reverse=1)
    for direction in ("LEFT", "RIGHT"):
        check("BitShift", {"x": ints(5, lo=0, hi=200, dtype=np.uint8),
                           "s": ints(5, lo=0, hi=8, dtype=np.uint8)}, direction=direction)
    check("Compress", {"x": rand(3, 2)}, opset=11, axis=0,
          initializers={"c": np.array([True, False, True])})
    check("OneHot", {"i": np.array([0, 2, -1], dtype=np.int64)}, opset=11,
          initializers={"d": np.int64(4), "v": np.array([0.0, 3.0], dtype=np.float32)})
    check("IsNaN", {"x": np.array([1.0, np.nan], dtype=np.float32)})
    check("IsInf", {"x": np.array([np.inf, -np.inf, 2.0], dtype=np.float32)}, detect_negative=0)
    check("EyeLike", {"x": rand(3, 5)}, k=1)


def test_runtime_shape_input_needs_constant():
    from dlc.frontends.onnx import NeedsConstantError

    model = node_model("Reshape", {"x": rand(2, 6), "shape": np.array([3, 4], dtype=np.int64)}, opset=14)
    with pytest.raises(NeedsConstantError, match="'shape' must be known at compile time") as info:
        run_dlc(model, {})
    assert info.value.input_name == "shape"
    x = rand(2, 6)
    out = run_dlc(model, {"x": x}, constant_inputs={"shape": np.array([3, 4], dtype=np.int64)})
    np.testing.assert_array_equal(out[0], x.reshape(3, 4))


# -- ops the standard defines by a function body (no converter of their own) -----------


def test_function_body_expansion_attention():
    from dlc.frontends.onnx.registry import lookup

    assert lookup("Attention") is None  # converted through its schema's function body
    q, k, v = rand(1, 2, 3, 4), rand(1, 2, 5, 4), rand(1, 2, 5, 3)
    check("Attention", {"q": q, "k": k, "v": v}, opset=23, is_causal=1)


def test_function_body_expansion_window_folds_to_a_constant():
    model = node_model("HannWindow", {}, opset=17, initializers={"size": np.int64(7)}, periodic=0)
    module = __import__("dlc.frontends.onnx", fromlist=["import_model"]).import_model(model)
    ops = [op.name for op in next(iter(module.ops)).body.block.ops]
    assert ops == ["graph.constant", "func.return"]
    check("HannWindow", {}, opset=17, initializers={"size": np.int64(7)}, periodic=0)


@pytest.mark.parametrize("attrs,scales", [
    ({"mode": "linear"}, [1, 1, 0.6, 1.7]),  # scales that are not out/in exactly
    ({"mode": "cubic", "cubic_coeff_a": -0.5, "exclude_outside": 1}, [1, 1, 1.5, 0.8]),
    ({"mode": "linear", "antialias": 1}, [1, 1, 0.5, 0.7]),
    ({"mode": "nearest", "coordinate_transformation_mode": "half_pixel_symmetric"}, [1, 1, 1.3, 2]),
])
def test_resize_by_interpolation_matrices(attrs, scales):
    check("Resize", {"x": rand(1, 2, 5, 7), "roi": None}, opset=19, rtol=1e-4, atol=1e-5,
          initializers={"scales": np.array(scales, dtype=np.float32)}, **attrs)


def test_resize_tf_crop_and_resize_extrapolates():
    check("Resize", {"x": rand(1, 1, 4, 5), "roi": Init(np.array([0, 0, -0.2, 0.3, 1, 1, 0.9, 1.4], np.float32)),
                     "scales": None, "sizes": Init(np.array([1, 1, 3, 6], np.int64))},
          opset=13, mode="linear", coordinate_transformation_mode="tf_crop_and_resize",
          extrapolation_value=-3.0)
