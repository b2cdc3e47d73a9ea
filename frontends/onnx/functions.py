"""Expanding ONNX ops that have no converter into their schema's function body.

Many newer ONNX ops (Attention, RotaryEmbedding, SwiGLU, the window ops...)
are defined by the standard as *functions*: a body of simpler ONNX nodes. When
dlc has no converter for such an op, the importer converts that body instead,
exactly as onnx's own backend tests do for their ``*_expanded`` cases.

Why our own: onnx's inliner only handles model-local functions; schema
function bodies (plain or context-dependent, which need the input types) come
from ``onnx.defs`` and are renamed into the caller's graph here.
"""

from __future__ import annotations

import onnx
from onnx import FunctionProto, NodeProto, TypeProto


def _schema(op_type: str, opset: int):
    try:
        return onnx.defs.get_schema(op_type, opset, "")
    except onnx.defs.SchemaError:
        return None


def has_function(op_type: str, opset: int) -> bool:
    """Does the standard define ``op_type`` (at ``opset``) by a function body?"""
    schema = _schema(op_type, opset)
    if schema is None:
        return False
    versions = list(schema.function_opset_versions) + list(
        schema.context_dependent_function_opset_versions)
    return any(v <= opset for v in versions)


def function_body(node: NodeProto, opset: int, input_types: list[TypeProto | None]
                  ) -> tuple[list[NodeProto], int] | None:
    """The nodes replacing ``node`` and the default-domain opset they use, or None."""
    schema = _schema(node.op_type, opset)
    if schema is None:
        return None
    plain = [v for v in schema.function_opset_versions if v <= opset]
    dependent = [v for v in schema.context_dependent_function_opset_versions if v <= opset]
    proto = FunctionProto()
    if plain and (not dependent or max(plain) >= max(dependent)):
        proto.ParseFromString(schema.get_function_with_opset_version(max(plain)))
    elif dependent:
        types = [(t or TypeProto()).SerializeToString() for t in input_types]
        try:
            data = schema.get_context_dependent_function_with_opset_version(
                max(dependent), node.SerializeToString(), types)
        except Exception:  # onnx rejects the node (e.g. unknown input types)
            return None
        if not data:
            return None
        proto.ParseFromString(data)
    else:
        return None
    body_opset = next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), opset)
    return _rename(node, proto, schema), body_opset


def _rename(node: NodeProto, proto: FunctionProto, schema) -> list[NodeProto]:
    """The body's nodes with the caller's edge names and attributes substituted."""
    prefix = f"{node.name or node.op_type}/"
    names = {}
    for i, formal in enumerate(proto.input):
        names[formal] = node.input[i] if i < len(node.input) else ""
    for i, formal in enumerate(proto.output):
        if i < len(node.output) and node.output[i]:
            names[formal] = node.output[i]
    # the caller's attributes, over the function's and then the schema's defaults
    attrs = {name: a.default_value for name, a in schema.attributes.items()
             if a.default_value.type != onnx.AttributeProto.UNDEFINED}
    attrs.update({a.name: a for a in proto.attribute_proto})
    attrs.update({a.name: a for a in node.attribute})

    def rename(name: str) -> str:
        if name in names:
            return names[name]
        return prefix + name if name else ""

    body = []
    for i, inner in enumerate(proto.node):
        out = NodeProto()
        out.CopyFrom(inner)
        out.name = prefix + (inner.name or f"#{i}")
        del out.input[:]
        out.input.extend(rename(n) for n in inner.input)
        del out.output[:]
        out.output.extend(rename(n) for n in inner.output)
        del out.attribute[:]
        for attr in inner.attribute:
            if attr.ref_attr_name:
                if attr.ref_attr_name in attrs:  # absent, no default: the inner op's default
                    bound = onnx.AttributeProto()
                    bound.CopyFrom(attrs[attr.ref_attr_name])
                    bound.name = attr.name
                    out.attribute.append(bound)
            elif attr.type == onnx.AttributeProto.GRAPH:  # If/Loop/Scan bodies
                bound = onnx.AttributeProto()
                bound.CopyFrom(attr)
                _rename_outer_names(bound.g, rename)
                out.attribute.append(bound)
            else:
                out.attribute.append(attr)
        body.append(out)
    return body


def _rename_outer_names(graph: onnx.GraphProto, rename) -> None:
    """Rename (in place) the names a nested body reads from the function body."""
    local = ({i.name for i in graph.input} | {i.name for i in graph.initializer}
             | {o for n in graph.node for o in n.output})

    def outer(name: str) -> str:
        return name if not name or name in local else rename(name)

    for n in graph.node:
        for k, name in enumerate(n.input):
            n.input[k] = outer(name)
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                _rename_outer_names(a.g, outer)
    for o in graph.output:
        o.name = outer(o.name)
