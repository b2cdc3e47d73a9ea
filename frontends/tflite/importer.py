"""TFLite flatbuffer -> graph-dialect ``func.func @main``.

Why our own: xDSL has no TFLite frontend. We reuse the ``tflite`` package
(the generated flatbuffers readers of TFLite's schema) and build graph ops
with ``Op.make``, so every shape comes from the dialect's inference rules.

Reading happens in two steps: :func:`read_model` decodes the flatbuffer into
plain Python records (any out-of-range read of a truncated or corrupt file
becomes one :class:`TfliteImportError` line), then :func:`import_tflite`
converts subgraph 0 operator by operator (converters in :mod:`.ops`).

Layout: TFLite tensors are NHWC and the model keeps its NHWC interface. Convs
and pools use the graph ops' own ``data_layout="NHWC"``/``layout="NHWC"`` and
``kernel_layout="HWIO"``; the OHWI (conv) and 1HW(C*M) (depthwise) weights
get one ``graph.transpose`` to HWIO, which fold-constant folds away. No
transposes are added at the model boundary.

Quantization (int8/uint8/int16 with scale and zero point, per-tensor or
per-channel): every quantized tensor is read as float: reading dequantizes,
writing quantizes then dequantizes (rounding half away from zero as TFLite
does), so an int8 operator becomes the DQ -> op -> Q form that fold-qdq turns
into the integer graph ops (graph.qconv2d, graph.qdense, graph.qadd, ...). For
i8/ui8/i32 tensors these are graph.dequantize / graph.quantize{rounding =
"half_away"}; int16 ones are spelled with float ops. Quantized model inputs and
outputs keep their integer element types.
"""

from __future__ import annotations

import os
import struct
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, SSAValue

from dlc.dialects import graph as g
from dlc.dialects.graph_base import ShapeError, element_type_of, tensor_type
from dlc.frontends.importer_base import ImporterBase
from dlc.weights import WeightStore

# tflite.TensorType -> numpy dtype
_DTYPES = {0: np.float32, 1: np.float16, 2: np.int32, 3: np.uint8, 4: np.int64, 6: np.bool_,
           7: np.int16, 9: np.int8, 10: np.float64}


class TfliteImportError(Exception):
    """The model cannot be imported; the message says where and why (one line)."""


@dataclass
class TensorInfo:
    index: int
    name: str
    shape: list[int]
    dtype: np.dtype
    data: np.ndarray | None  # constant tensors (weights, shapes, axes)
    scale: np.ndarray | None = None  # quantization
    zero_point: np.ndarray | None = None
    quantized_dimension: int = 0

    @property
    def quantized(self) -> bool:
        return self.scale is not None and self.dtype.kind in "iu"


@dataclass
class OperatorInfo:
    index: int
    name: str  # builtin operator name, e.g. CONV_2D
    inputs: list[int]
    outputs: list[int]
    options: object | None  # the flatbuffers Table of the builtin options


@dataclass
class ModelInfo:
    tensors: list[TensorInfo]
    operators: list[OperatorInfo]
    inputs: list[int]
    outputs: list[int]
    version: int = 3
    extra: dict = field(default_factory=dict)


# ---------------------------------------------------------------------------
# reading
# ---------------------------------------------------------------------------


def _load_bytes(source) -> tuple[bytes, str]:
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source), "<bytes>"
    path = os.fspath(source)
    if not os.path.isfile(path):
        raise TfliteImportError(f"{path}: no such file")
    with open(path, "rb") as f:
        return f.read(), path


def read_model(data: bytes, where: str = "<bytes>") -> ModelInfo:
    """Decode a .tflite flatbuffer into records, checking every read."""
    import tflite

    if len(data) < 8 or data[4:8] != b"TFL3":
        raise TfliteImportError(f"{where}: not a TFLite model (no 'TFL3' file identifier)")
    try:
        return _read(tflite, data)
    except TfliteImportError as err:
        raise TfliteImportError(f"{where}: {err}") from None
    except (struct.error, IndexError, ValueError, TypeError, UnicodeDecodeError, AttributeError) as err:
        raise TfliteImportError(
            f"{where}: truncated or corrupt TFLite file ({type(err).__name__}: {err})") from None


def _read(tflite, data: bytes) -> ModelInfo:
    model = tflite.Model.GetRootAsModel(data, 0)
    if model.SubgraphsLength() < 1:
        raise TfliteImportError("the model has no subgraph")
    sub = model.Subgraphs(0)
    buffers = [model.Buffers(i) for i in range(model.BuffersLength())]
    for buf in buffers:  # touch every table, so a cut anywhere in the file is noticed
        buf.DataLength(), buf.Offset(), buf.Size()
    tensors = []
    for i in range(sub.TensorsLength()):
        t = sub.Tensors(i)
        name = (t.Name() or b"").decode("utf-8") or f"tensor{i}"
        type_code = t.Type()
        if type_code not in _DTYPES:
            raise TfliteImportError(f"tensor '{name}': element type {_type_name(tflite, type_code)} "
                                    "is not supported")
        dtype = np.dtype(_DTYPES[type_code])
        shape = [int(d) for d in t.ShapeAsNumpy()] if t.ShapeLength() else []
        if any(d < 0 for d in shape):
            raise TfliteImportError(f"tensor '{name}' has a dynamic shape {shape}")
        info = TensorInfo(i, name, shape, dtype, _buffer_data(data, buffers, t.Buffer(), name, shape, dtype))
        q = t.Quantization()
        if q is not None and q.ScaleLength() > 0:
            info.scale = q.ScaleAsNumpy().astype(np.float32)
            info.zero_point = (q.ZeroPointAsNumpy().astype(np.int64) if q.ZeroPointLength()
                               else np.zeros(info.scale.shape, np.int64))
            info.quantized_dimension = q.QuantizedDimension()
        tensors.append(info)
    operators = []
    for i in range(sub.OperatorsLength()):
        op = sub.Operators(i)
        code = model.OperatorCodes(op.OpcodeIndex())
        builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        name = tflite.BUILTIN_OPCODE2NAME.get(builtin, f"opcode {builtin}")
        if name == "CUSTOM":
            name = "CUSTOM(" + (code.CustomCode() or b"?").decode("utf-8", "replace") + ")"
        ins = [int(v) for v in op.InputsAsNumpy()] if op.InputsLength() else []
        outs = [int(v) for v in op.OutputsAsNumpy()] if op.OutputsLength() else []
        for v in ins + outs:
            if v >= len(tensors) or v < -1:
                raise TfliteImportError(f"operator #{i} ({name}) refers to tensor {v}, "
                                        f"but the subgraph has {len(tensors)}")
        operators.append(OperatorInfo(i, name, ins, outs, op.BuiltinOptions()))
    inputs = [int(v) for v in sub.InputsAsNumpy()] if sub.InputsLength() else []
    outputs = [int(v) for v in sub.OutputsAsNumpy()] if sub.OutputsLength() else []
    for kind, indices in (("input", inputs), ("output", outputs)):
        for v in indices:
            if not 0 <= v < len(tensors):
                raise TfliteImportError(f"subgraph {kind} {v} is not a tensor (the subgraph has "
                                        f"{len(tensors)})")
    return ModelInfo(tensors, operators, inputs, outputs, model.Version())


def _buffer_data(data: bytes, buffers, index: int, name: str, shape, dtype) -> np.ndarray | None:
    if index <= 0 or index >= len(buffers):
        return None  # buffer 0 is the empty sentinel: a run-time tensor
    buf = buffers[index]
    if buf.DataLength():
        raw = buf.DataAsNumpy().tobytes()
    elif buf.Offset() > 1:  # large models keep buffers after the flatbuffer
        start, size = buf.Offset(), buf.Size()
        if start + size > len(data):
            raise TfliteImportError(f"tensor '{name}': buffer {index} lies beyond the end of the file")
        raw = data[start:start + size]
    else:
        return None
    count = int(np.prod(shape)) if shape else 1
    if len(raw) != count * dtype.itemsize:
        raise TfliteImportError(f"tensor '{name}': buffer {index} holds {len(raw)} bytes but shape "
                                f"{shape} of {dtype} needs {count * dtype.itemsize}")
    return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()


def _type_name(tflite, code: int) -> str:
    for k, v in vars(tflite.TensorType).items():
        if v == code and not k.startswith("_"):
            return k
    return str(code)


# ---------------------------------------------------------------------------
# the import
# ---------------------------------------------------------------------------


class ImportContext(ImporterBase):
    """Tensor index -> float SSA value; emission (ImporterBase) and (de)quantization helpers."""

    error_class = TfliteImportError

    def __init__(self, model: ModelInfo, block: Block, store: WeightStore):
        super().__init__(block, store)
        self.model = model
        self.values: dict[int, SSAValue] = {}
        self.op: OperatorInfo | None = None

    def where(self) -> str:
        return f"operator #{self.op.index} ({self.op.name})" if self.op else ""

    def constant(self, array, name: str = "const") -> SSAValue:
        return self.materialize(array, name)

    def scalar(self, value, dtype=np.float32) -> SSAValue:
        return self.constant(np.asarray(value, dtype=dtype))

    def tensor(self, index: int) -> TensorInfo:
        return self.model.tensors[index]

    def const_data(self, index: int, what: str) -> np.ndarray:
        t = self.tensor(index)
        if t.data is None:
            raise self.error(f"{what} (tensor '{t.name}') must be a constant in the model")
        return t.data

    # -- reading and writing model tensors (float view) ------------------------------
    def read(self, index: int) -> SSAValue:
        """The value of tensor ``index``; quantized tensors read as float."""
        if index in self.values:
            return self.values[index]
        if index < 0:
            raise self.error("a required input is absent (tensor index -1)")
        t = self.tensor(index)
        if t.data is None:
            raise self.error(f"tensor '{t.name}' is read before any operator writes it")
        raw = self.constant(t.data, t.name)
        value = self.dequantize(raw, t) if t.quantized else raw
        self.values[index] = value
        return value

    def write(self, index: int, value: SSAValue) -> None:
        """Set tensor ``index``; a quantized tensor rounds to its grid."""
        t = self.tensor(index)
        if t.quantized:
            value = self.dequantize(self.quantize(value, t), t)
        elif self.dtype(value) != t.dtype:
            value = self.emit(g.CastOp, value, to=element_type_of(t.dtype))
        if list(value.type.get_shape()) != t.shape and int(np.prod(t.shape)) == int(
                np.prod(value.type.get_shape())):
            value = self.emit(g.ReshapeOp, value, shape=t.shape)  # e.g. FULLY_CONNECTED's output rank
        self.values[index] = value

    @staticmethod
    def dtype(value: SSAValue) -> np.dtype:
        from dlc.dialects.graph_base import numpy_dtype

        return numpy_dtype(value.type.element_type)

    def _quant_params(self, t: TensorInfo, rank: int) -> tuple[SSAValue, SSAValue]:
        scale, zero = t.scale.astype(np.float32), t.zero_point.astype(np.float32)
        if scale.size > 1:  # per-channel along quantized_dimension
            shape = [1] * rank
            shape[t.quantized_dimension] = scale.size
            scale, zero = scale.reshape(shape), zero.reshape(shape)
        else:
            scale, zero = scale.reshape(()), zero.reshape(())
        return self.constant(scale, t.name + ".scale"), self.constant(zero, t.name + ".zero_point")

    def _static_attrs(self, t: TensorInfo) -> dict | None:
        """graph.quantize / graph.dequantize parameters of ``t``, or None (int16, or a
        scale dlc's ops do not take)."""
        scale, zero = np.asarray(t.scale, np.float32).reshape(-1), np.asarray(t.zero_point).reshape(-1)
        if not np.all(np.isfinite(scale)) or np.any(scale <= 0) or zero.size not in (1, scale.size):
            return None
        attrs = {"scale": [float(v) for v in scale], "zero_point": [int(v) for v in zero]}
        if max(scale.size, zero.size) > 1:
            attrs["axis"] = t.quantized_dimension
        return attrs

    def dequantize(self, raw: SSAValue, t: TensorInfo) -> SSAValue:
        attrs = self._static_attrs(t) if t.dtype in (np.int8, np.uint8, np.int32) else None
        if attrs is not None:
            return self.emit(g.DequantizeOp, raw, **attrs)
        scale, zero = self._quant_params(t, len(t.shape))
        x = self.emit(g.CastOp, raw, to=element_type_of(np.float32))
        return self.emit(g.MulOp, self.emit(g.SubOp, x, zero), scale)

    def quantize(self, x: SSAValue, t: TensorInfo) -> SSAValue:
        """Integer tensor of ``t``'s type: clip(round_half_away(x / scale) + zp)."""
        attrs = self._static_attrs(t) if t.dtype in (np.int8, np.uint8) else None
        if attrs is not None and x.type.element_type == element_type_of(np.float32):
            return self.emit(g.QuantizeOp, x, dtype=element_type_of(t.dtype), rounding="half_away", **attrs)
        scale, zero = self._quant_params(t, len(t.shape))
        x = self.emit(g.DivOp, x, scale)
        rounded = self.emit(g.MulOp, self.emit(g.SignOp, x),
                            self.emit(g.FloorOp, self.emit(g.AddOp, self.emit(g.AbsOp, x), self.scalar(0.5))))
        info = np.iinfo(t.dtype)
        q = self.emit(g.ClipOp, self.emit(g.AddOp, rounded, zero), min=float(info.min), max=float(info.max))
        return self.emit(g.CastOp, q, to=element_type_of(t.dtype))


def _check_supported(model: ModelInfo) -> None:
    from dlc.frontends.tflite.ops import CONVERTERS

    counts: Counter[str] = Counter()
    first: dict[str, int] = {}
    for op in model.operators:
        if op.name not in CONVERTERS:
            counts[op.name] += 1
            first.setdefault(op.name, op.index)
    if counts:
        parts = [f"{name} x{n} (first: operator #{first[name]})" for name, n in sorted(counts.items())]
        raise TfliteImportError(
            f"unsupported TFLite operator{'s' if len(counts) > 1 else ''}: " + ", ".join(parts))


def import_tflite(source) -> ModuleOp:
    """Import a .tflite model (path or bytes) as a graph-dialect module (see module docstring)."""
    from dlc.frontends.tflite.ops import CONVERTERS

    data, where = _load_bytes(source)
    model = read_model(data, where)
    _check_supported(model)
    store = WeightStore()
    block = Block()
    cx = ImportContext(model, block, store)
    arg_names = []
    for index in model.inputs:
        t = model.tensors[index]
        arg = block.insert_arg(tensor_type(t.shape, element_type_of(t.dtype)), len(block.args))
        cx.values[index] = cx.dequantize(arg, t) if t.quantized else arg
        arg_names.append(t.name)
    for op in model.operators:
        cx.op = op
        try:
            CONVERTERS[op.name](cx, op)
        except TfliteImportError:
            raise
        except (ShapeError, ValueError, IndexError, TypeError, KeyError, ArithmeticError,
                struct.error) as err:
            raise cx.error(f"cannot convert ({type(err).__name__}: {err})") from None
    cx.op = None
    results = []
    for index in model.outputs:
        t = model.tensors[index]
        value = cx.read(index)
        results.append(cx.quantize(value, t) if t.quantized else value)
    return cx.finish(results, arg_names, [model.tensors[i].name for i in model.outputs])
