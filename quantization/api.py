"""``dlc.quantize``: a float ONNX model and calibration data -> a QDQ int8 ONNX model."""

from __future__ import annotations

import math
import os

import onnx

from dlc.quantization.calibrate import QuantizationError, collect_ranges, load_samples, model_inputs
from dlc.quantization.qdq_writer import DEFAULT_OP_TYPES, QTYPES, plan_qdq, write_qdq

METHODS = ("minmax", "percentile")


def load_model(model) -> onnx.ModelProto:
    """An ONNX model from a path or a ModelProto (copied); a one-line error when it cannot load."""
    if isinstance(model, onnx.ModelProto):
        copy = onnx.ModelProto()
        copy.CopyFrom(model)
        try:
            onnx.checker.check_model(copy)
        except onnx.checker.ValidationError as err:
            raise QuantizationError(f"the model fails onnx's checker: {str(err).strip().splitlines()[0]}") from None
        return copy
    if not isinstance(model, (str, os.PathLike)):
        raise QuantizationError(f"model: expected an .onnx path or an onnx.ModelProto, got {type(model).__name__}")
    path = os.fspath(model)
    if not os.path.exists(path):
        raise QuantizationError(f"cannot open model '{path}': no such file")
    try:
        loaded = onnx.load(path)
        onnx.checker.check_model(loaded)
    except Exception as err:  # protobuf and the checker raise several types on a bad file
        raise QuantizationError(f"cannot load model '{path}': {str(err).strip().splitlines()[0]}") from None
    return loaded


def check_options(method: str, percentile: float, activation_type: str, weight_type: str) -> None:
    if method not in METHODS:
        raise QuantizationError(f"method: expected one of {', '.join(METHODS)}, got '{method}'")
    if not (isinstance(percentile, (int, float)) and math.isfinite(percentile) and 50 < percentile <= 100):
        raise QuantizationError(f"percentile: expected a number in (50, 100], got {percentile}")
    for what, value in (("activation_type", activation_type), ("weight_type", weight_type)):
        if value not in QTYPES:
            raise QuantizationError(f"{what}: expected one of {', '.join(QTYPES)}, got '{value}'")


def quantize(model, calibration, output: str | None = None, method: str = "minmax", percentile: float = 99.99,
             per_channel: bool = True, activation_type: str = "uint8", weight_type: str = "int8",
             op_types=DEFAULT_OP_TYPES, reduce_range: bool = False) -> onnx.ModelProto:
    """Quantize a float ONNX model to a QDQ model (the form onnxruntime's ``quantize_static`` writes).

    ``model``: an .onnx path or an ``onnx.ModelProto``. ``calibration``: a ``.npz`` path (one array
    per model input, of the input's shape or ``(N, *shape)`` for N samples), a mapping name ->
    array of that form, or a list of such mappings.

    Calibration runs the float model compiled by ``dlc.compile`` (every tensor to observe is
    made a graph output), once per sample for ``method="minmax"`` and twice for
    ``"percentile"`` (a histogram per tensor, cut at ``percentile``). Activations get
    per-tensor asymmetric ``activation_type`` scales; weights of Conv/Gemm/MatMul are
    ``weight_type`` (symmetric int8), per output channel unless ``per_channel=False``; biases
    int32. ``op_types`` limits the ops quantized (default: Conv, Gemm, MatMul, Add, Concat,
    GlobalAveragePool, MaxPool, AveragePool, Relu, Clip); the others stay float.
    ``reduce_range``: 7-bit weights, as onnxruntime's option: for a model onnxruntime runs
    on x86 without VNNI, whose U8S8 kernels saturate a pair of 8-bit products in i16
    (dlc's int8 kernels are exact either way).

    Returns the model; with ``output`` also writes it there (atomically: a complete file or
    the old one). Bad input raises ``QuantizationError`` (a ``DiagnosticError``) in one line.
    """
    check_options(method, percentile, activation_type, weight_type)
    if output is not None:
        from dlc.output_files import check_writable

        check_writable(output)  # a bad -o fails before the calibration runs
    float_model = load_model(model)
    samples = load_samples(calibration, model_inputs(float_model))
    plan = plan_qdq(float_model, tuple(op_types), per_channel)
    ranges = collect_ranges(plan.source, plan.calibrate, samples, method, percentile)
    quantized = write_qdq(plan, ranges, activation_type, weight_type, reduce_range)
    try:
        onnx.checker.check_model(quantized)
    except onnx.checker.ValidationError as err:  # the writer's bug, not the user's: say what broke
        raise RuntimeError(f"the quantized model does not pass onnx's checker: {str(err).splitlines()[0]}") from None
    if output is not None:
        from dlc.output_files import write_atomically

        write_atomically(output, quantized.SerializeToString())
    return quantized
