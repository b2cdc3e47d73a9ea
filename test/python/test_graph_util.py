"""Helpers shared by the graph-dialect tests (building ops on fresh values,
running single ONNX nodes through ``onnx.reference``), plus their own checks."""

from __future__ import annotations

import io

import numpy as np
import pytest
from xdsl.ir import Block
from xdsl.parser import Parser
from xdsl.printer import Printer

import dlc.frontends.te  # noqa: F401  (graph.custom's "te" language, as the tools load it)
from dlc.context import make_context
from dlc.dialects.graph_base import numpy_dtype, tensor_type_of

RNG = np.random.default_rng(0)


def values(*types):
    """Fresh SSA values (block arguments) of the given types."""
    return Block(arg_types=list(types)).args


def build(op_cls, arrays, **attrs):
    """``op_cls.make`` on values typed like ``arrays``, verified."""
    op = op_cls.make(*values(*(tensor_type_of(np.asarray(a)) for a in arrays)), **attrs)
    op.verify()
    return op


def run(op_cls, arrays, **attrs) -> list[np.ndarray]:
    """Build the op and run its reference; checks the result types agree with
    the arrays the reference returns (shape and dtype)."""
    op = build(op_cls, arrays, **attrs)
    outs = op.reference(*arrays)
    assert len(outs) == len(op.results)
    for result, out in zip(op.results, outs):
        out = np.asarray(out)
        assert tuple(result.type.get_shape()) == out.shape, (op.name, result.type, out.shape)
        assert numpy_dtype(result.type.element_type) == out.dtype, (op.name, result.type, out.dtype)
    return outs


def rand(*shape, dtype=np.float32, low=-3.0, high=3.0) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return RNG.random(shape) < 0.5
    if dtype.kind in "iu":
        lo = 0 if dtype.kind == "u" else int(low)
        return RNG.integers(lo, int(high) + 1, size=shape).astype(dtype)
    return RNG.uniform(low, high, size=shape).astype(dtype)


def onnx_run(op_type: str, inputs, attrs=None, const_inputs=(), opset: int = 18, n_out: int = 1,
             engine: str = "reference"):
    """Run one ONNX node with ``onnx.reference`` (or ``engine="ort"``:
    onnxruntime, whose pooling is right where onnx.reference's is not).
    ``inputs`` are fed; entries of ``const_inputs`` (arrays or None for an
    absent optional input) follow them."""
    import onnx
    from onnx import helper, numpy_helper
    from onnx.reference import ReferenceEvaluator

    names, feeds, inits, graph_inputs = [], {}, [], []
    for i, a in enumerate(inputs):
        a = np.asarray(a)
        name = f"in{i}"
        names.append(name)
        feeds[name] = a
        graph_inputs.append(
            helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
        )
    for i, c in enumerate(const_inputs):
        if c is None:
            names.append("")
            continue
        name = f"const{i}"
        names.append(name)
        inits.append(numpy_helper.from_array(np.asarray(c), name))
    outs = [f"out{i}" for i in range(n_out)]
    out_type = onnx.TensorProto.UNDEFINED
    if engine == "ort":
        out_type = helper.np_dtype_to_tensor_dtype(np.asarray(inputs[0]).dtype)
    node = helper.make_node(op_type, names, outs, **(attrs or {}))
    graph = helper.make_graph(
        [node], "g", graph_inputs,
        # onnxruntime wants typed outputs: the ops run with it keep the input's type
        [helper.make_tensor_value_info(o, out_type, None) for o in outs],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    if engine == "ort":
        import onnxruntime

        session = onnxruntime.InferenceSession(
            model.SerializeToString(), providers=["CPUExecutionProvider"]
        )
        return session.run(None, feeds)
    return ReferenceEvaluator(model).run(None, feeds)


def parse(text: str):
    module = Parser(make_context(), text).parse_module()
    module.verify()
    return module


def to_text(op, generic: bool = False) -> str:
    out = io.StringIO()
    Printer(out, print_generic_format=generic).print_op(op)
    return out.getvalue()


# -- checks of the helpers themselves ------------------------------------------


def test_onnx_run_add():
    a, b = rand(2, 3), rand(3)
    np.testing.assert_allclose(onnx_run("Add", [a, b])[0], a + b)
