"""An MNIST-sized CNN through the C target on a Cortex-M4: ``arm-none-eabi-gcc
-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16`` links the archive with
backends/c/harness (startup, linker script, semihosting main), ``qemu-system-arm -M
mps2-an386`` runs it, and the outputs equal the host run's (and onnxruntime's within
float tolerance). Skipped, with the missing Debian packages named, without the tools.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

import dlc
from dlc.backends.c.toolchain import missing_m4_tools, run_m4, run_on_host


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


def test_mnist_cnn_on_cortex_m4_matches_host(tmp_path):
    missing = missing_m4_tools()
    if missing is not None:
        pytest.skip(f"cortex-m4 test: {missing}")
    model = mnist_cnn()
    params = sum(int(np.prod(t.dims)) for t in model.graph.initializer if t.data_type == T.FLOAT)
    assert 10_000 <= params <= 100_000
    program = dlc.compile(model, target="c")
    x = np.random.default_rng(1).random((1, 1, 28, 28)).astype(np.float32)
    (tmp_path / "host").mkdir()
    (tmp_path / "m4").mkdir()
    host = run_on_host(program, [x], str(tmp_path / "host"))
    m4 = run_m4(program, [x], str(tmp_path / "m4"))
    np.testing.assert_allclose(m4.outputs[0], host[0], rtol=1e-5, atol=1e-7)  # bit-exact in practice
    import onnxruntime as ort

    want = ort.InferenceSession(model.SerializeToString()).run(None, {"image": x})[0]
    np.testing.assert_allclose(m4.outputs[0], want, rtol=1e-4, atol=1e-6)
    ws = program.metadata["workspace"]
    assert ws["peak_live_bytes"] <= ws["bytes"] <= ws["sum_of_buffers"]
    assert m4.model_flash >= program.constant_bytes  # the weights are in flash (text + rodata)
    assert m4.sizes[".bss"] >= ws["bytes"]  # the arena is RAM
    assert m4.sizes[".data"] < 1024  # nothing big copied from flash at reset
    print(f"\ncortex-m4 mnist cnn: {params} parameters; model flash (text+rodata of model.o + weights.o) "
          f"{m4.model_flash} bytes; ELF .text {m4.sizes['.text']} .rodata {m4.sizes['.rodata']}; "
          f"RAM .data+.bss {m4.sizes['.data'] + m4.sizes['.bss']} + stack {m4.stack_bytes} = {m4.ram} bytes; "
          f"arena {ws['bytes']} (peak live {ws['peak_live_bytes']}, sum of buffers {ws['sum_of_buffers']})")
