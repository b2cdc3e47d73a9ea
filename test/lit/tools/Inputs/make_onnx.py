"""Write a small ONNX model for the tools' tests: y = x + W (W: 10x10, 100 elements)."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

weight = numpy_helper.from_array(np.arange(100, dtype=np.float32).reshape(10, 10), "W")
node = helper.make_node("Add", ["x", "W"], ["y"])
graph = helper.make_graph(
    [node], "add",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [10, 10])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [10, 10])],
    [weight],
)
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[1])
