"""The simple-ops work: acos/asin/atan, bitwise ops and shifts (ONNX BitShift
semantics on signed and unsigned types), 3-D max/avg pooling, max pooling with
indices, det; compiled (lower-to-loops -> LLVM) against numpy, onnx.reference
or onnxruntime on odd shapes (primes, size-1 dims, broadcasting); and the ONNX
converters touched by it (Range on [1]-shaped inputs, Resize
keep_aspect_ratio_policy, training-mode Dropout with ratio 0)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Region
from xdsl.utils.exceptions import VerifyException

from dlc.dialects import graph as g
from dlc.dialects.graph_base import tensor_type_of
from dlc.driver import compile as dlc_compile
from dlc.frontends.onnx import import_model
from dlc.frontends.onnx.errors import OnnxImportError
from test_graph_util import onnx_run

RNG = np.random.default_rng(2026)


def compile_op(op_cls, arrays, **attrs):
    """(compiled one-op function, the op) for operands typed like ``arrays``."""
    types = [tensor_type_of(np.asarray(a)) for a in arrays]
    block = Block(arg_types=types)
    op = op_cls.make(*block.args, **attrs)
    block.add_op(op)
    block.add_op(func.ReturnOp(*op.results))
    module = ModuleOp([func.FuncOp("main", (types, [r.type for r in op.results]), Region(block))])
    module.verify()
    return dlc_compile(module), op


def run_compiled(op_cls, arrays, **attrs) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(compiled results, the op's numpy reference results)."""
    compiled, op = compile_op(op_cls, arrays, **attrs)
    got = compiled(*arrays)
    got = list(got) if isinstance(got, (list, tuple)) else [got]
    return got, op.reference(*arrays)


def exact(op_cls, arrays, **attrs) -> list[np.ndarray]:
    got, want = run_compiled(op_cls, arrays, **attrs)
    for a, b in zip(got, want, strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, a.shape, b.dtype, b.shape)
        np.testing.assert_array_equal(a, b)
    return got


def integers(shape, dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)


def onnx_model(node: onnx.NodeProto, inputs: dict, inits: dict | None = None, opset: int = 21):
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
         for n, a in inputs.items()],
        [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in node.output],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in (inits or {}).items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def ort_max_pool(x: np.ndarray, **attrs) -> list[np.ndarray]:
    """onnxruntime's MaxPool (values and indices): the oracle for indices."""
    import onnxruntime

    node = helper.make_node("MaxPool", ["x"], ["y", "i"], **attrs)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("i", TensorProto.INT64, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)])
    model.ir_version = 8
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})


def run_onnx_compiled(model: onnx.ModelProto, inputs: dict) -> list[np.ndarray]:
    got = dlc_compile(import_model(model))(*inputs.values())
    return list(got) if isinstance(got, (list, tuple)) else [got]


# ------------------------------------------------------------------ acos / asin / atan


TRIG = [(g.AcosOp, np.arccos), (g.AsinOp, np.arcsin), (g.AtanOp, np.arctan)]


def _ulps(got: np.ndarray, exact: np.ndarray) -> float:
    """Largest error in units of the last place of got's type (NaNs must agree)."""
    assert (np.isnan(got) == np.isnan(exact)).all()
    finite = ~np.isnan(exact)
    spacing = np.spacing(np.abs(exact[finite]).astype(got.dtype)).astype(np.float64)
    return float((np.abs(got[finite].astype(np.float64) - exact[finite]) / spacing).max())


@pytest.mark.parametrize("op_cls,fn", TRIG)
@pytest.mark.parametrize("dtype,max_ulps", [(np.float32, 3.0), (np.float64, 1.0), (np.float16, 1.0)])
def test_inverse_trig_is_accurate_over_the_domain(op_cls, fn, dtype, max_ulps):
    # f32/f16 go through expand-math's polynomials, f64 through libm: a dense
    # sweep of [-1, 1] (acos/asin) or [-40, 40] (atan), tiny and huge
    # magnitudes, the edges, values outside the domain (NaN), infinities, NaN
    span = 1.0 if op_cls is not g.AtanOp else 40.0
    special = [-1.0, 1.0, -0.0, 0.0, 1e-30, -1e-4, 0.5, -0.5, 1.0001, -1.5, 2.0, 6e4, -np.inf, np.inf, np.nan]
    x = np.concatenate([np.linspace(-span, span, 20011), special]).astype(dtype)
    x = np.concatenate([x, np.zeros(3 * 29 * 233 - x.size, dtype)]).reshape(3, 29, 233)
    got, want = run_compiled(op_cls, [x])
    with np.errstate(invalid="ignore"):
        exact = fn(x.astype(np.float64))
    assert got[0].dtype == dtype
    assert _ulps(got[0], exact) <= max_ulps
    assert _ulps(want[0], exact) <= max_ulps  # numpy's own f32 functions are not exact either


def test_inverse_trig_kernels_call_no_libm_for_f32():
    x = np.linspace(-1, 1, 7, dtype=np.float32)
    for op_cls, _ in TRIG:
        compiled, _ = compile_op(op_cls, [x])
        assert not any(f"@{name}f(" in compiled.llvm_ir for name in ("acos", "asin", "atan"))


def test_inverse_trig_rejects_integers():
    with pytest.raises(VerifyException, match="graph.atan: operand element type i32 is not float"):
        g.AtanOp.make(*Block(arg_types=[tensor_type_of(np.zeros(3, np.int32))]).args)


# ------------------------------------------------------------------ bitwise


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32, np.uint32, np.int64, np.uint64])
def test_bitwise_ops_exact_with_broadcasting(dtype):
    a, b = integers((3, 1, 5), dtype), integers((7, 1), dtype)
    for op_cls, fn in [(g.BitwiseAndOp, np.bitwise_and), (g.BitwiseOrOp, np.bitwise_or),
                       (g.BitwiseXorOp, np.bitwise_xor)]:
        (got,) = exact(op_cls, [a, b])
        np.testing.assert_array_equal(got, fn(a, b))
    (got,) = exact(g.BitwiseNotOp, [a])
    np.testing.assert_array_equal(got, np.invert(a))


def _shift_cases(dtype):
    bits = np.iinfo(dtype).bits
    a = integers((3, 1, 13), dtype)
    a[0, 0, :4] = [np.iinfo(dtype).min, np.iinfo(dtype).max, 1, 0]
    counts = np.array([0, 1, bits - 1, bits, bits + 1, 100, 3, 2, 5, bits - 2, 7, 1, 0], dtype=dtype)
    if np.iinfo(dtype).min < 0:
        counts[11:] = [-1, -bits]  # negative counts are out of range too
    return a, counts


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64])
@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
def test_shifts_match_the_onnx_reference(dtype, direction):
    a, counts = _shift_cases(dtype)
    op_cls = g.ShiftLeftOp if direction == "LEFT" else g.ShiftRightOp
    (got,) = exact(op_cls, [a, counts])
    (want,) = onnx_run("BitShift", [a, np.broadcast_to(counts, a.shape).copy()], {"direction": direction})
    np.testing.assert_array_equal(got, want)


def test_right_shift_of_negative_values_is_arithmetic():
    a = np.array([-8, -1, -(2**31), 12], np.int32)
    (got,) = exact(g.ShiftRightOp, [a, np.array([1, 31, 40, 2], np.int32)])
    np.testing.assert_array_equal(got, [-4, -1, -1, 3])


def test_bitwise_ops_fuse_into_a_producer_kernel():
    # the entries sit in elementwise.py's tables, so fuse-ops chains them
    from dlc.lowering.kernels.elementwise import scalar_compute

    a = tensor_type_of(np.zeros((2, 3), np.int16))
    block = Block(arg_types=[a, a])
    op = g.ShiftLeftOp.make(*block.args)
    assert scalar_compute(op) is not None


# ------------------------------------------------------------------ pools


POOL_CASES = [
    # (input shape, kernel, strides, dilations, pads, ceil_mode)
    ((1, 3, 5, 6, 7), [2, 2, 2], [2, 2, 2], [1, 1, 1], [0, 0, 0, 0, 0, 0], 0),
    ((2, 1, 7, 5, 3), [3, 1, 2], [1, 2, 1], [1, 1, 2], [1, 0, 1, 1, 0, 0], 1),
    ((1, 2, 11, 1, 5), [3, 1, 3], [2, 1, 3], [2, 1, 1], [2, 0, 1, 0, 0, 2], 1),
]


@pytest.mark.parametrize("shape,kernel,strides,dilations,pads,ceil", POOL_CASES)
@pytest.mark.parametrize("kind", ["max", "avg", "avg_include_pad"])
def test_pool3d_matches_onnxruntime(shape, kernel, strides, dilations, pads, ceil, kind):
    x = RNG.standard_normal(shape).astype(np.float32)
    attrs = dict(kernel=kernel, strides=strides, dilations=dilations, padding=pads, ceil_mode=bool(ceil))
    onnx_attrs = dict(kernel_shape=kernel, strides=strides, dilations=dilations, pads=pads, ceil_mode=ceil)
    if kind == "max":
        got, want = run_compiled(g.MaxPool3DOp, [x], **attrs)
        (ort,) = onnx_run("MaxPool", [x], onnx_attrs, engine="ort")
    else:
        include = kind == "avg_include_pad"
        got, want = run_compiled(g.AvgPool3DOp, [x], count_include_pad=include, **attrs)
        (ort,) = onnx_run("AveragePool", [x], dict(onnx_attrs, count_include_pad=int(include)), opset=19, engine="ort")
    np.testing.assert_allclose(want[0], ort, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-6)


def test_pool3d_on_integers_is_exact():
    x = integers((1, 2, 3, 5, 4), np.int32)
    exact(g.MaxPool3DOp, [x], kernel=[2, 3, 2], padding=[1, 1, 0, 0, 1, 1])
    exact(g.AvgPool3DOp, [x // 4], kernel=[3, 2, 2], strides=[1, 2, 2])


@pytest.mark.parametrize("shape,kernel,strides,dilations,pads,order", [
    ((2, 3, 11), [3], [2], [2], [1, 2], 0),
    ((1, 2, 5, 7), [2, 3], [1, 2], [1, 1], [1, 0, 0, 1], 0),
    ((1, 2, 5, 7), [3, 2], [2, 1], [1, 2], [0, 1, 1, 0], 1),
    ((1, 1, 3, 4, 5), [2, 2, 3], [1, 2, 1], [1, 1, 1], [0, 0, 1, 1, 0, 0], 0),
])
def test_max_pool_with_indices_matches_onnxruntime(shape, kernel, strides, dilations, pads, order):
    x = RNG.standard_normal(shape).astype(np.float32)
    got, want = run_compiled(g.MaxPoolWithIndicesOp, [x], kernel=kernel, strides=strides,
                             dilations=dilations, padding=pads, storage_order=order)
    ort = ort_max_pool(x, kernel_shape=kernel, strides=strides, dilations=dilations, pads=pads,
                       storage_order=order)
    for a, b, c in zip(got, want, ort, strict=True):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(b, c)


def test_max_pool_indices_take_the_first_maximum_of_a_window():
    x = np.zeros((1, 1, 3, 3), np.float32)
    x[0, 0, 1, 1] = x[0, 0, 2, 2] = 5.0
    values, indices = exact(g.MaxPoolWithIndicesOp, [x], kernel=[2, 2])
    np.testing.assert_array_equal(values[0, 0], [[5, 5], [5, 5]])
    np.testing.assert_array_equal(indices[0, 0], [[4, 4], [4, 4]])
    # a window of -inf still points at one of its input elements
    x = np.full((1, 1, 2, 3), -np.inf, np.float32)
    _, indices = exact(g.MaxPoolWithIndicesOp, [x], kernel=[2, 2], padding=[1, 1, 0, 0])
    np.testing.assert_array_equal(indices[0, 0], [[0, 0, 1], [0, 0, 1]])


@pytest.mark.parametrize("op_cls,shape,attrs,message", [
    (g.MaxPool3DOp, (1, 3, 8, 8), dict(kernel=[2, 2, 2]), "input must be 5-D"),
    (g.AvgPool3DOp, (1, 3, 4, 4, 4), dict(kernel=[2, 2]), "'kernel' must be 3 values"),
    (g.MaxPool3DOp, (1, 1, 2, 2, 2), dict(kernel=[3, 1, 1]), "larger than the padded input"),
    (g.MaxPoolWithIndicesOp, (1, 1, 2, 2, 2, 2), dict(kernel=[1, 1, 1, 1]), "input must be 3 or 4 or 5-D"),
])
def test_pool_verifier_rules(op_cls, shape, attrs, message):
    with pytest.raises(VerifyException, match=message):
        op_cls.make(*Block(arg_types=[tensor_type_of(np.zeros(shape, np.float32))]).args, **attrs).verify()


# ------------------------------------------------------------------ det


@pytest.mark.parametrize("shape,dtype", [((1, 1), np.float32), ((3, 5, 5), np.float32),
                                         ((2, 1, 7, 7), np.float64), ((4, 2, 2), np.float32)])
def test_det_matches_numpy(shape, dtype):
    x = RNG.standard_normal(shape).astype(dtype)
    got, want = run_compiled(g.DetOp, [x])
    expected = np.linalg.det(x.astype(np.float64))
    np.testing.assert_allclose(got[0], expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(want[0], expected, rtol=1e-6)
    assert got[0].shape == shape[:-2] and got[0].dtype == dtype


def test_det_pivots_singular_and_permuted_matrices():
    x = np.zeros((4, 3, 3), np.float32)
    x[0] = np.eye(3)[[2, 0, 1]]  # even permutation, zero leading pivot: needs pivoting
    x[1] = np.eye(3)[[1, 0, 2]]  # odd permutation
    x[2] = [[1, 2, 3], [2, 4, 6], [0, 1, 5]]  # singular (dependent rows)
    x[3] = [[1e-8, 1, 0], [1, 1, 0], [0, 0, 2]]  # tiny pivot: partial pivoting keeps it accurate
    (got,), _ = run_compiled(g.DetOp, [x])
    np.testing.assert_allclose(got, [1.0, -1.0, 0.0, -2.0 + 2e-8], atol=1e-6)


# ------------------------------------------------------------------ ONNX converters


def test_onnx_bitshift_signed_and_bitwise_import_and_run():
    a, counts = _shift_cases(np.int16)
    counts = np.broadcast_to(counts, a.shape).copy()
    for direction in ("LEFT", "RIGHT"):
        node = helper.make_node("BitShift", ["a", "b"], ["y"], direction=direction)
        model = onnx_model(node, {"a": a, "b": counts})
        (got,) = run_onnx_compiled(model, {"a": a, "b": counts})
        np.testing.assert_array_equal(got, ReferenceEvaluator(model).run(None, {"a": a, "b": counts})[0])
    x, y = integers((2, 3), np.uint8), integers((3,), np.uint8)
    node = helper.make_node("BitwiseXor", ["x", "y"], ["z"])
    (got,) = run_onnx_compiled(onnx_model(node, {"x": x, "y": y}), {"x": x, "y": y})
    np.testing.assert_array_equal(got, x ^ y)


def test_onnx_bitshift_rejects_floats_in_one_line():
    x = np.ones(3, np.float32)
    node = helper.make_node("BitShift", ["a", "b"], ["y"], direction="LEFT")
    with pytest.raises(OnnxImportError, match="BitShift takes integer tensors, got float32") as info:
        import_model(onnx_model(node, {"a": x, "b": x}))
    assert "\n" not in str(info.value)


def test_onnx_range_takes_one_element_tensors():
    node = helper.make_node("Range", ["s", "l", "d"], ["y"])
    inits = {"s": np.array([2.5], np.float32), "l": np.array([-4.0], np.float32), "d": np.array([-1.5], np.float32)}
    model = onnx_model(node, {}, inits)
    (got,) = run_onnx_compiled(model, {})
    np.testing.assert_allclose(got, np.arange(2.5, -4.0, -1.5, dtype=np.float32))
    bad = onnx_model(node, {}, dict(inits, d=np.array([1.0, 2.0], np.float32)))
    with pytest.raises(OnnxImportError, match="delta must be a scalar or a 1-element tensor"):
        import_model(bad)


@pytest.mark.parametrize("policy", ["not_larger", "not_smaller"])
@pytest.mark.parametrize("mode,sizes", [("nearest", [5, 2]), ("linear", [7, 11]), ("nearest", [1, 13])])
def test_onnx_resize_keep_aspect_ratio_policy(policy, mode, sizes):
    x = RNG.standard_normal((1, 2, 5, 3)).astype(np.float32)
    node = helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode=mode, axes=[2, 3],
                            keep_aspect_ratio_policy=policy)
    model = onnx_model(node, {"x": x}, {"sizes": np.array(sizes, np.int64)}, opset=19)
    (got,) = run_onnx_compiled(model, {"x": x})
    (want,) = ReferenceEvaluator(model).run(None, {"x": x})
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_onnx_training_dropout_with_zero_ratio_is_identity_and_random_masks_are_rejected():
    x = RNG.standard_normal((3, 1, 5)).astype(np.float32)
    node = helper.make_node("Dropout", ["x", "r", "t"], ["y", "mask"])
    inits = {"r": np.array(0.0, np.float32), "t": np.array(True)}
    y, mask = run_onnx_compiled(onnx_model(node, {"x": x}, inits), {"x": x})
    np.testing.assert_array_equal(y, x)
    assert mask.dtype == np.bool_ and mask.all()
    with pytest.raises(OnnxImportError, match="ratio 0.5 .random mask. is not supported"):
        import_model(onnx_model(node, {"x": x}, dict(inits, r=np.array(0.5, np.float32))))


def test_onnx_maxpool_indices_and_3d_pools_import():
    x = RNG.standard_normal((1, 2, 5, 4, 3)).astype(np.float32)
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2, 2], pads=[1, 0, 1, 0, 1, 0])
    model = onnx_model(node, {"x": x})
    got = run_onnx_compiled(model, {"x": x})
    for a, b in zip(got, ort_max_pool(x, kernel_shape=[2, 2, 2], pads=[1, 0, 1, 0, 1, 0]), strict=True):
        np.testing.assert_array_equal(a, b)
    node = helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 2, 1], auto_pad="SAME_UPPER")
    model = onnx_model(node, {"x": x})
    (got,) = run_onnx_compiled(model, {"x": x})
    np.testing.assert_allclose(got, ReferenceEvaluator(model).run(None, {"x": x})[0], rtol=1e-6)


def test_onnx_det_imports_and_runs():
    x = RNG.standard_normal((2, 3, 4, 4)).astype(np.float32)
    node = helper.make_node("Det", ["x"], ["y"])
    (got,) = run_onnx_compiled(onnx_model(node, {"x": x}), {"x": x})
    np.testing.assert_allclose(got, np.linalg.det(x.astype(np.float64)), rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------ integer / quantized


@pytest.mark.parametrize("dtype,scale_dtype", [(np.uint8, np.float32), (np.int8, np.float16)])
def test_onnx_qlinear_matmul_matches_the_reference(dtype, scale_dtype):
    a, b = integers((2, 3, 5), dtype), integers((5, 7), dtype)
    feeds = {"a": a, "a_scale": np.array([0.0123], scale_dtype), "a_zp": integers((1,), dtype),
             "b": b, "b_scale": np.array(0.0071, scale_dtype), "b_zp": integers((), dtype),
             "y_scale": np.array([0.0457], scale_dtype), "y_zp": integers((1,), dtype)}
    node = helper.make_node("QLinearMatMul", list(feeds), ["y"])
    model = onnx_model(node, feeds)
    (got,) = run_onnx_compiled(model, feeds)  # scales and zero points are run-time inputs
    (want,) = ReferenceEvaluator(model).run(None, feeds)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_onnx_matmul_and_conv_integer_match_the_reference():
    a, b = integers((3, 1, 4, 6), np.uint8), integers((6, 5), np.uint8)
    feeds = {"a": a, "b": b, "a_zp": np.array(7, np.uint8), "b_zp": np.array(200, np.uint8)}
    model = onnx_model(helper.make_node("MatMulInteger", list(feeds), ["y"]), feeds, opset=10)
    np.testing.assert_array_equal(run_onnx_compiled(model, feeds)[0], ReferenceEvaluator(model).run(None, feeds)[0])
    x, w = integers((1, 2, 7, 5), np.uint8), integers((3, 2, 3, 2), np.uint8)
    feeds = {"x": x, "w": w, "x_zp": np.array(128, np.uint8), "w_zp": integers((3,), np.uint8)}
    model = onnx_model(helper.make_node("ConvInteger", list(feeds), ["y"], pads=[1, 0, 1, 1], strides=[2, 1]),
                       feeds, opset=10)
    got = run_onnx_compiled(model, feeds)[0]
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, ReferenceEvaluator(model).run(None, feeds)[0])


def test_onnx_qlinear_conv_per_channel_matches_the_reference():
    x, w = integers((1, 3, 6, 5), np.int8), integers((4, 3, 2, 3), np.int8)
    feeds = {"x": x, "x_scale": np.array(0.02, np.float32), "x_zp": np.array(-3, np.int8),
             "w": w, "w_scale": np.array([0.01, 0.002, 0.03, 0.005], np.float32), "w_zp": np.zeros(4, np.int8),
             "y_scale": np.array(0.5, np.float32), "y_zp": np.array(5, np.int8),
             "bias": RNG.integers(-500, 500, size=4).astype(np.int32)}
    model = onnx_model(helper.make_node("QLinearConv", list(feeds), ["y"], pads=[1, 1, 0, 1]), feeds, opset=10)
    got = run_onnx_compiled(model, feeds)[0]
    np.testing.assert_array_equal(got, ReferenceEvaluator(model).run(None, feeds)[0])


@pytest.mark.parametrize("attrs", [
    dict(),
    dict(pads=[1, 0, 1, 2, 1, 0], strides=[2, 1, 2], dilations=[1, 2, 1], group=2),
    dict(auto_pad="SAME_UPPER", strides=[3, 1, 1]),
])
def test_onnx_conv3d_matches_the_reference(attrs):
    x = RNG.standard_normal((2, 4, 5, 7, 3)).astype(np.float32)
    w = RNG.standard_normal((6, 4 // attrs.get("group", 1), 3, 2, 1)).astype(np.float32)
    b = RNG.standard_normal(6).astype(np.float32)
    model = onnx_model(helper.make_node("Conv", ["x", "w", "b"], ["y"], **attrs), {"x": x}, {"w": w, "b": b}, opset=17)
    (got,) = run_onnx_compiled(model, {"x": x})
    (want,) = ReferenceEvaluator(model).run(None, {"x": x})
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("attrs", [
    dict(),
    dict(strides=[3, 2, 1], pads=[1, 0, 1, 2, 1, 0], dilations=[2, 1, 1], output_padding=[1, 1, 0], group=2),
    dict(strides=[2, 1, 2], auto_pad="SAME_UPPER"),
])
def test_onnx_conv_transpose3d_matches_the_reference(attrs):
    x = RNG.standard_normal((2, 4, 3, 5, 2)).astype(np.float32)
    w = RNG.standard_normal((4, 3, 2, 3, 2)).astype(np.float32)
    b = RNG.standard_normal(3 * attrs.get("group", 1)).astype(np.float32)
    node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], **attrs)
    model = onnx_model(node, {"x": x}, {"w": w, "b": b}, opset=17)
    (got,) = run_onnx_compiled(model, {"x": x})
    # onnxruntime: onnx.reference's ConvTranspose mishandles groups
    import onnxruntime

    model.graph.output[0].type.tensor_type.elem_type = TensorProto.FLOAT
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (want,) = session.run(None, {"x": x})
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_onnx_lp_pool_3d_matches_the_reference():
    x = RNG.standard_normal((1, 2, 5, 3, 4)).astype(np.float32)
    node = helper.make_node("LpPool", ["x"], ["y"], kernel_shape=[2, 3, 2], p=3, pads=[1, 0, 0, 0, 1, 1])
    model = onnx_model(node, {"x": x}, opset=18)
    (got,) = run_onnx_compiled(model, {"x": x})
    np.testing.assert_allclose(got, ReferenceEvaluator(model).run(None, {"x": x})[0], rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------ widen-accumulation


def test_f16_reductions_accumulate_in_f32():
    # 1 + 2048 terms of 1/2048: f16 accumulation stalls at 1 + 1/1024 steps; one
    # rounding at the end gives 2.0 exactly
    a = np.concatenate([[1.0], np.full(2048, 1 / 2048)]).astype(np.float16).reshape(1, -1)
    ones = np.ones((a.shape[1], 3), np.float16)
    (got,), _ = run_compiled(g.MatmulOp, [a, ones])
    np.testing.assert_array_equal(got, np.full((1, 3), 2.0, np.float16))
    (got,), _ = run_compiled(g.ReduceSumOp, [a], axes=[1])
    np.testing.assert_array_equal(got, [2.0])
    x = RNG.standard_normal((1, 3, 7, 5)).astype(np.float16)
    w = RNG.standard_normal((2, 3, 3, 3)).astype(np.float16)
    (got,), _ = run_compiled(g.Conv2DOp, [x, w], padding=[1, 1, 1, 1])
    exact = run_compiled(g.Conv2DOp, [x.astype(np.float32), w.astype(np.float32)], padding=[1, 1, 1, 1])[0][0]
    np.testing.assert_array_equal(got, exact.astype(np.float16))
