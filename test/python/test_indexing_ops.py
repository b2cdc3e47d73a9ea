"""gather_nd, scatter_nd, scatter_elements, top_k and reverse_sequence: compiled
(lower-to-loops -> LLVM) against numpy/onnx.reference on odd shapes (primes,
size-1 dims), negative and out-of-range indices, every scatter reduction;
verifier rules; the ONNX converters (incl. TensorScatter and MaxUnpool, which
become scatter_elements)."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Region
from xdsl.utils.exceptions import VerifyException

from dlc.dialects import graph as g
from dlc.dialects.graph_base import tensor_type_of
from dlc.driver import compile as dlc_compile
from dlc.frontends.onnx import import_model
from dlc.frontends.onnx.errors import OnnxImportError
from test_graph_util import build, onnx_run
from test_onnx_frontend_util import Init, node_model, run_reference

RNG = np.random.default_rng(11)
REDUCTIONS = ["none", "add", "mul", "max", "min"]


def compiled(op_cls, arrays, **attrs) -> list[np.ndarray]:
    """Compile a one-op function and run it; also checks the op's reference
    agrees with the compiled result exactly."""
    types = [tensor_type_of(np.asarray(a)) for a in arrays]
    block = Block(arg_types=types)
    op = op_cls.make(*block.args, **attrs)
    block.add_op(op)
    block.add_op(func.ReturnOp(*op.results))
    module = ModuleOp([func.FuncOp("main", (types, [r.type for r in op.results]), Region(block))])
    module.verify()
    reference = op.reference(*arrays)
    got = dlc_compile(module)(*arrays)
    got = list(got) if isinstance(got, (list, tuple)) else [got]
    for a, b in zip(got, reference, strict=True):
        np.testing.assert_array_equal(a, b)
    return got


def same(got, want):
    """Exact equality, dtype included (a plain list takes got's dtype)."""
    want = want if isinstance(want, np.ndarray) else np.asarray(want, dtype=got.dtype)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
    np.testing.assert_array_equal(got, want)


def floats(*shape, dtype=np.float32):
    return RNG.uniform(-3, 3, shape).astype(dtype)


# ------------------------------------------------------------------ gather_nd


@pytest.mark.parametrize("data_shape,idx_shape,batch_dims", [
    ((7, 3), (5, 1), 0),          # rows
    ((7, 3), (2, 3, 2), 0),       # elements
    ((2, 5, 3), (2, 4, 1), 1),    # batched rows
    ((2, 1, 5, 3), (2, 1, 3, 2), 2),
    ((1, 11), (1, 1), 0),         # size-1 dims
])
def test_gather_nd_matches_onnx(data_shape, idx_shape, batch_dims):
    data = floats(*data_shape)
    k = idx_shape[-1]
    dims = data_shape[batch_dims:batch_dims + k]
    indices = np.stack([RNG.integers(-d, d, idx_shape[:-1]) for d in dims], axis=-1).astype(np.int64)
    (got,) = compiled(g.GatherNDOp, [data, indices], batch_dims=batch_dims)
    (want,) = onnx_run("GatherND", [data, indices], {"batch_dims": batch_dims}, opset=13)
    same(got, want)


def test_gather_nd_int_data_i32_indices_clamps_out_of_range():
    data = np.arange(35, dtype=np.int32).reshape(5, 7)
    indices = np.array([[0, 6], [-1, -7], [9, 1], [2, -20]], np.int32)
    (got,) = compiled(g.GatherNDOp, [data, indices])
    same(got, [data[0, 6], data[4, 0], data[4, 1], data[2, 0]])  # 9 -> 4, -20 -> 0 (clamped)


# ------------------------------------------------------------------ scatter_nd


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_scatter_nd_every_reduction_with_duplicates(reduction, dtype):
    data = floats(5, 3).astype(dtype) if dtype == np.float32 else RNG.integers(-9, 10, (5, 3)).astype(dtype)
    indices = np.array([[1], [3], [1], [-1], [-5]], np.int64)  # row 1 twice, -1 = 4, -5 = 0
    updates = floats(5, 3).astype(dtype) if dtype == np.float32 else RNG.integers(-9, 10, (5, 3)).astype(dtype)
    (got,) = compiled(g.ScatterNDOp, [data, indices, updates], reduction=reduction)
    attrs = {} if reduction == "none" else {"reduction": reduction}
    if reduction == "none":
        # onnx.reference writes in order: the last duplicate wins, as here
        want = data.copy()
        for i, row in enumerate([1, 3, 1, 4, 0]):
            want[row] = updates[i]
    else:
        (want,) = onnx_run("ScatterND", [data, np.where(indices < 0, indices + 5, indices), updates], attrs)
    same(got, want)


def test_scatter_nd_element_tuples_and_batch_dims():
    data = floats(2, 3, 7)
    indices = np.array([[[0, 6], [2, -1], [0, 6]], [[1, 1], [-3, 0], [2, 2]]], np.int64)
    updates = floats(2, 3)
    (got,) = compiled(g.ScatterNDOp, [data, indices, updates], batch_dims=1, reduction="add")
    want = data.copy()
    for b in range(2):
        for j in range(3):
            r, c = (int(v) for v in indices[b, j])
            want[b, r % 3, c % 7] += updates[b, j]
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_scatter_nd_skips_out_of_range_tuples():
    data = np.zeros((3, 2), np.float32)
    indices = np.array([[5], [-4], [2]], np.int64)
    updates = np.ones((3, 2), np.float32) * np.array([[1], [2], [3]], np.float32)
    (got,) = compiled(g.ScatterNDOp, [data, indices, updates])
    same(got, [[0, 0], [0, 0], [3, 3]])


# ------------------------------------------------------------------ scatter_elements


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_scatter_elements_matches_onnx(reduction, axis):
    data = floats(5, 7)
    n = data.shape[axis]
    indices = RNG.integers(0, n, (3, 2)).astype(np.int64)  # smaller than data: a corner
    updates = floats(3, 2)
    (got,) = compiled(g.ScatterElementsOp, [data, indices, updates], axis=axis, reduction=reduction)
    attrs = {"axis": axis} | ({} if reduction == "none" else {"reduction": reduction})
    (want,) = onnx_run("ScatterElements", [data, indices, updates], attrs)
    same(got, want)


def test_scatter_elements_negative_and_out_of_range_indices_ui8():
    data = np.full((2, 5), 7, np.uint8)
    indices = np.array([[-1, 0, 5], [-5, -6, 2]], np.int32)  # 5 and -6 are outside: skipped
    updates = np.array([[200, 1, 9], [3, 4, 255]], np.uint8)
    (got,) = compiled(g.ScatterElementsOp, [data, indices, updates], axis=1, reduction="add")
    same(got, [[8, 7, 7, 7, 207], [10, 7, 6, 7, 7]])  # 7 + 255 wraps to 6


def test_scatter_elements_rank3_size_one_dims():
    data = floats(1, 3, 1)
    indices = np.array([[[2], [0]]], np.int64)
    updates = floats(1, 2, 1)
    (got,) = compiled(g.ScatterElementsOp, [data, indices, updates], axis=1, reduction="max")
    (want,) = onnx_run("ScatterElements", [data, indices, updates], {"axis": 1, "reduction": "max"})
    same(got, want)


# ------------------------------------------------------------------ top_k


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("shape,axis,k", [((3, 7), -1, 3), ((7, 2, 5), 0, 7), ((2, 11, 3), 1, 1), ((1, 5), 1, 5)])
def test_top_k_matches_onnx(shape, axis, k, largest):
    x = RNG.integers(-3, 4, shape).astype(np.float32)  # many ties
    values, indices = compiled(g.TopKOp, [x], k=k, axis=axis, largest=largest)
    want = onnx_run("TopK", [x], {"axis": axis, "largest": int(largest)}, (np.array([k], np.int64),),
                    opset=11, n_out=2)
    same(values, want[0])
    same(indices, want[1].astype(np.int64))


@pytest.mark.parametrize("dtype", [np.int64, np.uint8, np.float64, np.int8])
def test_top_k_integer_and_double_types(dtype):
    x = np.array([[3, 1, 200 if dtype == np.uint8 else -100, 3, 0, 7, 7]], dtype)
    values, indices = compiled(g.TopKOp, [x], k=4)
    order = sorted(range(7), key=lambda i: (-int(x[0, i]), i))[:4]
    same(indices, np.array([order], np.int64))
    same(values, x[:, order])


def test_top_k_nan_counts_as_largest_and_sorted_false_is_accepted():
    x = np.array([[1.0, np.nan, 3.0, np.nan, -np.inf]], np.float32)
    values, indices = compiled(g.TopKOp, [x], k=3, sorted=False)
    same(indices, [[1, 3, 2]])
    np.testing.assert_array_equal(values, [[np.nan, np.nan, 3.0]])
    values, indices = compiled(g.TopKOp, [x], k=3, largest=False)
    same(indices, [[4, 0, 2]])


# ------------------------------------------------------------------ reverse_sequence


@pytest.mark.parametrize("shape,batch_axis,time_axis", [
    ((5, 3, 2), 1, 0), ((3, 5, 2), 0, 1), ((5, 1, 3), 2, 0), ((3, 2, 7), 0, 2)])
def test_reverse_sequence_matches_onnx(shape, batch_axis, time_axis):
    x = floats(*shape)
    lens = RNG.integers(0, shape[time_axis] + 1, shape[batch_axis]).astype(np.int64)
    (got,) = compiled(g.ReverseSequenceOp, [x, lens], batch_axis=batch_axis, time_axis=time_axis)
    want = x.copy()
    for b, n in enumerate(lens):
        for t in range(n):
            src = [slice(None)] * 3
            dst = [slice(None)] * 3
            src[batch_axis] = dst[batch_axis] = b
            src[time_axis], dst[time_axis] = n - 1 - t, t
            want[tuple(dst)] = x[tuple(src)]
    same(got, want)
    if {batch_axis, time_axis} <= {0, 1}:  # ONNX allows only these two axes
        (ref,) = onnx_run("ReverseSequence", [x, lens], {"batch_axis": batch_axis, "time_axis": time_axis})
        same(got, ref)


def test_reverse_sequence_clamps_lengths():
    x = np.arange(8, dtype=np.int32).reshape(4, 2)  # time x batch
    (got,) = compiled(g.ReverseSequenceOp, [x, np.array([9, -2], np.int32)])
    same(got, [[6, 1], [4, 3], [2, 5], [0, 7]])  # 9 -> 4 (all), -2 -> 0 (none)


# ------------------------------------------------------------------ verifier rules


@pytest.mark.parametrize("op_cls,arrays,attrs,message", [
    (g.GatherNDOp, [np.zeros((2, 3)), np.zeros((4, 3), np.int64)], {},
     "index tuples have 3 entries (last dim of indices), which must be in [1, 2]"),
    (g.GatherNDOp, [np.zeros((2, 3)), np.zeros((3, 1), np.int64)], {"batch_dims": 1},
     "the first 1 (batch) dims of data [2, 3] and indices [3, 1] must be equal"),
    (g.GatherNDOp, [np.zeros((2, 3)), np.zeros((2, 1), np.float32)], {}, "indices element type f32 is not int"),
    (g.ScatterNDOp, [np.zeros((5, 3)), np.zeros((4, 1), np.int64), np.zeros((4, 2))], {},
     "updates shape [4, 2] must be indices.shape[:-1] + data.shape[batch_dims + k:] = [4, 3]"),
    (g.ScatterNDOp, [np.zeros((5, 3)), np.zeros((4, 1), np.int64), np.zeros((4, 3))], {"reduction": "sum"},
     "reduction must be one of none, add, mul, max, min, got 'sum'"),
    (g.ScatterElementsOp, [np.zeros((3, 5), bool), np.zeros((3, 2), np.int64), np.zeros((3, 2), bool)],
     {"reduction": "add"}, "reduction 'add' needs float or integer data, got i1"),
    (g.ScatterElementsOp, [np.zeros((3, 5)), np.zeros((4, 2), np.int64), np.zeros((4, 2))], {"axis": 1},
     "indices shape [4, 2] exceeds data shape [3, 5] outside axis 1"),
    (g.ScatterElementsOp, [np.zeros((3, 5)), np.zeros((3, 2), np.int64), np.zeros((3, 2), np.float32)], {},
     "updates element type f32 must be data's f64"),
    (g.TopKOp, [np.zeros((2, 7))], {"k": 8}, "k = 8 must be in [0, 7] (the extent of axis 1)"),
    (g.TopKOp, [np.zeros((2, 7))], {}, "missing attribute 'k'"),
    (g.TopKOp, [np.zeros((2, 7), bool)], {"k": 1}, "operand element type i1 is not float or integer"),
    (g.ReverseSequenceOp, [np.zeros((4, 3)), np.zeros((4,), np.int64)], {},
     "seq_lens shape [4] must be [3] (the batch extent)"),
    (g.ReverseSequenceOp, [np.zeros((4, 3)), np.zeros((4,), np.int64)], {"batch_axis": 0, "time_axis": 0},
     "batch_axis and time_axis must differ, both are 0"),
])
def test_verifier_names_the_rule(op_cls, arrays, attrs, message):
    with pytest.raises(VerifyException) as info:
        build(op_cls, arrays, **attrs)
    assert f"{op_cls.name}: {message}" in str(info.value)


# ------------------------------------------------------------------ ONNX converters


def compile_onnx(model, feeds: dict) -> list[np.ndarray]:
    program = dlc_compile(import_model(model))
    out = program(*[feeds[vi.name] for vi in model.graph.input])
    return list(out) if isinstance(out, (list, tuple)) else [out]


def test_onnx_top_k_runtime_k_names_the_node():
    model = node_model("TopK", {"x": floats(2, 5), "k": np.array([2], np.int64)}, outputs=2, opset=11)
    with pytest.raises(OnnxImportError, match=r"node 'topk_node' \(TopK, #0\): 'K' must be known at compile time"):
        import_model(model)


def test_onnx_top_k_opset1_attribute_and_constant_k():
    x = floats(3, 7)
    for model in (node_model("TopK", {"x": x}, outputs=2, opset=1, k=3),
                  node_model("TopK", {"x": x, "k": Init(np.array([3], np.int64))}, outputs=2, opset=11, largest=0)):
        got = compile_onnx(model, {"x": x})
        for a, b in zip(got, run_reference(model, {"x": x}), strict=True):
            same(a, b)


@pytest.mark.parametrize("mode,with_indices", [("linear", True), ("circular", True), ("linear", False)])
def test_onnx_tensor_scatter(mode, with_indices):
    cache, update = floats(3, 2, 7, 5), floats(3, 2, 3, 5)
    inputs = {"past_cache": cache, "update": update}
    if with_indices:
        inputs["write_indices"] = np.array([4, 0, 6] if mode == "circular" else [4, 0, 3], np.int64)
    model = node_model("TensorScatter", inputs, opset=24, mode=mode)
    (got,) = compile_onnx(model, inputs)
    same(got, run_reference(model, inputs)[0])


@pytest.mark.parametrize("with_shape", [False, True])
def test_onnx_max_unpool(with_shape):
    x = floats(1, 2, 3, 2)
    # indices of each window's maximum in a 1x2x5x3 pooled tensor (flat over N*C*H*W)
    pooled = floats(1, 2, 5, 3)
    _, indices = onnx_run("MaxPool", [pooled], {"kernel_shape": [2, 2], "strides": [2, 2], "pads": [0, 0, 1, 1]},
                          opset=12, n_out=2)
    inputs = {"x": x, "i": indices.astype(np.int64)}
    attrs = {"kernel_shape": [2, 2], "strides": [2, 2], "pads": [0, 0, 1, 1]}
    if with_shape:
        inputs["shape"] = Init(np.array([1, 2, 6, 4], np.int64))
    model = node_model("MaxUnpool", inputs, opset=11, **attrs)
    feeds = {k: v for k, v in inputs.items() if not isinstance(v, Init)}
    (got,) = compile_onnx(model, feeds)
    same(got, run_reference(model, feeds)[0])


def test_onnx_scatter_opset10_is_scatter_elements():
    data, indices, updates = floats(3, 5), np.array([[4, -1], [0, 2], [1, 1]], np.int64), floats(3, 2)
    model = node_model("Scatter", {"data": data, "indices": indices, "updates": updates}, opset=10, axis=1)
    feeds = {"data": data, "indices": indices, "updates": updates}
    (got,) = compile_onnx(model, feeds)
    want = data.copy()
    for r in range(3):
        for c in range(2):
            want[r, indices[r, c] % 5] = updates[r, c]
    same(got, want)


def test_onnx_gather_nd_and_scatter_nd_models():
    data, idx = floats(2, 5, 3), np.array([[[1], [-1]], [[4], [0]]], np.int64)
    model = node_model("GatherND", {"data": data, "idx": idx}, opset=13, batch_dims=1)
    (got,) = compile_onnx(model, {"data": data, "idx": idx})
    same(got, run_reference(model, {"data": data, "idx": np.where(idx < 0, idx + 5, idx)})[0])
    updates = floats(2, 3)
    rows = np.array([[3], [0]], np.int64)
    model = node_model("ScatterND", {"data": floats(5, 3), "rows": rows, "updates": updates}, opset=18,
                       reduction="max")
    feeds = {"data": floats(5, 3), "rows": rows, "updates": updates}
    (got,) = compile_onnx(model, feeds)
    same(got, run_reference(model, feeds)[0])


# ------------------------------------------------------------------ no access outside a buffer


@pytest.mark.parametrize("op_cls,arrays,attrs", [
    (g.GatherNDOp, [floats(3, 5), np.array([[7, -9], [-1, 5], [2, 0]], np.int64)], {}),
    (g.ScatterNDOp, [floats(3, 5), np.array([[7, -9], [-1, 4]], np.int64), floats(2)], {"reduction": "add"}),
    (g.ScatterElementsOp, [floats(3, 5), np.array([[9], [-6], [-5]], np.int64), floats(3, 1)], {"axis": 1}),
    (g.TopKOp, [np.array([[2, 2, 1], [0, 5, 5]], np.float32)], {"k": 3}),
    (g.TopKOp, [np.array([[2, 2, 1], [0, 5, 5]], np.float32)], {"k": 1, "axis": 0, "largest": False}),
    (g.ReverseSequenceOp, [floats(3, 2), np.array([7, -3], np.int64)], {}),
], ids=["gather_nd", "scatter_nd", "scatter_elements", "top_k", "top_k_axis0", "reverse_sequence"])
def test_kernels_stay_inside_buffers(op_cls, arrays, attrs):
    """The loop-IR interpreter checks every load and store against its buffer's
    shape (out-of-range indices are clamped or skipped, never followed)."""
    from dlc.lowering.interp import LoopProgram
    from dlc.lowering.lower_to_loops import lower_module

    types = [tensor_type_of(a) for a in arrays]
    block = Block(arg_types=types)
    op = op_cls.make(*block.args, **attrs)
    block.add_op(op)
    block.add_op(func.ReturnOp(*op.results))
    module = ModuleOp([func.FuncOp("main", (types, [r.type for r in op.results]), Region(block))])
    want = op.reference(*arrays)
    lower_module(module)
    got = LoopProgram(module).run(arrays)
    for a, b in zip(got, want, strict=True):
        same(a, b)
