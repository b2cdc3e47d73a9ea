"""Spatial sampling and signal ops (grid_sample, dft, col2im, roi_align):
numpy references against onnx's reference implementation, and the compiled
kernels (lower-to-loops -> LLVM JIT) against the references, on odd shapes.
Also the ONNX converters (GridSample, DFT, STFT, Col2Im, RoiAlign, DeformConv)
end to end against onnx's reference evaluator."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Region
from xdsl.utils.exceptions import VerifyException

import dlc
from dlc.dialects import graph as g
from dlc.dialects.graph_base import tensor_type_of

RNG = np.random.default_rng(7)


def one_op_module(op_cls, arrays, **attrs) -> ModuleOp:
    block = Block(arg_types=[tensor_type_of(a) for a in arrays])
    op = op_cls.make(*block.args, **attrs)
    block.add_ops([op, func.ReturnOp(op.results[0])])
    fn = func.FuncOp("main", ([a.type for a in block.args], [op.results[0].type]), Region(block))
    module = ModuleOp([fn])
    module.verify()
    return module


def reference(op_cls, arrays, **attrs) -> np.ndarray:
    block = Block(arg_types=[tensor_type_of(a) for a in arrays])
    return op_cls.make(*block.args, **attrs).reference(*arrays)[0]


def compiled(op_cls, arrays, **attrs) -> np.ndarray:
    module = one_op_module(op_cls, arrays, **attrs)
    (out,) = dlc.compile(module, num_threads=1)(*arrays)
    return out


def check_compiled(op_cls, arrays, rtol=1e-5, atol=1e-5, **attrs) -> None:
    want = reference(op_cls, arrays, **attrs)
    got = compiled(op_cls, arrays, **attrs)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def onnx_model(op_type, arrays, opset, n_outputs=1, **attrs):
    names = [f"in{k}" if a is not None else "" for k, a in enumerate(arrays)]
    node = helper.make_node(op_type, names, [f"out{k}" for k in range(n_outputs)], **attrs)
    inputs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
              for n, a in zip(names, arrays) if a is not None]
    outputs = [helper.make_tensor_value_info(f"out{k}", TensorProto.FLOAT, None) for k in range(n_outputs)]
    graph = helper.make_graph([node], "g", inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def onnx_reference(op_type, arrays, opset, **attrs) -> np.ndarray:
    model = onnx_model(op_type, arrays, opset, **attrs)
    feeds = {f"in{k}": a for k, a in enumerate(arrays) if a is not None}
    return ReferenceEvaluator(model).run(None, feeds)[0]


# ---------------------------------------------------------------------------
# grid_sample
# ---------------------------------------------------------------------------


def grid_case(dims, out_dims, batch=2, channels=3, spread=1.6):
    x = RNG.standard_normal((batch, channels, *dims)).astype(np.float32)
    grid = RNG.uniform(-spread, spread, (batch, *out_dims, len(dims))).astype(np.float32)
    return x, grid


GRID_MODES = list(itertools.product(["linear", "nearest", "cubic"], ["zeros", "border", "reflection"], [False, True]))


@pytest.mark.parametrize("mode,padding,align", GRID_MODES)
@pytest.mark.parametrize("dims,out_dims", [((5, 7), (3, 4)), ((1, 3), (2, 1)), ((7,), (5,)), ((3, 1, 4), (2, 3, 2))])
def test_grid_sample_reference_matches_onnx(mode, padding, align, dims, out_dims):
    if padding == "reflection" and align and 1 in dims:
        pytest.skip("onnx's reference divides by zero reflecting in a 1-wide dim with align_corners")
    x, grid = grid_case(dims, out_dims)
    want = onnx_reference("GridSample", [x, grid], 22, mode=mode, padding_mode=padding, align_corners=int(align))
    got = reference(g.GridSampleOp, [x, grid], mode=mode, padding_mode=padding, align_corners=align)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode,padding,align", GRID_MODES)
def test_grid_sample_compiled_2d(mode, padding, align):
    x, grid = grid_case((5, 7), (3, 2), batch=2, channels=3, spread=2.5)
    check_compiled(g.GridSampleOp, [x, grid], mode=mode, padding_mode=padding, align_corners=align)


@pytest.mark.parametrize("mode", ["linear", "nearest", "cubic"])
@pytest.mark.parametrize("padding", ["zeros", "reflection"])
def test_grid_sample_compiled_3d_and_1d(mode, padding):
    x, grid = grid_case((3, 2, 5), (2, 3, 1), batch=1, channels=2)
    check_compiled(g.GridSampleOp, [x, grid], mode=mode, padding_mode=padding)
    x, grid = grid_case((7,), (11,), batch=3, channels=1)
    check_compiled(g.GridSampleOp, [x, grid], mode=mode, padding_mode=padding)


def test_grid_sample_far_outside_grid_is_padding():
    x = RNG.standard_normal((1, 2, 3, 3)).astype(np.float32)
    grid = np.array([[[[1e9, -1e9], [-3e7, 0.0], [0.0, 0.0]]]], np.float32)
    got = compiled(g.GridSampleOp, [x, grid], mode="cubic")
    np.testing.assert_allclose(got[..., :2], 0.0)
    check_compiled(g.GridSampleOp, [x, grid], mode="linear", padding_mode="border")


def test_grid_sample_f64():
    x, grid = grid_case((4, 3), (2, 2))
    check_compiled(g.GridSampleOp, [x.astype(np.float64), grid.astype(np.float64)], mode="cubic",
                   rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------
# dft
# ---------------------------------------------------------------------------

DFT_CASES = [
    # shape, axis, length, inverse, onesided
    ((2, 5, 1), 1, 5, False, False),
    ((2, 5, 1), 1, 7, False, True),
    ((3, 7, 2), 1, 4, False, False),
    ((2, 5, 2), 1, 5, True, False),
    ((3, 4, 2), 1, 6, True, True),
    ((3, 4, 2), 1, 5, True, True),
    ((1, 3, 6, 2), -2, 3, False, True),
    ((2, 1, 1), 1, 1, False, False),
    ((5, 3, 2, 1), 0, 5, False, False),
]


@pytest.mark.parametrize("shape,axis,length,inverse,onesided", DFT_CASES)
def test_dft_reference_matches_onnx(shape, axis, length, inverse, onesided):
    x = RNG.standard_normal(shape).astype(np.float32)
    want = onnx_reference("DFT", [x, np.array(length, np.int64), np.array(axis, np.int64)], 20,
                          inverse=int(inverse), onesided=int(onesided))
    got = reference(g.DftOp, [x], axis=axis, length=length, inverse=inverse, onesided=onesided)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape,axis,length,inverse,onesided", DFT_CASES)
def test_dft_compiled(shape, axis, length, inverse, onesided):
    x = RNG.standard_normal(shape).astype(np.float32)
    check_compiled(g.DftOp, [x], axis=axis, length=length, inverse=inverse, onesided=onesided,
                   rtol=1e-4, atol=1e-5)


def test_dft_f64_long_signal_is_accurate():
    x = RNG.standard_normal((1, 97, 2))
    check_compiled(g.DftOp, [x], axis=1, length=97, rtol=1e-9, atol=1e-9)


# ---------------------------------------------------------------------------
# col2im
# ---------------------------------------------------------------------------

COL2IM_CASES = [
    # image, block, strides, dilations, pads
    ((5, 4), (2, 3), (1, 1), (1, 1), (0, 1, 0, 1)),
    ((7, 6), (3, 2), (2, 1), (1, 2), (1, 0, 2, 1)),
    ((5,), (2,), (3,), (1,), (1, 0)),
    ((3, 4, 3), (2, 2, 1), (1, 1, 1), (1, 1, 1), (0,) * 6),
    ((1, 1), (1, 1), (1, 1), (1, 1), (0, 0, 0, 0)),
]


def col2im_input(image, block, strides, dilations, pads, channels=3, dtype=np.float32):
    blocks = g.col2im_blocks(image, block, strides, dilations, pads)
    shape = (2, channels * int(np.prod(block)), int(np.prod(blocks)))
    return RNG.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("image,block,strides,dilations,pads", COL2IM_CASES)
def test_col2im_reference_matches_onnx_and_compiled(image, block, strides, dilations, pads):
    x = col2im_input(image, block, strides, dilations, pads)
    attrs = dict(strides=list(strides), dilations=list(dilations), pads=list(pads))
    want = onnx_reference("Col2Im", [x, np.array(image, np.int64), np.array(block, np.int64)], 18, **attrs)
    got = reference(g.Col2ImOp, [x], image_shape=list(image), block_shape=list(block), **attrs)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    check_compiled(g.Col2ImOp, [x], image_shape=list(image), block_shape=list(block), **attrs)


def test_col2im_integers():
    x = (col2im_input((4, 5), (2, 2), (1, 1), (1, 1), (0,) * 4) * 10).astype(np.int32)
    check_compiled(g.Col2ImOp, [x], image_shape=[4, 5], block_shape=[2, 2])


# ---------------------------------------------------------------------------
# roi_align
# ---------------------------------------------------------------------------

ROIS = np.array([[0, 0, 9, 9], [0, 5, 4, 9], [5, 5, 9, 9], [-3, 2, 12, 4.5], [1.2, 3.3, 1.7, 3.5]], np.float32)
ROI_IDS = np.array([0, 1, 1, 0, 1], np.int64)


@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("ctm", ["half_pixel", "output_half_pixel"])
@pytest.mark.parametrize("ratio", [1, 2, 0])
def test_roi_align_reference_matches_onnx_and_compiled(mode, ctm, ratio):
    x = RNG.standard_normal((2, 3, 10, 7)).astype(np.float32)
    attrs = dict(mode=mode, coordinate_transformation_mode=ctm, output_height=3, output_width=4,
                 sampling_ratio=ratio, spatial_scale=0.8)
    want = onnx_reference("RoiAlign", [x, ROIS, ROI_IDS], 16, **attrs)
    extra = {"max_samples": 4} if ratio == 0 else {}
    got = reference(g.RoiAlignOp, [x, ROIS, ROI_IDS], **attrs, **extra)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    check_compiled(g.RoiAlignOp, [x, ROIS, ROI_IDS], **attrs, **extra)


# ---------------------------------------------------------------------------
# verifier rules (the lit tests hold the full messages)
# ---------------------------------------------------------------------------


def _types(*arrays):
    return Block(arg_types=[tensor_type_of(a) for a in arrays]).args


def test_rules_name_the_problem():
    x = np.zeros((1, 2, 3, 4), np.float32)
    with pytest.raises(VerifyException, match="grid must be N x O1..O2 x 2"):
        g.GridSampleOp.make(*_types(x, np.zeros((1, 3, 3, 3), np.float32)))
    with pytest.raises(VerifyException, match="mode must be one of linear, nearest, cubic"):
        g.GridSampleOp.make(*_types(x, np.zeros((1, 3, 3, 2), np.float32)), mode="bilinear")
    with pytest.raises(VerifyException, match="axis must not be the last dim"):
        g.DftOp.make(*_types(np.zeros((3, 2), np.float32)), axis=1, length=3)
    with pytest.raises(VerifyException, match="x dim 2 .5. must equal the number of block positions 6"):
        g.Col2ImOp.make(*_types(np.zeros((1, 4, 5), np.float32)), image_shape=[3, 4], block_shape=[2, 2])
    with pytest.raises(VerifyException, match="needs max_samples"):
        g.RoiAlignOp.make(*_types(x, np.zeros((2, 4), np.float32), np.zeros(2, np.int64)))


# ---------------------------------------------------------------------------
# ONNX converters, end to end (import + compile) against onnx's reference
# ---------------------------------------------------------------------------


def run_onnx(op_type, arrays, opset, constants=(), rtol=1e-4, atol=1e-4, want=None, **attrs):
    """Import (inputs at positions ``constants`` bound at compile time), compile,
    compare with ``want`` (default: onnx's reference evaluator)."""
    from dlc.frontends.onnx import import_model

    model = onnx_model(op_type, arrays, opset, **attrs)
    feeds = {f"in{k}": a for k, a in enumerate(arrays) if a is not None}
    if want is None:
        want = ReferenceEvaluator(model).run(None, feeds)[0]
    bound = {f"in{k}": arrays[k] for k in constants}
    module = import_model(model, constant_inputs=bound)
    runtime = [a for k, a in enumerate(arrays) if a is not None and k not in constants]
    (got,) = dlc.compile(module, num_threads=1)(*runtime)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("old,new", [("bilinear", "linear"), ("nearest", "nearest"), ("bicubic", "cubic")])
def test_onnx_grid_sample_opset16_mode_names(old, new):
    x, grid = grid_case((4, 5), (3, 3))
    attrs = dict(padding_mode="border", align_corners=1)
    want = onnx_reference("GridSample", [x, grid], 20, mode=new, **attrs)
    run_onnx("GridSample", [x, grid], 16, mode=old, want=want, **attrs)


@pytest.mark.parametrize("opset", [17, 20])
@pytest.mark.parametrize("inverse,onesided", [(0, 0), (0, 1), (1, 0), (1, 1)])
def test_onnx_dft(opset, inverse, onesided):
    x = RNG.standard_normal((2, 5, 3, 2 if inverse else 1)).astype(np.float32)
    if opset == 17:
        run_onnx("DFT", [x, np.array(6, np.int64)], opset, constants=(1,), axis=1,
                 inverse=inverse, onesided=onesided)
    else:
        run_onnx("DFT", [x, None, np.array(-3, np.int64)], opset, constants=(2,),
                 inverse=inverse, onesided=onesided)


def test_onnx_stft():
    signal = RNG.standard_normal((2, 23, 1)).astype(np.float32)
    window = np.hanning(6).astype(np.float32)
    run_onnx("STFT", [signal, np.array(3, np.int64), window], 17, constants=(1,))
    run_onnx("STFT", [signal, np.array(4, np.int64), None, np.array(5, np.int64)], 17,
             constants=(1, 3), onesided=0)


def test_onnx_col2im():
    x = col2im_input((5, 4), (2, 3), (1, 1), (1, 1), (0, 1, 0, 1))
    run_onnx("Col2Im", [x, np.array([5, 4], np.int64), np.array([2, 3], np.int64)], 18,
             constants=(1, 2), pads=[0, 1, 0, 1])


@pytest.mark.parametrize("opset,ctm", [(10, None), (16, "output_half_pixel"), (16, "half_pixel")])
def test_onnx_roi_align(opset, ctm):
    x = RNG.standard_normal((2, 3, 10, 7)).astype(np.float32)
    attrs = dict(output_height=2, output_width=3, sampling_ratio=0, spatial_scale=0.5, mode="avg")
    want = None
    if ctm:
        attrs["coordinate_transformation_mode"] = ctm
    else:  # opset 10 is output_half_pixel (onnx's reference evaluator applies half_pixel)
        want = onnx_reference("RoiAlign", [x, ROIS, ROI_IDS], 16, **attrs,
                              coordinate_transformation_mode="output_half_pixel")
    run_onnx("RoiAlign", [x, ROIS, ROI_IDS], opset, constants=(1,), want=want, **attrs)


# ---------------------------------------------------------------------------
# deform_conv2d
# ---------------------------------------------------------------------------

DEFORM_CASES = [
    # x shape, w shape, strides, dilations, pads, groups, offset_groups, mask, bias
    ((1, 1, 3, 3), (1, 1, 2, 2), (1, 1), (1, 1), (0, 0, 0, 0), 1, 1, False, False),
    ((2, 4, 5, 6), (6, 2, 3, 2), (2, 1), (1, 2), (1, 0, 2, 1), 2, 2, True, True),
    ((1, 3, 7, 5), (2, 3, 1, 3), (1, 2), (1, 1), (0, 1, 0, 1), 1, 3, True, False),
    ((1, 2, 4, 4), (5, 2, 2, 2), (1, 1), (1, 1), (1, 1, 1, 1), 1, 1, False, True),
]


def deform_inputs(xs, ws, strides, dilations, pads, groups, ogroups, with_mask, with_bias, spread=2.0):
    kh, kw = ws[2:]
    oh = (xs[2] + pads[0] + pads[2] - ((kh - 1) * dilations[0] + 1)) // strides[0] + 1
    ow = (xs[3] + pads[1] + pads[3] - ((kw - 1) * dilations[1] + 1)) // strides[1] + 1
    x = RNG.standard_normal(xs).astype(np.float32)
    w = RNG.standard_normal(ws).astype(np.float32)
    offset = RNG.uniform(-spread, spread, (xs[0], 2 * ogroups * kh * kw, oh, ow)).astype(np.float32)
    mask = RNG.uniform(0, 1, (xs[0], ogroups * kh * kw, oh, ow)).astype(np.float32) if with_mask else None
    bias = RNG.standard_normal(ws[0]).astype(np.float32) if with_bias else None
    return x, w, offset, mask, bias


@pytest.mark.parametrize("case", DEFORM_CASES)
def test_deform_conv_reference_matches_onnx_and_compiled(case):
    xs, ws, strides, dilations, pads, groups, ogroups, with_mask, with_bias = case
    x, w, offset, mask, bias = deform_inputs(*case)
    want = onnx_reference("DeformConv", [x, w, offset, bias, mask], 19, strides=list(strides),
                          dilations=list(dilations), pads=list(pads), group=groups, offset_group=ogroups)
    operands = [a for a in (x, w, offset, mask, bias) if a is not None]
    attrs = dict(strides=list(strides), dilations=list(dilations), padding=list(pads), groups=groups,
                 offset_groups=ogroups)
    got = reference(g.DeformConv2DOp, operands, **attrs)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    check_compiled(g.DeformConv2DOp, operands, rtol=1e-4, atol=1e-5, **attrs)


def test_onnx_deform_conv():
    case = DEFORM_CASES[1]
    x, w, offset, mask, bias = deform_inputs(*case)
    run_onnx("DeformConv", [x, w, offset, bias, mask], 19, strides=[2, 1], dilations=[1, 2],
             pads=[1, 0, 2, 1], group=2, offset_group=2)


def test_onnx_converter_errors_name_the_node_and_the_problem():
    from dlc.frontends.onnx import NeedsConstantError, OnnxImportError, import_model

    x = RNG.standard_normal((2, 3, 10, 7)).astype(np.float32)
    model = onnx_model("RoiAlign", [x, ROIS, ROI_IDS], 16, sampling_ratio=0)
    with pytest.raises(NeedsConstantError, match="'rois .sampling_ratio = 0 sizes its sample loops by them.' must be known at compile time"):
        import_model(model)
    signal = np.zeros((1, 4, 1), np.float32)
    model = onnx_model("DFT", [signal, None, np.array(2, np.int64)], 20)
    with pytest.raises(OnnxImportError, match=r"\(DFT\): axis 2 is out of range for a rank-3 signal"):
        import_model(model, constant_inputs={"in2": np.array(2, np.int64)})
    model = onnx_model("STFT", [signal, np.array(1, np.int64), None, np.array(9, np.int64)], 17)
    with pytest.raises(OnnxImportError, match="frame_length 9 do not frame a signal of length 4"):
        import_model(model, constant_inputs={"in1": np.array(1, np.int64), "in3": np.array(9, np.int64)})
    model = onnx_model("GridSample", [x, np.zeros((2, 3, 3, 2), np.float32)], 20, mode="area")
    with pytest.raises(OnnxImportError, match="unknown mode 'area'"):
        import_model(model)
