"""Every graph op's numpy reference against ONNX semantics (``onnx.reference``)
on odd shapes (primes, 1s, broadcasting), and ``Op.make``'s inferred result
type against the type of what the reference returns."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import Float32Type, IntegerType

from dlc.dialects import graph as g
from dlc.dialects.graph import GRAPH_OPS
from test_graph_util import onnx_run, rand, run

f32, i32, i64 = np.float32, np.int32, np.int64


def _bounded(op_type, inputs, attrs, bound, dim):
    """ONNX's result laid into a zeroed ``bound`` as its prefix, and its extent along ``dim``."""
    (want,) = onnx_run(op_type, inputs, attrs, (), 18, n_out=1)
    flat = np.zeros(int(np.prod(bound)), want.dtype)
    flat[:want.size] = want.reshape(-1)
    return [flat.reshape(bound), np.array(want.shape[dim], np.int64)]


def _bounded_unique(x, attrs):
    """ONNX Unique's four results in graph.unique's layout: values, first indices and
    counts as prefixes of their bounds, the inverse as is, then the count."""
    y, first, inverse, counts = onnx_run("Unique", [x], attrs, (), 18, n_out=4)
    axis = attrs.get("axis")
    n = x.size if axis is None else x.shape[axis]
    bound = list(y.shape)
    bound[0 if axis is None else axis] = n
    prefix = [np.zeros(int(np.prod(b)), a.dtype) for a, b in ((y, bound), (first, [n]), (counts, [n]))]
    for buf, a in zip(prefix, (y, first, counts)):
        buf[:a.size] = a.reshape(-1)
    return [prefix[0].reshape(bound), prefix[1], inverse, prefix[2], np.array(first.size, np.int64)]


def _i64(*v):
    return np.array(v, dtype=np.int64)


_QRNG = np.random.default_rng(1818)  # the quantized cases' own integers (the shared RNG stays as it was)


def _tflite_mbqm(acc: int, real: float) -> int:
    """TFLite's QuantizeMultiplier + MultiplyByQuantizedMultiplier (TFLITE_SINGLE_ROUNDING),
    as its C code, on Python ints."""
    import math

    q, shift = math.frexp(real)
    m = round(q * (1 << 31))
    if m == 1 << 31:
        m, shift = m // 2, shift + 1
    total = 31 - shift
    return min(max((acc * m + (1 << (total - 1))) >> total, -(1 << 31)), (1 << 31) - 1)


def _tflite_requant(acc, reals, zp, lo, hi, axis=None):
    acc = np.asarray(acc, np.int64)
    out = np.empty(acc.shape, np.int64)
    for idx in np.ndindex(acc.shape):
        real = reals[idx[axis]] if axis is not None else reals[0]
        out[idx] = min(max(_tflite_mbqm(int(acc[idx]), float(real)) + zp, lo), hi)
    return out


def _float_add(a, b, sa, sb, sy, zy):
    """onnxruntime QLinearAdd's formula on zero-point-free int arrays (broadcast), int8
    output: ``round(a * sa/sy + b * sb/sy) + zy`` in f64 (no ties on these values)."""
    a, b = np.broadcast_arrays(a, b)
    s = [float(np.float32(v)) for v in (sa, sb, sy)]
    return np.clip(np.rint(a * (s[0] / s[2]) + b * (s[1] / s[2])) + zy, -128, 127)


def pos(*shape):
    return rand(*shape, low=0.1, high=3.0)


# (case id, op class, inputs, graph attrs, onnx (op_type, attrs, const inputs, opset) or a numpy fn)
def _attention_oracle(q, k, v, mask, scale, split=True):
    """softmax(Q K^T * scale + mask) V, Q/K/V (b, s, h, d) split per head (or already (b, h, s, d))."""
    if split:
        q, k, v = (x.transpose(0, 2, 1, 3) for x in (q, k, v))
    s = np.einsum("bhqd,bhkd->bhqk", q.astype(np.float64), k.astype(np.float64)) * scale
    if mask is not None:
        s = s + mask
    p = np.exp(s - s.max(-1, keepdims=True))
    out = np.einsum("bhqk,bhkd->bhqd", p / p.sum(-1, keepdims=True), v.astype(np.float64))
    return (out.transpose(0, 2, 1, 3) if split else out).astype(np.float32)


CASES = [
    # -- elementwise unary
    ("neg", g.NegOp, [rand(3, 1, 5)], {}, ("Neg", {}, (), 18)),
    ("neg_i32", g.NegOp, [rand(7, dtype=i32)], {}, ("Neg", {}, (), 18)),
    ("abs", g.AbsOp, [rand(2, 7)], {}, ("Abs", {}, (), 18)),
    ("abs_i64", g.AbsOp, [rand(5, dtype=i64)], {}, ("Abs", {}, (), 18)),
    ("sign", g.SignOp, [np.array([-2.0, 0.0, 3.0], f32)], {}, ("Sign", {}, (), 18)),
    ("exp", g.ExpOp, [rand(3, 5)], {}, ("Exp", {}, (), 18)),
    ("log", g.LogOp, [pos(3, 5)], {}, ("Log", {}, (), 18)),
    ("sqrt", g.SqrtOp, [pos(1, 7)], {}, ("Sqrt", {}, (), 18)),
    ("rsqrt", g.RsqrtOp, [pos(1, 7)], {}, lambda x: 1 / np.sqrt(x)),
    ("reciprocal", g.ReciprocalOp, [pos(11)], {}, ("Reciprocal", {}, (), 18)),
    ("tanh", g.TanhOp, [rand(2, 3)], {}, ("Tanh", {}, (), 18)),
    ("sigmoid", g.SigmoidOp, [rand(2, 3, 5)], {}, ("Sigmoid", {}, (), 18)),
    ("relu", g.ReluOp, [rand(13)], {}, ("Relu", {}, (), 18)),
    ("relu_i32", g.ReluOp, [rand(13, dtype=i32)], {}, ("Relu", {}, (), 18)),
    ("erf", g.ErfOp, [rand(3, 7)], {}, ("Erf", {}, (), 18)),
    ("floor", g.FloorOp, [rand(3, 7)], {}, ("Floor", {}, (), 18)),
    ("ceil", g.CeilOp, [rand(3, 7)], {}, ("Ceil", {}, (), 18)),
    ("round", g.RoundOp, [np.array([0.5, 1.5, 2.5, -0.5, -1.5, 0.4], f32)], {}, ("Round", {}, (), 18)),
    ("sin", g.SinOp, [rand(5)], {}, ("Sin", {}, (), 18)),
    ("cos", g.CosOp, [rand(5)], {}, ("Cos", {}, (), 18)),
    ("softplus", g.SoftplusOp, [rand(2, 5)], {}, ("Softplus", {}, (), 18)),
    ("not", g.NotOp, [rand(3, 5, dtype=np.bool_)], {}, ("Not", {}, (), 18)),
    ("gelu", g.GeluOp, [rand(3, 7)], {}, ("Gelu", {}, (), 20)),
    ("gelu_tanh", g.GeluOp, [rand(3, 7)], {"approximate": "tanh"}, ("Gelu", {"approximate": "tanh"}, (), 20)),
    ("clip", g.ClipOp, [rand(3, 5)], {"min": -1.0, "max": 2.0},
     ("Clip", {}, (np.array(-1.0, f32), np.array(2.0, f32)), 18)),
    ("clip_min_only", g.ClipOp, [rand(3, 5)], {"min": 0.5}, ("Clip", {}, (np.array(0.5, f32),), 18)),
    ("clip_i32", g.ClipOp, [rand(7, dtype=i32)], {"min": -1, "max": 2},
     ("Clip", {}, (np.array(-1, i32), np.array(2, i32)), 18)),
    ("leaky_relu", g.LeakyReluOp, [rand(3, 5)], {"alpha": 0.1}, ("LeakyRelu", {"alpha": 0.1}, (), 18)),
    ("leaky_relu_default", g.LeakyReluOp, [rand(3, 5)], {}, ("LeakyRelu", {}, (), 18)),
    ("elu", g.EluOp, [rand(3, 5)], {"alpha": 0.7}, ("Elu", {"alpha": 0.7}, (), 18)),
    ("hard_sigmoid", g.HardSigmoidOp, [rand(3, 5)], {"alpha": 0.3, "beta": 0.4},
     ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}, (), 18)),
    # -- cast
    ("cast_f2i", g.CastOp, [rand(3, 5)], {"to": g.i64}, ("Cast", {"to": 7}, (), 18)),
    ("cast_i2f", g.CastOp, [rand(7, dtype=i32)], {"to": Float32Type()}, ("Cast", {"to": 1}, (), 18)),
    ("cast_f2bool", g.CastOp, [np.array([0.0, -0.5, 2.0], f32)], {"to": g.i1}, ("Cast", {"to": 9}, (), 18)),
    # -- binary with broadcasting
    ("add", g.AddOp, [rand(3, 1, 5), rand(7, 1)], {}, ("Add", {}, (), 18)),
    ("add_scalar", g.AddOp, [rand(3, 5), np.array(2.0, f32)], {}, ("Add", {}, (), 18)),
    ("sub", g.SubOp, [rand(1, 5), rand(3, 1)], {}, ("Sub", {}, (), 18)),
    ("mul_i32", g.MulOp, [rand(2, 3, dtype=i32), rand(3, dtype=i32)], {}, ("Mul", {}, (), 18)),
    ("div", g.DivOp, [rand(2, 3), pos(3)], {}, ("Div", {}, (), 18)),
    ("div_i32", g.DivOp, [np.array([7, -7, 7, -7], i32), np.array([2, 2, -2, -2], i32)], {},
     ("Div", {}, (), 18)),
    ("pow", g.PowOp, [pos(2, 3), rand(3)], {}, ("Pow", {}, (), 18)),
    ("mod", g.ModOp, [rand(2, 5), pos(5)], {}, ("Mod", {"fmod": 1}, (), 18)),
    ("mod_i32", g.ModOp, [np.array([7, -7, 7, -7], i32), np.array([3, 3, -3, -3], i32)], {},
     ("Mod", {"fmod": 1}, (), 18)),
    ("max", g.MaxOp, [rand(3, 1), rand(1, 5)], {}, ("Max", {}, (), 18)),
    ("min", g.MinOp, [rand(3, 1), rand(1, 5)], {}, ("Min", {}, (), 18)),
    ("equal", g.EqualOp, [rand(3, 5, dtype=i32), rand(5, dtype=i32)], {}, ("Equal", {}, (), 18)),
    ("equal_bool", g.EqualOp, [rand(3, dtype=np.bool_), rand(3, dtype=np.bool_)], {}, ("Equal", {}, (), 18)),
    ("not_equal", g.NotEqualOp, [rand(3, 5, dtype=i32), rand(5, dtype=i32)], {}, np.not_equal),
    ("less", g.LessOp, [rand(3, 5), rand(5)], {}, ("Less", {}, (), 18)),
    ("less_equal", g.LessEqualOp, [rand(3, 5, dtype=i32), rand(1, dtype=i32)], {}, ("LessOrEqual", {}, (), 18)),
    ("greater", g.GreaterOp, [rand(3, 5), rand(5)], {}, ("Greater", {}, (), 18)),
    ("greater_equal", g.GreaterEqualOp, [rand(3, 5, dtype=i32), rand(3, 1, dtype=i32)], {},
     ("GreaterOrEqual", {}, (), 18)),
    ("and", g.AndOp, [rand(3, 5, dtype=np.bool_), rand(5, dtype=np.bool_)], {}, ("And", {}, (), 18)),
    ("or", g.OrOp, [rand(3, 5, dtype=np.bool_), rand(5, dtype=np.bool_)], {}, ("Or", {}, (), 18)),
    ("xor", g.XorOp, [rand(3, 5, dtype=np.bool_), rand(5, dtype=np.bool_)], {}, ("Xor", {}, (), 18)),
    ("where", g.WhereOp, [rand(5, dtype=np.bool_), rand(3, 5), rand(3, 1)], {}, ("Where", {}, (), 18)),
    # -- linear algebra
    ("matmul", g.MatmulOp, [rand(7, 3), rand(3, 5)], {}, ("MatMul", {}, (), 18)),
    ("matmul_batch", g.MatmulOp, [rand(2, 1, 3, 5), rand(7, 5, 11)], {}, ("MatMul", {}, (), 18)),
    ("matmul_vec_mat", g.MatmulOp, [rand(5), rand(3, 5, 2)], {}, ("MatMul", {}, (), 18)),
    ("matmul_mat_vec", g.MatmulOp, [rand(3, 5), rand(5)], {}, ("MatMul", {}, (), 18)),
    ("matmul_vec_vec", g.MatmulOp, [rand(5), rand(5)], {}, ("MatMul", {}, (), 18)),
    ("dense", g.DenseOp, [rand(3, 7), rand(5, 7), rand(5)], {}, ("Gemm", {"transB": 1}, (), 18)),
    ("dense_nobias", g.DenseOp, [rand(3, 7), rand(5, 7)], {}, ("Gemm", {"transB": 1}, (), 18)),
    ("dense_3d", g.DenseOp, [rand(2, 3, 7), rand(5, 7), rand(5)], {},
     lambda x, w, b: x @ w.T + b),
    # -- convolution
    ("conv", g.Conv2DOp, [rand(2, 3, 7, 5), rand(4, 3, 3, 2)], {}, ("Conv", {}, (), 18)),
    ("conv_stride_pad_dil", g.Conv2DOp, [rand(1, 2, 11, 9), rand(3, 2, 3, 3)],
     {"strides": [2, 3], "padding": [1, 2, 0, 1], "dilations": [2, 1]},
     ("Conv", {"strides": [2, 3], "pads": [1, 2, 0, 1], "dilations": [2, 1]}, (), 18)),
    ("conv_groups", g.Conv2DOp, [rand(1, 6, 5, 5), rand(9, 2, 3, 3)], {"groups": 3, "padding": [1, 1, 1, 1]},
     ("Conv", {"group": 3, "pads": [1, 1, 1, 1]}, (), 18)),
    ("conv_depthwise", g.Conv2DOp, [rand(2, 5, 7, 7), rand(5, 1, 3, 3)], {"groups": 5, "strides": [2, 2]},
     ("Conv", {"group": 5, "strides": [2, 2]}, (), 18)),
    ("conv_nhwc_hwio", g.Conv2DOp, [rand(2, 7, 5, 3), rand(3, 2, 3, 4)],
     {"data_layout": "NHWC", "kernel_layout": "HWIO", "padding": [1, 0, 1, 0]},
     lambda x, w: onnx_run("Conv", [x.transpose(0, 3, 1, 2), w.transpose(3, 2, 0, 1)],
                           {"pads": [1, 0, 1, 0]})[0].transpose(0, 2, 3, 1)),
    ("conv_transpose", g.ConvTranspose2DOp, [rand(1, 4, 3, 5), rand(4, 2, 3, 3)],
     {"strides": [2, 2]}, ("ConvTranspose", {"strides": [2, 2]}, (), 18)),
    ("conv_transpose_full", g.ConvTranspose2DOp, [rand(2, 4, 5, 3), rand(4, 3, 3, 2)],
     {"strides": [2, 3], "padding": [1, 0, 2, 1], "dilations": [1, 2], "output_padding": [1, 2]},
     ("ConvTranspose", {"strides": [2, 3], "pads": [1, 0, 2, 1], "dilations": [1, 2],
                        "output_padding": [1, 2]}, (), 18)),
    # onnx.reference's ConvTranspose mishandles group > 1: check against the
    # per-group definition (each group is an independent conv_transpose).
    ("conv_transpose_groups", g.ConvTranspose2DOp, [rand(2, 4, 5, 3), rand(4, 3, 3, 2)],
     {"strides": [2, 1], "padding": [1, 0, 0, 1], "groups": 2},
     lambda x, w: np.concatenate([
         onnx_run("ConvTranspose", [x[:, 2 * i:2 * i + 2], w[2 * i:2 * i + 2]],
                  {"strides": [2, 1], "pads": [1, 0, 0, 1]})[0] for i in range(2)], axis=1)),
    # -- pooling
    ("max_pool", g.MaxPool2DOp, [rand(2, 3, 7, 5)], {"kernel": [3, 2]}, ("MaxPool", {"kernel_shape": [3, 2]}, (), 18)),
    ("max_pool_full", g.MaxPool2DOp, [rand(1, 2, 11, 9)],
     {"kernel": [3, 3], "strides": [2, 2], "padding": [1, 1, 1, 0], "dilations": [1, 2]},
     ("MaxPool", {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 0], "dilations": [1, 2]}, (), 18)),
    ("max_pool_ceil", g.MaxPool2DOp, [rand(1, 2, 8, 7)], {"kernel": [3, 3], "strides": [2, 2], "ceil_mode": True},
     ("MaxPool", {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}, (), 18)),
    ("max_pool_i32", g.MaxPool2DOp, [rand(1, 2, 5, 5, dtype=i32)], {"kernel": [2, 2], "padding": [1, 1, 1, 1]},
     lambda x: onnx_run("MaxPool", [x.astype(f32)], {"kernel_shape": [2, 2], "pads": [1, 1, 1, 1]})[0].astype(i32)),
    ("avg_pool", g.AvgPool2DOp, [rand(2, 3, 7, 5)], {"kernel": [2, 3], "strides": [2, 1]},
     ("AveragePool", {"kernel_shape": [2, 3], "strides": [2, 1]}, (), 19)),
    ("avg_pool_pad", g.AvgPool2DOp, [rand(1, 2, 7, 7)], {"kernel": [3, 3], "padding": [1, 1, 1, 1]},
     ("AveragePool", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}, (), 19)),
    ("avg_pool_pad_count", g.AvgPool2DOp, [rand(1, 2, 7, 7)],
     {"kernel": [3, 3], "padding": [1, 1, 1, 1], "count_include_pad": True},
     ("AveragePool", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1}, (), 19)),
    ("avg_pool_nhwc", g.AvgPool2DOp, [rand(2, 7, 5, 3)], {"kernel": [3, 3], "layout": "NHWC", "padding": [1, 1, 1, 1]},
     lambda x: onnx_run("AveragePool", [x.transpose(0, 3, 1, 2)], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]},
                        opset=19)[0].transpose(0, 2, 3, 1)),
    ("global_avg_pool", g.GlobalAvgPoolOp, [rand(2, 3, 7, 5)], {}, ("GlobalAveragePool", {}, (), 18)),
    ("global_avg_pool_1d", g.GlobalAvgPoolOp, [rand(2, 3, 7)], {}, ("GlobalAveragePool", {}, (), 18)),
    ("global_max_pool", g.GlobalMaxPoolOp, [rand(2, 3, 7, 5)], {}, ("GlobalMaxPool", {}, (), 18)),
    ("global_max_pool_nhwc", g.GlobalMaxPoolOp, [rand(2, 7, 5, 3)], {"layout": "NHWC"},
     lambda x: x.max(axis=(1, 2), keepdims=True)),
    # -- normalization
    ("batch_norm", g.BatchNormOp, [rand(2, 3, 5, 7), rand(3), rand(3), rand(3), pos(3)], {"epsilon": 1e-3},
     ("BatchNormalization", {"epsilon": 1e-3}, (), 15)),
    ("layer_norm", g.LayerNormOp, [rand(2, 5, 7), rand(7), rand(7)], {}, ("LayerNormalization", {}, (), 17)),
    ("layer_norm_axis", g.LayerNormOp, [rand(2, 5, 7), rand(5, 7), rand(7)], {"axis": 1, "epsilon": 1e-3},
     ("LayerNormalization", {"axis": 1, "epsilon": 1e-3}, (), 17)),
    ("softmax", g.SoftmaxOp, [rand(3, 7)], {}, ("Softmax", {}, (), 18)),
    ("softmax_axis0", g.SoftmaxOp, [rand(3, 7, 2)], {"axis": 0}, ("Softmax", {"axis": 0}, (), 18)),
    ("log_softmax", g.LogSoftmaxOp, [rand(3, 7)], {"axis": 1}, ("LogSoftmax", {"axis": 1}, (), 18)),
    ("attention", g.AttentionOp, [rand(1, 5, 2, 4), rand(1, 7, 2, 4), rand(1, 7, 2, 3), rand(1, 1, 5, 7)],
     {"scale": 0.5, "q_perm": [0, 2, 1, 3], "k_perm": [0, 2, 1, 3], "v_perm": [0, 2, 1, 3], "out_perm": [0, 2, 1, 3]},
     lambda q, k, v, m: _attention_oracle(q, k, v, m, 0.5)),
    ("attention_nomask", g.AttentionOp, [rand(2, 3, 5, 4), rand(2, 3, 4, 6), rand(2, 3, 6, 4)],
     {"scale": 0.25, "k_perm": [0, 1, 3, 2]},
     lambda q, k, v: _attention_oracle(q, k.transpose(0, 1, 3, 2), v, None, 0.25, split=False)),
    # -- reductions
    ("reduce_sum", g.ReduceSumOp, [rand(3, 5, 7)], {"axes": [1]}, ("ReduceSum", {"keepdims": 0}, (_i64(1),), 18)),
    ("reduce_sum_keep", g.ReduceSumOp, [rand(3, 5, 7)], {"axes": [0, -1], "keepdims": True},
     ("ReduceSum", {"keepdims": 1}, (_i64(0, -1),), 18)),
    ("reduce_sum_all", g.ReduceSumOp, [rand(3, 5)], {}, ("ReduceSum", {"keepdims": 0}, (), 18)),
    ("reduce_mean", g.ReduceMeanOp, [rand(3, 5, 7)], {"axes": [2]}, ("ReduceMean", {"keepdims": 0}, (_i64(2),), 18)),
    ("reduce_max", g.ReduceMaxOp, [rand(3, 5, 7)], {"axes": [0, 2], "keepdims": True},
     ("ReduceMax", {"keepdims": 1}, (_i64(0, 2),), 18)),
    ("reduce_min_i32", g.ReduceMinOp, [rand(3, 5, dtype=i32)], {"axes": [1]},
     ("ReduceMin", {"keepdims": 0}, (_i64(1),), 18)),
    ("reduce_prod", g.ReduceProdOp, [rand(3, 5, low=0.5, high=1.5)], {"axes": [1]},
     ("ReduceProd", {"keepdims": 0}, (_i64(1),), 18)),
    ("argmax", g.ArgMaxOp, [rand(3, 5, 7)], {"axis": 1}, ("ArgMax", {"axis": 1, "keepdims": 0}, (), 18)),
    ("argmax_last", g.ArgMaxOp, [np.array([[1, 3, 3], [2, 2, 0]], f32)], {"axis": 1, "select_last_index": True},
     ("ArgMax", {"axis": 1, "keepdims": 0, "select_last_index": 1}, (), 18)),
    ("argmin_keep", g.ArgMinOp, [rand(3, 5)], {"axis": -1, "keepdims": True},
     ("ArgMin", {"axis": -1, "keepdims": 1}, (), 18)),
    # -- data movement
    ("reshape", g.ReshapeOp, [rand(3, 5, 7)], {"shape": [7, -1]}, ("Reshape", {}, (_i64(7, -1),), 18)),
    ("transpose", g.TransposeOp, [rand(3, 5, 7)], {"perm": [1, 2, 0]}, ("Transpose", {"perm": [1, 2, 0]}, (), 18)),
    ("transpose_default", g.TransposeOp, [rand(3, 5, 7)], {}, ("Transpose", {}, (), 18)),
    ("broadcast_to", g.BroadcastToOp, [rand(3, 1)], {"shape": [2, 1, 5]}, ("Expand", {}, (_i64(2, 1, 5),), 18)),
    ("squeeze", g.SqueezeOp, [rand(1, 3, 1, 5)], {"axes": [0, -2]}, ("Squeeze", {}, (_i64(0, -2),), 18)),
    ("squeeze_all", g.SqueezeOp, [rand(1, 3, 1, 5)], {}, ("Squeeze", {}, (), 18)),
    ("unsqueeze", g.UnsqueezeOp, [rand(3, 5)], {"axes": [0, -1]}, ("Unsqueeze", {}, (_i64(0, -1),), 18)),
    ("slice", g.SliceOp, [rand(5, 7)], {"starts": [1], "ends": [6], "axes": [1], "steps": [2]},
     ("Slice", {}, (_i64(1), _i64(6), _i64(1), _i64(2)), 18)),
    ("slice_negative", g.SliceOp, [rand(5, 7)], {"starts": [-1, 100], "ends": [-100, -8], "steps": [-2, -3]},
     ("Slice", {}, (_i64(-1, 100), _i64(-100, -8), _i64(0, 1), _i64(-2, -3)), 18)),
    ("slice_clamp", g.SliceOp, [rand(5, 7)], {"starts": [-9], "ends": [1000], "axes": [-1]},
     ("Slice", {}, (_i64(-9), _i64(1000), _i64(-1)), 18)),
    ("pad", g.PadOp, [rand(3, 5)], {"pads": [0, 1, 2, 3], "value": 1.5},
     ("Pad", {}, (_i64(0, 1, 2, 3), np.array(1.5, f32)), 18)),
    # onnx.reference's Pad rejects negative pads: crop [1:, :2], then pad
    ("pad_crop", g.PadOp, [rand(3, 5)], {"pads": [-1, 2, 1, -3]},
     lambda x: np.pad(x[1:, :2], ((0, 1), (2, 0)))),
    ("pad_reflect", g.PadOp, [rand(3, 5)], {"pads": [2, 1, 1, 4], "mode": "reflect"},
     ("Pad", {"mode": "reflect"}, (_i64(2, 1, 1, 4),), 18)),
    ("pad_edge", g.PadOp, [rand(3, 5)], {"pads": [2, 0, 0, 3], "mode": "edge"},
     ("Pad", {"mode": "edge"}, (_i64(2, 0, 0, 3),), 18)),
    ("concat", g.ConcatOp, [rand(3, 2), rand(3, 5), rand(3, 1)], {"axis": -1}, ("Concat", {"axis": -1}, (), 18)),
    ("concat_one", g.ConcatOp, [rand(3, 2)], {"axis": 0}, ("Concat", {"axis": 0}, (), 18)),
    ("split", g.SplitOp, [rand(3, 7)], {"axis": 1, "sizes": [2, 5]}, ("Split", {"axis": 1}, (_i64(2, 5),), 18)),
    ("split_three", g.SplitOp, [rand(7, 3)], {"sizes": [1, 3, 3]}, ("Split", {"axis": 0}, (_i64(1, 3, 3),), 18)),
    ("gather", g.GatherOp, [rand(7, 3), np.array([[0, -1, 3], [6, 2, -7]], i64)], {},
     ("Gather", {"axis": 0}, (), 18)),
    ("gather_axis1", g.GatherOp, [rand(2, 7, 3), np.array([4, 0], i32)], {"axis": 1}, ("Gather", {"axis": 1}, (), 18)),
    ("gather_scalar", g.GatherOp, [rand(5, 3), np.array(2, i64)], {"axis": 0}, ("Gather", {"axis": 0}, (), 18)),
    # -- indexing (more cases, every reduction, in test_indexing_ops.py)
    ("gather_nd_batch", g.GatherNDOp, [rand(2, 5, 3), np.array([[[1], [-1]], [[4], [0]]], i64)], {"batch_dims": 1},
     ("GatherND", {"batch_dims": 1}, (), 18)),
    ("scatter_nd_mul", g.ScatterNDOp, [rand(5, 3), np.array([[1], [-2], [1]], i64), rand(3, 3)],
     {"reduction": "mul"}, ("ScatterND", {"reduction": "mul"}, (), 18)),
    ("scatter_elements_min", g.ScatterElementsOp, [rand(3, 5), np.array([[1, 1], [-1, 0], [4, 2]], i64),
     rand(3, 2)], {"axis": 1, "reduction": "min"}, ("ScatterElements", {"axis": 1, "reduction": "min"}, (), 18)),
    ("top_k_smallest", g.TopKOp, [np.array([[1, 3, 3, 2, 0, 3, 0]], f32)], {"k": 4, "largest": False},
     ("TopK", {"axis": -1, "largest": 0}, (_i64(4),), 18)),
    # -- data-dependent (bounded results: ONNX's true result as the prefix of the bound, then
    #    its count; compiled on odd shapes and through the runtime in test_data_dependent_ops.py)
    ("nonzero", g.NonZeroOp, [np.array([[0, 1.5, 0], [-0.0, 0, 3], [np.nan, 0, 0]], f32)], {},
     lambda x: _bounded("NonZero", [x], {}, (2, 9), 1)),
    ("compress_axis1", g.CompressOp, [rand(2, 5, 3), np.array([True, False, True, True])], {"axis": 1},
     lambda x, c: _bounded("Compress", [x, c], {"axis": 1}, (2, 4, 3), 1)),
    ("unique_sorted_axis0", g.UniqueOp, [np.array([[1, 0], [2, 3], [1, 0], [0, 4], [2, 3]], f32)], {"axis": 0},
     lambda x: _bounded_unique(x, {"axis": 0})),
    ("unique_first_seen", g.UniqueOp, [np.array([3, 1, 3, 0, 1, 7, 3], i64)], {"sorted": False},
     lambda x: _bounded_unique(x, {"sorted": 0})),
    ("non_max_suppression", g.NonMaxSuppressionOp,
     [np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, -0.1, 1, 0.9], [0, 10, 1, 11], [0, 10.1, 1, 11.1],
                 [0, 100, 1, 101]]], f32), np.array([[[0.9, 0.75, 0.6, 0.95, 0.5, 0.3], [0.1, 0.8, 0.2, 0.3, 0.9, 0.7]]], f32),
      np.array([2], i64), np.array([0.5], f32), np.array([0.25], f32)], {},
     lambda *xs: _bounded("NonMaxSuppression", list(xs), {}, (12, 3), 0)),
    ("reverse_sequence", g.ReverseSequenceOp, [rand(5, 3, 2), np.array([2, 5, 1], i64)], {},
     ("ReverseSequence", {}, (), 18)),
    ("resize_nearest", g.ResizeOp, [rand(1, 2, 3, 5)], {"sizes": [1, 2, 7, 2]},
     ("Resize", {"mode": "nearest"}, (None, None, _i64(1, 2, 7, 2)), 18)),
    ("resize_nearest_asym_floor", g.ResizeOp, [rand(1, 2, 3, 5)],
     {"sizes": [1, 2, 7, 11], "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"},
     ("Resize", {"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"},
      (None, None, _i64(1, 2, 7, 11)), 18)),
    ("resize_linear", g.ResizeOp, [rand(1, 2, 3, 5)], {"sizes": [1, 2, 7, 3], "mode": "linear"},
     ("Resize", {"mode": "linear"}, (None, None, _i64(1, 2, 7, 3)), 18)),
    ("resize_linear_align", g.ResizeOp, [rand(1, 2, 3, 5)],
     {"sizes": [1, 2, 7, 9], "mode": "linear", "coordinate_transformation_mode": "align_corners"},
     ("Resize", {"mode": "linear", "coordinate_transformation_mode": "align_corners"},
      (None, None, _i64(1, 2, 7, 9)), 18)),
    ("resize_linear_pytorch", g.ResizeOp, [rand(1, 2, 5, 3)],
     {"sizes": [1, 2, 2, 7], "mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"},
     ("Resize", {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"},
      (None, None, _i64(1, 2, 2, 7)), 18)),
    # -- spatial sampling and signal ops (more cases: test_spatial_ops.py)
    ("grid_sample_cubic", g.GridSampleOp, [rand(1, 2, 4, 5), rand(1, 3, 2, 2)],
     {"mode": "cubic", "padding_mode": "reflection"},
     ("GridSample", {"mode": "cubic", "padding_mode": "reflection"}, (), 22)),
    ("dft_rfft", g.DftOp, [rand(2, 7, 1)], {"axis": 1, "length": 7, "onesided": True},
     ("DFT", {"onesided": 1}, (np.array(7, i64), np.array(1, i64)), 20)),
    ("col2im", g.Col2ImOp, [rand(2, 6, 9)], {"image_shape": [4, 5], "block_shape": [2, 3]},
     ("Col2Im", {}, (_i64(4, 5), _i64(2, 3)), 18)),
    ("roi_align", g.RoiAlignOp, [rand(1, 2, 6, 5), np.array([[0.5, 1, 4, 5.5], [1, 0, 3, 2]], f32), _i64(0, 0)],
     {"output_height": 2, "output_width": 3, "sampling_ratio": 2},
     ("RoiAlign", {"output_height": 2, "output_width": 3, "sampling_ratio": 2}, (), 16)),
    ("deform_conv2d", g.DeformConv2DOp, [rand(1, 2, 4, 5), rand(3, 2, 2, 2), rand(1, 8, 3, 4)], {},
     ("DeformConv", {}, (), 19)),
    # -- trig, bitwise and shift ops, 3-D pools, det (more in test_bitwise_and_trig_ops.py,
    # test_pool_nd_and_conv3d.py, test_det_and_integer_linalg.py)
    ("acos", g.AcosOp, [rand(3, 1, 5, low=-1, high=1)], {}, ("Acos", {}, (), 18)),
    ("asin", g.AsinOp, [rand(7, low=-1, high=1)], {}, ("Asin", {}, (), 18)),
    ("atan", g.AtanOp, [rand(2, 3)], {}, ("Atan", {}, (), 18)),
    ("bitwise_not", g.BitwiseNotOp, [rand(3, 5, dtype=i32)], {}, ("BitwiseNot", {}, (), 18)),
    ("bitwise_and", g.BitwiseAndOp, [rand(3, 1, 5, dtype=i64), rand(5, dtype=i64)], {}, ("BitwiseAnd", {}, (), 18)),
    ("bitwise_or", g.BitwiseOrOp, [rand(2, 7, dtype=i32), rand(1, 7, dtype=i32)], {}, ("BitwiseOr", {}, (), 18)),
    ("bitwise_xor", g.BitwiseXorOp, [rand(13, dtype=i32), rand(13, dtype=i32)], {}, ("BitwiseXor", {}, (), 18)),
    ("shift_left", g.ShiftLeftOp, [rand(2, 5, dtype=i32), np.array([0, 3, 31, 32, -1], i32)], {},
     lambda a, b: onnx_run("BitShift", [a, np.broadcast_to(b, a.shape).copy()], {"direction": "LEFT"}, opset=22)[0]),
    ("shift_right", g.ShiftRightOp, [rand(2, 5, dtype=i64), np.array([0, 3, 63, 64, -1], i64)], {},
     lambda a, b: onnx_run("BitShift", [a, np.broadcast_to(b, a.shape).copy()], {"direction": "RIGHT"}, opset=22)[0]),
    ("max_pool3d", g.MaxPool3DOp, [rand(1, 2, 5, 3, 7)], {"kernel": [2, 3, 2], "strides": [2, 1, 2]},
     ("MaxPool", {"kernel_shape": [2, 3, 2], "strides": [2, 1, 2]}, (), 18)),
    ("avg_pool3d", g.AvgPool3DOp, [rand(2, 1, 5, 4, 3)], {"kernel": [3, 2, 2], "padding": [1, 0, 1, 1, 1, 0]},
     ("AveragePool", {"kernel_shape": [3, 2, 2], "pads": [1, 0, 1, 1, 1, 0]}, (), 19)),
    ("max_pool_with_indices", g.MaxPoolWithIndicesOp, [rand(1, 3, 5, 7)], {"kernel": [2, 3], "strides": [1, 2]},
     ("MaxPool", {"kernel_shape": [2, 3], "strides": [1, 2]}, (), 18)),
    ("det", g.DetOp, [rand(3, 5, 5)], {}, ("Det", {}, (), 22)),
    # -- blocked layouts (built by alter-op-layout; more in test_alter_op_layout.py)
    ("layout_transform", g.LayoutTransformOp, [rand(2, 20, 3, 5)], {"src": "NCHW", "dst": "NCHW16c"},
     lambda x: np.pad(x, ((0, 0), (0, 12), (0, 0), (0, 0))).reshape(2, 2, 16, 3, 5).transpose(0, 1, 3, 4, 2)),
    ("conv2d_nchwc", g.Conv2DNCHWcOp, [rand(1, 2, 7, 6, 4), rand(3, 2, 3, 3, 4, 2)], {"strides": [2, 1], "padding": [1, 0, 1, 2]},
     lambda x, w: onnx_run("Conv", [x.transpose(0, 1, 4, 2, 3).reshape(1, 8, 7, 6),
                                    w.transpose(0, 5, 1, 4, 2, 3).reshape(6, 8, 3, 3)],
                           {"strides": [2, 1], "pads": [1, 0, 1, 2]}, opset=18)[0].reshape(1, 3, 2, 4, 6).transpose(0, 1, 3, 4, 2)),
    ("depthwise_conv2d_nchwc", g.DepthwiseConv2DNCHWcOp, [rand(1, 2, 7, 6, 4), rand(2, 1, 3, 3, 1, 4)],
     {"strides": [2, 1], "padding": [1, 0, 1, 2]},
     lambda x, w: onnx_run("Conv", [x.transpose(0, 1, 4, 2, 3).reshape(1, 8, 7, 6),
                                    w.transpose(0, 5, 1, 4, 2, 3).reshape(8, 1, 3, 3)],
                           {"strides": [2, 1], "pads": [1, 0, 1, 2], "group": 8}, opset=18)[0].reshape(1, 2, 4, 4, 6).transpose(0, 1, 3, 4, 2)),
    ("max_pool2d_nchwc", g.MaxPool2DNCHWcOp, [rand(1, 2, 7, 6, 4)], {"kernel": [3, 2], "strides": [2, 1], "padding": [1, 0, 1, 1]},
     lambda x: onnx_run("MaxPool", [x.transpose(0, 1, 4, 2, 3).reshape(1, 8, 7, 6)],
                        {"kernel_shape": [3, 2], "strides": [2, 1], "pads": [1, 0, 1, 1]}, opset=18)[0].reshape(1, 2, 4, 4, 6).transpose(0, 1, 3, 4, 2)),
    ("avg_pool2d_nchwc", g.AvgPool2DNCHWcOp, [rand(1, 1, 5, 7, 3)], {"kernel": [2, 3], "padding": [1, 1, 0, 1], "count_include_pad": True},
     lambda x: onnx_run("AveragePool", [x.transpose(0, 1, 4, 2, 3).reshape(1, 3, 5, 7)],
                        {"kernel_shape": [2, 3], "pads": [1, 1, 0, 1], "count_include_pad": 1}, opset=19)[0].reshape(1, 1, 3, 5, 7).transpose(0, 1, 3, 4, 2)),
    # -- user-defined (tensor expressions)
    ("custom_matmul", g.CustomOp, [rand(3, 5), rand(5, 7)], {"te": "C[i, j] = sum(k: A[i, k] * B[k, j])"},
     lambda a, b: a @ b),
    # -- ops added later go last: every input comes from one RNG, so a row inserted above
    # would change the inputs of all the rows after it
    ("softsign", g.SoftsignOp, [rand(3, 1, 7)], {}, ("Softsign", {}, (), 18)),
    # -- quantized ops: onnx's QuantizeLinear / DequantizeLinear, and for the integer ops
    # TFLite's fixed point written out below with Python ints over onnx's integer
    # accumulators (ConvInteger, MatMulInteger)
    ("quantize", g.QuantizeOp, [np.array([[0.25, -0.75, 1.25], [7.0, -300.0, 2.5]], f32)],
     {"scale": [0.5, 0.25, 1.0], "zero_point": [3, 0, -1], "axis": 1, "dtype": IntegerType(8)},
     ("QuantizeLinear", {"axis": 1}, (np.array([0.5, 0.25, 1.0], f32), np.array([3, 0, -1], np.int8)), 19)),
    ("dequantize", g.DequantizeOp, [_QRNG.integers(0, 256, (2, 5)).astype(np.uint8)],
     {"scale": [0.02], "zero_point": [128]},
     ("DequantizeLinear", {}, (np.array(0.02, f32), np.array(128, np.uint8)), 19)),
    ("requantize", g.RequantizeOp, [_QRNG.integers(-30000, 30000, (3, 4)).astype(np.int32)],
     {"x_scale": [0.001, 0.002, 0.0005], "y_scale": [0.05], "y_zero_point": [-3], "axis": 0, "dtype": IntegerType(8)},
     lambda x: _tflite_requant(x, [0.001 / 0.05, 0.002 / 0.05, 0.0005 / 0.05], -3, -128, 127, axis=0).astype(np.int8)),
    ("qconv2d", g.QConv2DOp, [_QRNG.integers(0, 256, (1, 3, 5, 4)).astype(np.uint8),
                              _QRNG.integers(-127, 128, (2, 3, 3, 3)).astype(np.int8), np.array([100, -700], np.int32)],
     {"padding": [1, 1, 1, 0], "x_scale": [0.05], "x_zero_point": [128], "w_scale": [0.01, 0.02], "y_scale": [0.2],
      "y_zero_point": [120]},
     lambda x, w, b: _tflite_requant(
         onnx_run("ConvInteger", [x, w, np.array(128, np.uint8)], {"pads": [1, 1, 1, 0]}, opset=10)[0].astype(np.int64)
         + b.reshape(1, 2, 1, 1), [np.float64(np.float32(0.05)) * np.float64(np.float32(s)) / np.float64(np.float32(0.2))
                                   for s in (0.01, 0.02)], 120, 0, 255, axis=1).astype(np.uint8)),
    # blocked int8 conv (alter-op-layout builds it): x NCHW4c already padded, 3 real input
    # channels of 4, 3 output channels in one 16-channel block (the 13 past them: the zero point)
    ("qconv2d_nchwc", g.QConv2DNCHWcOp, [_QRNG.integers(0, 256, (1, 1, 7, 6, 4)).astype(np.uint8),
                                         _QRNG.integers(-127, 128, (3, 3, 3, 3)).astype(np.int8),
                                         np.array([100, -700, 5], np.int32)],
     {"strides": [2, 1], "x_scale": [0.05], "x_zero_point": [128], "w_scale": [0.01, 0.02, 0.03], "y_scale": [0.2],
      "y_zero_point": [120]},
     lambda x, w, b: np.concatenate([
         _tflite_requant(onnx_run("ConvInteger", [x[:, 0, :, :, :3].transpose(0, 3, 1, 2).copy(), w,
                                                   np.array(128, np.uint8)], {"strides": [2, 1]}, opset=10)[0]
                         .astype(np.int64) + b.reshape(1, 3, 1, 1),
                         [np.float64(np.float32(0.05)) * np.float64(np.float32(s)) / np.float64(np.float32(0.2))
                          for s in (0.01, 0.02, 0.03)], 120, 0, 255, axis=1),
         np.full((1, 13, 3, 4), 120)], axis=1).astype(np.uint8).transpose(0, 2, 3, 1)[:, None]),
    # blocked int8 depthwise: 6 real channels in two 4-channel blocks (the 2 past them: the zero point)
    ("qdepthwise_conv2d_nchwc", g.QDepthwiseConv2DNCHWcOp, [_QRNG.integers(0, 256, (1, 2, 7, 6, 4)).astype(np.uint8),
                                                            _QRNG.integers(-127, 128, (6, 1, 3, 3)).astype(np.int8),
                                                            np.array([100, -700, 5, 0, 33, -2], np.int32)],
     {"strides": [2, 1], "padding": [1, 0, 1, 2], "x_scale": [0.05], "x_zero_point": [128],
      "w_scale": [0.01, 0.02, 0.03, 0.015, 0.025, 0.005], "y_scale": [0.2], "y_zero_point": [120]},
     lambda x, w, b: np.concatenate([
         _tflite_requant(onnx_run("ConvInteger", [x.transpose(0, 1, 4, 2, 3).reshape(1, 8, 7, 6)[:, :6].copy(), w,
                                                   np.array(128, np.uint8)],
                                  {"strides": [2, 1], "pads": [1, 0, 1, 2], "group": 6}, opset=10)[0]
                         .astype(np.int64) + b.reshape(1, 6, 1, 1),
                         [np.float64(np.float32(0.05)) * np.float64(np.float32(s)) / np.float64(np.float32(0.2))
                          for s in (0.01, 0.02, 0.03, 0.015, 0.025, 0.005)], 120, 0, 255, axis=1),
         np.full((1, 2, 4, 6), 120)], axis=1).astype(np.uint8).reshape(1, 2, 4, 4, 6).transpose(0, 1, 3, 4, 2)),
    ("qdense", g.QDenseOp, [_QRNG.integers(-128, 128, (3, 7)).astype(np.int8),
                            _QRNG.integers(-127, 128, (2, 7)).astype(np.int8)],
     {"x_scale": [0.1], "x_zero_point": [-5], "w_scale": [0.01], "y_scale": [0.2]},
     lambda x, w: _tflite_requant(onnx_run("MatMulInteger", [x, w.T.copy(), np.array(-5, np.int8)], {}, opset=10)[0],
                                  [np.float64(np.float32(0.1)) * np.float64(np.float32(0.01)) / np.float64(np.float32(0.2))],
                                  0, -128, 127).astype(np.int8)),
    ("qmatmul", g.QMatmulOp, [_QRNG.integers(0, 256, (2, 3, 5)).astype(np.uint8),
                              _QRNG.integers(0, 256, (5, 4)).astype(np.uint8)],
     {"a_scale": [0.1], "a_zero_point": [3], "b_scale": [0.05], "b_zero_point": [128], "y_scale": [0.9]},
     lambda a, b: _tflite_requant(onnx_run("MatMulInteger", [a, b, np.array(3, np.uint8), np.array(128, np.uint8)], {},
                                           opset=10)[0],
                                  [np.float64(np.float32(0.1)) * np.float64(np.float32(0.05)) / np.float64(np.float32(0.9))],
                                  0, 0, 255).astype(np.uint8)),
    ("qadd", g.QAddOp, [_QRNG.integers(-128, 128, (2, 1, 3)).astype(np.int8),
                        _QRNG.integers(-128, 128, (4, 1)).astype(np.int8)],
     {"a_scale": [0.1], "a_zero_point": [2], "b_scale": [0.3], "y_scale": [0.25], "y_zero_point": [-1]},
     lambda a, b: _float_add(a.astype(np.int64) - 2, b.astype(np.int64), 0.1, 0.3, 0.25, -1).astype(np.int8)),
    ("qmul", g.QMulOp, [_QRNG.integers(-128, 128, (2, 3)).astype(np.int8), _QRNG.integers(-128, 128, (3,)).astype(np.int8)],
     {"a_scale": [0.1], "b_scale": [0.3], "y_scale": [0.5], "y_zero_point": [4]},
     lambda a, b: _tflite_requant(a.astype(np.int64) * b, [np.float64(np.float32(0.1)) * np.float64(np.float32(0.3))
                                                           / np.float64(np.float32(0.5))], 4, -128, 127).astype(np.int8)),
    ("qconcat", g.QConcatOp, [_QRNG.integers(-128, 128, (2, 3)).astype(np.int8),
                              _QRNG.integers(-128, 128, (2, 2)).astype(np.int8)],
     {"axis": 1, "in_scale": [0.2, 0.1], "in_zero_point": [5, 0], "y_scale": [0.2], "y_zero_point": [5]},
     lambda a, b: np.concatenate([a, _tflite_requant(b.astype(np.int64), [np.float64(np.float32(0.1)) / np.float64(np.float32(0.2))],
                                                     5, -128, 127).astype(np.int8)], axis=1)),
    ("qavg_pool2d", g.QAvgPool2DOp, [_QRNG.integers(0, 256, (1, 2, 5, 5)).astype(np.uint8)],
     {"kernel": [2, 2], "strides": [2, 2], "x_scale": [0.1], "x_zero_point": [7], "y_scale": [0.1], "y_zero_point": [7]},
     lambda x: (np.vectorize(lambda t: int(t + 2) // 4 if t >= 0 else -(int(-t + 2) // 4))(
         (x[:, :, :4, :4].astype(np.int64) - 7).reshape(1, 2, 2, 2, 2, 2).sum(axis=(3, 5))) + 7).astype(np.uint8)),
    # B [K, N] = [5, 6] in panels of 3 columns: bp[p, k, r] = B[k, 3p + r] (pack-matmul-weights)
    ("matmul_packed", g.MatmulPackedOp, [rand(1, 7, 5), rand(2, 5, 3)], {},
     lambda a, bp: onnx_run("MatMul", [a, bp.transpose(1, 0, 2).reshape(5, 6)], {}, opset=13)),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_reference_matches_onnx(case):
    _, op_cls, inputs, attrs, oracle = case
    got = run(op_cls, inputs, **attrs)  # also checks the inferred types
    if callable(oracle):
        want = oracle(*inputs)
        want = want if isinstance(want, list) else [want]
    else:
        op_type, onnx_attrs, consts, opset = oracle
        want = onnx_run(op_type, inputs, onnx_attrs, consts, opset, n_out=len(got))
    assert len(got) == len(want)
    for a, b in zip(got, want):
        b = np.asarray(b)
        assert a.shape == b.shape
        if a.dtype.kind == "f":
            np.testing.assert_allclose(a, b.astype(a.dtype), rtol=2e-5, atol=2e-6)
        else:
            np.testing.assert_array_equal(a, b)


def test_every_op_has_a_reference_case():
    covered = {c[1] for c in CASES} | {g.ConstantOp, g.WeightOp}  # those two: test_graph_syntax / test_weights
    missing = sorted(op.name for op in GRAPH_OPS if op not in covered)
    assert not missing, f"ops without a reference case: {missing}"


def test_softplus_does_not_overflow():
    (out,) = run(g.SoftplusOp, [np.array([100.0, -100.0, 0.0], f32)])
    np.testing.assert_allclose(out, [100.0, 0.0, np.log(2.0)], rtol=1e-6, atol=1e-30)


def test_gelu_matches_its_formula_in_f64():
    x = rand(17, dtype=np.float64)
    from math import erf, sqrt

    (out,) = run(g.GeluOp, [x])
    np.testing.assert_allclose(out, [0.5 * v * (1 + erf(v / sqrt(2))) for v in x], rtol=1e-12)


def test_cast_to_bool_and_back():
    x = np.array([0.0, -0.5, 2.0], f32)
    (b,) = run(g.CastOp, [x], to=g.i1)
    np.testing.assert_array_equal(b, [False, True, True])
    (back,) = run(g.CastOp, [b], to=g.i64)
    np.testing.assert_array_equal(back, [0, 1, 1])
