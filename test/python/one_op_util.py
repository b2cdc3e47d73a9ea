"""Helpers of the one-op tests: compile a single graph op (or a one-node ONNX model)
through dlc and compare it with numpy, onnx.reference or onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Region

from dlc.dialects.graph_base import tensor_type_of
from dlc.driver import compile as dlc_compile
from dlc.frontends.onnx import import_model

RNG = np.random.default_rng(2026)


def compile_op(op_cls, arrays, **attrs):
    """(compiled one-op function, the op) for operands typed like ``arrays``."""
    types = [tensor_type_of(np.asarray(a)) for a in arrays]
    block = Block(arg_types=types)
    op = op_cls.make(*block.args, **attrs)
    block.add_op(op)
    block.add_op(func.ReturnOp(*op.results))
    module = ModuleOp([func.FuncOp("main", (types, [r.type for r in op.results]), Region(block))])
    module.verify()
    return dlc_compile(module), op


def run_compiled(op_cls, arrays, **attrs) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(compiled results, the op's numpy reference results)."""
    compiled, op = compile_op(op_cls, arrays, **attrs)
    got = compiled(*arrays)
    got = list(got) if isinstance(got, (list, tuple)) else [got]
    return got, op.reference(*arrays)


def exact(op_cls, arrays, **attrs) -> list[np.ndarray]:
    got, want = run_compiled(op_cls, arrays, **attrs)
    for a, b in zip(got, want, strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, a.shape, b.dtype, b.shape)
        np.testing.assert_array_equal(a, b)
    return got


def integers(shape, dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)


def onnx_model(node: onnx.NodeProto, inputs: dict, inits: dict | None = None, opset: int = 21):
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
         for n, a in inputs.items()],
        [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in node.output],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in (inits or {}).items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def ort_max_pool(x: np.ndarray, **attrs) -> list[np.ndarray]:
    """onnxruntime's MaxPool (values and indices): the oracle for indices."""
    import onnxruntime

    node = helper.make_node("MaxPool", ["x"], ["y", "i"], **attrs)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("i", TensorProto.INT64, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)])
    model.ir_version = 8
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})


def run_onnx_compiled(model: onnx.ModelProto, inputs: dict) -> list[np.ndarray]:
    got = dlc_compile(import_model(model))(*inputs.values())
    return list(got) if isinstance(got, (list, tuple)) else [got]
