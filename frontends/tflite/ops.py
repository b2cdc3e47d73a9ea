"""TFLite builtin operator -> graph ops (float32 semantics; see importer for
NHWC and quantization). ``CONVERTERS`` maps the operator name to a function
``(ImportContext, OperatorInfo) -> None`` that writes the operator's outputs."""

from __future__ import annotations

import numpy as np
import tflite

from dlc.dialects import graph as g
from dlc.registry import Registry
from dlc.frontends.tflite.importer import ImportContext, OperatorInfo

CONVERTERS: Registry = Registry("TFLite converter")
converts = CONVERTERS.register

# tflite.ActivationFunctionType
_NONE, _RELU, _RELU_N1_TO_1, _RELU6, _TANH = 0, 1, 2, 3, 4
# tflite.Padding
_SAME, _VALID = 0, 1


def _options(cx: ImportContext, op: OperatorInfo, cls):
    if op.options is None:
        raise cx.error(f"missing builtin options ({cls.__name__})")
    opts = cls()
    opts.Init(op.options.Bytes, op.options.Pos)
    return opts


def _activation(cx: ImportContext, x, code: int):
    if code == _NONE:
        return x
    if code == _RELU:
        return cx.emit(g.ReluOp, x)
    if code == _RELU6:
        return cx.emit(g.ClipOp, x, min=0.0, max=6.0)
    if code == _RELU_N1_TO_1:
        return cx.emit(g.ClipOp, x, min=-1.0, max=1.0)
    if code == _TANH:
        return cx.emit(g.TanhOp, x)
    raise cx.error(f"fused activation {code} is not supported")


def _same_pads(size: int, k: int, stride: int, dilation: int) -> tuple[int, int]:
    """TensorFlow SAME: output ceil(size / stride); extra padding goes at the end."""
    out = -(-size // stride)
    total = max((out - 1) * stride + dilation * (k - 1) + 1 - size, 0)
    return total // 2, total - total // 2


def _window_pads(cx, padding: int, h: int, w: int, kh: int, kw: int, strides, dilations) -> list[int]:
    if min(strides) < 1 or min(dilations) < 1:
        raise cx.error(f"strides {list(strides)} and dilations {list(dilations)} must be >= 1")
    if padding == _VALID:
        return [0, 0, 0, 0]
    if padding != _SAME:
        raise cx.error(f"padding mode {padding} is not supported")
    top, bottom = _same_pads(h, kh, strides[0], dilations[0])
    left, right = _same_pads(w, kw, strides[1], dilations[1])
    return [top, left, bottom, right]


def _bias(cx: ImportContext, op: OperatorInfo, y):
    if len(op.inputs) > 2 and op.inputs[2] >= 0:
        y = cx.emit(g.AddOp, y, cx.read(op.inputs[2]))
    return y


# ---------------------------------------------------------------------------
# convolution, fully connected, pooling
# ---------------------------------------------------------------------------


@converts("CONV_2D", "DEPTHWISE_CONV_2D")
def _conv(cx: ImportContext, op: OperatorInfo):
    depthwise = op.name == "DEPTHWISE_CONV_2D"
    opts = _options(cx, op, tflite.DepthwiseConv2DOptions if depthwise else tflite.Conv2DOptions)
    x, w = cx.read(op.inputs[0]), cx.read(op.inputs[1])
    x_shape = cx.tensor(op.inputs[0]).shape
    w_shape = cx.tensor(op.inputs[1]).shape
    if len(x_shape) != 4 or len(w_shape) != 4:
        raise cx.error(f"input and filter must be 4-D (NHWC), got {x_shape} and {w_shape}")
    # OHWI (conv) / 1 x H x W x C*M (depthwise) -> HWIO; folded at compile time
    w = cx.emit(g.TransposeOp, w, perm=[1, 2, 0, 3] if depthwise else [1, 2, 3, 0])
    kh, kw = w_shape[1], w_shape[2]
    strides = [opts.StrideH(), opts.StrideW()]
    dilations = [opts.DilationHFactor() or 1, opts.DilationWFactor() or 1]
    pads = _window_pads(cx, opts.Padding(), x_shape[1], x_shape[2], kh, kw, strides, dilations)
    groups = x_shape[3] if depthwise else 1
    y = cx.emit(g.Conv2DOp, x, w, strides=strides, dilations=dilations, padding=pads, groups=groups,
                data_layout="NHWC", kernel_layout="HWIO")
    cx.write(op.outputs[0], _activation(cx, _bias(cx, op, y), opts.FusedActivationFunction()))


@converts("FULLY_CONNECTED")
def _fully_connected(cx: ImportContext, op: OperatorInfo):
    opts = _options(cx, op, tflite.FullyConnectedOptions)
    x, w = cx.read(op.inputs[0]), cx.read(op.inputs[1])
    k = cx.tensor(op.inputs[1]).shape[1]
    if not opts.KeepNumDims() and len(x.type.get_shape()) != 2:
        x = cx.emit(g.ReshapeOp, x, shape=[-1, k])
    bias = cx.read(op.inputs[2]) if len(op.inputs) > 2 and op.inputs[2] >= 0 else None
    y = cx.emit(g.DenseOp, x, w, bias)
    cx.write(op.outputs[0], _activation(cx, y, opts.FusedActivationFunction()))


@converts("MAX_POOL_2D", "AVERAGE_POOL_2D")
def _pool(cx: ImportContext, op: OperatorInfo):
    opts = _options(cx, op, tflite.Pool2DOptions)
    x = cx.read(op.inputs[0])
    shape = cx.tensor(op.inputs[0]).shape
    kernel = [opts.FilterHeight(), opts.FilterWidth()]
    strides = [opts.StrideH(), opts.StrideW()]
    pads = _window_pads(cx, opts.Padding(), shape[1], shape[2], kernel[0], kernel[1], strides, [1, 1])
    if op.name == "MAX_POOL_2D":
        y = cx.emit(g.MaxPool2DOp, x, kernel=kernel, strides=strides, padding=pads, layout="NHWC")
    else:  # TFLite averages over the valid (unpadded) positions only
        y = cx.emit(g.AvgPool2DOp, x, kernel=kernel, strides=strides, padding=pads, layout="NHWC",
                    count_include_pad=False)
    cx.write(op.outputs[0], _activation(cx, y, opts.FusedActivationFunction()))


# ---------------------------------------------------------------------------
# elementwise
# ---------------------------------------------------------------------------

_BINARY = {"ADD": (g.AddOp, tflite.AddOptions), "SUB": (g.SubOp, tflite.SubOptions),
           "MUL": (g.MulOp, tflite.MulOptions), "DIV": (g.DivOp, tflite.DivOptions)}


@converts(*_BINARY)
def _binary(cx: ImportContext, op: OperatorInfo):
    op_class, options = _BINARY[op.name]
    y = cx.emit(op_class, cx.read(op.inputs[0]), cx.read(op.inputs[1]))
    code = _options(cx, op, options).FusedActivationFunction() if op.options is not None else _NONE
    cx.write(op.outputs[0], _activation(cx, y, code))


_UNARY = {"LOGISTIC": g.SigmoidOp, "TANH": g.TanhOp, "RELU": g.ReluOp}


@converts(*_UNARY)
def _unary(cx: ImportContext, op: OperatorInfo):
    cx.write(op.outputs[0], cx.emit(_UNARY[op.name], cx.read(op.inputs[0])))


@converts("RELU6")
def _relu6(cx: ImportContext, op: OperatorInfo):
    cx.write(op.outputs[0], cx.emit(g.ClipOp, cx.read(op.inputs[0]), min=0.0, max=6.0))


@converts("SOFTMAX")
def _softmax(cx: ImportContext, op: OperatorInfo):
    x = cx.read(op.inputs[0])
    beta = _options(cx, op, tflite.SoftmaxOptions).Beta() if op.options is not None else 1.0
    if beta != 1.0:
        x = cx.emit(g.MulOp, x, cx.scalar(beta, cx.dtype(x)))
    cx.write(op.outputs[0], cx.emit(g.SoftmaxOp, x, axis=-1))


# ---------------------------------------------------------------------------
# shape and data movement
# ---------------------------------------------------------------------------


@converts("RESHAPE")
def _reshape(cx: ImportContext, op: OperatorInfo):
    # the output tensor's static shape is authoritative (the shape input may hold -1)
    shape = cx.tensor(op.outputs[0]).shape
    cx.write(op.outputs[0], cx.emit(g.ReshapeOp, cx.read(op.inputs[0]), shape=shape))


@converts("MEAN")
def _mean(cx: ImportContext, op: OperatorInfo):
    axes = [int(a) for a in cx.const_data(op.inputs[1], "axis").reshape(-1)]
    keep = bool(_options(cx, op, tflite.ReducerOptions).KeepDims()) if op.options is not None else False
    cx.write(op.outputs[0], cx.emit(g.ReduceMeanOp, cx.read(op.inputs[0]), axes=axes, keepdims=keep))


@converts("CONCATENATION")
def _concat(cx: ImportContext, op: OperatorInfo):
    opts = _options(cx, op, tflite.ConcatenationOptions)
    y = cx.emit(g.ConcatOp, *[cx.read(i) for i in op.inputs], axis=opts.Axis())
    cx.write(op.outputs[0], _activation(cx, y, opts.FusedActivationFunction()))


@converts("PAD", "PADV2")
def _pad(cx: ImportContext, op: OperatorInfo):
    paddings = cx.const_data(op.inputs[1], "paddings").reshape(-1, 2)
    value = 0.0
    if len(op.inputs) > 2:
        value = float(np.asarray(cx.const_data(op.inputs[2], "constant value")).reshape(-1)[0])
    pads = [int(p) for p in paddings[:, 0]] + [int(p) for p in paddings[:, 1]]
    cx.write(op.outputs[0], cx.emit(g.PadOp, cx.read(op.inputs[0]), pads=pads, value=value))


@converts("TRANSPOSE")
def _transpose(cx: ImportContext, op: OperatorInfo):
    perm = [int(p) for p in cx.const_data(op.inputs[1], "perm").reshape(-1)]
    cx.write(op.outputs[0], cx.emit(g.TransposeOp, cx.read(op.inputs[0]), perm=perm))


# ---------------------------------------------------------------------------
# quantization boundaries (values are float inside; see the importer)
# ---------------------------------------------------------------------------


@converts("QUANTIZE", "DEQUANTIZE")
def _requantize(cx: ImportContext, op: OperatorInfo):
    cx.write(op.outputs[0], cx.read(op.inputs[0]))
