"""Build examples/small_cnn.onnx: a small image classifier (seeded random weights).

conv3x3 -> batchnorm -> relu -> maxpool -> conv3x3 -> relu -> global avg pool
-> flatten -> gemm -> softmax, on a 1x3x32x32 input. Run it with
`dlc run examples/small_cnn.onnx --check`.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def build() -> onnx.ModelProto:
    rng = np.random.default_rng(0)

    def init(name, *shape, scale=0.1):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    inits = [
        init("conv1.w", 16, 3, 3, 3, scale=0.3), init("conv1.b", 16),
        numpy_helper.from_array(rng.uniform(0.5, 1.5, 16).astype(np.float32), "bn.scale"),
        init("bn.bias", 16), init("bn.mean", 16),
        numpy_helper.from_array(rng.uniform(0.5, 1.5, 16).astype(np.float32), "bn.var"),
        init("conv2.w", 32, 16, 3, 3, scale=0.1), init("conv2.b", 32),
        init("fc.w", 10, 32, scale=0.3), init("fc.b", 10),
    ]
    nodes = [
        helper.make_node("Conv", ["image", "conv1.w", "conv1.b"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "bn.scale", "bn.bias", "bn.mean", "bn.var"], ["b1"], name="bn1"),
        helper.make_node("Relu", ["b1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "conv2.w", "conv2.b"], ["c2"], name="conv2", pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "fc.w", "fc.b"], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes, "small_cnn",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 32, 32])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 10])],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="dlc-examples")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "small_cnn.onnx")
    onnx.save(build(), out)
    print(f"wrote {out}")
