"""``requant = "float"`` on the accumulating int8 ops (graph.qconv2d / qdense / qmatmul and
the blocked qconv2d_nchwc / qdepthwise_conv2d_nchwc; ``graph.quantized._Requantizing``):

* the op's reference rounds ``f32(acc) * f32(f32(x_scale * w_scale) / y_scale)`` half to
  even, as onnxruntime requantizes: an ONNX QDQ conv / matmul model compiled by dlc
  equals onnxruntime's output bit for bit, ties included;
* every kernel that lowers those ops (qgemm for dense, matmul and conv; the plain kernels;
  the NCHW depthwise; the blocked convs) equals the reference exactly on odd shapes, with
  power-of-two rescales that make ties, where the fixed point (half up) differs;
* fold-qdq sets it below an ONNX QuantizeLinear only (lit: quant/fold_qdq_requant.mlir).
"""

from __future__ import annotations

import numpy as np
import pytest

from dlc.dialects import graph as g
from dlc.dialects.graph.quantized import float_requantize
from dlc.driver import compile
from test_qconv_nchwc import _const, _kernel_forms, _module

RNG = np.random.default_rng(2024)


@pytest.fixture(autouse=True)
def _seeded():
    """Each test draws from its own seeded generator: whether ties occur must not depend
    on the test order."""
    global RNG
    RNG = np.random.default_rng(2024)


def u8(*shape):
    return RNG.integers(0, 256, shape).astype(np.uint8)


def s8(*shape):
    return RNG.integers(-128, 128, shape).astype(np.int8)


def weights(*shape, ties: bool) -> np.ndarray:
    """s8 weights; small ones (-3..3) for ties, so the rescaled sums stay inside the output
    range (not saturated) and land on halves often."""
    return RNG.integers(-3, 4, shape).astype(np.int8) if ties else s8(*shape)


def _scales(n: int, ties: bool) -> list[float]:
    """Per-channel weight scales: powers of two (x_scale 0.5, y_scale 1: every rescale is
    2**-3 .. 2**-5, so one accumulator in 8 to 32 is an exact tie) or random ones."""
    if ties:
        return [2.0 ** -int(e) for e in RNG.integers(2, 5, n)]
    return list(RNG.uniform(0.002, 0.02, n))


def _attrs(n: int, ties: bool, xz: int, yz: int, **extra) -> dict:
    return dict(x_scale=[0.5 if ties else 0.05], x_zero_point=[xz], w_scale=_scales(n, ties),
                y_scale=[1.0 if ties else 0.3], y_zero_point=[yz], requant="float", **extra)


def _fixed_point(op, inputs) -> np.ndarray:
    """The same op's output with the default fixed-point rounding."""
    op.attributes.pop("requant")
    try:
        return op.reference(*inputs)[0]
    finally:
        from xdsl.dialects.builtin import StringAttr

        op.attributes["requant"] = StringAttr("float")


def _operands(op, inputs) -> list[np.ndarray]:
    """The arrays of the op's operands: the function's inputs and the graph constants."""
    args = list(op.parent_block().args)
    return [inputs[args.index(v)] if v in args else v.owner.array() for v in op.operands]


def _run(build, inputs, form: str | None, ties: bool):
    """Compile @main(*inputs) = build(...): the kernel is ``form`` and equals the op's
    reference; with ``ties``, the reference differs from the fixed point somewhere."""
    module = _module(build, *inputs)
    op = next(o for o in module.walk() if isinstance(o, (g.QConv2DOp, g.QDenseOp, g.QMatmulOp,
                                                        g.QConv2DNCHWcOp, g.QDepthwiseConv2DNCHWcOp)))
    arrays = _operands(op, inputs)
    want = op.reference(*arrays)[0]
    assert _kernel_forms(module.clone())[0] == form
    got = compile(module)(*inputs)[0]
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    if ties:  # the ties are there, and the float rounding is what the kernel did
        assert (want != _fixed_point(op, arrays)).any()


def test_float_requantize_rounds_half_to_even():
    acc = np.array([1, 3, 5, -1, -3, 7, 2 ** 20], np.int64)
    got = float_requantize(acc, np.float32(0.5), 0, -128, 127)
    np.testing.assert_array_equal(got, [0, 2, 2, 0, -2, 4, 127])
    np.testing.assert_array_equal(float_requantize(acc, np.float32(0.5), 10, 0, 255), [10, 12, 12, 10, 8, 14, 255])


def test_float_scales_round_each_step_to_f32():
    def build(ops, xv):
        op = g.QDenseOp.make(xv, _const(ops, s8(3, 7)), x_scale=[0.1], w_scale=[0.3, 0.7, 0.011],
                             y_scale=[0.07], requant="float")
        ops.append(op)
        return op.results[0]

    op = next(o for o in _module(build, u8(2, 7)).walk() if isinstance(o, g.QDenseOp))
    want = (np.float32(0.1) * np.array([0.3, 0.7, 0.011], np.float32)) / np.float32(0.07)
    assert op.float_scales().dtype == np.float32
    np.testing.assert_array_equal(op.float_scales(), want.astype(np.float32))


# -- every kernel of the accumulating ops ------------------------------------------------

@pytest.mark.parametrize("m,n,k,signed,ties", [(13, 37, 29, False, True), (3, 5, 97, True, False),
                                               (1, 1, 1, False, False), (17, 33, 6, True, True)])
def test_qdense_qgemm(m, n, k, signed, ties):
    x = s8(m, k) if signed else u8(m, k)
    w, b = weights(n, k, ties=ties), RNG.integers(-300, 300, n).astype(np.int32)
    attrs = _attrs(n, ties, -7 if signed else 121, 3)

    def build(ops, xv):
        op = g.QDenseOp.make(xv, _const(ops, w), _const(ops, b), **attrs)
        ops.append(op)
        return op.results[0]
    _run(build, [x], "qgemm", ties and m * n > 100)


def test_qdense_plain_kernel():
    x, w = u8(9, 23), weights(19, 23, ties=True)  # weight zero point 2: the plain kernel (row sums)
    attrs = _attrs(19, True, 100, 110, out_min=110)
    attrs["w_zero_point"] = [2]

    def build(ops, xv):
        op = g.QDenseOp.make(xv, _const(ops, w), **attrs)
        ops.append(op)
        return op.results[0]
    _run(build, [x], None, True)


def test_qmatmul_constant_and_activation_rhs():
    a, b = s8(2, 9, 23), weights(23, 18, ties=True)
    attrs = dict(a_scale=[0.5], a_zero_point=[4], b_scale=[2.0 ** -3], y_scale=[1.0], y_zero_point=[-2],
                 requant="float")

    def constant_rhs(ops, av):
        op = g.QMatmulOp.make(av, _const(ops, b), **attrs)
        ops.append(op)
        return op.results[0]
    _run(constant_rhs, [a], "qgemm", True)

    def activation_rhs(ops, av, bv):
        op = g.QMatmulOp.make(av, bv, **attrs)
        ops.append(op)
        return op.results[0]
    _run(activation_rhs, [a, weights(2, 23, 13, ties=True)], None, True)


@pytest.mark.parametrize("shape,kernel,stride,pad,groups,form", [
    ((1, 5, 9, 7), 3, 2, 1, 1, "qgemm"),     # stride 2, padding, odd plane
    ((2, 3, 6, 5), 1, 1, 0, 1, "qgemm"),     # 1x1, batch 2
    ((1, 4, 7, 9), 3, 1, 1, 2, None),        # grouped: the plain kernel
    ((1, 17, 9, 7), 3, 2, 1, 17, None),      # depthwise (NCHW): kernels/quantized_depthwise.py
])
def test_qconv2d_kernels(shape, kernel, stride, pad, groups, form):
    n, c, h, wd = shape
    o = c if groups == c else 6
    x = u8(*shape)
    w, b = weights(o, c // groups, kernel, kernel, ties=True), RNG.integers(-300, 300, o).astype(np.int32)
    attrs = _attrs(o, True, 128, 5, strides=[stride, stride], padding=[pad] * 4, groups=groups, out_min=5)

    def build(ops, xv):
        op = g.QConv2DOp.make(xv, _const(ops, w), _const(ops, b), **attrs)
        ops.append(op)
        return op.results[0]
    _run(build, [x], form, True)


@pytest.mark.parametrize("cb,ib,c,o,hw,k,stride,ties", [
    (1, 4, 3, 17, (7, 7), 3, 1, True),      # a 3-channel image in NCHW4c, a tail output block
    (2, 16, 17, 33, (8, 19), 1, 1, True),   # 1x1, a row of 19 pixels: the tail nest
    (2, 8, 13, 16, (7, 9), 1, 2, False),    # 1x1 stride 2, random scales
])
def test_qconv2d_nchwc(cb, ib, c, o, hw, k, stride, ties):
    x = u8(1, cb, (hw[0] - 1) * stride + k, (hw[1] - 1) * stride + k, ib)
    w, b = weights(o, c, k, k, ties=ties), RNG.integers(-300, 300, o).astype(np.int32)
    attrs = _attrs(o, ties, 77, 5, strides=[stride, stride], out_min=5)

    def build(ops, xv):
        op = g.QConv2DNCHWcOp.make(xv, _const(ops, w), _const(ops, b), **attrs)
        ops.append(op)
        return op.results[0]
    _run(build, [x], "qconv2d_nchwc", ties)


@pytest.mark.parametrize("c,hw,stride,pad,per_channel", [(35, (5, 5), 2, 1, True), (17, (9, 11), 1, 1, False),
                                                          (1, (1, 1), 1, 1, True)])
def test_qdepthwise_nchwc(c, hw, stride, pad, per_channel):
    blk, k = 16, 3
    cb = -(-c // blk)
    x = u8(1, cb, (hw[0] - 1) * stride + k - 2 * pad, (hw[1] - 1) * stride + k - 2 * pad, blk)
    w, b = weights(c, 1, k, k, ties=True), RNG.integers(-300, 300, c).astype(np.int32)
    attrs = _attrs(c if per_channel else 1, True, 128, 5, strides=[stride, stride], padding=[pad] * 4, out_min=5)

    def build(ops, xv):
        op = g.QDepthwiseConv2DNCHWcOp.make(xv, _const(ops, w), _const(ops, b), **attrs)
        ops.append(op)
        return op.results[0]
    _run(build, [x], "qdepthwise_nchwc", c * hw[0] * hw[1] > 100)


# -- against onnxruntime: a QDQ model, bit for bit ----------------------------------------

def _qdq_model(path, ties: bool):
    """u8 x [1, 16, 13, 11] -> DQ -> conv 3x3 (per-channel s8 weights, bias) -> relu -> Q ->
    DQ -> conv 1x1 -> Q -> flatten -> DQ -> matmul -> Q: what quantize_static writes."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(7)

    def scales(n):
        return (2.0 ** -rng.integers(6, 9, n) if ties else rng.uniform(0.002, 0.01, n)).astype(np.float32)

    inits, nodes = [], []

    def init(name, array):
        inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def dq(x, scale, zp, axis=None):
        out = f"{x}_dq"
        kw = {} if axis is None else {"axis": axis}
        nodes.append(helper.make_node("DequantizeLinear", [x, scale, zp], [out], **kw))
        return out

    def q(x, name, scale, zp):
        nodes.append(helper.make_node("QuantizeLinear", [x, init(f"{name}_s", np.float32(scale)),
                                                          init(f"{name}_z", np.uint8(zp))], [name]))
        return name

    xs = init("xs", np.float32(0.5 if ties else 0.02))
    x = dq("x", xs, init("xz", np.uint8(100)))
    w1, s1 = init("w1", rng.integers(-127, 128, (24, 16, 3, 3)).astype(np.int8)), scales(24)
    c1 = "c1"
    nodes.append(helper.make_node("Conv", [x, dq(w1, init("w1s", s1), init("w1z", np.zeros(24, np.int8)), 0),
                                           dq(init("b1", rng.integers(-2000, 2000, 24).astype(np.int32)),
                                              init("b1s", (np.float32(0.5 if ties else 0.02) * s1).astype(np.float32)),
                                              init("b1z", np.zeros(24, np.int32)), 0)],
                                  [c1], kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
    nodes.append(helper.make_node("Relu", [c1], ["r1"]))
    y1 = q("r1", "y1", 64.0 if ties else 0.4, 3)
    w2, s2 = init("w2", rng.integers(-127, 128, (8, 24, 1, 1)).astype(np.int8)), scales(8)
    nodes.append(helper.make_node("Conv", [dq(y1, "y1_s", "y1_z"), dq(w2, init("w2s", s2), init("w2z", np.zeros(8, np.int8)), 0)],
                                  ["c2"], kernel_shape=[1, 1]))
    y2 = q("c2", "y2", 256.0 if ties else 2.0, 128)
    nodes.append(helper.make_node("Flatten", [y2], ["f"]))  # on the quantized values
    w3 = init("w3", rng.integers(-127, 128, (8 * 13 * 11, 10)).astype(np.int8))
    nodes.append(helper.make_node("MatMul", [dq("f", "y2_s", "y2_z"), dq(w3, init("w3s", np.float32(2.0 ** -7 if ties else 0.003)),
                                                      init("w3z", np.int8(0)))], ["m"]))
    q("m", "y", 512.0 if ties else 3.0, 120)
    graph = helper.make_graph(nodes, "qdq", [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 16, 13, 11])],
                              [helper.make_tensor_value_info("y", TensorProto.UINT8, [1, 10])], inits)
    for name in ("y1", "y2"):
        graph.value_info.append(helper.make_tensor_value_info(name, TensorProto.UINT8, None))
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


@pytest.mark.parametrize("ties", [True, False])
def test_qdq_model_equals_onnxruntime_bit_for_bit(tmp_path, ties):
    import onnxruntime as ort

    path = str(tmp_path / "qdq.onnx")
    _qdq_model(path, ties)
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    import dlc

    module = dlc.compile(path)
    assert "qconv2d" in " ".join(module.qdq_report) and "graph.qdense" in " ".join(module.qdq_report)
    for seed in range(3):
        x = np.random.default_rng(seed).integers(0, 256, (1, 16, 13, 11)).astype(np.uint8)
        np.testing.assert_array_equal(module(x)[0], session.run(None, {"x": x})[0])


# -- QLinearConv (onnxruntime's QOperator format) ------------------------------------------

def _qlinear_conv_model(path, group: int, per_channel: bool, bias: bool, pads, strides):
    """x u8 [1, C, 9, 11] -> QLinearConv (scales and zero points initializers) -> y u8."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(11)
    c, o, k = 6, 6 if group > 1 else 10, 3
    w = rng.integers(-127, 128, (o, c // group, k, k)).astype(np.int8)
    ws = (rng.uniform(0.002, 0.01, o) if per_channel else np.array([0.004])).astype(np.float32)
    inits = {"xs": np.float32(0.02), "xz": np.uint8(100), "w": w, "ws": ws,
             "wz": np.zeros(ws.size, np.int8), "ys": np.float32(0.05), "yz": np.uint8(120)}
    names = ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"]
    if bias:
        inits["b"] = rng.integers(-3000, 3000, o).astype(np.int32)
        names.append("b")
    node = helper.make_node("QLinearConv", names, ["y"], kernel_shape=[k, k], pads=pads, strides=strides,
                            group=group)
    graph = helper.make_graph([node], "qlc", [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, c, 9, 11])],
                              [helper.make_tensor_value_info("y", TensorProto.UINT8, None)],
                              [numpy_helper.from_array(np.asarray(v), n) for n, v in inits.items()])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


@pytest.mark.parametrize("group,per_channel,bias,pads,strides", [
    (1, True, True, [1, 1, 1, 1], [1, 1]), (1, False, False, [0, 1, 2, 0], [2, 1]), (6, True, True, [1, 1, 1, 1], [2, 2])])
def test_qlinear_conv_runs_as_qconv2d(tmp_path, group, per_channel, bias, pads, strides):
    """Constant quantization parameters: graph.qconv2d with requant = "float", equal to
    onnxruntime bit for bit and to onnx's reference (f64 rounding) within one step."""
    import onnx
    import onnxruntime as ort
    from onnx.reference import ReferenceEvaluator

    import dlc
    from dlc.frontends.onnx import import_model

    path = str(tmp_path / "qlc.onnx")
    _qlinear_conv_model(path, group, per_channel, bias, pads, strides)
    module = import_model(path)
    convs = [op for op in module.walk() if isinstance(op, g.QConv2DOp)]
    assert len(convs) == 1 and convs[0].requant == "float"
    compiled = dlc.compile(path)
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    reference = ReferenceEvaluator(onnx.load(path))
    x = np.random.default_rng(3).integers(0, 256, (1, 6, 9, 11)).astype(np.uint8)
    got = compiled(x)[0]
    np.testing.assert_array_equal(got, session.run(None, {"x": x})[0])
    want = reference.run(None, {"x": x})[0]
    assert np.abs(got.astype(np.int64) - want).max() <= 1


@pytest.mark.parametrize("b_constant", [True, False])
def test_qlinear_matmul_runs_as_qmatmul(tmp_path, b_constant):
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
    from onnx.reference import ReferenceEvaluator

    import dlc
    from dlc.frontends.onnx import import_model

    rng = np.random.default_rng(5)
    b = rng.integers(0, 256, (29, 13)).astype(np.uint8)
    inits = {"as": np.float32(0.03), "az": np.uint8(120), "bs": np.float32(0.02), "bz": np.uint8(128),
             "ys": np.float32(0.4), "yz": np.uint8(100)}
    if b_constant:
        inits["b"] = b
    inputs = [helper.make_tensor_value_info("a", TensorProto.UINT8, [2, 7, 29])]
    if not b_constant:
        inputs.append(helper.make_tensor_value_info("b", TensorProto.UINT8, [29, 13]))
    node = helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])
    graph = helper.make_graph([node], "qlm", inputs, [helper.make_tensor_value_info("y", TensorProto.UINT8, None)],
                              [numpy_helper.from_array(np.asarray(v), n) for n, v in inits.items()])
    path = str(tmp_path / "qlm.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    ops = [op for op in import_model(path).walk() if isinstance(op, g.QMatmulOp)]
    assert len(ops) == 1 and ops[0].requant == "float"
    feeds = {"a": rng.integers(0, 256, (2, 7, 29)).astype(np.uint8)}
    if not b_constant:
        feeds["b"] = b
    options = ort.SessionOptions()
    options.log_severity_level = 3
    want_ort = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    got = dlc.compile(path)(*feeds.values())[0]
    np.testing.assert_array_equal(got, want_ort)
    want = ReferenceEvaluator(onnx.load(path)).run(None, feeds)[0]
    assert np.abs(got.astype(np.int64) - want).max() <= 1
