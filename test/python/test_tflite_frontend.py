"""TFLite frontend: models built as flatbuffers here (no TensorFlow needed),
compiled to native code with dlc.compile and checked against numpy."""

from __future__ import annotations

import numpy as np
import pytest

tflite = pytest.importorskip("tflite", reason="the tflite schema package is not installed (pip install tflite)")
flatbuffers = pytest.importorskip("flatbuffers")

import dlc  # noqa: E402
from dlc.driver import CompileError  # noqa: E402
from dlc.frontends.tflite import TfliteImportError, import_tflite  # noqa: E402

SAME, VALID = 0, 1
NONE, RELU, RELU6 = 0, 1, 3
_TYPES = {np.dtype(np.float32): 0, np.dtype(np.int32): 2, np.dtype(np.uint8): 3, np.dtype(np.int64): 4,
          np.dtype(np.int8): 9}
_OPCODES = {name: code for code, name in tflite.BUILTIN_OPCODE2NAME.items()}


# ---------------------------------------------------------------------------
# a minimal .tflite writer
# ---------------------------------------------------------------------------


class ModelBuilder:
    """Tensors, operators and the subgraph signature -> .tflite bytes."""

    def __init__(self):
        self.tensors = []
        self.operators = []
        self.inputs: list[int] = []
        self.outputs: list[int] = []

    def tensor(self, name, shape, dtype=np.float32, data=None, scale=None, zero_point=None, axis=0) -> int:
        if data is not None:
            data = np.ascontiguousarray(np.asarray(data, dtype=dtype).reshape(shape))
        self.tensors.append((name, list(shape), np.dtype(dtype), data, scale, zero_point, axis))
        return len(self.tensors) - 1

    def const(self, name, array, dtype=None, **quant) -> int:
        array = np.asarray(array, dtype=dtype)
        if array.dtype == np.float64:
            array = array.astype(np.float32)  # TFLite models hold float32
        return self.tensor(name, array.shape, array.dtype, array, **quant)

    def op(self, name, inputs, outputs, options=None) -> None:
        self.operators.append((name, list(inputs), list(outputs), options))

    def build(self) -> bytes:
        b = flatbuffers.Builder(1024)

        def vector(start, items):
            start(b, len(items))
            for item in reversed(items):
                b.PrependUOffsetTRelative(item)
            return b.EndVector()

        buffers = [_table(b, tflite.BufferStart, tflite.BufferEnd)]
        tensor_offsets = []
        for name, shape, dtype, data, scale, zero_point, axis in self.tensors:
            buffer_index = 0
            if data is not None:
                raw = b.CreateNumpyVector(np.frombuffer(data.tobytes(), np.uint8))
                buffers.append(_table(b, tflite.BufferStart, tflite.BufferEnd, (tflite.BufferAddData, raw)))
                buffer_index = len(buffers) - 1
            quant = None
            if scale is not None:
                sv = b.CreateNumpyVector(np.asarray(scale, np.float32).reshape(-1))
                zv = b.CreateNumpyVector(np.asarray(zero_point, np.int64).reshape(-1))
                quant = _table(b, tflite.QuantizationParametersStart, tflite.QuantizationParametersEnd,
                               (tflite.QuantizationParametersAddScale, sv),
                               (tflite.QuantizationParametersAddZeroPoint, zv),
                               (tflite.QuantizationParametersAddQuantizedDimension, axis))
            name_off = b.CreateString(name)
            shape_off = b.CreateNumpyVector(np.asarray(shape, np.int32))
            fields = [(tflite.TensorAddShape, shape_off), (tflite.TensorAddType, _TYPES[dtype]),
                      (tflite.TensorAddBuffer, buffer_index), (tflite.TensorAddName, name_off)]
            if quant is not None:
                fields.append((tflite.TensorAddQuantization, quant))
            tensor_offsets.append(_table(b, tflite.TensorStart, tflite.TensorEnd, *fields))

        names = list(dict.fromkeys(name for name, *_ in self.operators))
        codes = [_table(b, tflite.OperatorCodeStart, tflite.OperatorCodeEnd,
                        (tflite.OperatorCodeAddBuiltinCode, _OPCODES[n]),
                        (tflite.OperatorCodeAddDeprecatedBuiltinCode, min(_OPCODES[n], 127)),
                        (tflite.OperatorCodeAddVersion, 1)) for n in names]
        op_offsets = []
        for name, ins, outs, options in self.operators:
            iv = b.CreateNumpyVector(np.asarray(ins, np.int32))
            ov = b.CreateNumpyVector(np.asarray(outs, np.int32))
            fields = [(tflite.OperatorAddOpcodeIndex, names.index(name)), (tflite.OperatorAddInputs, iv),
                      (tflite.OperatorAddOutputs, ov)]
            if options is not None:
                kind, build = options
                fields += [(tflite.OperatorAddBuiltinOptionsType, kind),
                           (tflite.OperatorAddBuiltinOptions, build(b))]
            op_offsets.append(_table(b, tflite.OperatorStart, tflite.OperatorEnd, *fields))

        tensors_v = vector(tflite.SubGraphStartTensorsVector, tensor_offsets)
        ops_v = vector(tflite.SubGraphStartOperatorsVector, op_offsets)
        in_v = b.CreateNumpyVector(np.asarray(self.inputs, np.int32))
        out_v = b.CreateNumpyVector(np.asarray(self.outputs, np.int32))
        subgraph = _table(b, tflite.SubGraphStart, tflite.SubGraphEnd, (tflite.SubGraphAddTensors, tensors_v),
                          (tflite.SubGraphAddOperators, ops_v), (tflite.SubGraphAddInputs, in_v),
                          (tflite.SubGraphAddOutputs, out_v))
        subgraphs_v = vector(tflite.ModelStartSubgraphsVector, [subgraph])
        codes_v = vector(tflite.ModelStartOperatorCodesVector, codes)
        buffers_v = vector(tflite.ModelStartBuffersVector, buffers)
        model = _table(b, tflite.ModelStart, tflite.ModelEnd, (tflite.ModelAddVersion, 3),
                       (tflite.ModelAddOperatorCodes, codes_v), (tflite.ModelAddSubgraphs, subgraphs_v),
                       (tflite.ModelAddBuffers, buffers_v))
        b.Finish(model, file_identifier=b"TFL3")
        return bytes(b.Output())


def _table(b, start, end, *fields):
    start(b)
    for add, value in fields:
        add(b, value)
    return end(b)


def _options(kind: str, **fields):
    """(BuiltinOptions type, builder) for tflite.<kind> with Add<Field> values."""

    def build(b):
        return _table(b, getattr(tflite, f"{kind}Start"), getattr(tflite, f"{kind}End"),
                      *[(getattr(tflite, f"{kind}Add{k}"), v) for k, v in fields.items()])

    return getattr(tflite.BuiltinOptions, kind), build


# ---------------------------------------------------------------------------
# numpy references (NHWC, TensorFlow padding rules)
# ---------------------------------------------------------------------------


def _same(size, k, stride, dilation=1):
    out = -(-size // stride)
    total = max((out - 1) * stride + dilation * (k - 1) + 1 - size, 0)
    return total // 2, total - total // 2


def ref_conv(x, w_hwio, stride, padding, dilation=(1, 1), groups=1):
    kh, kw, cin_g, cout = w_hwio.shape
    if padding == SAME:
        (pt, pb), (pl, pr) = _same(x.shape[1], kh, stride[0], dilation[0]), _same(x.shape[2], kw, stride[1], dilation[1])
    else:
        pt = pb = pl = pr = 0
    xp = np.pad(x.astype(np.float64), ((0, 0), (pt, pb), (pl, pr), (0, 0)))
    oh = (xp.shape[1] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (xp.shape[2] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((x.shape[0], oh, ow, cout))
    per_group = cout // groups
    for o in range(cout):
        grp = o // per_group
        for i in range(kh):
            for j in range(kw):
                patch = xp[:, i * dilation[0]: i * dilation[0] + stride[0] * (oh - 1) + 1: stride[0],
                           j * dilation[1]: j * dilation[1] + stride[1] * (ow - 1) + 1: stride[1],
                           grp * cin_g:(grp + 1) * cin_g]
                out[..., o] += patch @ w_hwio[i, j, :, o]
    return out


def ref_pool(x, k, stride, padding, mode):
    if padding == SAME:
        (pt, pb), (pl, pr) = _same(x.shape[1], k[0], stride[0]), _same(x.shape[2], k[1], stride[1])
    else:
        pt = pb = pl = pr = 0
    oh = (x.shape[1] + pt + pb - k[0]) // stride[0] + 1
    ow = (x.shape[2] + pl + pr - k[1]) // stride[1] + 1
    out = np.zeros((x.shape[0], oh, ow, x.shape[3]))
    for a in range(oh):
        for c in range(ow):
            h0, w0 = a * stride[0] - pt, c * stride[1] - pl
            win = x[:, max(h0, 0):h0 + k[0], max(w0, 0):w0 + k[1], :]
            out[:, a, c] = win.max(axis=(1, 2)) if mode == "max" else win.mean(axis=(1, 2))
    return out


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def compile_and_run(data: bytes, tmp_path, *inputs):
    path = tmp_path / "model.tflite"
    path.write_bytes(data)
    return dlc.compile(str(path))(*inputs)


# ---------------------------------------------------------------------------
# models
# ---------------------------------------------------------------------------


def test_conv_pool_fully_connected(tmp_path):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((5, 3, 3, 3)).astype(np.float32)  # OHWI
    bias = rng.standard_normal(5).astype(np.float32)
    fc_w = rng.standard_normal((7, 3 * 2 * 5)).astype(np.float32) * 0.3
    fc_b = rng.standard_normal(7).astype(np.float32)

    m = ModelBuilder()
    x = m.tensor("image", [1, 11, 9, 3])
    wt, bt = m.const("conv/w", w), m.const("conv/b", bias)
    c = m.tensor("conv", [1, 6, 5, 5])
    p = m.tensor("pool", [1, 3, 2, 5])
    r = m.tensor("flat", [1, 30])
    shape = m.const("shape", [1, 30], np.int32)
    fw, fb = m.const("fc/w", fc_w), m.const("fc/b", fc_b)
    f = m.tensor("fc", [1, 7])
    s = m.tensor("probs", [1, 7])
    m.op("CONV_2D", [x, wt, bt], [c], _options("Conv2DOptions", Padding=SAME, StrideH=2, StrideW=2,
                                                FusedActivationFunction=RELU, DilationHFactor=1,
                                                DilationWFactor=1))
    m.op("MAX_POOL_2D", [c], [p], _options("Pool2DOptions", Padding=VALID, StrideH=2, StrideW=2,
                                           FilterHeight=2, FilterWidth=2))
    m.op("RESHAPE", [p, shape], [r])
    m.op("FULLY_CONNECTED", [r, fw, fb], [f], _options("FullyConnectedOptions", FusedActivationFunction=RELU6))
    m.op("SOFTMAX", [f], [s], _options("SoftmaxOptions", Beta=1.0))
    m.inputs, m.outputs = [x], [s, c]

    image = rng.standard_normal((1, 11, 9, 3)).astype(np.float32)
    conv = np.maximum(ref_conv(image, w.transpose(1, 2, 3, 0), (2, 2), SAME) + bias, 0)
    pooled = ref_pool(conv, (2, 2), (2, 2), VALID, "max")
    fc = np.clip(pooled.reshape(1, 30) @ fc_w.T + fc_b, 0, 6)
    probs, conv_out = compile_and_run(m.build(), tmp_path, image)
    np.testing.assert_allclose(conv_out, conv, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(probs, softmax(fc), rtol=1e-4, atol=1e-5)


def test_depthwise_model(tmp_path):
    rng = np.random.default_rng(1)
    c_in, mult = 3, 2
    w = rng.standard_normal((1, 3, 3, c_in * mult)).astype(np.float32)
    bias = rng.standard_normal(c_in * mult).astype(np.float32)
    offset = rng.standard_normal((1, 1, 1, c_in * mult)).astype(np.float32)

    m = ModelBuilder()
    x = m.tensor("x", [2, 7, 5, c_in])
    wt, bt, ot = m.const("dw/w", w), m.const("dw/b", bias), m.const("offset", offset)
    d = m.tensor("dw", [2, 7, 5, 6])
    p = m.tensor("avg", [2, 4, 3, 6])
    axes = m.const("axes", [1, 2], np.int32)
    mean = m.tensor("mean", [2, 1, 1, 6])
    added = m.tensor("added", [2, 1, 1, 6])
    out = m.tensor("out", [2, 1, 1, 6])
    m.op("DEPTHWISE_CONV_2D", [x, wt, bt], [d], _options(
        "DepthwiseConv2DOptions", Padding=SAME, StrideH=1, StrideW=1, DepthMultiplier=mult,
        FusedActivationFunction=RELU6, DilationHFactor=1, DilationWFactor=1))
    m.op("AVERAGE_POOL_2D", [d], [p], _options("Pool2DOptions", Padding=SAME, StrideH=2, StrideW=2,
                                               FilterHeight=3, FilterWidth=3))
    m.op("MEAN", [p, axes], [mean], _options("ReducerOptions", KeepDims=True))
    m.op("ADD", [mean, ot], [added], _options("AddOptions", FusedActivationFunction=NONE))
    m.op("LOGISTIC", [added], [out])
    m.inputs, m.outputs = [x], [out, p]

    xs = rng.standard_normal((2, 7, 5, c_in)).astype(np.float32)
    dw = np.clip(ref_conv(xs, w.transpose(1, 2, 0, 3), (1, 1), SAME, groups=c_in) + bias, 0, 6)
    avg = ref_pool(dw, (3, 3), (2, 2), SAME, "avg")
    expected = 1 / (1 + np.exp(-(avg.mean(axis=(1, 2), keepdims=True) + offset)))
    got, got_avg = compile_and_run(m.build(), tmp_path, xs)
    np.testing.assert_allclose(got_avg, avg, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_elementwise_and_movement_ops():
    rng = np.random.default_rng(2)
    m = ModelBuilder()
    a = m.tensor("a", [2, 3, 5])
    b = m.tensor("b", [5])
    pads = m.const("pads", [[0, 0], [1, 2], [0, 1]], np.int32)
    perm = m.const("perm", [2, 0, 1], np.int32)
    padded, moved = m.tensor("padded", [2, 6, 6]), m.tensor("moved", [5, 2, 3])
    prod, diff, quot = m.tensor("prod", [2, 3, 5]), m.tensor("diff", [2, 3, 5]), m.tensor("quot", [2, 3, 5])
    cat, act = m.tensor("cat", [2, 9, 5]), m.tensor("act", [2, 9, 5])
    m.op("PAD", [a, pads], [padded])
    m.op("TRANSPOSE", [a, perm], [moved])
    m.op("MUL", [a, b], [prod], _options("MulOptions", FusedActivationFunction=RELU))
    m.op("SUB", [a, b], [diff], _options("SubOptions", FusedActivationFunction=NONE))
    m.op("DIV", [prod, b], [quot], _options("DivOptions", FusedActivationFunction=NONE))
    m.op("CONCATENATION", [prod, diff, quot], [cat], _options("ConcatenationOptions", Axis=1))
    m.op("TANH", [cat], [act])
    m.inputs, m.outputs = [a, b], [padded, moved, act]

    av = rng.standard_normal((2, 3, 5)).astype(np.float32)
    bv = (rng.random(5) + 0.5).astype(np.float32)
    got = dlc.compile(import_tflite(m.build()))(av, bv)
    prod_v = np.maximum(av * bv, 0)
    np.testing.assert_allclose(got[0], np.pad(av, ((0, 0), (1, 2), (0, 1))))
    np.testing.assert_allclose(got[1], av.transpose(2, 0, 1))
    np.testing.assert_allclose(got[2], np.tanh(np.concatenate([prod_v, av - bv, prod_v / bv], 1)),
                               rtol=1e-5, atol=1e-6)


def _quantize(x, scale, zero):
    q = np.sign(x / scale) * np.floor(np.abs(x / scale) + 0.5) + zero  # half away from zero
    return np.clip(q, -128, 127).astype(np.int8)


def test_quantized_int8_fully_connected():
    rng = np.random.default_rng(3)
    in_scale, in_zero, out_scale, out_zero = 0.05, 3, 0.1, -5
    w_scale = np.array([0.02, 0.01, 0.03, 0.015], np.float32)  # per output channel
    wq = rng.integers(-127, 128, (4, 6)).astype(np.int8)
    bias_scale = in_scale * w_scale
    bq = rng.integers(-500, 500, 4).astype(np.int32)

    m = ModelBuilder()
    x = m.tensor("x", [3, 6], np.int8, scale=[in_scale], zero_point=[in_zero])
    w = m.const("w", wq, scale=w_scale, zero_point=np.zeros(4), axis=0)
    b = m.const("b", bq, scale=bias_scale, zero_point=np.zeros(4))
    y = m.tensor("y", [3, 4], np.int8, scale=[out_scale], zero_point=[out_zero])
    m.op("FULLY_CONNECTED", [x, w, b], [y], _options("FullyConnectedOptions", FusedActivationFunction=RELU))
    m.inputs, m.outputs = [x], [y]

    xq = rng.integers(-128, 128, (3, 6)).astype(np.int8)
    real = np.maximum(((xq.astype(np.float64) - in_zero) * in_scale) @ (wq * w_scale[:, None]).T
                      + bq * bias_scale, 0)
    expected = _quantize(real, out_scale, out_zero)
    got = dlc.compile(import_tflite(m.build()))(xq)[0]
    assert got.dtype == np.int8
    # float32 arithmetic may land on the other side of a rounding tie: one step at most
    assert np.abs(got.astype(np.int32) - expected).max() <= 1
    assert (got == expected).mean() > 0.9


def test_quantize_dequantize_boundary_ops():
    m = ModelBuilder()
    x = m.tensor("x", [7])
    q = m.tensor("q", [7], np.int8, scale=[0.25], zero_point=[1])
    y = m.tensor("y", [7])
    m.op("QUANTIZE", [x], [q])
    m.op("DEQUANTIZE", [q], [y])
    m.inputs, m.outputs = [x], [y]
    xs = np.array([-40.0, -1.1, -0.125, 0.0, 0.37, 2.0, 50.0], np.float32)
    got = dlc.compile(import_tflite(m.build()))(xs)[0]
    np.testing.assert_allclose(got, (_quantize(xs, 0.25, 1).astype(np.float32) - 1) * 0.25)


# ---------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------


def _model_with(op_names):
    m = ModelBuilder()
    x = m.tensor("x", [4])
    prev = x
    for i, name in enumerate(op_names):
        out = m.tensor(f"t{i}", [4])
        m.op(name, [prev], [out])
        prev = out
    m.inputs, m.outputs = [x], [prev]
    return m.build()


def test_unsupported_operators_listed_with_counts():
    with pytest.raises(TfliteImportError) as info:
        import_tflite(_model_with(["EXP", "LOGISTIC", "EXP", "FLOOR"]))
    message = str(info.value)
    assert message == ("unsupported TFLite operators: EXP x2 (first: operator #0), "
                       "FLOOR x1 (first: operator #3)")


def test_truncated_file(tmp_path):
    data = _model_with(["LOGISTIC", "TANH"])
    for cut in (len(data) // 3, len(data) - 7):
        path = tmp_path / "cut.tflite"
        path.write_bytes(data[:cut])
        with pytest.raises(TfliteImportError, match=r"cut\.tflite: truncated or corrupt TFLite file"):
            import_tflite(str(path))


def test_not_a_tflite_file(tmp_path):
    path = tmp_path / "x.tflite"
    path.write_bytes(b"\x00" * 32)
    with pytest.raises(CompileError, match="not a TFLite model"):
        dlc.compile(str(path))
    with pytest.raises(TfliteImportError, match="no such file"):
        import_tflite(str(tmp_path / "missing.tflite"))


def test_nhwc_interface_and_names_kept():
    m = ModelBuilder()
    x = m.tensor("input_image", [1, 5, 5, 2])
    y = m.tensor("pooled", [1, 2, 2, 2])
    m.op("MAX_POOL_2D", [x], [y], _options("Pool2DOptions", Padding=VALID, StrideH=2, StrideW=2,
                                           FilterHeight=2, FilterWidth=2))
    m.inputs, m.outputs = [x], [y]
    text = str(import_tflite(m.build()))
    assert 'tensor<1x5x5x2xf32> {dlc.name = "input_image"}' in text
    assert 'layout = "NHWC"' in text and "graph.transpose" not in text


def test_corrupt_bytes_never_escape_as_tracebacks():
    """Random byte flips and cuts give TfliteImportError (or import fine), nothing else."""
    data = _model_with(["LOGISTIC", "TANH", "RELU"])
    rng = np.random.default_rng(7)
    for trial in range(300):
        corrupt = bytearray(data)
        if trial % 3 == 0:
            corrupt = corrupt[:rng.integers(0, len(corrupt))]
        else:
            corrupt[rng.integers(8, len(corrupt))] = rng.integers(0, 256)
        try:
            import_tflite(bytes(corrupt))
        except TfliteImportError as err:
            assert "\n" not in str(err)
