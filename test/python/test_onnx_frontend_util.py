"""Helpers of the ONNX frontend tests (no tests here): build one-node models, run them through
dlc's importer + reference evaluator and through onnx's ReferenceEvaluator."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from dlc.evaluator import evaluate
from dlc.frontends.onnx import import_model

ONNX_TYPE = {
    np.dtype(np.float32): TensorProto.FLOAT,
    np.dtype(np.float64): TensorProto.DOUBLE,
    np.dtype(np.float16): TensorProto.FLOAT16,
    np.dtype(np.int64): TensorProto.INT64,
    np.dtype(np.int32): TensorProto.INT32,
    np.dtype(np.int8): TensorProto.INT8,
    np.dtype(np.uint8): TensorProto.UINT8,
    np.dtype(np.bool_): TensorProto.BOOL,
}


class Init:
    """Marks a node input given in ``inputs`` as an initializer (keeps its position)."""

    def __init__(self, array):
        self.array = np.asarray(array)


def node_model(op_type: str, inputs: dict, outputs: int | list[str] = 1, opset: int = 17,
               initializers: dict | None = None, **attrs) -> onnx.ModelProto:
    """A model of one node. ``inputs``: name -> array (graph input) or None (an
    omitted optional input) or Init(array) (an initializer in that position);
    ``initializers``: name -> array (also node inputs, listed after ``inputs``).
    Output shapes are left to the importer."""
    initializers = dict(initializers or {})
    for name, value in list(inputs.items()):
        if isinstance(value, Init):
            initializers[name] = value.array
    inputs = {k: (None if isinstance(v, Init) else v) for k, v in inputs.items()}
    in_place = {k for k, v in inputs.items() if v is None and k in initializers}
    names = list(inputs) + [n for n in initializers if n not in inputs]
    out_names = [f"out{i}" for i in range(outputs)] if isinstance(outputs, int) else outputs
    node = helper.make_node(op_type, [n if inputs.get(n, 1) is not None or n in in_place else ""
                                      for n in names],
                            out_names, name=f"{op_type.lower()}_node", **attrs)
    graph_inputs = [
        helper.make_tensor_value_info(n, ONNX_TYPE[np.asarray(a).dtype], np.asarray(a).shape)
        for n, a in inputs.items() if a is not None
    ]
    graph_outputs = [helper.make_tensor_value_info(n, TensorProto.UNDEFINED, None) for n in out_names]
    inits = [numpy_helper.from_array(np.asarray(a), n) for n, a in initializers.items()]
    graph = helper.make_graph([node], "g", graph_inputs, graph_outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def run_dlc(model: onnx.ModelProto, feeds: dict, **kwargs) -> list[np.ndarray]:
    module = import_model(model, **kwargs)
    consts = kwargs.get("constant_inputs", {})
    args = [feeds[vi.name] for vi in model.graph.input
            if vi.name in feeds and vi.name not in consts
            and vi.name not in {i.name for i in model.graph.initializer}]
    return evaluate(module, args)


def run_reference(model: onnx.ModelProto, feeds: dict) -> list[np.ndarray]:
    return ReferenceEvaluator(model).run(None, feeds)


def check_against_reference(model: onnx.ModelProto, feeds: dict, rtol=1e-4, atol=1e-5, **kwargs):
    """Import + evaluate with dlc, compare with onnx's ReferenceEvaluator."""
    got = run_dlc(model, feeds, **kwargs)
    want = run_reference(model, {k: v for k, v in feeds.items() if v is not None})
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w = np.asarray(w)
        assert g.shape == w.shape, (g.shape, w.shape)
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(g, w)
    return got
