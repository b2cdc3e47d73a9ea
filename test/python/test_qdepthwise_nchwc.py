"""The int8 depthwise convolution of the blocked layout (graph.qdepthwise_conv2d_nchwc,
kernels/quantized_depthwise_nchwc.py, its schedule in schedule/defaults_quantized.py) and
alter-op-layout's int8 depthwise chains: the compiled kernel equals an independent integer
numpy reference (and the op's reference) exactly, on odd channel counts (masked tail blocks),
planes and strides; a MobileNet-style blocked chain equals the plain int8 path exactly and
never leaves NCHW{b}c."""

from __future__ import annotations

import numpy as np
import pytest

from dlc.dialects import graph as g
from dlc.dialects.graph import requant
from dlc.driver import compile, run_pass
from test_qconv_nchwc import _const, _kernel_forms, _module, quant_attrs, s8, u8, RNG


def _independent(x, w, b, attrs, strides, pads, lo, hi, signed):
    """Direct loops over blocked x (no im2col, no op code), spatially padded with x's zero
    point: sum (x - zx)(w - zw) + b, requant.requantize per channel, padded channels the
    clamped output zero point."""
    pt, pl, pb, pr = pads
    zx0 = attrs["x_zero_point"][0]
    x = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (pt, pb), (pl, pr), (0, 0)), constant_values=zx0)
    n, cb, h, wd, blk = x.shape
    c, _, kh, kw = w.shape
    sh, sw = strides
    oh, ow = (h - kh) // sh + 1, (wd - kw) // sw + 1
    zx = attrs["x_zero_point"][0]
    zw = np.broadcast_to(np.asarray(attrs["w_zero_point"], np.int64), (c,))
    f32 = lambda v: np.asarray(v, np.float32).astype(np.float64)  # the attributes are f32
    real = f32(attrs["x_scale"][0]) * f32(attrs["w_scale"]) / f32(attrs["y_scale"][0])
    real = np.broadcast_to(real, (c,))
    zo = attrs["y_zero_point"][0]
    out = np.full((n, cb, oh, ow, blk), np.clip(zo, lo, hi), np.int64)
    xi = x.astype(np.int64) - zx
    for ch in range(c):
        blk_i, lane = divmod(ch, blk)
        acc = np.zeros((n, oh, ow), np.int64)
        for i in range(kh):
            for j in range(kw):
                tap = xi[:, blk_i, i: i + sh * (oh - 1) + 1: sh, j: j + sw * (ow - 1) + 1: sw, lane]
                acc += tap * (int(w[ch, 0, i, j]) - zw[ch])
        if b is not None:
            acc += int(b[ch])
        out[:, blk_i, :, :, lane] = requant.requantize(requant.wrap_i32(acc), real[ch], zo, lo, hi, None)
    return out.astype(np.int8 if signed else np.uint8)


@pytest.mark.parametrize("c,blk,hw,stride,pad,xz,per_channel,bias,signed", [
    (1, 16, (5, 5), 1, 1, 128, True, True, False),     # one channel: 15 padded lanes
    (3, 4, (9, 9), 2, 1, 0, False, True, False),       # a 3-channel block of 4, stride 2
    (17, 16, (9, 9), 1, 0, 77, True, False, False),    # 17: a tail block of 1 channel
    (35, 16, (1, 1), 1, 1, 128, True, True, False),    # 1x1 plane (all taps but one padding)
    (35, 16, (5, 5), 2, 1, 200, True, True, False),    # stride 2, masked tail block
    (17, 16, (9, 9), 2, 1, -3, True, True, True),      # s8 activations
    (16, 16, (11, 19), 1, 1, 5, False, True, False),   # a row of 19: a tail nest of 3 pixels
    (16, 16, (9, 9), 2, 0, 9, True, False, False),     # stride 2 without padding
])
def test_qdepthwise_nchwc_equals_integer_reference(c, blk, hw, stride, pad, xz, per_channel, bias, signed):
    cb = -(-c // blk)
    k = 3
    # an input whose output is OH x OW = hw (hw is the input plane with padding 1, stride 1)
    shape = (1, cb, (hw[0] - 1) * stride + k - 2 * pad, (hw[1] - 1) * stride + k - 2 * pad, blk)
    x = s8(*shape) if signed else u8(*shape)
    w = s8(c, 1, k, k) if signed or c % 2 else u8(c, 1, k, k)
    wz = [int(v) for v in RNG.integers(-5, 5, c)] if signed or c % 2 else [128]
    b = RNG.integers(-3000, 3000, c).astype(np.int32) if bias else None
    attrs = dict(quant_attrs(c, xz, per_channel), w_zero_point=wz if len(wz) == 1 or per_channel else wz[:1],
                 strides=[stride, stride], padding=[pad] * 4, out_min=(-100 if signed else 5))
    if not per_channel:
        attrs["w_zero_point"] = wz[:1]

    def build(ops, xv):
        consts = [_const(ops, w)] + ([_const(ops, b)] if b is not None else [])
        op = g.QDepthwiseConv2DNCHWcOp.make(xv, *consts, **attrs)
        ops.append(op)
        return op.results[0]

    module = _module(build, x)
    op = next(o_ for o_ in module.walk() if isinstance(o_, g.QDepthwiseConv2DNCHWcOp))
    lo, hi = op.out_range()
    want = _independent(x, w, b, attrs, (stride, stride), (pad,) * 4, lo, hi, signed)
    np.testing.assert_array_equal(op.reference(x, *([w] if b is None else [w, b]))[0], want)
    assert _kernel_forms(module.clone()) == ["qdepthwise_nchwc"]
    got = compile(module)(x)[0]
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("k,pads,stride,in_hw", [
    (3, (0, 1, 1, 0), 1, (7, 23)),    # asymmetric (SAME_UPPER-like): padding on one side
    (3, (1, 0, 0, 1), 2, (12, 29)),   # stride 2, right-only column border
    (5, (2, 2, 2, 2), 1, (9, 17)),    # two border rows and columns on each side
    (5, (2, 1, 0, 2), 2, (6, 6)),     # stride 2, 5x5: a 2x3 output, few inner pixels
    (3, (1, 1, 1, 1), 1, (2, 40)),    # two rows, both padded; a long row: tiles + tail
    (3, (1, 1, 1, 1), 1, (3, 3)),     # one inner pixel
])
def test_asymmetric_and_wide_padding_equal_integer_reference(k, pads, stride, in_hw):
    """The in-kernel padding checks (window_tap's clamped taps and selects) on asymmetric
    and wide padding, 5x5 windows, planes of 2 rows and of one inner pixel."""
    c, blk = 21, 16
    x = u8(1, 2, *in_hw, blk)
    w = s8(c, 1, k, k)
    wz = [int(v) for v in RNG.integers(-5, 5, c)]
    b = RNG.integers(-3000, 3000, c).astype(np.int32)
    attrs = dict(quant_attrs(c, 131, True), w_zero_point=wz, strides=[stride, stride], padding=list(pads),
                 out_min=3)

    def build(ops, xv):
        op = g.QDepthwiseConv2DNCHWcOp.make(xv, _const(ops, w), _const(ops, b), **attrs)
        ops.append(op)
        return op.results[0]

    module = _module(build, x)
    op = next(o_ for o_ in module.walk() if isinstance(o_, g.QDepthwiseConv2DNCHWcOp))
    lo, hi = op.out_range()
    want = _independent(x, w, b, attrs, (stride, stride), pads, lo, hi, False)
    np.testing.assert_array_equal(op.reference(x, w, b)[0], want)
    got = compile(module)(x)[0]
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("blk", [4, 8])
def test_a_block_below_16_lanes_is_one_vector(blk):
    """A block of 4 or 8 channels (fewer than LLVM's 16-iteration floor for a loop that
    needs runtime alias checks) still reaches the machine as one vector per tap: the
    whole-vector hint forces it (it was left scalar, with a 'loop not vectorized' remark)."""
    x = u8(1, 1, 9, 9, blk)
    attrs = dict(quant_attrs(blk, 128, True), w_zero_point=[0], strides=[1, 1], padding=[1] * 4)

    def build(ops, xv):
        op = g.QDepthwiseConv2DNCHWcOp.make(xv, _const(ops, s8(blk, 1, 3, 3)), **attrs)
        ops.append(op)
        return op.results[0]

    compiled = compile(_module(build, x), num_threads=1)
    kernel = "\n".join(f for f in compiled.optimized_llvm_ir.split("\ndefine ")
                       if "qdepthwise_conv2d_nchwc" in f.split("\n")[0])
    assert f"mul nsw <{blk} x i32>" in kernel or f"mul <{blk} x i32>" in kernel


@pytest.mark.parametrize("y_scale,table", [(0.02, "shift_hi"), (1e-3, "total")])
def test_qdepthwise_requantization_forms_equal_integer_reference(y_scale, table):
    """Multipliers below 0.5 (y_scale 0.02): the high-word requantization (i32 shifts,
    requant.requantize_high_word); per-channel multipliers of 0.3 .. 3 (y_scale 1e-3, one
    table for all channels): the i64 form. Both equal the independent reference (small
    sums around the zero point, so most outputs are not clamped)."""
    c, k = 17, 3
    x = (100 + RNG.integers(-6, 7, (1, 2, 7, 9, 16))).astype(np.uint8)
    w = RNG.integers(-4, 5, (c, 1, k, k)).astype(np.int8)
    wz = [int(v) for v in RNG.integers(-2, 3, c)]
    attrs = dict(x_scale=[0.05], x_zero_point=[100], w_scale=list(RNG.uniform(6e-3, 6e-2, c)), w_zero_point=wz,
                 y_scale=[y_scale], y_zero_point=[128], strides=[1, 1], padding=[1] * 4)

    def build(ops, xv):
        op = g.QDepthwiseConv2DNCHWcOp.make(xv, _const(ops, w), **attrs)
        ops.append(op)
        return op.results[0]

    module = _module(build, x)
    op = next(o_ for o_ in module.walk() if isinstance(o_, g.QDepthwiseConv2DNCHWcOp))
    lo, hi = op.out_range()
    want = _independent(x, w, None, attrs, (1, 1), (1,) * 4, lo, hi, False)
    assert 0.2 < np.mean((want > lo) & (want < hi))  # mostly unclamped: the rounding is checked
    np.testing.assert_array_equal(compile(module)(x)[0], want)
    lowered = _module(build, x)
    run_pass("lower-to-loops{flat-conv=true}", lowered)
    assert f'_qdepthwise_conv2d_nchwc.{table}"' in str(lowered)


def _mobilenet_chain(c: int, o: int, xz: int, per_channel: bool):
    """qconv 3x3 s2 -> dw 3x3 s1 -> qconv 1x1 -> dw 3x3 s2 -> qconv 1x1 (relu clamps)."""
    weights = [s8(o, c, 3, 3), s8(o, 1, 3, 3), s8(o, o, 1, 1), s8(o, 1, 3, 3), s8(5, o, 1, 1)]
    biases = [RNG.integers(-500, 500, wt.shape[0]).astype(np.int32) for wt in weights]

    def build(ops, xv):
        v, zin = xv, xz
        for i, (stride, groups) in enumerate([(2, 1), (1, o), (1, 1), (2, o), (1, 1)]):
            n, k = weights[i].shape[0], weights[i].shape[2]
            attrs = dict(quant_attrs(n, zin, per_channel, yz=7), strides=[stride] * 2,
                         padding=[k // 2] * 4, groups=groups, out_min=7)
            op = g.QConv2DOp.make(v, _const(ops, weights[i]), _const(ops, biases[i]), **attrs)
            ops.append(op)
            v, zin = op.results[0], 7
        return v

    return build


@pytest.mark.parametrize("c,o,hw,xz,per_channel", [(3, 17, 13, 128, True), (5, 32, 9, 0, False)])
def test_mobilenet_chain_stays_blocked_and_equals_plain_path(c, o, hw, xz, per_channel):
    x = u8(1, c, hw, hw)
    module = _module(_mobilenet_chain(c, o, xz, per_channel), x)
    blocked = module.clone()
    run_pass("alter-op-layout", blocked)
    names = [op.name for op in blocked.walk()]
    assert names.count("graph.qdepthwise_conv2d_nchwc") == 2 and "graph.qconv2d" not in names
    assert names.count("graph.layout_transform") == 2  # the image in, the result out
    assert names.count("graph.pad") == 1  # the stem conv's (the depthwise pad in the op)
    want = compile(module.clone(), layout="NCHW")(x)[0]
    got = compile(module)(x)[0]
    np.testing.assert_array_equal(got, want)


def test_depthwise_of_a_plain_value_stays_plain():
    x = u8(1, 8, 6, 6)

    def build(ops, xv):
        op = g.QConv2DOp.make(xv, _const(ops, s8(8, 1, 3, 3)), groups=8, padding=[1] * 4, **quant_attrs(8, 3, True))
        ops.append(op)
        return op.results[0]

    module = _module(build, x)
    run_pass("alter-op-layout", module)
    assert not any(op.name == "graph.qdepthwise_conv2d_nchwc" for op in module.walk())


def _mobilenet_onnx():
    """A MobileNet-V2-style ONNX model: conv 3x3 s2 -> inverted residual (1x1 expand to 32,
    depthwise 3x3, 1x1 project, residual add) -> 1x1 expand to 35 (a masked tail block) ->
    depthwise 3x3 s2 -> 1x1 -> global average pool -> gemm; ReLU6 as Clip."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(18)

    def init(name, *shape, scale=0.3):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    inits, nodes = [], []

    def conv(x, name, cin, cout, k=1, stride=1, groups=1, act=True):
        inits.extend([init(f"{name}_w", cout, cin // groups, k, k), init(f"{name}_b", cout, scale=0.1)])
        nodes.append(helper.make_node("Conv", [x, f"{name}_w", f"{name}_b"], [f"{name}_c"], name=name,
                                      pads=[k // 2] * 4, strides=[stride] * 2, group=groups))
        if not act:
            return f"{name}_c"
        nodes.append(helper.make_node("Clip", [f"{name}_c", "zero", "six"], [f"{name}_r"]))
        return f"{name}_r"

    inits += [numpy_helper.from_array(np.float32(0), "zero"), numpy_helper.from_array(np.float32(6), "six")]
    a = conv("x", "stem", 3, 16, 3, 2)
    b = conv(conv(conv(a, "e1", 16, 32), "d1", 32, 32, 3, 1, 32), "p1", 32, 16, act=False)
    nodes.append(helper.make_node("Add", [a, b], ["res"]))
    c = conv(conv(conv("res", "e2", 16, 35), "d2", 35, 35, 3, 2, 35), "p2", 35, 24, act=False)
    nodes += [helper.make_node("GlobalAveragePool", [c], ["g"]), helper.make_node("Flatten", ["g"], ["f"]),
              helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["y"], transB=1)]
    inits += [init("fc_w", 10, 24), init("fc_b", 10, scale=0.1)]
    graph = helper.make_graph(nodes, "mb", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 34, 34])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_qdq_mobilenet_matches_onnxruntime_and_stays_blocked(tmp_path):
    """onnxruntime's quantize_static model of a small MobileNet: dlc's output within one
    quantization step of onnxruntime's, its depthwise convs the blocked int8 kernel and the
    only layout transforms the image's and the head's."""
    import re

    import dlc
    from dlc.bench.quant_accuracy import ort_quantize, ort_session, output_step, random_inputs

    model = _mobilenet_onnx()
    qdq = ort_quantize(model, random_inputs(model, 4, seed=1), str(tmp_path))
    compiled = dlc.compile(qdq, num_threads=2)
    kernels = re.findall(r"define void @\"(main_\d+_\w+)\"", compiled.llvm_ir)
    ops = [re.sub(r"main_\d+_", "", k) for k in kernels]
    assert ops.count("qdepthwise_conv2d_nchwc") == 2 and "qconv2d" not in ops, ops
    assert ops.count("layout_transform") <= 2, ops
    session = ort_session(qdq)
    step = output_step(qdq)
    for x in random_inputs(model, 4, seed=2):
        diff = np.abs(compiled(x)[0] - session.run(None, {"x": x})[0])
        assert diff.max() <= step * 1.0001, (diff.max(), step)
