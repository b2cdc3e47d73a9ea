"""Write a small ONNX model for the lit tests: `make_onnx.py NAME OUT.onnx`.

Models are built with onnx.helper so the tests need no binary files."""

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def vi(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def model(nodes, inputs, outputs, inits=(), opset=17):
    m = helper.make_model(helper.make_graph(nodes, "g", inputs, outputs, list(inits)),
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def conv_block():
    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "conv.weight")
    b = numpy_helper.from_array(np.arange(4, dtype=np.float32), "conv.bias")
    nodes = [
        helper.make_node("Conv", ["x", "conv.weight", "conv.bias"], ["c"], name="conv",
                         pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2],
                         ceil_mode=1),
        helper.make_node("Flatten", ["p"], ["y"], name="flatten"),
    ]
    return model(nodes, [vi("x", [1, 3, 9, 9])], [vi("y", None)], [w, b])


def shape_folding():
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        helper.make_node("Slice", ["s", "zero", "one"], ["n"], name="slice"),
        helper.make_node("Concat", ["n", "minus1"], ["target"], name="concat", axis=0),
        helper.make_node("Reshape", ["x", "target"], ["y"], name="reshape"),
    ]
    inits = [numpy_helper.from_array(np.array([v], np.int64), n)
             for n, v in (("zero", 0), ("one", 1), ("minus1", -1))]
    return model(nodes, [vi("x", [2, 3, 5])], [vi("y", None)], inits)


def legacy_softmax():
    nodes = [helper.make_node("Softmax", ["x"], ["y"], name="softmax", axis=1)]
    return model(nodes, [vi("x", [2, 3, 5])], [vi("y", None)], opset=11)


def dynamic_batch():
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                 [vi("x", ["N", 3])], [vi("y", None)])


def unsupported():
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="relu"),
        helper.make_node("Multinomial", ["a"], ["b"], name="draw_1"),
        helper.make_node("RandomUniformLike", ["a"], ["c"], name="noise"),
        helper.make_node("Multinomial", ["b"], ["y"], name="draw_2"),
    ]
    return model(nodes, [vi("x", [2])], [vi("y", None), vi("c", None)])


def dangling():
    return model([helper.make_node("Add", ["x", "missing"], ["y"], name="add")],
                 [vi("x", [2])], [vi("y", None)])


def bad_initializer():
    w = numpy_helper.from_array(np.ones((3, 4), np.float32), "w")
    w.raw_data = w.raw_data[:-8]
    return model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
                 [vi("x", [2, 3])], [vi("y", None)], [w])


def qlinear_conv(constant_scales=True):
    """QLinearConv, its quantization parameters initializers (onnxruntime's QOperator
    format), or the scales graph inputs."""
    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.int8), "w")
    params = {"xs": np.float32(0.02), "xz": np.uint8(100), "ws": np.float32(0.01), "wz": np.int8(0),
              "ys": np.float32(0.05), "yz": np.uint8(10)}
    inputs = [vi("x", [1, 3, 9, 9], TensorProto.UINT8)]
    inits = [w]
    for name, value in params.items():
        if constant_scales or name not in ("xs", "ys"):
            inits.append(numpy_helper.from_array(np.asarray(value), name))
        else:
            inputs.append(vi(name, [], TensorProto.FLOAT))
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"], name="qconv",
                            pads=[1, 1, 1, 1])
    return model([node], inputs, [vi("y", None, TensorProto.UINT8)], inits)


def qlinear_conv_input_scales():
    return qlinear_conv(constant_scales=False)


def data_dependent():
    """NonZero and Compress (a run-time condition) as graph outputs; Compress with a
    constant condition, which has a static shape."""
    keep = numpy_helper.from_array(np.array([True, False, True]), "keep")
    nodes = [
        helper.make_node("NonZero", ["x"], ["where"], name="nonzero"),
        helper.make_node("Compress", ["x", "c"], ["rows"], name="compress", axis=0),
        helper.make_node("Compress", ["x", "keep"], ["cols"], name="compress_known", axis=1),
    ]
    return model(nodes, [vi("x", [3, 4]), vi("c", [3], TensorProto.BOOL)],
                 [vi("where", [2, None], TensorProto.INT64), vi("rows", [None, 4]), vi("cols", None)], [keep])


def data_dependent_consumer():
    nodes = [
        helper.make_node("NonZero", ["x"], ["where"], name="nonzero"),
        helper.make_node("Transpose", ["where"], ["y"], name="transpose"),
    ]
    return model(nodes, [vi("x", [3, 4])], [vi("y", None)])


MODELS = {f.__name__: f for f in (qlinear_conv, qlinear_conv_input_scales, conv_block, shape_folding, legacy_softmax, dynamic_batch,
                                  unsupported, dangling, bad_initializer, data_dependent, data_dependent_consumer)}


def main():
    name, out = sys.argv[1], sys.argv[2]
    if name == "truncated":
        data = conv_block().SerializeToString()
        open(out, "wb").write(data[: len(data) // 3])
    elif name == "not_onnx":
        open(out, "w").write("name,value\nalpha,1\n")
    else:
        onnx.save(MODELS[name](), out)


if __name__ == "__main__":
    main()
