"""Writing a QDQ ONNX model: the form onnxruntime's ``quantize_static`` writes.

Two steps, so calibration knows what to measure before anything is written:

1. :func:`plan_qdq` walks the float graph in order and decides, node by node
   (as onnxruntime's QDQ quantizer does):

   * ``Conv``, ``Gemm``, ``MatMul`` with a constant weight: the activation input
     and the output get a QuantizeLinear/DequantizeLinear pair, the weight
     becomes an int8 initializer with a DequantizeLinear (per channel: axis 0
     for Conv and for Gemm's B with ``transB=1``, the last axis for MatMul's B
     and Gemm's B otherwise), the bias an int32 initializer with scale
     ``x_scale * w_scale`` (times Gemm's ``beta``);
   * ``Add`` (two activations), ``Concat`` (activations only),
     ``GlobalAveragePool``: every input and output, each with its own range;
   * ``MaxPool``, ``AveragePool`` whose input is quantized: the output reuses
     the input's scale and zero point;
   * ``Relu`` and ``Clip`` (a constant range holding 0) after a quantized output
     that nothing else reads: removed, the producer writes their output,
     whose calibrated range (0 at the bottom) does the clamping; otherwise
     their output is quantized like an Add's;
   * every other op stays float, reading the dequantized values.

   Only f32 tensors are quantized. A model of opset < 13 is converted to 13
   first (per-channel QuantizeLinear needs it).

2. :func:`write_qdq` turns the plan and the measured ranges into the model.
   Names follow onnxruntime: ``T_QuantizeLinear`` / ``T_QuantizeLinear_Output``,
   ``T_DequantizeLinear`` / ``T_DequantizeLinear_Output``, ``T_scale``,
   ``T_zero_point``, weights ``W_quantized``; a graph output keeps its name (the
   producer writes ``T_QuantizeLinear_Input``).

Activations are asymmetric (uint8 [0, 255] or int8 [-128, 127], the range
widened to hold 0); int8 weights are symmetric in [-127, 127], uint8 weights
asymmetric.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from dlc.quantization.calibrate import QuantizationError

WEIGHT_OPS = ("Conv", "Gemm", "MatMul")
ALL_INPUT_OPS = ("Add", "Concat", "GlobalAveragePool")
SAME_AS_INPUT_OPS = ("MaxPool", "AveragePool")
ACTIVATION_OPS = ("Relu", "Clip")
DEFAULT_OP_TYPES = WEIGHT_OPS + ALL_INPUT_OPS + SAME_AS_INPUT_OPS + ACTIVATION_OPS
QDQ_OPSET = 13

QTYPES = {"uint8": (np.uint8, 0, 255), "int8": (np.int8, -128, 127)}


@dataclass
class WeightUse:
    """A constant weight (or bias) of one quantized node."""

    node: str  # the node's name (plan_qdq names every node)
    weight: str
    axis: int | None  # None: per tensor
    bias: str | None = None
    activation: str | None = None  # the input whose scale the bias uses
    beta: float = 1.0


@dataclass
class QdqPlan:
    model: onnx.ModelProto  # the float model with Relu/Clip folded, opset >= 13
    source: onnx.ModelProto  # the float model before folding (opset >= 13): what calibration runs
    calibrate: list[str] = field(default_factory=list)  # activations with their own range, in graph order
    shared: dict[str, str] = field(default_factory=dict)  # activation -> the one whose scale it reuses
    weights: list[WeightUse] = field(default_factory=list)
    folded: list[str] = field(default_factory=list)  # the Relu/Clip outputs folded into their producer

    def quantized(self) -> list[str]:
        return self.calibrate + list(self.shared)


def _attr(node: onnx.NodeProto, name: str, default):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def _clip_range(node: onnx.NodeProto, constants: dict[str, np.ndarray]) -> tuple[float, float] | None:
    """Clip's constant [min, max], None when one is not constant."""
    if len(node.input) == 1 and not node.attribute:
        return (-np.inf, np.inf)
    if node.attribute:  # opset < 11 form
        return float(_attr(node, "min", -np.inf)), float(_attr(node, "max", np.inf))
    bounds = []
    for i, default in ((1, -np.inf), (2, np.inf)):
        name = node.input[i] if len(node.input) > i else ""
        if not name:
            bounds.append(default)
        elif name in constants:
            bounds.append(float(constants[name].reshape(-1)[0]))
        else:
            return None
    return bounds[0], bounds[1]


def _upgrade(model: onnx.ModelProto) -> onnx.ModelProto:
    version = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    if version is None or version >= QDQ_OPSET:
        return model
    from onnx import version_converter

    try:
        return version_converter.convert_version(model, QDQ_OPSET)
    except Exception as err:  # onnx raises its C++ errors as several types
        raise QuantizationError(f"cannot convert the model from opset {version} to {QDQ_OPSET} "
                                f"(QDQ needs it): {str(err).splitlines()[0]}") from None


def plan_qdq(model: onnx.ModelProto, op_types=DEFAULT_OP_TYPES, per_channel: bool = True) -> QdqPlan:
    """What to quantize in ``model`` (see the module docstring); the model is copied."""
    unknown = sorted(set(op_types) - set(DEFAULT_OP_TYPES))
    if unknown:
        raise QuantizationError(f"op_types: cannot quantize {', '.join(unknown)} "
                                f"(the quantizer handles {', '.join(DEFAULT_OP_TYPES)})")
    work = onnx.ModelProto()
    work.CopyFrom(model)
    work = _upgrade(work)
    source = onnx.ModelProto()
    source.CopyFrom(work)  # the folded model lacks the Relus: the ranges are measured on this one
    graph = work.graph
    inferred = onnx.shape_inference.infer_shapes(work)
    elem = {v.name: v.type.tensor_type.elem_type
            for v in (*inferred.graph.value_info, *inferred.graph.input, *inferred.graph.output)}
    constants = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and node.output:
            value = _attr(node, "value", None)
            if value is not None:
                constants[node.output[0]] = numpy_helper.to_array(value)
    for t in graph.initializer:
        elem.setdefault(t.name, t.data_type)
    outputs = {o.name for o in graph.output}
    consumers: dict[str, int] = {}
    for node in graph.node:
        for name in node.input:
            consumers[name] = consumers.get(name, 0) + 1
    graph_inputs = {i.name for i in graph.input}

    plan = QdqPlan(work, source)
    own: set[str] = set()  # tensors with their own calibrated range
    quantized: set[str] = set()
    produced_by: dict[str, onnx.NodeProto] = {}

    def is_f32_activation(name: str) -> bool:
        return bool(name) and name not in constants and elem.get(name) == TensorProto.FLOAT

    def quantize(name: str) -> None:
        if name not in quantized:
            quantized.add(name)
            own.add(name)
            plan.calibrate.append(name)

    seen: dict[str, int] = {}
    for node in graph.node:
        seen[node.name] = seen.get(node.name, 0) + 1
    taken = set(seen)
    for i, node in enumerate(graph.node):  # weights are matched to their node by name: every node gets one
        if not node.name or seen[node.name] > 1:
            name = f"{node.op_type}_{i}"
            while name in taken:
                name += "_"
            node.name = name
            taken.add(name)
    kept: list[onnx.NodeProto] = []
    for node in graph.node:
        op = node.op_type if node.domain in ("", "ai.onnx") else None
        key = node.name
        if op in op_types and op in WEIGHT_OPS:
            if (len(node.input) >= 2 and is_f32_activation(node.input[0]) and node.input[1] in constants
                    and elem.get(node.input[1]) == TensorProto.FLOAT and is_f32_activation(node.output[0])):
                weight = constants[node.input[1]]
                if op == "Conv":
                    axis = 0
                elif op == "Gemm":
                    axis = 0 if _attr(node, "transB", 0) else 1
                else:
                    axis = weight.ndim - 1 if weight.ndim >= 2 else None
                use = WeightUse(key, node.input[1], axis if per_channel else None, activation=node.input[0])
                if (len(node.input) >= 3 and node.input[2] in constants and consumers.get(node.input[2]) == 1
                        and elem.get(node.input[2]) == TensorProto.FLOAT and constants[node.input[2]].ndim == 1):
                    use.bias = node.input[2]
                    use.beta = float(_attr(node, "beta", 1.0)) if op == "Gemm" else 1.0
                plan.weights.append(use)
                quantize(node.input[0])
                quantize(node.output[0])
        elif op in op_types and op in ALL_INPUT_OPS:
            names = [n for n in node.input if n]
            if all(is_f32_activation(n) for n in (*names, node.output[0])):
                for n in names:
                    quantize(n)
                quantize(node.output[0])
        elif op in op_types and op in SAME_AS_INPUT_OPS:
            if node.input[0] in quantized and len(node.output) == 1 and is_f32_activation(node.output[0]):
                source = plan.shared.get(node.input[0], node.input[0])
                plan.shared[node.output[0]] = source
                quantized.add(node.output[0])
        elif op in op_types and op in ACTIVATION_OPS and node.input[0] in quantized:
            upstream = produced_by.get(node.input[0])
            bounds = _clip_range(node, constants) if op == "Clip" else (0.0, np.inf)
            if (upstream is not None and node.input[0] in own and bounds is not None and bounds[0] <= 0 <= bounds[1]
                    and consumers.get(node.input[0]) == 1 and node.input[0] not in outputs
                    and node.input[0] not in graph_inputs and is_f32_activation(node.output[0])):
                # the producer writes the Relu's output; its range (min 0) clamps as the Relu did
                index = list(upstream.output).index(node.input[0])
                upstream.output[index] = node.output[0]
                plan.calibrate[plan.calibrate.index(node.input[0])] = node.output[0]
                own.discard(node.input[0])
                quantized.discard(node.input[0])
                own.add(node.output[0])
                quantized.add(node.output[0])
                produced_by[node.output[0]] = upstream
                plan.folded.append(node.output[0])
                continue
            if is_f32_activation(node.output[0]):
                quantize(node.output[0])
        kept.append(node)
        for name in node.output:
            produced_by[name] = node
    del graph.node[:]
    graph.node.extend(kept)
    return plan


# ---------------------------------------------------------------------------
# writing
# ---------------------------------------------------------------------------


def activation_params(rmin: float, rmax: float, qtype: str) -> tuple[np.ndarray, np.ndarray]:
    """(scale f32, zero point) of an asymmetric activation (onnxruntime's compute_scale_zp)."""
    dtype, qmin, qmax = QTYPES[qtype]
    rmin, rmax = min(float(rmin), 0.0), max(float(rmax), 0.0)
    scale = (rmax - rmin) / (qmax - qmin)
    if scale < np.finfo(np.float32).tiny:
        return np.array(1.0, np.float32), np.array(0, dtype)
    zero = np.clip(np.round(qmin - rmin / scale), qmin, qmax)
    return np.array(scale, np.float32), np.array(zero, dtype)


def quantize_weight(w: np.ndarray, axis: int | None, qtype: str,
                    reduce_range: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(q, scale, zero point) of a weight, per channel along ``axis`` or per tensor.
    ``reduce_range``: 7 bits ([-63, 63] int8, [0, 127] uint8), as onnxruntime's option of
    that name: a u8 x s8 pair sum then fits the i16 that AVX2's ``vpmaddubsw`` saturates
    (onnxruntime's U8S8 kernels on x86 without VNNI)."""
    w = w.astype(np.float64)
    reduce_axes = tuple(a for a in range(w.ndim) if a != axis) if axis is not None else None
    lo = np.minimum(w.min(axis=reduce_axes), 0.0) if w.size else np.zeros(())
    hi = np.maximum(w.max(axis=reduce_axes), 0.0) if w.size else np.zeros(())
    dtype, qmin, qmax = QTYPES[qtype]
    if reduce_range:
        qmin, qmax = (-64, 63) if qtype == "int8" else (0, 127)
    if qtype == "int8":  # symmetric in [-qmax, qmax], zero point 0
        qmin = -qmax
        scale = np.maximum(np.abs(lo), np.abs(hi)) / float(qmax)
        zero = np.zeros_like(scale)
    else:
        scale = (hi - lo) / (qmax - qmin)
        zero = None
    scale = np.where(scale < np.finfo(np.float32).tiny, 1.0, scale).astype(np.float32)
    if zero is None:
        zero = np.clip(np.round(qmin - lo / scale), qmin, qmax)
    shape = [1] * w.ndim
    if axis is not None:
        shape[axis] = -1
    q = np.clip(np.round(w / scale.reshape(shape) + zero.reshape(shape)), qmin, qmax).astype(dtype)
    return q, scale, zero.astype(dtype)


def write_qdq(plan: QdqPlan, ranges: dict[str, tuple[float, float]], activation_type: str = "uint8",
              weight_type: str = "int8", reduce_range: bool = False) -> onnx.ModelProto:
    """The QDQ model of ``plan`` with activation ranges ``ranges`` (name -> (min, max))."""
    model = onnx.ModelProto()
    model.CopyFrom(plan.model)
    graph = model.graph
    initializers = {t.name: t for t in graph.initializer}
    outputs = {o.name for o in graph.output}
    new_inits: list[TensorProto] = []
    front: list[onnx.NodeProto] = []  # weight DQs and graph-input Q/DQs: before every node
    after: dict[str, list[onnx.NodeProto]] = {}  # tensor -> its Q/DQ, right after its producer
    read: dict[str, str] = {}  # what consumers read instead of a tensor

    params: dict[str, tuple[str, str, float]] = {}  # tensor -> (scale name, zero point name, scale)
    for name in plan.calibrate:
        if name not in ranges:
            raise QuantizationError(f"no calibrated range for tensor '{name}'")
        scale, zero = activation_params(*ranges[name], activation_type)
        new_inits += [numpy_helper.from_array(scale, f"{name}_scale"),
                      numpy_helper.from_array(zero, f"{name}_zero_point")]
        params[name] = (f"{name}_scale", f"{name}_zero_point", float(scale))
    for name, source in plan.shared.items():
        params[name] = params[source]

    producers = {out for node in graph.node for out in node.output}
    renamed_outputs: dict[str, str] = {}
    for name in plan.quantized():
        scale_name, zero_name, _ = params[name]
        q_in = name
        if name in outputs:  # the graph output keeps its name: the DQ writes it
            q_in = f"{name}_QuantizeLinear_Input"
            renamed_outputs[name] = q_in
            dq_out = name
        else:
            dq_out = f"{name}_DequantizeLinear_Output"
        pair = [helper.make_node("QuantizeLinear", [q_in, scale_name, zero_name], [f"{name}_QuantizeLinear_Output"],
                                 name=f"{name}_QuantizeLinear"),
                helper.make_node("DequantizeLinear", [f"{name}_QuantizeLinear_Output", scale_name, zero_name],
                                 [dq_out], name=f"{name}_DequantizeLinear")]
        (after.setdefault(name, []) if name in producers else front).extend(pair)
        read[name] = dq_out

    weight_read: dict[tuple[str, str], str] = {}  # (node, weight) -> the DQ output it reads
    dropped: set[str] = set()
    written: dict[tuple[str, int | None], tuple[str, np.ndarray]] = {}  # (weight, axis) -> (base name, scale)
    for use in plan.weights:
        tag = (use.weight, use.axis)
        if tag not in written:  # a weight shared by nodes with one axis is written once
            base = use.weight if not any(w == use.weight for w, _ in written) else f"{use.weight}_{len(written)}"
            q, scale, zero = quantize_weight(numpy_helper.to_array(initializers[use.weight]), use.axis, weight_type,
                                              reduce_range)
            if use.axis is None:
                scale, zero = scale.reshape(()), zero.reshape(())
            new_inits += [numpy_helper.from_array(q, f"{base}_quantized"),
                          numpy_helper.from_array(scale, f"{base}_scale"),
                          numpy_helper.from_array(zero, f"{base}_zero_point")]
            attrs = {"axis": use.axis} if use.axis is not None else {}
            front.append(helper.make_node("DequantizeLinear", [f"{base}_quantized", f"{base}_scale",
                                                              f"{base}_zero_point"],
                                          [f"{base}_DequantizeLinear_Output"], name=f"{base}_DequantizeLinear",
                                          **attrs))
            written[tag] = (base, scale)
        base, w_scale = written[tag]
        weight_read[(use.node, use.weight)] = f"{base}_DequantizeLinear_Output"
        dropped.add(use.weight)
        if use.bias is not None:
            b = numpy_helper.to_array(initializers[use.bias]).astype(np.float64)
            bias_scale = (params[use.activation][2] * w_scale.astype(np.float64) * use.beta)
            bias_scale = np.broadcast_to(bias_scale, b.shape) if use.axis is not None else bias_scale.reshape(())
            bias_scale = np.where(bias_scale == 0, 1.0, bias_scale).astype(np.float32)
            info = np.iinfo(np.int32)
            qb = np.clip(np.round(b / bias_scale.astype(np.float64)), info.min, info.max).astype(np.int32)
            new_inits += [numpy_helper.from_array(qb, f"{use.bias}_quantized"),
                          numpy_helper.from_array(bias_scale, f"{use.bias}_quantized_scale"),
                          numpy_helper.from_array(np.zeros(bias_scale.shape, np.int32),
                                                  f"{use.bias}_quantized_zero_point")]
            attrs = {"axis": 0} if bias_scale.ndim else {}
            front.append(helper.make_node("DequantizeLinear", [f"{use.bias}_quantized", f"{use.bias}_quantized_scale",
                                                              f"{use.bias}_quantized_zero_point"],
                                          [f"{use.bias}_DequantizeLinear_Output"],
                                          name=f"{use.bias}_DequantizeLinear", **attrs))
            weight_read[(use.node, use.bias)] = f"{use.bias}_DequantizeLinear_Output"
            dropped.add(use.bias)

    nodes: list[onnx.NodeProto] = list(front)
    for node in graph.node:
        key = node.name
        produced = list(node.output)
        for i, name in enumerate(node.input):
            if (key, name) in weight_read:
                node.input[i] = weight_read[(key, name)]
            elif name in read:
                node.input[i] = read[name]
        for i, name in enumerate(produced):
            if name in renamed_outputs:
                node.output[i] = renamed_outputs[name]
        nodes.append(node)
        for name in produced:
            nodes.extend(after.get(name, ()))
    still_read = {name for node in nodes for name in node.input}
    del graph.node[:]
    graph.node.extend(nodes)
    keep = [t for t in graph.initializer if t.name not in dropped or t.name in still_read]
    del graph.initializer[:]
    graph.initializer.extend(keep + new_inits)
    kept_names = {t.name for t in graph.initializer}
    ins = [i for i in graph.input if i.name not in dropped or i.name in kept_names]
    del graph.input[:]
    graph.input.extend(ins)
    # value_info of tensors that are now renamed or gone would mislead: shape inference redoes it
    del graph.value_info[:]
    return model
