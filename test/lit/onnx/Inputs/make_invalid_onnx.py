"""Write an invalid ONNX model for import-checks.test: `make_invalid_onnx.py NAME OUT.onnx`.

Each model is one that onnxruntime refuses; dlc must refuse it too, in one line."""

import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper


def vi(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def model(nodes, outputs=None, inits=(), opset=17):
    outputs = outputs or [vi("y", None, TensorProto.UNDEFINED)]
    inits = [numpy_helper.from_array(np.asarray(a), n) for n, a in dict(inits).items()]
    m = helper.make_model(helper.make_graph(nodes, "g", [vi("x", [2, 3])], outputs, inits),
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


MODELS = {
    "gather": lambda: model([helper.make_node("Gather", ["x", "i"], ["y"], name="g0")],
                            inits={"i": np.array([5], np.int64)}),
    "two_producers": lambda: model([helper.make_node("Relu", ["x"], ["y"], name="a"),
                                    helper.make_node("Neg", ["x"], ["y"], name="b")]),
    "opset99": lambda: model([helper.make_node("Relu", ["x"], ["y"])], opset=99),
    "perm_floats": lambda: model([helper.make_node("Transpose", ["x"], ["y"], name="t", perm=[1.0, 0.0])]),
    "declared": lambda: model([helper.make_node("Relu", ["x"], ["y"])], outputs=[vi("y", [7, 7], TensorProto.INT64)]),
    "reduce_axes": lambda: model([helper.make_node("ReduceSum", ["x", "ax"], ["y"], name="r")],
                                 inits={"ax": np.array([9], np.int64)}),
}

if __name__ == "__main__":
    with open(sys.argv[2], "wb") as f:
        f.write(MODELS[sys.argv[1]]().SerializeToString())
