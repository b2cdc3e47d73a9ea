"""The quantized graph ops (dialects/graph/quantized.py): each op compiled to native code
equals its numpy reference exactly, on odd shapes (primes, ones, per-channel parameters,
broadcasting); the fixed-point helpers against TFLite's C arithmetic written out with
Python ints; and the ops' references against onnx's float forms within one step."""

from __future__ import annotations

import math

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, IntegerType, ModuleOp, Signedness, i8
from xdsl.ir import Block, Region

from dlc.dialects import graph as g
from dlc.dialects.graph import requant
from dlc.dialects.graph_base import tensor_type_of
from dlc.driver import compile

RNG = np.random.default_rng(18)
ui8 = IntegerType(8, Signedness.UNSIGNED)


def module_of(op_cls, arrays, attrs) -> ModuleOp:
    types = [tensor_type_of(np.asarray(a)) for a in arrays]
    block = Block(arg_types=types)
    op = op_cls.make(*block.args, **attrs)
    block.add_ops([op, func.ReturnOp(*op.results)])
    fn = func.FuncOp("main", FunctionType.from_lists(types, [r.type for r in op.results]), Region(block))
    return ModuleOp([fn]), op


def check(op_cls, arrays, **attrs):
    module, op = module_of(op_cls, arrays, attrs)
    want = op.reference(*arrays)[0]
    got = compile(module)(*arrays)[0]
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    return got


def u8(*shape):
    return RNG.integers(0, 256, shape).astype(np.uint8)


def s8(*shape):
    return RNG.integers(-128, 128, shape).astype(np.int8)


# -- the fixed point against TFLite's C code, with Python ints ---------------------------

def _c_single_rounding(x: int, m: int, shift: int) -> int:
    """TFLite's MultiplyByQuantizedMultiplier under TFLITE_SINGLE_ROUNDING, on Python ints."""
    total = 31 - shift
    result = (x * m + (1 << (total - 1))) >> total
    return min(max(result, -(1 << 31)), (1 << 31) - 1)


def test_fixed_point_matches_tflite_arithmetic():
    for real in (0.0001234, 0.25, 0.5, 0.999999, 0.0072, 1.0, 3.7):
        m, shift = requant.quantize_multiplier(real)
        assert (1 << 30) <= m < (1 << 31)
        assert math.isclose(m * 2.0 ** (shift - 31), real, rel_tol=1e-9)
        accs = RNG.integers(-(1 << 20), 1 << 20, 200).tolist() + [0, 1, -1, 3, -3, 1 << 24]
        got = requant.multiply_by_quantized_multiplier(np.array(accs), m, shift)
        for acc, y in zip(accs, got):
            assert y == _c_single_rounding(acc, m, shift), (real, acc)


def test_fixed_point_rounds_once():
    """A value just below a half rounds down (gemmlowp's double rounding gave -56 here:
    the first rounding makes it -55.5, the second rounds that away from zero)."""
    real = 0.0007875197226862168  # acc * real = -55.4997 (a BERT-style layer's)
    acc = -70474
    m, shift = requant.quantize_multiplier(real)
    exact = acc * real
    assert -55.5 < exact < -55.4996
    assert int(requant.multiply_by_quantized_multiplier(np.array([acc]), m, shift)[0]) == -55
    assert int(requant.rounding_divide_by_pot(requant.srdhm(acc, m), -shift)) == -56


def test_quantize_multiplier_rejects_bad_scales():
    with pytest.raises(ValueError, match="finite and >= 0"):
        requant.quantize_multiplier(float("nan"))
    assert requant.quantize_multiplier(0.0) == (0, 0)


# -- each op compiled == its reference ---------------------------------------------------

@pytest.mark.parametrize("shape", [(1,), (7,), (3, 1, 5), (2, 3, 11)])
def test_quantize_dequantize(shape):
    x = (RNG.standard_normal(shape) * 40).astype(np.float32)
    x.flat[0] = 2.5  # a tie: rounds to even
    check(g.QuantizeOp, [x], scale=[0.5], zero_point=[3], dtype=ui8)
    check(g.QuantizeOp, [x], scale=[0.7], zero_point=[-4], dtype=i8)
    check(g.QuantizeOp, [x], scale=[0.5], zero_point=[-4], dtype=i8, rounding="half_away")  # TFLite
    if len(shape) == 3:
        check(g.QuantizeOp, [x], scale=[0.5, 0.25, 1.5][:shape[1]] if shape[1] == 3 else [0.3],
              axis=1, dtype=i8)
        check(g.QuantizeOp, [x], scale=[0.1 * (i + 1) for i in range(shape[-1])], axis=-1, dtype=i8)
    q = u8(*shape)
    check(g.DequantizeOp, [q], scale=[0.02], zero_point=[128])
    check(g.DequantizeOp, [RNG.integers(-5000, 5000, shape).astype(np.int32)], scale=[0.001])
    if len(shape) == 3:
        check(g.DequantizeOp, [s8(*shape)], scale=[0.1 * (i + 1) for i in range(shape[-1])],
              zero_point=list(range(shape[-1])), axis=2)


@pytest.mark.parametrize("shape", [(5,), (3, 7), (2, 3, 1)])
def test_requantize(shape):
    acc = RNG.integers(-20000, 20000, shape).astype(np.int32)
    check(g.RequantizeOp, [acc], x_scale=[0.001], y_scale=[0.05], y_zero_point=[-3], dtype=i8)
    check(g.RequantizeOp, [u8(*shape)], x_scale=[0.02], x_zero_point=[100], y_scale=[0.03], y_zero_point=[5],
          out_min=10, out_max=200)
    if len(shape) == 2:
        check(g.RequantizeOp, [acc], x_scale=[0.001, 0.002, 0.0005], y_scale=[0.05], axis=0, dtype=i8)


@pytest.mark.parametrize("case", [
    dict(x=(1, 3, 7, 5), w=(5, 3, 3, 3), attrs=dict(padding=[1, 0, 1, 2])),
    dict(x=(2, 4, 5, 5), w=(4, 2, 1, 3), attrs=dict(strides=[2, 1], groups=2)),
    dict(x=(1, 3, 6, 7), w=(3, 1, 3, 3), attrs=dict(groups=3, padding=[1, 1, 1, 1], dilations=[2, 1])),
    dict(x=(1, 1, 1, 1), w=(3, 1, 1, 1), attrs={}),
])
@pytest.mark.parametrize("signed", [False, True])
def test_qconv2d(case, signed):
    x = s8(*case["x"]) if signed else u8(*case["x"])
    w = s8(*case["w"])
    o = case["w"][0]
    b = RNG.integers(-3000, 3000, o).astype(np.int32)
    per_channel = [float(v) for v in RNG.uniform(0.002, 0.02, o)]
    attrs = dict(case["attrs"], x_scale=[0.05], x_zero_point=[-3 if signed else 128], w_scale=per_channel,
                 y_scale=[0.15], y_zero_point=[2 if signed else 120])
    check(g.QConv2DOp, [x, w, b], **attrs)
    check(g.QConv2DOp, [x, w], **dict(attrs, w_scale=[0.01], out_min=attrs["y_zero_point"][0]))


@pytest.mark.parametrize("lead", [(1,), (3,), (2, 5)])
def test_qdense(lead):
    x, w = u8(*lead, 13), s8(3, 13)
    b = RNG.integers(-1000, 1000, 3).astype(np.int32)
    check(g.QDenseOp, [x, w, b], x_scale=[0.04], x_zero_point=[130], w_scale=[0.01, 0.02, 0.005],
          y_scale=[0.2], y_zero_point=[128])
    check(g.QDenseOp, [s8(*lead, 13), w], x_scale=[0.04], w_scale=[0.01], w_zero_point=[3], y_scale=[0.1],
          dtype=ui8, y_zero_point=[7])


@pytest.mark.parametrize("shapes", [((3, 5), (5, 2)), ((2, 3, 5), (5, 7)), ((2, 1, 3, 5), (3, 5, 1))])
def test_qmatmul(shapes):
    a, b = u8(*shapes[0]), u8(*shapes[1])
    check(g.QMatmulOp, [a, b], a_scale=[0.02], a_zero_point=[128], b_scale=[0.03], b_zero_point=[100],
          y_scale=[0.5], y_zero_point=[131])


@pytest.mark.parametrize("shapes", [((7,), (7,)), ((2, 1, 3), (4, 1)), ((3, 1), (1,))])
def test_qadd_qmul(shapes):
    a, b = s8(*shapes[0]), s8(*shapes[1])
    check(g.QAddOp, [a, b], a_scale=[0.1], a_zero_point=[2], b_scale=[0.3], y_scale=[0.25], y_zero_point=[-1])
    check(g.QAddOp, [a, b], a_scale=[0.05], b_scale=[0.05], b_zero_point=[-7], y_scale=[0.05], out_min=0)
    check(g.QMulOp, [a, b], a_scale=[0.1], b_scale=[0.3], y_scale=[0.5], y_zero_point=[4])


def test_qconcat():
    a, b, c = s8(2, 3, 1), s8(2, 5, 1), s8(2, 1, 1)
    check(g.QConcatOp, [a, b, c], axis=1, in_scale=[0.1, 0.2, 0.1], in_zero_point=[0, 5, 0], y_scale=[0.1])
    check(g.QConcatOp, [a, a], axis=-1, in_scale=[0.1, 0.1], in_zero_point=[3, 3], y_scale=[0.1],
          y_zero_point=[3])


@pytest.mark.parametrize("attrs", [
    dict(kernel=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1]),
    dict(kernel=[2, 3], padding=[1, 1, 0, 1], count_include_pad=True),
    dict(kernel=[5, 7]),  # a global pool
])
def test_qavg_pool2d(attrs):
    x = u8(1, 3, 5, 7)
    check(g.QAvgPool2DOp, [x], **attrs, x_scale=[0.1], x_zero_point=[7], y_scale=[0.1], y_zero_point=[7])
    check(g.QAvgPool2DOp, [x], **attrs, x_scale=[0.1], x_zero_point=[7], y_scale=[0.07], y_zero_point=[100])


def test_max_pool_takes_quantized_values():
    x = s8(1, 3, 5, 7)
    got = compile(module_of(g.MaxPool2DOp, [x], dict(kernel=[3, 3], padding=[1, 1, 1, 1]))[0])(x)[0]
    assert got.dtype == np.int8 and got.max() <= x.max()


def test_qconv2d_kernel_has_no_float():
    """The integer kernels compute without f32/f64 (requantization in fixed point)."""
    from dlc.driver import run_pass
    from dlc.lowering.kernels import generate

    x, w = u8(1, 3, 5, 5), s8(4, 3, 3, 3)
    for op_cls, arrays, attrs in [
        (g.QConv2DOp, [x, w], dict(x_scale=[0.05], w_scale=[0.01, 0.02, 0.03, 0.04], y_scale=[0.1])),
        (g.QDenseOp, [u8(2, 7), s8(3, 7)], dict(x_scale=[0.05], w_scale=[0.01], y_scale=[0.1])),
        (g.RequantizeOp, [u8(4)], dict(x_scale=[0.05], y_scale=[0.1])),
        (g.QAvgPool2DOp, [x], dict(kernel=[3, 3], x_scale=[0.05], y_scale=[0.1])),
    ]:
        _, op = module_of(op_cls, arrays, attrs)
        text = str(generate(op, "k", None))
        assert "f32" not in text and "f64" not in text, op.name


# -- a QDQ model from onnxruntime's quantize_static, compiled ------------------------------

def _float_model(path):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(a, n) for n, a in [
        ("w1", rng.normal(0, 0.3, (4, 3, 3, 3)).astype(np.float32)), ("b1", rng.normal(0, 0.1, 4).astype(np.float32)),
        ("w2", rng.normal(0, 0.3, (4, 4, 3, 3)).astype(np.float32)), ("b2", rng.normal(0, 0.1, 4).astype(np.float32)),
        ("wf", rng.normal(0, 0.3, (5, 4)).astype(np.float32)), ("bf", rng.normal(0, 0.1, 5).astype(np.float32))]]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], name="conv2"),
             helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
             helper.make_node("Add", ["r2", "r1"], ["s"], name="add"),
             helper.make_node("GlobalAveragePool", ["s"], ["p"], name="gap"),
             helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
             helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], transB=1, name="fc")]
    graph = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 7, 7])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


@pytest.mark.parametrize("activation,per_channel", [("QUInt8", True), ("QInt8", False)])
def test_quantize_static_qdq_model_matches_onnxruntime(tmp_path, activation, per_channel):
    ort = pytest.importorskip("onnxruntime")
    from onnxruntime import quantization as oq

    from dlc.bench.quant_accuracy import ort_u8s8_saturates  # 7-bit weights there: ort exact

    class Reader(oq.CalibrationDataReader):
        def __init__(self):
            rng = np.random.default_rng(1)
            self.data = iter([{"x": rng.normal(size=(1, 3, 7, 7)).astype(np.float32)} for _ in range(8)])

        def get_next(self):
            return next(self.data, None)

    _float_model(str(tmp_path / "f.onnx"))
    qpath = str(tmp_path / "q.onnx")
    oq.quantize_static(str(tmp_path / "f.onnx"), qpath, Reader(), quant_format=oq.QuantFormat.QDQ,
                       per_channel=per_channel, activation_type=getattr(oq.QuantType, activation),
                       weight_type=oq.QuantType.QInt8, reduce_range=ort_u8s8_saturates())
    compiled = compile(qpath)
    notes = "\n".join(compiled.qdq_report)
    # fold-qdq did its work: both convs and the gemm are integer ops
    assert "graph.conv2d 'conv1' -> graph.qconv2d" in notes, notes
    assert "graph.conv2d 'conv2' -> graph.qconv2d" in notes, notes
    assert "graph.matmul 'fc' -> graph.qdense" in notes, notes
    assert "stays float" not in notes, notes
    import onnx

    out_scale = float(next(onnx.numpy_helper.to_array(t) for t in onnx.load(qpath).graph.initializer
                           if t.name == "y_scale"))
    sess = ort.InferenceSession(qpath, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(5)
    diffs = []
    for _ in range(20):
        x = rng.normal(size=(1, 3, 7, 7)).astype(np.float32)
        diffs.append(np.abs(compiled(x)[0] - sess.run(None, {"x": x})[0]).ravel())
    steps = np.concatenate(diffs) / out_scale
    assert np.mean(steps <= 1.0 + 1e-3) >= 0.99, np.sort(steps)[-10:]


# -- TFLite int8 operators: DQ -> op -> Q at import, integer ops after fold-qdq ------------

def test_tflite_int8_conv_depthwise_add_fold_to_integer_ops():
    from test_tflite_frontend import RELU, RELU6, SAME, ModelBuilder, _options

    from dlc.evaluator import evaluate
    from dlc.frontends.tflite import import_tflite

    rng = np.random.default_rng(7)
    xs, ys, dws, ss = 0.05, 0.04, 0.03, 0.06
    w_scale = rng.uniform(0.005, 0.02, 4).astype(np.float32)
    d_scale = rng.uniform(0.01, 0.03, 4).astype(np.float32)
    m = ModelBuilder()
    x = m.tensor("x", [1, 5, 7, 3], np.int8, scale=[xs], zero_point=[-3])
    w = m.const("w", rng.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8), scale=w_scale,
                zero_point=np.zeros(4), axis=0)
    b = m.const("b", rng.integers(-800, 800, 4).astype(np.int32), scale=xs * w_scale, zero_point=np.zeros(4))
    y = m.tensor("y", [1, 5, 7, 4], np.int8, scale=[ys], zero_point=[-128])
    dw = m.const("dw", rng.integers(-127, 128, (1, 3, 3, 4)).astype(np.int8), scale=d_scale,
                 zero_point=np.zeros(4), axis=3)
    db = m.const("db", rng.integers(-300, 300, 4).astype(np.int32), scale=ys * d_scale, zero_point=np.zeros(4))
    d = m.tensor("d", [1, 3, 4, 4], np.int8, scale=[dws], zero_point=[-128])
    y2 = m.tensor("y2", [1, 3, 4, 4], np.int8, scale=[ys], zero_point=[-128])
    s = m.tensor("s", [1, 3, 4, 4], np.int8, scale=[ss], zero_point=[-20])
    m.op("CONV_2D", [x, w, b], [y], _options("Conv2DOptions", Padding=SAME, StrideH=1, StrideW=1,
                                             FusedActivationFunction=RELU, DilationHFactor=1, DilationWFactor=1))
    m.op("DEPTHWISE_CONV_2D", [y, dw, db], [d], _options(
        "DepthwiseConv2DOptions", Padding=SAME, StrideH=2, StrideW=2, DepthMultiplier=1,
        FusedActivationFunction=RELU6, DilationHFactor=1, DilationWFactor=1))
    m.op("MAX_POOL_2D", [y], [y2], _options("Pool2DOptions", Padding=SAME, StrideH=2, StrideW=2,
                                             FilterHeight=2, FilterWidth=2))
    m.op("ADD", [d, y2], [s], _options("AddOptions", FusedActivationFunction=RELU))
    m.inputs, m.outputs = [x], [s]
    data = m.build()

    compiled = compile(import_tflite(data))
    notes = "\n".join(compiled.qdq_report)
    for kind, new in (("graph.add", "graph.qadd"), ("graph.max_pool2d", "graph.max_pool2d")):
        assert any(kind in n and n.endswith(f"-> {new}") for n in compiled.qdq_report), notes
    assert sum(n.endswith("-> graph.qconv2d") for n in compiled.qdq_report) == 2, notes
    assert "stays float" not in notes, notes
    for _ in range(5):
        xq = rng.integers(-128, 128, (1, 5, 7, 3)).astype(np.int8)
        got = compiled(xq)[0]
        want = evaluate(import_tflite(data), [xq])[0]  # the float DQ/Q semantics
        assert got.dtype == np.int8
        assert np.abs(got.astype(np.int32) - want).max() <= 1
        assert (got == want).mean() >= 0.9


# -- fold-qdq on the other patterns: compiled (integer ops) vs the float DQ/Q evaluation ---

_PATTERNS = """
func.func @main(%a: tensor<2x3x5xf32>, %b: tensor<2x5x4xf32>, %c: tensor<2x3x4xf32>) -> (tensor<2x3x8xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>) {
  %qa = graph.quantize %a {scale = array<f32: 0.02>, zero_point = array<i64: 128>, dtype = ui8} : (tensor<2x3x5xf32>) -> tensor<2x3x5xui8>
  %da = graph.dequantize %qa {scale = array<f32: 0.02>, zero_point = array<i64: 128>} : (tensor<2x3x5xui8>) -> tensor<2x3x5xf32>
  %qb = graph.quantize %b {scale = array<f32: 0.03>, zero_point = array<i64: 120>, dtype = ui8} : (tensor<2x5x4xf32>) -> tensor<2x5x4xui8>
  %db = graph.dequantize %qb {scale = array<f32: 0.03>, zero_point = array<i64: 120>} : (tensor<2x5x4xui8>) -> tensor<2x5x4xf32>
  %m = graph.matmul %da, %db : (tensor<2x3x5xf32>, tensor<2x5x4xf32>) -> tensor<2x3x4xf32> loc("attention")
  %qm = graph.quantize %m {scale = array<f32: 0.01>, zero_point = array<i64: 128>, dtype = ui8} : (tensor<2x3x4xf32>) -> tensor<2x3x4xui8>
  %dm = graph.dequantize %qm {scale = array<f32: 0.01>, zero_point = array<i64: 128>} : (tensor<2x3x4xui8>) -> tensor<2x3x4xf32>
  %qc = graph.quantize %c {scale = array<f32: 0.015>, zero_point = array<i64: 100>, dtype = ui8} : (tensor<2x3x4xf32>) -> tensor<2x3x4xui8>
  %dc = graph.dequantize %qc {scale = array<f32: 0.015>, zero_point = array<i64: 100>} : (tensor<2x3x4xui8>) -> tensor<2x3x4xf32>
  %k = graph.concat %dm, %dc {axis = 2 : i64} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x8xf32> loc("concat")
  %qk = graph.quantize %k {scale = array<f32: 0.015>, zero_point = array<i64: 100>, dtype = ui8} : (tensor<2x3x8xf32>) -> tensor<2x3x8xui8>
  %dk = graph.dequantize %qk {scale = array<f32: 0.015>, zero_point = array<i64: 100>} : (tensor<2x3x8xui8>) -> tensor<2x3x8xf32>
  %mu = graph.mul %dm, %dc : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32> loc("mul")
  %qmu = graph.quantize %mu {scale = array<f32: 0.002>, zero_point = array<i64: 0>, dtype = ui8} : (tensor<2x3x4xf32>) -> tensor<2x3x4xui8>
  %dmu = graph.dequantize %qmu {scale = array<f32: 0.002>} : (tensor<2x3x4xui8>) -> tensor<2x3x4xf32>
  %s = graph.sub %dm, %dc : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32> loc("sub")
  %qs = graph.quantize %s {scale = array<f32: 0.02>, zero_point = array<i64: 128>, dtype = ui8} : (tensor<2x3x4xf32>) -> tensor<2x3x4xui8>
  %ds = graph.dequantize %qs {scale = array<f32: 0.02>, zero_point = array<i64: 128>} : (tensor<2x3x4xui8>) -> tensor<2x3x4xf32>
  func.return %dk, %dmu, %ds : tensor<2x3x8xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>
}
"""


def test_fold_qdq_matmul_concat_mul_and_a_float_op():

    from dlc.context import make_context
    from dlc.diagnostics import parse_module
    from dlc.evaluator import evaluate

    module = parse_module(make_context(), _PATTERNS, "patterns.mlir")
    inputs = [RNG.uniform(-2, 2, (2, 3, 5)).astype(np.float32), RNG.uniform(-2, 2, (2, 5, 4)).astype(np.float32),
              RNG.uniform(-1.4, 1.4, (2, 3, 4)).astype(np.float32)]
    want = evaluate(module, inputs)
    compiled = compile(parse_module(make_context(), _PATTERNS, "patterns.mlir"))
    notes = compiled.qdq_report
    assert "fold-qdq: graph.matmul 'attention' -> graph.qmatmul" in notes, notes
    assert "fold-qdq: graph.concat 'concat' -> graph.qconcat" in notes, notes
    assert "fold-qdq: graph.mul 'mul' -> graph.qmul" in notes, notes
    # sub has no quantized form: it stays float, and the note says so
    assert "fold-qdq: graph.sub 'sub' stays float: graph.sub has no quantized form" in notes, notes
    got = compiled(*inputs)
    for g_, w_, scale in zip(got, want, (0.015, 0.002, 0.02)):
        steps = np.abs(g_ - w_) / scale
        assert steps.max() <= 1.0 + 1e-3 and np.mean(steps < 0.5) >= 0.9
