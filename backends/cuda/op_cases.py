"""Coverage cases of the GPU target: every graph op on small odd shapes.

One case per op class (several for ops whose lowering differs by attribute or
element type), each a graph function ``@<case id>`` of one op. The CUDA tests
batch all cases into one module (one ``nvcc`` call, one ``ptxas`` call) and run
each through the emulator against ``dlc.evaluator``; ``bench/gpu`` runs the same
cases on a real GPU. Composite ops are legalized by the GPU pipeline first.

Shapes are primes, ones and broadcasts, small because the emulator interprets
every thread in Python.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import Float32Type, IntegerType, ModuleOp, Signedness, f16, f32, i1, i32, i64
from xdsl.ir import Block, Region

from dlc.dialects import graph as g
from dlc.dialects.graph_base import numpy_dtype, tensor_type
from dlc.dialects.traits import Elementwise

i8 = IntegerType(8)
ui8 = IntegerType(8, Signedness.UNSIGNED)


@dataclass(frozen=True)
class In:
    """One input: shape, element type and value range (``positive`` for log/sqrt...)."""

    shape: tuple[int, ...]
    type: object = f32
    positive: bool = False
    values: tuple | None = None  # fixed values (ties, NaN, rounding halves...)
    int_range: tuple[int, int] = (-9, 10)


@dataclass(frozen=True)
class OpCase:
    id: str
    op: type
    inputs: tuple[In, ...]
    attrs: dict = field(default_factory=dict)
    rtol: float = 1e-5
    atol: float = 1e-5


def _c(id_, op, inputs, rtol=1e-5, atol=1e-5, **attrs) -> OpCase:
    inputs = tuple(x if isinstance(x, In) else In(tuple(x)) for x in inputs)
    return OpCase(id_, op, inputs, attrs, rtol, atol)


P = lambda *shape: In(shape, positive=True)  # noqa: E731 - positive f32 input
I = lambda *shape, t=i32: In(shape, t)  # noqa: E731 - integer input
B = lambda *shape: In(shape, i1)  # noqa: E731 - boolean input

OP_CASES: list[OpCase] = [
    # -- elementwise unary
    _c("neg", g.NegOp, [(3, 1, 5)]),
    _c("neg_i32", g.NegOp, [I(7)]),
    _c("abs", g.AbsOp, [(2, 7)]),
    _c("abs_i64", g.AbsOp, [I(5, t=i64)]),
    _c("sign", g.SignOp, [In((5,), values=(-2.0, 0.0, 3.0, -0.0, 1e-3))]),
    _c("exp", g.ExpOp, [(3, 5)]),
    _c("exp_f16", g.ExpOp, [In((3, 7), f16)], rtol=2e-3, atol=2e-3),
    _c("log", g.LogOp, [P(3, 5)]),
    _c("sqrt", g.SqrtOp, [P(1, 7)]),
    _c("rsqrt", g.RsqrtOp, [P(1, 7)]),
    _c("reciprocal", g.ReciprocalOp, [P(11)]),
    _c("tanh", g.TanhOp, [(2, 3)]),
    _c("sigmoid", g.SigmoidOp, [(2, 3, 5)]),
    _c("relu", g.ReluOp, [(13,)]),
    _c("relu_i32", g.ReluOp, [I(13)]),
    _c("relu_nan", g.ReluOp, [In((4,), values=(float("nan"), -1.0, 2.0, -0.0))]),  # NaN propagates
    _c("erf", g.ErfOp, [(3, 7)]),
    _c("floor", g.FloorOp, [(3, 7)]),
    _c("ceil", g.CeilOp, [(3, 7)]),
    _c("round", g.RoundOp, [In((6,), values=(0.5, 1.5, 2.5, -0.5, -1.5, 0.4))]),
    _c("sin", g.SinOp, [(5,)]),
    _c("cos", g.CosOp, [(5,)]),
    _c("softplus", g.SoftplusOp, [(2, 5)]),
    _c("not", g.NotOp, [B(3, 5)]),
    _c("gelu", g.GeluOp, [(3, 7)]),
    _c("gelu_tanh", g.GeluOp, [(3, 7)], approximate="tanh"),
    _c("clip", g.ClipOp, [(3, 5)], min=-1.0, max=2.0),
    _c("clip_i32", g.ClipOp, [I(7)], min=-1, max=2),
    _c("leaky_relu", g.LeakyReluOp, [(3, 5)], alpha=0.1),
    _c("elu", g.EluOp, [(3, 5)], alpha=0.7),
    _c("hard_sigmoid", g.HardSigmoidOp, [(3, 5)], alpha=0.3, beta=0.4),
    # -- cast
    _c("cast_f2i", g.CastOp, [(3, 5)], to=i64),
    _c("cast_i2f", g.CastOp, [I(7)], to=Float32Type()),
    _c("cast_f2bool", g.CastOp, [In((3,), values=(0.0, -0.5, 2.0))], to=i1),
    _c("cast_f2f16", g.CastOp, [(2, 3)], to=f16, rtol=1e-3, atol=1e-3),
    _c("cast_u8_2f", g.CastOp, [In((5,), ui8, int_range=(0, 256))], to=Float32Type()),
    # -- binary, broadcasting
    _c("add", g.AddOp, [(3, 1, 5), (7, 1)]),
    _c("add_scalar", g.AddOp, [(3, 5), ()]),
    _c("sub", g.SubOp, [(1, 5), (3, 1)]),
    _c("mul_i32", g.MulOp, [I(2, 3), I(3)]),
    _c("add_i8", g.AddOp, [I(3, 5, t=i8), I(5, t=i8)]),
    _c("div", g.DivOp, [(2, 3), P(3)]),
    _c("div_i32", g.DivOp, [In((4,), i32, values=(7, -7, 7, -7)), In((4,), i32, values=(2, 2, -2, -2))]),
    _c("pow", g.PowOp, [P(2, 3), (3,)], rtol=1e-4),
    _c("mod", g.ModOp, [(2, 5), P(5)]),
    _c("mod_i32", g.ModOp, [In((4,), i32, values=(7, -7, 7, -7)), In((4,), i32, values=(3, 3, -3, -3))]),
    _c("max", g.MaxOp, [(3, 1), (1, 5)]),
    _c("min", g.MinOp, [(3, 1), (1, 5)]),
    _c("max_nan", g.MaxOp, [In((3,), values=(float("nan"), 1.0, -2.0)), In((3,), values=(0.0, float("nan"), -3.0))]),
    _c("equal", g.EqualOp, [I(3, 5), I(5)]),
    _c("not_equal", g.NotEqualOp, [I(3, 5), I(5)]),
    _c("less", g.LessOp, [(3, 5), (5,)]),
    _c("less_equal", g.LessEqualOp, [I(3, 5), I(1)]),
    _c("greater", g.GreaterOp, [(3, 5), (5,)]),
    _c("greater_equal", g.GreaterEqualOp, [I(3, 5), I(3, 1)]),
    _c("and", g.AndOp, [B(3, 5), B(5)]),
    _c("or", g.OrOp, [B(3, 5), B(5)]),
    _c("xor", g.XorOp, [B(3, 5), B(5)]),
    _c("where", g.WhereOp, [B(5), (3, 5), (3, 1)]),
    # -- linear algebra
    _c("matmul", g.MatmulOp, [(7, 3), (3, 5)]),
    _c("matmul_batch", g.MatmulOp, [(2, 1, 3, 5), (3, 5, 11)]),
    _c("matmul_vec_mat", g.MatmulOp, [(5,), (3, 5, 2)]),
    _c("matmul_mat_vec", g.MatmulOp, [(3, 5), (5,)]),
    _c("matmul_i32", g.MatmulOp, [I(3, 4), I(4, 2)]),
    _c("dense", g.DenseOp, [(3, 7), (5, 7), (5,)]),
    _c("dense_nobias", g.DenseOp, [(3, 7), (5, 7)]),
    # -- convolution
    _c("conv", g.Conv2DOp, [(2, 3, 7, 5), (4, 3, 3, 2)]),
    _c("conv_stride_pad_dil", g.Conv2DOp, [(1, 2, 11, 9), (3, 2, 3, 3)],
       strides=[2, 3], padding=[1, 2, 0, 1], dilations=[2, 1]),
    _c("conv_long_reduction", g.Conv2DOp, [(1, 4, 3, 3), (2, 4, 3, 3)]),  # block-reduction schedule
    _c("conv_depthwise", g.Conv2DOp, [(1, 5, 7, 7), (5, 1, 3, 3)], groups=5, strides=[2, 2]),
    _c("conv_nhwc_hwio", g.Conv2DOp, [(1, 7, 5, 3), (3, 2, 3, 4)],
       data_layout="NHWC", kernel_layout="HWIO", padding=[1, 0, 1, 0]),
    _c("conv_transpose", g.ConvTranspose2DOp, [(1, 3, 3, 5), (3, 2, 3, 3)], strides=[2, 2]),
    _c("conv_transpose_full", g.ConvTranspose2DOp, [(1, 4, 5, 3), (4, 3, 3, 2)],
       strides=[2, 3], padding=[1, 0, 2, 1], dilations=[1, 2], output_padding=[1, 2]),
    # -- pooling
    _c("max_pool", g.MaxPool2DOp, [(2, 3, 7, 5)], kernel=[3, 2]),
    _c("max_pool_ceil", g.MaxPool2DOp, [(1, 2, 8, 7)], kernel=[3, 3], strides=[2, 2], ceil_mode=True),
    _c("max_pool_i32", g.MaxPool2DOp, [I(1, 2, 5, 5)], kernel=[2, 2], padding=[1, 1, 1, 1]),
    _c("avg_pool", g.AvgPool2DOp, [(2, 3, 7, 5)], kernel=[2, 3], strides=[2, 1]),
    _c("avg_pool_pad_count", g.AvgPool2DOp, [(1, 2, 7, 7)], kernel=[3, 3], padding=[1, 1, 1, 1],
       count_include_pad=True),
    _c("avg_pool_nhwc", g.AvgPool2DOp, [(1, 7, 5, 3)], kernel=[3, 3], layout="NHWC", padding=[1, 1, 1, 1]),
    _c("global_avg_pool", g.GlobalAvgPoolOp, [(2, 3, 7, 5)]),
    _c("global_max_pool", g.GlobalMaxPoolOp, [(2, 3, 7, 5)]),
    _c("global_max_pool_nhwc", g.GlobalMaxPoolOp, [(1, 7, 5, 3)], layout="NHWC"),
    # -- normalization
    _c("batch_norm", g.BatchNormOp, [(2, 3, 5, 7), (3,), (3,), (3,), P(3)], epsilon=1e-3),
    _c("layer_norm", g.LayerNormOp, [(2, 5, 37), (37,), (37,)], rtol=1e-4, atol=1e-4),
    _c("softmax", g.SoftmaxOp, [(3, 37)]),
    _c("softmax_axis0", g.SoftmaxOp, [(3, 7, 2)], axis=0),
    _c("log_softmax", g.LogSoftmaxOp, [(3, 7)], axis=1),
    # composite: legalize writes it out (transposes, matmuls, scale, mask add, softmax)
    _c("attention", g.AttentionOp, [(1, 5, 2, 4), (1, 7, 2, 4), (1, 7, 2, 3), (1, 1, 5, 7)], scale=0.5,
       q_perm=[0, 2, 1, 3], k_perm=[0, 2, 1, 3], v_perm=[0, 2, 1, 3], out_perm=[0, 2, 1, 3]),
    # -- reductions
    _c("reduce_sum", g.ReduceSumOp, [(3, 5, 7)], axes=[1]),
    _c("reduce_sum_rows", g.ReduceSumOp, [(3, 41)], axes=[1], rtol=1e-4),
    _c("reduce_sum_keep", g.ReduceSumOp, [(3, 5, 7)], axes=[0, -1], keepdims=True),
    _c("reduce_mean", g.ReduceMeanOp, [(3, 5, 7)], axes=[2]),
    _c("reduce_max", g.ReduceMaxOp, [(3, 5, 7)], axes=[0, 2], keepdims=True),
    _c("reduce_min_i32", g.ReduceMinOp, [I(3, 5)], axes=[1]),
    _c("reduce_prod", g.ReduceProdOp, [(3, 5)], axes=[1]),
    _c("argmax", g.ArgMaxOp, [(3, 5, 7)], axis=1),
    _c("argmax_last", g.ArgMaxOp, [In((2, 3), values=(1, 3, 3, 2, 2, 0))], axis=1, select_last_index=True),
    _c("argmin_keep", g.ArgMinOp, [(3, 5)], axis=-1, keepdims=True),
    # -- data movement
    _c("reshape", g.ReshapeOp, [(3, 5, 7)], shape=[7, -1]),
    _c("transpose", g.TransposeOp, [(3, 5, 7)], perm=[1, 2, 0]),
    _c("broadcast_to", g.BroadcastToOp, [(3, 1)], shape=[2, 3, 5]),
    _c("squeeze", g.SqueezeOp, [(1, 3, 1, 5)], axes=[0, -2]),
    _c("unsqueeze", g.UnsqueezeOp, [(3, 5)], axes=[0, -1]),
    _c("slice", g.SliceOp, [(5, 7)], starts=[1], ends=[6], axes=[1], steps=[2]),
    _c("slice_negative", g.SliceOp, [(5, 7)], starts=[-1, 100], ends=[-100, -8], steps=[-2, -3]),
    _c("pad", g.PadOp, [(3, 5)], pads=[0, 1, 2, 3], value=1.5),
    _c("pad_crop", g.PadOp, [(3, 5)], pads=[-1, 2, 1, -3]),
    _c("pad_reflect", g.PadOp, [(3, 5)], pads=[2, 1, 1, 4], mode="reflect"),
    _c("pad_edge", g.PadOp, [(3, 5)], pads=[2, 0, 0, 3], mode="edge"),
    _c("concat", g.ConcatOp, [(3, 2), (3, 5), (3, 1)], axis=-1),
    _c("split", g.SplitOp, [(3, 7)], axis=1, sizes=[2, 5]),
    _c("gather", g.GatherOp, [(7, 3), In((2, 3), i64, int_range=(-7, 7))]),
    _c("gather_axis1", g.GatherOp, [(2, 7, 3), In((2,), i32, int_range=(0, 7))], axis=1),
    # -- indexing (gather_nd / scatter / top_k / reverse_sequence)
    _c("gather_nd", g.GatherNDOp, [(2, 5, 3), In((2, 4, 1), i64, int_range=(-5, 5))], batch_dims=1),
    _c("scatter_nd_add", g.ScatterNDOp, [(5, 3), In((4, 1), i64, int_range=(-5, 5)), (4, 3)], reduction="add"),
    _c("scatter_elements", g.ScatterElementsOp, [(3, 5), In((3, 2), i32, int_range=(-5, 5)), (3, 2)], axis=1),
    _c("top_k", g.TopKOp, [In((2, 7), values=(1, 3, 3, 2, 0, 3, 0, 5, 4, 4, 4, 1, 2, 9))], k=3, axis=1),
    _c("reverse_sequence", g.ReverseSequenceOp, [(5, 3, 2), In((3,), i64, int_range=(0, 6))]),
    _c("resize_nearest", g.ResizeOp, [(1, 2, 3, 5)], sizes=[1, 2, 7, 2]),
    _c("resize_linear", g.ResizeOp, [(1, 2, 3, 5)], sizes=[1, 2, 7, 3], mode="linear"),
    # -- spatial sampling and signal ops
    _c("grid_sample_cubic", g.GridSampleOp, [(1, 2, 4, 5), (1, 3, 2, 2)], mode="cubic", padding_mode="reflection"),
    _c("grid_sample_nearest_3d", g.GridSampleOp, [(1, 2, 3, 2, 2), (1, 2, 1, 3, 3)], mode="nearest"),
    _c("dft_irfft", g.DftOp, [(2, 4, 2)], axis=1, length=6, inverse=True, onesided=True, atol=1e-4),
    _c("col2im", g.Col2ImOp, [(2, 6, 12)], image_shape=[4, 5], block_shape=[2, 3], pads=[0, 1, 0, 0]),
    _c("roi_align", g.RoiAlignOp, [(1, 2, 6, 5), In((3, 4), values=(0.5, 1, 4, 5.5, 1, 0, 3, 2, -1, 2, 7, 3)),
                                   In((3,), i64, int_range=(0, 1))], output_height=2, output_width=3,
       sampling_ratio=0, max_samples=3, mode="max"),
    _c("deform_conv2d", g.DeformConv2DOp, [(1, 2, 4, 5), (3, 2, 2, 2), (1, 8, 4, 5), (3,)], padding=[1, 1, 0, 0]),
    # -- blocked layouts (alter-op-layout)
    _c("layout_transform", g.LayoutTransformOp, [(1, 5, 3, 2)], src="NCHW", dst="NCHW4c"),
    _c("layout_transform_back", g.LayoutTransformOp, [(1, 2, 3, 2, 4)], src="NCHW4c", dst="NCHW", channels=5),
    _c("layout_transform_weight", g.LayoutTransformOp, [(5, 3, 2, 2)], src="OIHW", dst="OIHW2i4o"),
    _c("conv2d_nchwc", g.Conv2DNCHWcOp, [(1, 2, 5, 4, 2), (2, 2, 3, 3, 2, 4)], strides=[1, 2], padding=[1, 1, 0, 1]),
    _c("depthwise_conv2d_nchwc", g.DepthwiseConv2DNCHWcOp, [(1, 2, 5, 4, 2), (2, 1, 3, 3, 1, 2)], strides=[1, 2], padding=[1, 1, 0, 1]),
    _c("max_pool2d_nchwc", g.MaxPool2DNCHWcOp, [(1, 2, 7, 5, 4)], kernel=[3, 2], strides=[2, 1], padding=[1, 0, 1, 1]),
    _c("avg_pool2d_nchwc", g.AvgPool2DNCHWcOp, [(1, 1, 5, 7, 3)], kernel=[2, 3], padding=[1, 1, 0, 1], count_include_pad=True),
    # -- inverse trig, bitwise, shifts, N-D pools, det
    _c("acos", g.AcosOp, [In((7,), values=(-1.0, -0.7, -0.5, 0.0, 0.3, 0.9, 1.0))]),
    _c("asin", g.AsinOp, [In((5,), values=(-0.99, -0.5, 0.1, 0.51, 1.0))]),
    _c("atan", g.AtanOp, [(3, 5)]),
    _c("bitwise_not", g.BitwiseNotOp, [I(5)]),
    _c("bitwise_and", g.BitwiseAndOp, [I(3, 1, 5), I(5)]),
    _c("bitwise_or", g.BitwiseOrOp, [In((7,), ui8, int_range=(0, 255)), In((1,), ui8, int_range=(0, 255))]),
    _c("bitwise_xor", g.BitwiseXorOp, [I(2, 3, t=i64), I(3, t=i64)]),
    _c("shift_left", g.ShiftLeftOp, [I(2, 5), In((5,), i32, values=(0, 3, 31, 32, -1))]),
    _c("shift_right", g.ShiftRightOp, [I(2, 5, t=i8), In((5,), i8, values=(0, 3, 7, 8, -1))]),
    _c("max_pool3d", g.MaxPool3DOp, [(1, 2, 3, 5, 4)], kernel=[2, 3, 2], padding=[1, 0, 1, 0, 1, 0]),
    _c("avg_pool3d", g.AvgPool3DOp, [(1, 2, 5, 3, 4)], kernel=[3, 2, 2], strides=[2, 1, 2], ceil_mode=True),
    _c("max_pool_with_indices", g.MaxPoolWithIndicesOp, [(1, 2, 5, 7)], kernel=[2, 3], strides=[1, 2]),
    _c("det", g.DetOp, [(3, 4, 4)], atol=1e-4),
    # -- user-defined (tensor-expression language)
    _c("custom_matmul_relu", g.CustomOp, [(4, 3), (3, 5)],
       te="C[i, j] = sum(k: A[i, k] * B[k, j])\nD[i, j] = max(C[i, j], 0.0)"),
    _c("resize_linear_align", g.ResizeOp, [(1, 2, 3, 5)], sizes=[1, 2, 7, 9], mode="linear",
       coordinate_transformation_mode="align_corners"),
    # -- quantized ops (dialects/graph/quantized.py): integer results, compared exactly
    _c("quantize", g.QuantizeOp, [(3, 5)], scale=[0.1, 0.2, 0.05, 0.3, 0.5], zero_point=[3], axis=1, dtype=ui8),
    _c("dequantize", g.DequantizeOp, [In((2, 5), i8, int_range=(-128, 128))], scale=[0.5], zero_point=[-3]),
    _c("requantize", g.RequantizeOp, [In((2, 3), i32, int_range=(-3000, 3000))], x_scale=[0.01, 0.02],
       y_scale=[0.3], axis=0, dtype=i8),
    _c("qconv2d", g.QConv2DOp, [In((1, 2, 5, 4), ui8, int_range=(0, 256)), In((3, 2, 3, 3), i8, int_range=(-127, 128)),
                                In((3,), i32, int_range=(-500, 500))], padding=[1, 0, 1, 1], x_scale=[0.05],
       x_zero_point=[128], w_scale=[0.01, 0.02, 0.03], y_scale=[0.1], y_zero_point=[120], out_min=120),
    _c("qdense", g.QDenseOp, [In((3, 7), i8, int_range=(-128, 128)), In((2, 7), i8, int_range=(-127, 128))],
       x_scale=[0.1], w_scale=[0.01, 0.02], y_scale=[0.2]),
    # onnxruntime's f32 rescale (requant.requantize_float: an f32 -> i32 bitcast in C / CUDA)
    _c("qdense_float", g.QDenseOp, [In((3, 7), i8, int_range=(-128, 128)), In((2, 7), i8, int_range=(-127, 128))],
       x_scale=[0.5], w_scale=[0.25, 0.125], y_scale=[1.0], y_zero_point=[3], requant="float"),
    _c("qmatmul", g.QMatmulOp, [In((2, 3, 5), ui8, int_range=(0, 256)), In((5, 4), ui8, int_range=(0, 256))],
       a_scale=[0.1], a_zero_point=[128], b_scale=[0.05], b_zero_point=[128], y_scale=[0.3]),
    _c("qadd", g.QAddOp, [In((2, 1, 3), i8, int_range=(-128, 128)), In((4, 1), i8, int_range=(-128, 128))],
       a_scale=[0.1], b_scale=[0.3], y_scale=[0.25], y_zero_point=[-1]),
    _c("qmul", g.QMulOp, [In((2, 3), i8, int_range=(-128, 128)), In((3,), i8, int_range=(-128, 128))],
       a_scale=[0.1], b_scale=[0.3], y_scale=[0.5]),
    _c("qconcat", g.QConcatOp, [In((2, 3), i8, int_range=(-128, 128)), In((2, 2), i8, int_range=(-128, 128))],
       axis=1, in_scale=[0.1, 0.2], in_zero_point=[0, 5], y_scale=[0.2]),
    _c("qavg_pool2d", g.QAvgPool2DOp, [In((1, 2, 5, 5), ui8, int_range=(0, 256))], kernel=[3, 3], strides=[2, 2],
       padding=[1, 1, 1, 1], x_scale=[0.1], x_zero_point=[7], y_scale=[0.07], y_zero_point=[100]),
]


def _default_unary_cases(explicit: list[OpCase]) -> list[OpCase]:
    """One case on an odd f32 shape for each unary elementwise op without an
    explicit case: the op's class and traits say all such a case needs, so a new
    activation is covered without an entry here (ops with a restricted domain,
    like log, or several lowerings, like relu, keep their own cases above)."""
    covered = {case.op for case in explicit}
    return [
        _c(op.name.removeprefix("graph."), op, [(3, 7)])
        for op in g.GRAPH_OPS
        if op not in covered and issubclass(op, g.UnaryOp) and op.has_trait(Elementwise) and op.ELEMENT != "bool"
    ]


OP_CASES += _default_unary_cases(OP_CASES)


def covered_op_names() -> set[str]:
    return {case.op.name for case in OP_CASES}


def case_function(case: OpCase) -> func.FuncOp:
    """``func.func @<case id>(inputs...) -> results`` holding the one op."""
    types = [tensor_type(x.shape, x.type) for x in case.inputs]
    block = Block(arg_types=types)
    op = case.op.make(*block.args, **case.attrs)
    block.add_op(op)
    block.add_op(func.ReturnOp(*op.results))
    return func.FuncOp(case.id, (types, [r.type for r in op.results]), Region(block))


def case_module(cases: list[OpCase] | None = None) -> ModuleOp:
    """One graph function per case, in one module (one nvcc / ptxas call for all)."""
    module = ModuleOp([case_function(c) for c in (OP_CASES if cases is None else cases)])
    module.verify()
    return module


def case_inputs(case: OpCase, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays = []
    for x in case.inputs:
        dtype = numpy_dtype(x.type)
        if x.values is not None:
            arrays.append(np.array(x.values, dtype=dtype).reshape(x.shape))
        elif dtype == np.bool_:
            arrays.append(rng.random(x.shape) < 0.5)
        elif dtype.kind == "f":
            values = rng.uniform(-2.0, 2.0, x.shape)
            arrays.append((np.abs(values) + 0.1 if x.positive else values).astype(dtype))
        else:
            arrays.append(rng.integers(*x.int_range, size=x.shape).astype(dtype))
    return arrays


def max_error(got: np.ndarray, want: np.ndarray, case: OpCase) -> str | None:
    """None when ``got`` matches ``want`` within the case's tolerance, else why not."""
    want = np.asarray(want)
    if got.dtype != want.dtype and got.dtype.itemsize == want.dtype.itemsize and want.dtype.kind in "iub":
        got = got.view(want.dtype)  # loop IR integers are signless
    if got.shape != want.shape:
        return f"shape {got.shape}, expected {want.shape}"
    if want.dtype.kind == "f":
        if np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=case.rtol, atol=case.atol,
                       equal_nan=True):
            return None
        err = np.nanmax(np.abs(got.astype(np.float64) - want.astype(np.float64)))
        return f"max |error| {err:.3g} (rtol {case.rtol}, atol {case.atol})"
    if np.array_equal(got, want):
        return None
    return f"{int(np.sum(got != want))} of {want.size} elements differ"
