"""graph.nonzero / graph.compress (results sized at run time): compiled kernels
against numpy on odd shapes, ONNX models against onnxruntime through dlc.compile
and an exported library loaded in a fresh process, and the runtime's extent ABI
(true-shaped views, hidden counts, checks)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from dlc.dialects import graph as g
from dlc.driver import CompileError
from dlc.driver import compile as dlc_compile
from dlc.frontends.onnx import import_model
from dlc.frontends.onnx.errors import OnnxImportError
from dlc.runtime import DlcRuntimeError
from one_op_util import RNG, run_compiled


def _prefix(buffer: np.ndarray, shape) -> np.ndarray:
    return buffer.reshape(-1)[:int(np.prod(shape))].reshape(shape)


def _sparse(shape, dtype, density=0.4) -> np.ndarray:
    x = RNG.standard_normal(shape).astype(dtype) if np.dtype(dtype).kind == "f" else \
        RNG.integers(-3, 4, size=shape).astype(dtype)
    return np.where(RNG.random(shape) < density, x, np.zeros((), dtype)).astype(dtype)


# ------------------------------------------------------------------ one op, compiled


@pytest.mark.parametrize("shape", [(), (1,), (7,), (3, 1, 5), (2, 3, 2, 2)])
@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.bool_, np.float64])
def test_nonzero_kernel_matches_numpy(shape, dtype):
    x = _sparse(shape, dtype) if dtype is not np.bool_ else RNG.random(shape) < 0.5
    (indices, count), _ = run_compiled(g.NonZeroOp, [x])
    want = np.array(np.nonzero(np.atleast_1d(x)), np.int64)
    assert int(count) == want.shape[1]
    np.testing.assert_array_equal(_prefix(indices, want.shape), want)
    assert not indices.reshape(-1)[want.size:].any()  # the rest of the bound stays zero


@pytest.mark.parametrize("fill", [0.0, 1.0, np.nan, -0.0])
def test_nonzero_of_uniform_inputs(fill):
    x = np.full((3, 5), fill, np.float32)
    (indices, count), _ = run_compiled(g.NonZeroOp, [x])
    want = np.array(np.nonzero(x), np.int64)  # NaN counts as nonzero, -0.0 as zero
    assert int(count) == want.shape[1]
    np.testing.assert_array_equal(_prefix(indices, want.shape), want)


@pytest.mark.parametrize("shape,axis,kept", [
    ((7,), 0, 7), ((7,), 0, 3), ((2, 5, 3), 1, 4), ((2, 5, 3), 0, 2), ((2, 5, 3), 2, 3),
    ((3, 1, 5), 1, 1), ((3, 4), None, 11), ((5,), None, 1),
])
@pytest.mark.parametrize("pattern", ["random", "none", "all"])
def test_compress_kernel_matches_numpy(shape, axis, kept, pattern):
    x = RNG.standard_normal(shape).astype(np.float32)
    condition = {"random": RNG.random(kept) < 0.5, "none": np.zeros(kept, bool),
                 "all": np.ones(kept, bool)}[pattern]
    (out, count), _ = run_compiled(g.CompressOp, [x, condition], axis=axis)
    data = x.reshape(-1) if axis is None else x
    along = 0 if axis is None else axis
    want = np.compress(condition, np.take(data, np.arange(kept), axis=along), axis=along)
    assert int(count) == want.shape[along] == int(condition.sum())
    np.testing.assert_array_equal(_prefix(out, want.shape), want)


def test_compress_integer_data():
    x = RNG.integers(-100, 100, size=(4, 3)).astype(np.int32)
    condition = np.array([False, True, False, True])
    (out, count), _ = run_compiled(g.CompressOp, [x, condition], axis=0)
    assert int(count) == 2
    np.testing.assert_array_equal(out[:2], x[[1, 3]])


# ------------------------------------------------------------------ ONNX models


def _model(nodes, inputs, outputs, inits=()) -> onnx.ModelProto:
    model = helper.make_model(helper.make_graph(nodes, "g", inputs, outputs, list(inits)),
                              opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def _vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def _two_outputs_model(shape=(3, 5)) -> onnx.ModelProto:
    """NonZero(relu(x)) and Compress(x, c, axis=1): both lengths depend on the data."""
    return _model(
        [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("NonZero", ["r"], ["where"]),
         helper.make_node("Compress", ["x", "c"], ["cols"], axis=1)],
        [_vi("x", TensorProto.FLOAT, list(shape)), _vi("c", TensorProto.BOOL, [shape[1]])],
        [_vi("where", TensorProto.INT64, [2, None]), _vi("cols", TensorProto.FLOAT, [shape[0], None])])


def _inputs(shape=(3, 5)):
    yield RNG.standard_normal(shape).astype(np.float32), RNG.random(shape[1]) < 0.5
    yield -np.abs(RNG.standard_normal(shape)).astype(np.float32), np.zeros(shape[1], bool)  # empty results
    yield np.abs(RNG.standard_normal(shape)).astype(np.float32) + 1, np.ones(shape[1], bool)  # full results


def test_onnx_model_matches_onnxruntime():
    model = _two_outputs_model()
    compiled = dlc_compile(model)
    session = ort.InferenceSession(model.SerializeToString())
    for x, c in _inputs():
        got = compiled(x, c)
        want = session.run(None, {"x": x, "c": c})
        assert len(got) == 2  # the counts are not returned
        for a, b in zip(got, want):
            assert a.shape == b.shape and a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)


def test_exported_library_returns_true_shapes_in_a_fresh_process(tmp_path):
    model = _two_outputs_model((4, 7))
    path = tmp_path / "m.so"
    dlc_compile(model, jit=False).export(str(path))
    cases = list(_inputs((4, 7)))
    np.savez(tmp_path / "in.npz", *[a for case in cases for a in case])
    script = f"""
import numpy as np, dlc.runtime
m = dlc.runtime.load({str(path)!r})
data = np.load({str(tmp_path / 'in.npz')!r})
arrays = [data[f"arr_{{k}}"] for k in range(len(data.files))]
outs = []
for k in range(0, len(arrays), 2):
    outs += m(arrays[k], arrays[k + 1])
np.savez({str(tmp_path / 'out.npz')!r}, *outs)
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = np.load(tmp_path / "out.npz")
    session = ort.InferenceSession(model.SerializeToString())
    want = [w for x, c in cases for w in session.run(None, {"x": x, "c": c})]
    assert len(got.files) == len(want)
    for k, w in enumerate(want):
        np.testing.assert_array_equal(got[f"arr_{k}"], w)
        assert got[f"arr_{k}"].shape == w.shape


def test_outputs_buffers_are_the_raw_ones_and_results_view_them():
    compiled = dlc_compile(_two_outputs_model())
    x, c = next(_inputs())
    raw = [np.empty(shape, dtype) for _, shape, dtype in compiled.output_specs]
    assert [name for name, _, _ in compiled.output_specs] == ["where", "cols", "where:extent", "cols:extent"]
    where, cols = compiled(x, c, outputs=raw)
    assert np.shares_memory(where, raw[0]) and np.shares_memory(cols, raw[1])
    assert where.shape == (2, int(raw[2])) and cols.shape == (3, int(raw[3]))


def test_a_count_outside_its_bound_is_an_error():
    point = dlc_compile(_two_outputs_model())._native.entries["main"]
    bounded = np.zeros((2, 15), np.int64)
    with pytest.raises(DlcRuntimeError, match=r"output 'where' reports 16 along dim 1, outside its bound 0\.\.15"):
        point._cut_to_extents([bounded, np.zeros((3, 5), np.float32), np.array(16), np.array(0)])


def test_bad_extent_metadata_is_refused():
    from dlc.runtime.native import EntryPoint

    specs = [("y", (2, 4), np.dtype(np.int64)), ("n", (), np.dtype(np.int64))]
    with pytest.raises(DlcRuntimeError, match=r"bad run-time extent \[0, 2, 1\]"):
        EntryPoint("main", 1, [], specs, extents=[[0, 2, 1]])


def test_constant_inputs_fold_to_static_shapes():
    keep = numpy_helper.from_array(np.array([True, False, True]), "keep")
    w = numpy_helper.from_array(np.array([[0, 2, 0], [1, 0, 0]], np.float32), "w")
    model = _model([helper.make_node("NonZero", ["w"], ["where"]),
                    helper.make_node("Compress", ["x", "keep"], ["y"], axis=0)],
                   [_vi("x", TensorProto.FLOAT, [3, 2])],
                   [_vi("where", TensorProto.INT64, None), _vi("y", TensorProto.FLOAT, None)], [keep, w])
    text = str(import_model(model))
    assert "graph.nonzero" not in text and "graph.compress" not in text and "dlc.extent_of" not in text
    x = RNG.standard_normal((3, 2)).astype(np.float32)
    where, y = dlc_compile(model)(x)
    np.testing.assert_array_equal(where, [[0, 1], [1, 0]])
    np.testing.assert_array_equal(y, x[[0, 2]])


def test_an_op_reading_a_bounded_value_is_refused_naming_both_nodes():
    model = _model([helper.make_node("NonZero", ["x"], ["where"], name="nz"),
                    helper.make_node("Shape", ["where"], ["s"], name="shape_of")],
                   [_vi("x", TensorProto.FLOAT, [3])], [_vi("s", TensorProto.INT64, None)])
    with pytest.raises(OnnxImportError, match=r"node 'shape_of' \(Shape, #1\): input 'where' has a "
                                              r"data-dependent dim 1 \(made by node 'nz' \(NonZero, #0\)\)"):
        import_model(model)


def test_compress_condition_longer_than_the_axis_is_an_import_error():
    model = _model([helper.make_node("Compress", ["x", "c"], ["y"], name="cut", axis=1)],
                   [_vi("x", TensorProto.FLOAT, [2, 3]), _vi("c", TensorProto.BOOL, [4])],
                   [_vi("y", TensorProto.FLOAT, None)])
    with pytest.raises(OnnxImportError, match=r"node 'cut' \(Compress, #0\): condition has 4 entries, more than "
                                              r"the 3 of axis 1 of input 'x'"):
        import_model(model)


@pytest.mark.parametrize("target", ["c", "cuda"])
def test_targets_without_extents_refuse_clearly(target):
    with pytest.raises(CompileError, match=r"@main result 0 has a data-dependent dim 1 .*use the llvm target"):
        dlc_compile(_two_outputs_model(), target=target, jit=False)


# ------------------------------------------------------------------ unique


def _numpy_unique(x, axis, sorted_):
    """ONNX Unique's four results from np.unique (first-occurrence order when not sorted)."""
    y, first, inverse, counts = np.unique(x.reshape(-1) if axis is None else x, True, True, True,
                                          axis=None if axis is None else axis)
    inverse = inverse.reshape(-1)
    if not sorted_:
        order = np.argsort(first)
        remap = np.empty_like(order)
        remap[order] = np.arange(len(order))
        y = np.take(x.reshape(-1) if axis is None else x, first[order], axis=0 if axis is None else axis)
        first, inverse, counts = first[order], remap[inverse], counts[order]
    return y, first.astype(np.int64), inverse.astype(np.int64), counts.astype(np.int64)


@pytest.mark.parametrize("shape,axis", [((1,), None), ((13,), None), ((3, 5), None), ((7, 2), 0),
                                        ((2, 7), 1), ((3, 4, 2), 1), ((1, 1), 0)])
@pytest.mark.parametrize("sorted_", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_unique_kernel_matches_numpy(shape, axis, sorted_, dtype):
    x = RNG.integers(0, 3, size=shape).astype(dtype)  # few distinct values: repeats everywhere
    (y, first, inverse, counts, n), _ = run_compiled(g.UniqueOp, [x], axis=axis, sorted=sorted_)
    want = _numpy_unique(x, axis, sorted_)
    k = int(n)
    along = 0 if axis is None else axis
    assert k == want[0].shape[along]
    y_shape = list(want[0].shape)
    np.testing.assert_array_equal(_prefix(y, y_shape), want[0])
    np.testing.assert_array_equal(first[:k], want[1])
    np.testing.assert_array_equal(inverse, want[2])
    np.testing.assert_array_equal(counts[:k], want[3])


def test_unique_nan_is_one_value_after_every_number():
    x = np.array([np.nan, 2.0, np.nan, -1.0, 2.0], np.float32)
    (y, first, inverse, counts, n), _ = run_compiled(g.UniqueOp, [x])
    assert int(n) == 3
    np.testing.assert_array_equal(y[:3], [-1.0, 2.0, np.nan])
    np.testing.assert_array_equal(first[:3], [3, 1, 0])
    np.testing.assert_array_equal(inverse, [2, 1, 2, 0, 1])
    np.testing.assert_array_equal(counts[:3], [1, 2, 2])


# ------------------------------------------------------------------ non_max_suppression


def _nms_model(center=0, with_threshold=True):
    inputs = [_vi("boxes", TensorProto.FLOAT, None), _vi("scores", TensorProto.FLOAT, None),
              _vi("max", TensorProto.INT64, [1]), _vi("iou", TensorProto.FLOAT, [1])]
    names = ["boxes", "scores", "max", "iou"] + (["thr"] if with_threshold else [])
    if with_threshold:
        inputs.append(_vi("thr", TensorProto.FLOAT, [1]))
    return names, inputs, helper.make_node("NonMaxSuppression", names, ["selected"], center_point_box=center)


def _random_boxes(batches, n, center):
    lo = RNG.uniform(0, 10, size=(batches, n, 2)).astype(np.float32)
    size = RNG.uniform(0.5, 4, size=(batches, n, 2)).astype(np.float32)
    if center:
        return np.concatenate([lo + size / 2, size], axis=2)
    corners = np.concatenate([lo, lo + size], axis=2)[:, :, [1, 0, 3, 2]]  # [y1, x1, y2, x2]
    flip = RNG.random((batches, n)) < 0.3  # corners in either order
    corners[flip] = corners[flip][:, [2, 3, 0, 1]]
    return corners


@pytest.mark.parametrize("batches,classes,n", [(1, 1, 1), (2, 3, 7), (1, 2, 31)])
@pytest.mark.parametrize("center", [0, 1])
@pytest.mark.parametrize("with_threshold", [True, False])
def test_nms_model_matches_onnxruntime(batches, classes, n, center, with_threshold):
    names, inputs, node = _nms_model(center, with_threshold)
    boxes = _random_boxes(batches, n, center)
    inputs[0] = _vi("boxes", TensorProto.FLOAT, list(boxes.shape))
    inputs[1] = _vi("scores", TensorProto.FLOAT, [batches, classes, n])
    model = _model([node], inputs, [_vi("selected", TensorProto.INT64, [None, 3])])
    compiled = dlc_compile(model)
    session = ort.InferenceSession(model.SerializeToString())
    for max_out, iou, thr in ((3, 0.3, 0.2), (0, 0.5, 0.0), (100, 0.0, 0.9), (-1, 0.5, 0.0), (5, 1.0, -1.0)):
        scores = RNG.random((batches, classes, n)).astype(np.float32)
        scores[..., :2] = 0.5  # ties: the lower box index first
        feed = {"boxes": boxes, "scores": scores, "max": np.array([max_out], np.int64),
                "iou": np.array([iou], np.float32), "thr": np.array([thr], np.float32)}
        feed = {k: v for k, v in feed.items() if k in names}
        (got,) = compiled(*feed.values())
        (want,) = session.run(None, feed)
        np.testing.assert_array_equal(got, want)


def test_nms_with_a_constant_max_output_is_bounded_by_it():
    names, inputs, node = _nms_model()
    max_out = numpy_helper.from_array(np.array([2], np.int64), "max")
    inputs = [_vi("boxes", TensorProto.FLOAT, [1, 9, 4]), _vi("scores", TensorProto.FLOAT, [1, 3, 9]),
              inputs[3], inputs[4]]
    model = _model([node], inputs, [_vi("selected", TensorProto.INT64, None)], [max_out])
    assert "-> (tensor<6x3xi64>" in str(import_model(model))  # 1 batch x 3 classes x 2
    boxes, scores = _random_boxes(1, 9, 0), RNG.random((1, 3, 9)).astype(np.float32)
    feed = {"boxes": boxes, "scores": scores, "iou": np.array([0.4], np.float32),
            "thr": np.array([0.1], np.float32)}
    (got,) = dlc_compile(model)(*feed.values())
    (want,) = ort.InferenceSession(model.SerializeToString()).run(None, feed)
    np.testing.assert_array_equal(got, want)
