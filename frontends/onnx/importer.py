"""ONNX ModelProto -> graph-dialect ``func.func @main`` (the importer's core).

Reading and checking the model (protobuf decoding, external data confined to
the model's directory, initializer sizes, dangling edges, static input shapes)
happens here; the per-op converters live in the ``ops_*`` modules and register
themselves in :mod:`.registry`. The checks onnxruntime makes before running a
model (known opsets, one producer per value, attribute types from the op's
schema, declared output types) are in :mod:`.checks`; axes and compile-time
indices are checked where converters read them (``ImportContext.axis``,
``axes``, ``check_indices``, ``const_scalar``).

Why our own: xDSL has no ONNX frontend. We reuse onnx's own protobuf loader,
``numpy_helper`` and external-data reader, and build graph ops with
``Op.make`` so every shape comes from the dialect's inference rules.

Values during import are :class:`Tensor` records: an SSA value, a numpy array
when the value is known at compile time (initializers, Constant nodes, and
anything computed only from those), or both. Converters that need a
compile-time value (Reshape's shape, Slice's starts...) read ``Tensor.const``;
ops whose operands are all known are folded right away with the op's numpy
``reference`` (the same code fold-constant runs), so constant subgraphs such as
``Shape -> Gather -> Concat -> Reshape`` disappear during import. A known value
only becomes IR when an op that is not folded uses it: small ones inline
(``graph.constant``), large ones as ``graph.weight`` in the weights store.

Signature: graph inputs that are not initializers become the arguments of
``@main`` in ONNX order, each with ``arg_attrs`` ``{dlc.name = "<onnx input>"}``;
graph outputs become its results with ``res_attrs`` ``{dlc.name = "<onnx output>"}``.
A graph output whose extent is data dependent (NonZero, Compress) is its bounded
buffer; its count follows the named outputs as a result ``"<name>:extent"`` with
``{dlc.extent_of = {result, dim}}`` (dialects/graph/data_dependent.py), which the
runtime uses to return the true shape.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import ModelProto, TensorProto, helper, numpy_helper
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Block, SSAValue

from dlc.dialects.graph_base import (
    GraphOp,
    ShapeError,
    element_type_of,
    numpy_dtype,
    tensor_type,
)
from dlc.dialects.graph.data_dependent import EXTENT_OF_ATTR, extent_of_attr
from dlc.frontends.importer_base import ImporterBase
from dlc.frontends.onnx.checks import (
    check_declared_outputs,
    check_graph_names,
    check_node_schema,
    check_opsets,
    check_single_producers,
    node_where,
)
from dlc.frontends.onnx.errors import NeedsConstantError, OnnxImportError
from dlc.weights import WeightStore
# Constant subgraphs are folded at import unless a result exceeds this size.
FOLD_ELEMENT_LIMIT = 1 << 26
# A ConstantOfShape is a weight the file does not store: it is held at compile time
# (then bound once, like an initializer of that size) up to this many elements, and
# only above it filled at run time. 2**28 f32 is 1 GiB, more than any layer of the
# CNNs that build their weights this way (VGG-19's fc6: 102.8M elements); filling it
# per call instead cost a 400 MB write, and transB Gemms a 400 MB transpose, per
# inference (light_vgg19: 66% of the run in that transpose).
CONSTANT_OF_SHAPE_LIMIT = 1 << 28


@dataclass(eq=False)
class Tensor:
    """One ONNX value during import (see the module docstring)."""

    name: str
    type: TensorType
    const: np.ndarray | None = None
    ssa: SSAValue | None = None
    graph_input: str | None = None  # set when the value is a graph input
    # graph inputs a run-time value is computed from (names the input to bind
    # as a constant when a compile-time value is needed)
    sources: tuple[str, ...] = ()
    # a data-dependent extent (graph.nonzero / compress results): (the count
    # tensor, the dim it sizes, the producing node, as errors name it)
    extent: tuple[Tensor, int, str] | None = None

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.type.get_shape())

    @property
    def rank(self) -> int:
        return len(self.type.get_shape())

    @property
    def dtype(self) -> np.dtype:
        return numpy_dtype(self.type.element_type)

    @property
    def element_type(self):
        return self.type.element_type


@dataclass
class Node:
    """A NodeProto with its inputs resolved and attributes as Python values."""

    proto: onnx.NodeProto
    inputs: list[Tensor | None]
    attrs: dict[str, Any]
    opset: int
    label: str = ""  # how errors name the node: ``node 'conv1' (Conv, #3)`` (checks.node_where)

    @property
    def op_type(self) -> str:
        return self.proto.op_type

    @property
    def name(self) -> str:
        return self.proto.name

    @property
    def where(self) -> str:
        return self.label or node_where(self.proto)

    @property
    def num_outputs(self) -> int:
        """Outputs the model asks for (trailing empty names dropped)."""
        names = list(self.proto.output)
        while names and not names[-1]:
            names.pop()
        return len(names)

    def input(self, i: int) -> Tensor | None:
        return self.inputs[i] if i < len(self.inputs) else None

    def attr(self, name: str, default: Any = None) -> Any:
        return self.attrs.get(name, default)

    def required(self, name: str) -> Any:
        if name not in self.attrs:
            raise OnnxImportError(f"{self.where}: missing required attribute '{name}'")
        return self.attrs[name]


@dataclass
class ImportOptions:
    input_shapes: Mapping[str, Sequence[int]] = field(default_factory=dict)
    constant_inputs: Mapping[str, np.ndarray] = field(default_factory=dict)


class ImportContext(ImporterBase):
    """Builds the body of ``@main``: value table, folding, materialization."""

    error_class = OnnxImportError

    def __init__(self, block: Block, store: WeightStore, opset: int):
        super().__init__(block, store)
        self.opset = opset
        self.node: Node | None = None

    def where(self) -> str:
        return self.node.where if self.node else ""

    def node_name(self) -> str | None:
        if self.node is None:
            return None
        return self.node.name or self.node.where  # an unnamed node: "node #3 (Relu)"

    # -- values ----------------------------------------------------------------------
    def value(self, t: Tensor) -> SSAValue:
        """The SSA value of ``t``, materializing a known value on first use."""
        if t.extent is not None:
            raise self.error(bounded_use_error(t))
        if t.ssa is None:
            assert t.const is not None
            t.ssa = self.materialize(t.const, t.name or "const", t.element_type)
        return t.ssa

    def constant(self, array: np.ndarray | float | int, like: Tensor | None = None,
                 name: str = "") -> Tensor:
        """A known value; scalars take ``like``'s element type."""
        array = np.asarray(array)
        if like is not None:
            array = array.astype(like.dtype)
        return Tensor(name, tensor_type(array.shape, element_type_of(array.dtype)), const=array)

    def const_of(self, t: Tensor | None, what: str) -> np.ndarray:
        """``t``'s compile-time value, or a clear error naming what needed it."""
        if t is None:
            raise self.error(f"missing input '{what}'")
        if t.const is None:
            if t.graph_input:
                hint = f" (graph input '{t.graph_input}'; pass it with constant_inputs=)"
            elif t.sources:
                hint = f" (from graph input{'s' if len(t.sources) > 1 else ''} " + ", ".join(
                    f"'{s}'" for s in t.sources) + "; pass them with constant_inputs=)"
            else:
                hint = ""
            raise NeedsConstantError(
                f"{self.node.where}: '{what}' must be known at compile time, but "
                f"'{t.name}' is computed at run time{hint}",
                t.graph_input or (t.sources[0] if t.sources else None),
            )
        return t.const

    def const_ints(self, t: Tensor | None, what: str) -> list[int]:
        return [int(v) for v in np.asarray(self.const_of(t, what)).reshape(-1)]

    def const_scalar(self, t: Tensor | None, what: str) -> Any:
        """The one element of a compile-time scalar (or 1-element) input, else a located error."""
        array = np.asarray(self.const_of(t, what))
        if array.size != 1:
            raise self.error(f"'{what}' must be a scalar, got shape {list(array.shape)}")
        return array.reshape(())[()]

    # -- axes and indices, checked where they are read ----------------------------------
    def axis(self, value: Any, rank: int, what: str = "axis") -> int:
        """``value`` normalized to ``[0, rank)``, or an error naming the node, the axis and the rank."""
        v = int(value)
        if not -rank <= v < rank:
            raise self.error(f"{what} {v} is out of range for rank {rank} (valid: {-rank} to {rank - 1})")
        return v % rank

    def axes(self, values: Sequence[Any], rank: int, what: str = "axes") -> list[int]:
        """Each of ``values`` normalized (``axis``), none repeated."""
        given = [int(v) for v in values]
        for v in given:
            if not -rank <= v < rank:
                raise self.error(f"{what} {given}: axis {v} is out of range for rank {rank} "
                                 f"(valid: {-rank} to {rank - 1})")
        out = [v % rank for v in given]
        for a in out:
            if out.count(a) > 1:
                raise self.error(f"{what} {given} name axis {a} twice")
        return out

    def check_indices(self, t: Tensor | None, extent: int, what: str, dim: str) -> None:
        """A compile-time index tensor's values lie in ``[-extent, extent)`` (onnxruntime
        refuses the others; the kernels would clamp them)."""
        if t is None or t.const is None or t.const.size == 0:
            return
        values = np.asarray(t.const).reshape(-1)
        bad = values[(values < -extent) | (values >= extent)]
        if bad.size:
            raise self.error(f"index {int(bad[0])} in input '{what}' ('{t.name}') is out of range "
                             f"for {dim} of size {extent} (valid: {-extent} to {extent - 1})")

    # -- building ops (emit: the first result of emit_multi) ----------------------------
    def emit_multi(self, op_class: type[GraphOp], *operands: Tensor | None,
                   **attrs: Any) -> list[Tensor]:
        """Build ``op_class`` with inferred types; fold it when every operand is known."""
        present = [t for t in operands if t is not None]
        name = self._result_name()
        if present and all(t.const is not None for t in present):
            folded = self._fold(op_class, present, attrs, name)
            if folded is not None:
                return folded
        op = self.make(op_class, *[self.value(t) for t in present], **attrs)
        self.block.add_op(op)
        sources = tuple(dict.fromkeys(
            s for t in present for s in ((t.graph_input,) if t.graph_input else t.sources)))
        return [Tensor(name, r.type, ssa=r, sources=sources) for r in op.results]

    def _fold(self, op_class, present: list[Tensor], attrs, name) -> list[Tensor] | None:
        scratch = Block(arg_types=[t.type for t in present])
        op = self.make(op_class, *scratch.args, **attrs)
        if any(math.prod(r.type.get_shape()) > FOLD_ELEMENT_LIMIT for r in op.results):
            return None
        try:
            with np.errstate(all="ignore"):
                outs = op.reference(*[t.const for t in present])
        except (ShapeError, ValueError, IndexError, TypeError) as err:
            raise self.error(f"cannot fold {op.name} on constant inputs: {err}") from None
        result = []
        for r, v in zip(op.results, outs, strict=True):
            v = np.asarray(v).astype(numpy_dtype(r.type.element_type), copy=False)
            result.append(Tensor(name, r.type, const=v.reshape(r.type.get_shape())))
        return result

    def _result_name(self) -> str:
        if self.node and self.node.proto.output:
            return self.node.proto.output[0]
        return ""


# ---------------------------------------------------------------------------
# reading and checking the model
# ---------------------------------------------------------------------------


def load_model(source: str | os.PathLike | ModelProto | bytes) -> tuple[ModelProto, str | None]:
    """Decode ``source``; returns the model and its directory (for external data)."""
    if isinstance(source, ModelProto):
        return source, None
    if isinstance(source, bytes):
        return _decode(source, "<bytes>"), None
    path = os.fspath(source)
    if not os.path.isfile(path):
        raise OnnxImportError(f"{path}: no such file")
    with open(path, "rb") as f:
        data = f.read()
    return _decode(data, path), os.path.dirname(os.path.abspath(path))


def _decode(data: bytes, where: str) -> ModelProto:
    if not data:
        raise OnnxImportError(f"{where}: empty file, not an ONNX model")
    model = ModelProto()
    try:
        model.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as err:
        raise OnnxImportError(
            f"{where}: not a valid ONNX model (truncated or not a protobuf file: {err})"
        ) from None
    if model.ir_version <= 0 or not model.HasField("graph") or not model.opset_import:
        raise OnnxImportError(
            f"{where}: not an ONNX model (no ir_version, graph or opset_import; "
            "truncated or a different file format?)"
        )
    return model


def default_opset(model: ModelProto) -> int | None:
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            return entry.version
    return None


def _load_external(tensor: TensorProto, base_dir: str | None) -> None:
    info = {e.key: e.value for e in tensor.external_data}
    location = info.get("location", "")
    if "\0" in location:
        raise OnnxImportError(
            f"initializer '{tensor.name}': external data location {location!r} holds a NUL byte "
            "(not a valid file name)"
        )
    if base_dir is None:
        raise OnnxImportError(
            f"initializer '{tensor.name}': its data is in external file '{location}'; "
            "import the model from its path so the file can be found"
        )
    base = os.path.realpath(base_dir)
    target = os.path.realpath(os.path.join(base, location))
    if not location or os.path.isabs(location) or not target.startswith(base + os.sep):
        raise OnnxImportError(
            f"initializer '{tensor.name}': external data path '{location}' escapes the "
            f"model's directory {base_dir} (only files inside it are read)"
        )
    if not os.path.isfile(target):
        raise OnnxImportError(
            f"initializer '{tensor.name}': external data file '{location}' not found in {base_dir}"
        )
    try:
        onnx.external_data_helper.load_external_data_for_tensor(tensor, base)
    except Exception as err:  # onnx raises ValueError/OSError/checker errors here
        raise OnnxImportError(
            f"initializer '{tensor.name}': cannot read external data '{location}': {err}"
        ) from None


def tensor_to_numpy(tensor: TensorProto, what: str, base_dir: str | None = None) -> np.ndarray:
    """numpy value of a TensorProto, checking its stored size against its dims."""
    if tensor.data_location == TensorProto.EXTERNAL:
        _load_external(tensor, base_dir)
    if tensor.data_type in (TensorProto.STRING, TensorProto.UNDEFINED):
        raise OnnxImportError(f"{what}: element type {_type_name(tensor.data_type)} is not supported")
    dims = list(tensor.dims)
    if any(d < 0 for d in dims):
        raise OnnxImportError(f"{what}: negative dimension in {dims}")
    count = math.prod(dims)
    try:
        np_dtype = helper.tensor_dtype_to_np_dtype(tensor.data_type)
    except (KeyError, ValueError):
        raise OnnxImportError(f"{what}: unknown element type {tensor.data_type}") from None
    if tensor.HasField("raw_data"):
        bits = _bits_of(tensor.data_type, np_dtype)
        want = (count * bits + 7) // 8
        if len(tensor.raw_data) != want:
            raise OnnxImportError(
                f"{what}: raw_data holds {len(tensor.raw_data)} bytes but dims {dims} of "
                f"{_type_name(tensor.data_type)} need {want}"
            )
    else:
        field_name = helper.tensor_dtype_to_field(tensor.data_type)
        stored = len(getattr(tensor, field_name))
        per = 2 if tensor.data_type in (TensorProto.COMPLEX64, TensorProto.COMPLEX128) else 1
        if stored != count * per and not (stored == 0 and count == 0):
            raise OnnxImportError(
                f"{what}: holds {stored // per} values but dims {dims} need {count}"
            )
    try:
        return numpy_helper.to_array(tensor)
    except Exception as err:  # onnx's own decoding failed: name the tensor, not a traceback
        raise OnnxImportError(f"{what}: cannot decode tensor data: {err}") from None


def _bits_of(data_type: int, np_dtype: np.dtype) -> int:
    sub_byte = {TensorProto.INT4: 4, TensorProto.UINT4: 4}
    for name in ("INT2", "UINT2"):
        if hasattr(TensorProto, name):
            sub_byte[getattr(TensorProto, name)] = 2
    if hasattr(TensorProto, "FLOAT4E2M1"):
        sub_byte[TensorProto.FLOAT4E2M1] = 4
    return sub_byte.get(data_type, np.dtype(np_dtype).itemsize * 8)


def _type_name(data_type: int) -> str:
    try:
        return TensorProto.DataType.Name(data_type)
    except ValueError:
        return str(data_type)


def graph_element_type(data_type: int, what: str):
    """Builtin element type of an ONNX element type, or a clear error."""
    try:
        np_dtype = helper.tensor_dtype_to_np_dtype(data_type)
        return element_type_of(np_dtype)
    except (KeyError, ValueError, ShapeError, TypeError):
        raise OnnxImportError(
            f"{what}: element type {_type_name(data_type)} is not supported"
        ) from None


def attribute_values(node: onnx.NodeProto, base_dir: str | None, where: str = "") -> dict[str, Any]:
    where = where or node_where(node)
    out = {}
    for attr in node.attribute:
        if attr.ref_attr_name:
            raise OnnxImportError(
                f"{where}: attribute '{attr.name}' refers to a "
                "function attribute (only valid inside a function body)"
            )
        if attr.type == onnx.AttributeProto.TENSOR:
            out[attr.name] = tensor_to_numpy(attr.t, f"{where} attribute '{attr.name}'", base_dir)
            continue
        value = helper.get_attribute_value(attr)
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        elif isinstance(value, list) and value and isinstance(value[0], bytes):
            value = [v.decode("utf-8", "replace") for v in value]
        out[attr.name] = value
    return out


# ---------------------------------------------------------------------------
# the import
# ---------------------------------------------------------------------------


def _input_type(vi: onnx.ValueInfoProto, options: ImportOptions) -> TensorType:
    t = vi.type
    if t.WhichOneof("value") != "tensor_type":
        raise OnnxImportError(
            f"graph input '{vi.name}': only tensor inputs are supported, got "
            f"{t.WhichOneof('value') or 'no type'}"
        )
    element = graph_element_type(t.tensor_type.elem_type, f"graph input '{vi.name}'")
    declared = t.tensor_type.shape.dim if t.tensor_type.HasField("shape") else None
    override = options.input_shapes.get(vi.name)
    if override is not None:
        shape = [int(d) for d in override]
        if declared is not None and len(declared) != len(shape):
            raise OnnxImportError(
                f"graph input '{vi.name}': input_shapes gives rank {len(shape)} but the "
                f"model declares rank {len(declared)}"
            )
        for i, (d, o) in enumerate(zip(declared or [], shape)):
            if d.HasField("dim_value") and d.dim_value != o:
                raise OnnxImportError(
                    f"graph input '{vi.name}': input_shapes gives dim {i} = {o} but the "
                    f"model fixes it to {d.dim_value}"
                )
        if min(shape, default=0) < 0:
            raise OnnxImportError(f"graph input '{vi.name}': negative dim in input_shapes {shape}")
        return tensor_type(shape, element)
    if declared is None:
        raise OnnxImportError(
            f"graph input '{vi.name}' has no shape; pass input_shapes={{'{vi.name}': (...)}}"
        )
    shape = []
    for i, d in enumerate(declared):
        if d.HasField("dim_value") and d.dim_value < 0:
            raise OnnxImportError(f"graph input '{vi.name}': dim {i} is {d.dim_value} (a dim must be >= 0)")
        if not d.HasField("dim_value"):
            label = f" ('{d.dim_param}')" if d.dim_param else ""
            raise OnnxImportError(
                f"graph input '{vi.name}' has a dynamic dim {i}{label}; pass "
                f"input_shapes={{'{vi.name}': (...)}} to fix it"
            )
        shape.append(int(d.dim_value))
    return tensor_type(shape, element)


def _check_supported(graph: onnx.GraphProto, opset: int) -> None:
    """One error listing every unsupported op type, with counts and first node."""
    from dlc.frontends.onnx.registry import lookup

    counts: Counter[str] = Counter()
    first: dict[str, str] = {}
    for i, node in enumerate(graph.node):
        key = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}::{node.op_type}"
        if node.domain in ("", "ai.onnx") and (
                lookup(node.op_type) is not None or (opset and _expandable(node.op_type, opset))):
            continue
        counts[key] += 1
        first.setdefault(key, node.name or f"#{i}")
    if counts:
        parts = [f"{op} x{n} (first: '{first[op]}')" for op, n in sorted(counts.items())]
        raise OnnxImportError(
            f"unsupported ONNX op type{'s' if len(counts) > 1 else ''}{f' (opset {opset})' if opset else ''}: "
            + ", ".join(parts)
        )


def _check_old_opset(graph: onnx.GraphProto, opset: int) -> None:
    """Opsets below 7 are accepted only where every op means what it means at 7."""
    changed = set()
    for node in graph.node:
        try:
            old = onnx.defs.get_schema(node.op_type, opset).since_version
            new = onnx.defs.get_schema(node.op_type, 7).since_version
        except onnx.defs.SchemaError:
            old, new = None, 0
        if old != new:
            changed.add(node.op_type)
    if changed:
        raise OnnxImportError(
            f"opset {opset} is not supported for {', '.join(sorted(changed))} "
            "(these ops changed before opset 7; opset 7 and newer are supported)"
        )


def import_model(
    source: str | os.PathLike | ModelProto | bytes,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    constant_inputs: Mapping[str, np.ndarray] | None = None,
) -> ModuleOp:
    """Import an ONNX model (path, bytes or ModelProto) as a graph-dialect module.

    ``input_shapes`` fixes dynamic input dims (``{"x": (1, 3, 224, 224)}``);
    ``constant_inputs`` binds graph inputs to compile-time values (they are
    removed from the signature). The weights store is attached to the module.
    Raises :class:`OnnxImportError` with a one-line message on any problem.
    """
    model, base_dir = load_model(source)
    options = ImportOptions(dict(input_shapes or {}), dict(constant_inputs or {}))
    graph = model.graph
    check_opsets(model)
    check_graph_names(graph)
    opset = default_opset(model)
    _check_supported(graph, opset)
    if opset is None:
        raise OnnxImportError("the model imports no version of the default ONNX domain")
    if opset < 7:
        _check_old_opset(graph, opset)

    store = WeightStore()
    block = Block()
    ctx = ImportContext(block, store, opset)
    values: dict[str, Tensor] = {}

    initializer_names = set()
    for init in graph.initializer:
        what = f"initializer '{init.name}'"
        array = tensor_to_numpy(init, what, base_dir)
        graph_element_type(init.data_type, what)
        values[init.name] = ctx.constant(array, name=init.name)
        initializer_names.add(init.name)
    for unknown in options.input_shapes.keys() - {vi.name for vi in graph.input}:
        raise OnnxImportError(f"input_shapes names '{unknown}', which is not a graph input")

    arg_names = []
    for vi in graph.input:
        if vi.name in initializer_names:
            continue  # an initializer listed as input (IR < 4): a constant here
        if vi.name in options.constant_inputs:
            array = np.asarray(options.constant_inputs[vi.name])
            element = graph_element_type(vi.type.tensor_type.elem_type, f"graph input '{vi.name}'")
            values[vi.name] = ctx.constant(array.astype(numpy_dtype(element)), name=vi.name)
            continue
        type_ = _input_type(vi, options)
        arg = block.insert_arg(type_, len(block.args))
        values[vi.name] = Tensor(vi.name, type_, ssa=arg, graph_input=vi.name, sources=(vi.name,))
        arg_names.append(vi.name)

    _convert_nodes(graph, ctx, values, base_dir, opset)

    results, names, extents = [], [vi.name for vi in graph.output], []
    for index, vi in enumerate(graph.output):
        t = values.get(vi.name)
        if t is None:
            raise OnnxImportError(f"graph output '{vi.name}' is not produced by any node")
        if t.extent is not None:  # the bounded buffer, plus its count as a hidden result
            count, dim, _ = t.extent
            check_declared_outputs(vi, t.type, run_time_dim=dim)
            results.append(t.ssa)
            extents.append((ctx.value(count), index, dim))
            continue
        check_declared_outputs(vi, t.type)
        results.append(ctx.value(t))
    extra_attrs = [{} for _ in results]
    for count, index, dim in extents:
        results.append(count)
        names.append(f"{names[index]}:extent")
        extra_attrs.append({EXTENT_OF_ATTR: extent_of_attr(index, dim)})
    return ctx.finish(results, arg_names, names, extra_attrs)


def bounded_use_error(t: Tensor) -> str:
    """Why a value with a data-dependent extent cannot feed an op (yet)."""
    _, dim, producer = t.extent
    return (f"input '{t.name}' has a data-dependent dim {dim} (made by {producer}); such a value "
            "can only be a graph output, not an operand of another op (needs symbolic shapes)")


def _convert_nodes(graph, ctx: ImportContext, values: dict[str, Tensor], base_dir, opset) -> None:
    ctx.values = values  # If/Loop/Scan bodies read outer-scope values by name
    check_single_producers(graph)
    for index, proto in enumerate(graph.node):
        _convert_node(proto, node_where(proto, index), ctx, values, base_dir, opset)


def _convert_node(proto: onnx.NodeProto, label: str, ctx: ImportContext,
                  values: dict[str, Tensor], base_dir, opset: int) -> None:
    """Convert one node; ``label`` is how errors name it (``node 'a' (Add, #3)``)."""
    from dlc.frontends.onnx.ops_narrow import compute_in_f32, expand_in_f32
    from dlc.frontends.onnx.registry import lookup

    inputs: list[Tensor | None] = []
    for name in proto.input:
        if not name:
            inputs.append(None)  # an omitted optional input
            continue
        t = values.get(name)
        if t is None:
            raise OnnxImportError(
                f"{label}: input '{name}' is not produced by "
                "any earlier node, initializer or graph input (dangling edge)"
            )
        if t.extent is not None:
            raise OnnxImportError(f"{label}: {bounded_use_error(t)}")
        inputs.append(t)
    check_node_schema(proto, opset, label)
    converter = lookup(proto.op_type)
    if converter is None:
        expand_in_f32(proto, label, inputs, ctx, values, base_dir, opset, _expand_function)
        return
    node = Node(proto, inputs, attribute_values(proto, base_dir, label), opset, label)
    ctx.node = node
    try:
        # numpy's float warnings (an f16 attribute overflowing to inf...) are IEEE results the
        # compiled code gives silently too; inputs that are invalid are checked by the converters
        with np.errstate(all="ignore"):
            outs = compute_in_f32(node, ctx, converter)  # bf16 inputs of arithmetic ops
    except OnnxImportError:
        raise
    except ShapeError as err:
        raise ctx.error(str(err)) from None
    except Exception as err:  # a malformed node (missing attribute, odd input): name it
        raise ctx.error(
            f"cannot convert ({type(err).__name__}: {err}; check its attributes and inputs)"
        ) from err
    ctx.node = None
    for name, t in zip(proto.output, outs):
        if name and t is not None:
            values[name] = t
    for name in list(proto.output)[len(outs):]:
        if name:
            raise OnnxImportError(f"{label}: output '{name}' is not supported")


def _expand_function(proto, label, inputs, ctx, values, base_dir, opset) -> None:
    """Convert the body of an op the standard defines as a function."""
    from dlc.frontends.onnx.functions import function_body
    from dlc.frontends.onnx.registry import lookup

    types = [None if t is None else helper.make_tensor_type_proto(
        helper.np_dtype_to_tensor_dtype(t.dtype), list(t.shape)) for t in inputs]
    expanded = function_body(proto, opset, types)
    if expanded is None:
        raise OnnxImportError(f"{label}: no converter and no function body")
    body, body_opset = expanded
    missing = sorted({n.op_type for n in body if n.domain in ("", "ai.onnx") and lookup(n.op_type) is None
                      and not _expandable(n.op_type, body_opset)}
                     | {f"{n.domain}::{n.op_type}" for n in body if n.domain not in ("", "ai.onnx")})
    if missing:
        raise OnnxImportError(
            f"{label}: its function body uses unsupported "
            f"op type{'s' if len(missing) > 1 else ''} {', '.join(missing)}"
        )
    for inner in body:
        _convert_node(inner, f"{node_where(inner)} in the function body of {label}", ctx, values,
                      base_dir, body_opset)


def _expandable(op_type: str, opset: int) -> bool:
    from dlc.frontends.onnx.functions import has_function

    return has_function(op_type, opset)
