"""Model checks the ONNX importer runs before and after converting, as onnxruntime does.

onnxruntime refuses a model that is not well formed (an unknown opset, two
producers of one value, an attribute of the wrong type, a declared output type
its graph does not make); converting such a model anyway gives an answer the
model never meant (the second producer silently wins, a float ``perm`` is
truncated). Each check raises :class:`OnnxImportError` with one line naming the
node (``node 'name' (OpType, #index)``), graph input or output, and the
attribute, input or dim at fault. The rules come from onnx itself: the opset
ranges from ``onnx.defs.C.schema_version_map()``, attribute types and input
arity from the op's ``OpSchema``.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import AttributeProto, ModelProto, TensorProto, helper
from xdsl.dialects.builtin import TensorType

from dlc.dialects.graph_base import numpy_dtype
from dlc.frontends.onnx.errors import OnnxImportError

DEFAULT_DOMAINS = ("", "ai.onnx")


def node_where(proto: onnx.NodeProto, index: int | None = None) -> str:
    """How errors name a node: ``node 'conv1' (Conv, #3)``, ``node #3 (Conv)`` when unnamed."""
    at = "" if index is None else f", #{index}"
    if proto.name:
        return f"node '{proto.name}' ({proto.op_type}{at})"
    return f"node #{index} ({proto.op_type})" if index is not None else f"node ({proto.op_type})"


# ---------------------------------------------------------------------------
# opsets
# ---------------------------------------------------------------------------


def check_opsets(model: ModelProto) -> None:
    """Every opset_import of an ONNX domain names a version the installed onnx knows."""
    known = onnx.defs.C.schema_version_map()  # domain -> (first, last) version
    seen: dict[str, int] = {}
    for entry in model.opset_import:
        domain = "" if entry.domain == "ai.onnx" else entry.domain
        label = entry.domain or "ai.onnx"
        if domain in seen:
            raise OnnxImportError(f"opset_import lists domain '{label}' twice "
                                  f"(versions {seen[domain]} and {entry.version})")
        seen[domain] = entry.version
        if domain not in known:
            continue  # a domain dlc has no converters for: its nodes are reported as unsupported
        first, last = known[domain]
        if not first <= entry.version <= last:
            raise OnnxImportError(
                f"opset_import: domain '{label}' version {entry.version} is not known (onnx "
                f"{onnx.__version__} defines versions {first} to {last})"
            )


# ---------------------------------------------------------------------------
# names
# ---------------------------------------------------------------------------


def check_graph_names(graph: onnx.GraphProto, what: str = "graph") -> None:
    """Graph inputs and initializers named once and non-empty; graph outputs non-empty."""
    _check_unique_names([vi.name for vi in graph.input], f"{what} input", "inputs")
    _check_unique_names([init.name for init in graph.initializer], f"{what} initializer", "initializers")
    for i, vi in enumerate(graph.output):
        if not vi.name:
            raise OnnxImportError(f"{what} output #{i} has an empty name")


def _check_unique_names(names: list[str], kind: str, plural: str) -> None:
    """Each of ``names`` non-empty and given once (``kind``: "graph input", ...)."""
    first: dict[str, int] = {}
    for i, name in enumerate(names):
        if not name:
            raise OnnxImportError(f"{kind} #{i} has an empty name")
        if name in first:
            raise OnnxImportError(f"{kind} '{name}' is declared twice ({plural} #{first[name]} and #{i})")
        first[name] = i


def check_single_producers(graph: onnx.GraphProto) -> None:
    """Each value has one producer: no node output repeats another's, a graph input's or an initializer's name."""
    producer: dict[str, str] = {}
    for vi in graph.input:
        producer[vi.name] = f"graph input '{vi.name}'"
    for init in graph.initializer:
        producer[init.name] = f"initializer '{init.name}'"
    for index, proto in enumerate(graph.node):
        for name in proto.output:
            if not name:
                continue
            if name in producer:
                raise OnnxImportError(
                    f"{node_where(proto, index)}: output '{name}' is already produced by {producer[name]} "
                    "(each value must have one producer)"
                )
            producer[name] = node_where(proto, index)


# ---------------------------------------------------------------------------
# a node against its schema
# ---------------------------------------------------------------------------


def _attr_type_name(t: int) -> str:
    return AttributeProto.AttributeType.Name(t) if t in AttributeProto.AttributeType.values() else str(t)


def node_schema(proto: onnx.NodeProto, opset: int, where: str):
    """The op's schema at ``opset`` (default domain), or None for another domain."""
    if proto.domain not in DEFAULT_DOMAINS:
        return None
    try:
        return onnx.defs.get_schema(proto.op_type, opset, "")
    except onnx.defs.SchemaError:
        if not onnx.defs.has(proto.op_type):
            return None  # not an onnx op at all: reported as unsupported where converters are looked up
        raise OnnxImportError(
            f"{where}: op {proto.op_type} does not exist in opset {opset} (onnx defines it "
            f"from opset {_first_version(proto.op_type)})"
        ) from None


def _first_version(op_type: str) -> int:
    return min(s.since_version for s in onnx.defs.get_all_schemas_with_history()
               if s.name == op_type and s.domain == "")


def check_node_schema(proto: onnx.NodeProto, opset: int, where: str) -> None:
    """Attributes known, of their schema's type, required ones present; input count and required inputs."""
    schema = node_schema(proto, opset, where)
    if schema is None:
        return
    declared = schema.attributes
    for attr in proto.attribute:
        spec = declared.get(attr.name)
        if spec is None:
            raise OnnxImportError(
                f"{where}: unknown attribute '{attr.name}' ({proto.op_type} at opset {opset} has "
                + (", ".join(f"'{n}'" for n in sorted(declared)) or "no attributes") + ")"
            )
        want = int(spec.type.value)
        if attr.type == AttributeProto.UNDEFINED:
            raise OnnxImportError(f"{where}: attribute '{attr.name}' has no type (expected {_attr_type_name(want)})")
        if attr.type != want:
            raise OnnxImportError(
                f"{where}: attribute '{attr.name}' is {_attr_type_name(attr.type)}, expected {_attr_type_name(want)}"
            )
    given = {a.name for a in proto.attribute}
    for name, spec in declared.items():
        if spec.required and name not in given:
            raise OnnxImportError(f"{where}: missing required attribute '{name}'")
    n = len(proto.input)
    if n > schema.max_input:
        raise OnnxImportError(f"{where}: takes at most {schema.max_input} inputs, got {n}")
    if n < schema.min_input:
        raise OnnxImportError(f"{where}: takes at least {schema.min_input} inputs, got {n}")
    formals = schema.inputs
    optional = onnx.defs.OpSchema.FormalParameterOption.Optional
    for i, name in enumerate(proto.input):
        if name or not formals:
            continue
        formal = formals[min(i, len(formals) - 1)]
        if formal.option != optional:
            raise OnnxImportError(f"{where}: input {i} ('{formal.name}') is required but its name is empty")
    if len(proto.output) > schema.max_output:
        raise OnnxImportError(f"{where}: has at most {schema.max_output} outputs, got {len(proto.output)}")


# ---------------------------------------------------------------------------
# declared output types against inferred ones
# ---------------------------------------------------------------------------


def _type_text(elem: str, dims: list) -> str:
    return f"{elem}[{','.join(str(d) for d in dims)}]" if dims is not None else f"{elem}[?]"


def check_declared_outputs(vi: onnx.ValueInfoProto, inferred: TensorType,
                           run_time_dim: int | None = None) -> None:
    """A graph output's declared tensor type agrees with what its graph makes.

    The element type must match when declared; a declared shape must have the
    inferred rank, and every static dim (``dim_value``) must equal the inferred
    one; symbolic (``dim_param``) and unknown dims match anything, as does
    ``run_time_dim`` (a data-dependent extent: the inferred dim is its bound).
    """
    if vi.type.WhichOneof("value") != "tensor_type":
        return
    declared = vi.type.tensor_type
    shape = [int(d) for d in inferred.get_shape()]
    got_np = numpy_dtype(inferred.element_type)
    got = str(got_np)
    want = got
    if declared.elem_type != TensorProto.UNDEFINED:
        try:
            want_np = np.dtype(helper.tensor_dtype_to_np_dtype(declared.elem_type))
            want = str(want_np)
        except (KeyError, ValueError, TypeError):
            want_np = None
            want = _onnx_type_name(declared.elem_type)
        same = want_np is not None and want_np == got_np
        if not same:
            dims = None if not declared.HasField("shape") else [
                d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in declared.shape.dim]
            raise OnnxImportError(
                f"graph output '{vi.name}': declared type {_type_text(want, dims)} but the graph "
                f"makes {_type_text(got, shape)} (element type differs)"
            )
    if not declared.HasField("shape"):
        return
    dims = list(declared.shape.dim)
    text = [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in dims]
    declared_text, made = _type_text(want, text), _type_text(got, shape)
    if len(dims) != len(shape):
        raise OnnxImportError(
            f"graph output '{vi.name}': declared type {declared_text} but the graph makes {made} "
            f"(rank {len(dims)} vs {len(shape)})"
        )
    for i, (d, n) in enumerate(zip(dims, shape)):
        if d.HasField("dim_value") and d.dim_value != n and i != run_time_dim:
            raise OnnxImportError(
                f"graph output '{vi.name}': declared type {declared_text} but the graph makes {made} "
                f"(dim {i} is {d.dim_value}, inferred {n})"
            )


def _onnx_type_name(data_type: int) -> str:
    try:
        return TensorProto.DataType.Name(data_type).lower()
    except ValueError:
        return f"element type {data_type}"
