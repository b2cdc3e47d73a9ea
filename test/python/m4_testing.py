"""Shared by the Cortex-M4 tests (test_c_cortex_m4.py: the C target; test_cortex_m4_llvm.py:
the llvm bare-metal object): the MNIST-sized CNN they run under qemu-system-arm."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh


def mnist_cnn(seed: int = 0) -> onnx.ModelProto:
    """28x28x1 -> conv 8 -> relu -> pool -> conv 16 -> relu -> pool -> dense 32 -> relu ->
    dense 10 -> softmax; 26 698 random parameters."""
    rng = np.random.default_rng(seed)

    def w(name, *shape, scale=0.2):
        return nh.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    inits = [w("c1.w", 8, 1, 3, 3), w("c1.b", 8), w("c2.w", 16, 8, 3, 3, scale=0.1), w("c2.b", 16),
             w("fc1.w", 784, 32, scale=0.05), w("fc1.b", 32), w("fc2.w", 32, 10), w("fc2.b", 10),
             nh.from_array(np.array([1, 784], np.int64), "flat")]
    nodes = [
        h.make_node("Conv", ["image", "c1.w", "c1.b"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
        h.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        h.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2], name="pool1"),
        h.make_node("Conv", ["p1", "c2.w", "c2.b"], ["c2"], pads=[1, 1, 1, 1], name="conv2"),
        h.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        h.make_node("MaxPool", ["r2"], ["p2"], kernel_shape=[2, 2], strides=[2, 2], name="pool2"),
        h.make_node("Reshape", ["p2", "flat"], ["f"], name="flatten"),
        h.make_node("Gemm", ["f", "fc1.w", "fc1.b"], ["d1"], name="fc1"),
        h.make_node("Relu", ["d1"], ["r3"], name="relu3"),
        h.make_node("Gemm", ["r3", "fc2.w", "fc2.b"], ["logits"], name="fc2"),
        h.make_node("Softmax", ["logits"], ["probs"], axis=1, name="softmax"),
    ]
    graph = h.make_graph(nodes, "mnist", [h.make_tensor_value_info("image", T.FLOAT, [1, 1, 28, 28])],
                         [h.make_tensor_value_info("probs", T.FLOAT, [1, 10])], inits)
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def mnist_params(model: onnx.ModelProto) -> int:
    return sum(int(np.prod(t.dims)) for t in model.graph.initializer if t.data_type == T.FLOAT)
