"""dlc.quantize (quantization/): the QDQ model it writes, its calibration, its errors, and
the accuracy bars of issue 18 on small models (bench/quant_accuracy.py runs the big ones)."""

from __future__ import annotations

import os

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import dlc
from dlc.diagnostics import DiagnosticError
from dlc.quantization import QuantizationError, quantize
from dlc.quantization.calibrate import collect_ranges
from dlc.quantization.qdq_writer import plan_qdq

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SMALL_CNN = os.path.join(ROOT, "examples", "small_cnn.onnx")


def _init(rng, name, *shape, scale=0.3):
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def two_conv_model() -> onnx.ModelProto:
    """conv -> relu -> maxpool -> conv -> add(maxpool) -> relu -> concat(maxpool) -> gap -> gemm."""
    rng = np.random.default_rng(0)
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], name="conv2"),
        helper.make_node("Add", ["c2", "p1"], ["a"]),
        helper.make_node("Relu", ["a"], ["r2"]),
        helper.make_node("Concat", ["r2", "p1"], ["cat"], axis=1),
        helper.make_node("GlobalAveragePool", ["cat"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], transB=1),
    ]
    inits = [_init(rng, "w1", 8, 3, 3, 3), _init(rng, "b1", 8, scale=0.1), _init(rng, "w2", 8, 8, 3, 3, scale=0.15),
             _init(rng, "b2", 8, scale=0.1), _init(rng, "wf", 10, 16), _init(rng, "bf", 10, scale=0.1)]
    graph = helper.make_graph(nodes, "two_conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def samples(count=16, seed=1, shape=(1, 3, 16, 16)) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((count, *shape)).astype(np.float32)


@pytest.fixture(scope="module")
def quantized() -> onnx.ModelProto:
    return quantize(two_conv_model(), {"x": samples()})


def session(model: onnx.ModelProto):
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def _inits(model):
    return {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}


def _producer(model, name):
    return next(n for n in model.graph.node if name in n.output)


def test_qdq_structure(quantized):
    inits = _inits(quantized)
    ops = [n.op_type for n in quantized.graph.node]
    assert "Relu" not in ops  # both folded into the range of their producer's output
    # per-channel int8 weights: scale per output channel, axis 0 for Conv and Gemm (transB=1)
    for weight, channels in (("w1", 8), ("w2", 8), ("wf", 10)):
        assert inits[f"{weight}_quantized"].dtype == np.int8
        assert inits[f"{weight}_scale"].shape == (channels,)
        assert np.all(np.abs(inits[f"{weight}_quantized"]) <= 127)
        dq = _producer(quantized, f"{weight}_DequantizeLinear_Output")
        assert dq.op_type == "DequantizeLinear" and helper.get_attribute_value(dq.attribute[0]) == 0
    assert "w1" not in inits and "b1" not in inits  # the float copies are gone
    # bias: int32 with scale x_scale * w_scale
    assert inits["b1_quantized"].dtype == np.int32
    np.testing.assert_allclose(inits["b1_quantized_scale"], inits["x_scale"] * inits["w1_scale"], rtol=1e-6)
    # activations: uint8, the folded Relu's output range starts at 0 (zero point 0)
    assert inits["r1_zero_point"].dtype == np.uint8 and inits["r1_zero_point"] == 0
    # MaxPool reuses its input's scale and zero point (as onnxruntime does)
    q = _producer(quantized, "p1_QuantizeLinear_Output")
    assert list(q.input[1:]) == ["r1_scale", "r1_zero_point"]
    # the graph output keeps its name, written by a DequantizeLinear
    assert _producer(quantized, "y").op_type == "DequantizeLinear"
    conv1 = next(n for n in quantized.graph.node if n.name == "conv1")
    assert list(conv1.input) == ["x_DequantizeLinear_Output", "w1_DequantizeLinear_Output",
                                 "b1_DequantizeLinear_Output"]
    onnx.checker.check_model(quantized)


def test_onnxruntime_runs_it_close_to_float(quantized):
    q, f = session(quantized), session(two_conv_model())
    for x in samples(8, seed=5):
        got, want = q.run(None, {"x": x})[0], f.run(None, {"x": x})[0]
        assert np.abs(got - want).max() <= 0.05 * np.abs(want).max() + 0.02


def _step(model) -> float:
    return float(_inits(model)[_producer(model, model.graph.output[0].name).input[1]])


def test_dlc_matches_onnxruntime_within_one_step():
    from dlc.bench.quant_accuracy import ort_u8s8_saturates

    # 7-bit weights where this host's onnxruntime saturates its u8 x s8 pair sums (x86
    # without VNNI): only then is onnxruntime's int8 result exact, as dlc's always is
    quantized = quantize(two_conv_model(), {"x": samples()}, reduce_range=ort_u8s8_saturates())
    compiled = dlc.compile(quantized)
    q = session(quantized)
    step = _step(quantized)
    for x in samples(8, seed=6):
        diff = np.abs(compiled(x)[0] - q.run(None, {"x": x})[0])
        assert diff.max() <= step * 1.0001, (diff.max(), step)


def test_int8_activations_and_per_tensor_weights():
    model = quantize(two_conv_model(), {"x": samples(4)}, activation_type="int8", per_channel=False)
    inits = _inits(model)
    assert inits["x_zero_point"].dtype == np.int8 and inits["r1_zero_point"] == -128
    assert inits["w1_scale"].shape == () and inits["b1_quantized_scale"].shape == ()
    assert session(model).run(None, {"x": samples(1)[0]})[0].shape == (1, 10)


def test_op_types_limit_what_is_quantized():
    model = quantize(two_conv_model(), {"x": samples(4)}, op_types=("Conv",))
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("Relu") == 2  # not folded: Relu is not in op_types
    assert "wf_quantized" not in _inits(model) and "w1_quantized" in _inits(model)


def test_percentile_cuts_outliers():
    plan = plan_qdq(two_conv_model())
    feeds = [{"x": x} for x in samples(16)]
    feeds[3]["x"] = feeds[3]["x"].copy()
    feeds[3]["x"][0, 0, 0, 0] = 100.0  # one outlier among 16 * 768 values
    minmax = collect_ranges(plan.source, plan.calibrate, feeds, "minmax")
    pct = collect_ranges(plan.source, plan.calibrate, feeds, "percentile", 99.9)
    assert minmax["x"][1] == 100.0
    assert pct["x"][1] < 10.0 and pct["x"][0] <= -2.0
    assert set(pct) == set(plan.calibrate)


def test_calibration_ranges_come_from_the_float_model():
    # the ranges of the folded Relu outputs are >= 0: measured on the model before folding
    plan = plan_qdq(two_conv_model())
    ranges = collect_ranges(plan.source, plan.calibrate, [{"x": x} for x in samples(4)])
    assert plan.folded == ["r1", "r2"]
    assert ranges["r1"][0] == 0.0 and ranges["r2"][0] == 0.0 and ranges["x"][0] < 0


def test_output_is_written_atomically(tmp_path):
    out = tmp_path / "q.onnx"
    quantize(two_conv_model(), {"x": samples(2)}, output=str(out))
    assert onnx.load(str(out)).graph.output[0].name == "y"
    before = out.read_bytes()
    with pytest.raises(QuantizationError):
        quantize(two_conv_model(), {"z": samples(2)}, output=str(out))
    assert out.read_bytes() == before
    with pytest.raises(DiagnosticError, match="cannot write"):
        quantize(two_conv_model(), {"x": samples(2)}, output=str(tmp_path / "missing" / "q.onnx"))


@pytest.mark.parametrize("calibration, message", [
    ({"z": samples(2)}, "calibration data: array 'z' names no model input \\(inputs: x\\)"),
    ({}, "calibration data: no array for model input 'x' \\(arrays: none\\)"),
    ({"x": samples(2, shape=(1, 3, 16, 15))}, "array 'x' has shape \\(2, 1, 3, 16, 15\\): dim 3 of input 'x' is 15, "
                                             "the model expects 16"),
    ({"x": np.zeros((2, 3, 16), np.float32)}, "array 'x' has shape \\(2, 3, 16\\): rank 3, model input 'x' has rank 4"),
    ({"x": samples(1, shape=(3, 16, 16))[0]}, "array 'x' has shape \\(3, 16, 16\\): rank 3, model input 'x' has rank 4"),
    ({"x": np.zeros((2, 3, 16, 16), np.float32)}, "has shape \\(2, 3, 16, 16\\): dim 0 of input 'x' is 2, the model expects 1"),
    ({"x": samples(0)}, "no calibration samples"),
    ([], "no calibration samples"),
    ({"x": samples(2).astype(np.int32)}, "array 'x' is int32, model input 'x' is float32"),
    (42, "calibration: expected a .npz path"),
])
def test_calibration_errors(calibration, message):
    with pytest.raises(QuantizationError, match=message) as info:
        quantize(two_conv_model(), calibration)
    assert "\n" not in str(info.value)


def test_model_and_option_errors(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_text("junk")
    with pytest.raises(QuantizationError, match="cannot load model '.*bad.onnx'"):
        quantize(str(bad), {"x": samples(1)})
    with pytest.raises(QuantizationError, match="cannot open model"):
        quantize(str(tmp_path / "none.onnx"), {"x": samples(1)})
    with pytest.raises(QuantizationError, match="method: expected one of minmax, percentile"):
        quantize(two_conv_model(), {"x": samples(1)}, method="entropy")
    with pytest.raises(QuantizationError, match="activation_type"):
        quantize(two_conv_model(), {"x": samples(1)}, activation_type="int4")
    with pytest.raises(QuantizationError, match="op_types: cannot quantize Softmax"):
        quantize(two_conv_model(), {"x": samples(1)}, op_types=("Softmax",))


def test_dlc_quantize_is_lazy_attribute():
    assert dlc.quantize is quantize


def test_small_cnn_meets_the_issue_bars():
    """issue 18's bars on a small model (the script runs ResNet-50, MobileNet, BERT): on 100
    random inputs, dlc on onnxruntime's quantize_static model is within one step of onnxruntime
    on >= 99 % of elements with top-1 >= 99/100; dlc's own quantizer agrees with f32 on top-1."""
    from dlc.bench.quant_accuracy import measure, small_cnn

    row = measure("small_cnn", small_cnn(), inputs=100, calibration=16, log=lambda _: None)
    ort_qdq, own = row["ort_qdq"], row["own_vs_f32"]
    assert ort_qdq.step is not None and ort_qdq.passes(), ort_qdq
    assert own.top1 >= 95, own  # measured 100/100; a few near-ties may flip


def test_tiny_bert_meets_the_issue_bars():
    """The same bars on a one-layer BERT-style encoder (attention: int8 matmuls of two
    activations, a softmax between DQ and Q, layer norms): before single-rounding
    requantization and QLinearSoftmax's output scale in fold-qdq, the 2-layer script model
    was at 88 % within one step; attention amplifies any one-step difference."""
    pytest.importorskip("torch")
    from dlc.bench.quant_accuracy import measure, tiny_bert

    row = measure("tiny_bert", tiny_bert(), inputs=20, calibration=8, log=lambda _: None)
    ort_qdq, own = row["ort_qdq"], row["own_vs_f32"]
    assert ort_qdq.step is not None and ort_qdq.within_step >= 99.0, ort_qdq
    assert ort_qdq.top1 >= 19, ort_qdq
    assert own.top1 >= 15, own


def test_reduce_range_writes_7_bit_weights():
    """``reduce_range`` (onnxruntime's option of that name): symmetric int8 weights in
    [-63, 63], each tensor's largest magnitude at 63; 8-bit weights reach 127."""
    full = _inits(quantize(two_conv_model(), {"x": samples(4)}))
    reduced = _inits(quantize(two_conv_model(), {"x": samples(4)}, reduce_range=True))
    for name in ("w1_quantized", "w2_quantized", "wf_quantized"):
        assert np.abs(full[name].astype(np.int64)).max() == 127
        assert np.abs(reduced[name].astype(np.int64)).max() == 63, name
