"""The integer GEMM kernel (kernels/quantized_fast.py, form qgemm; schedule
defaults_quantized.py; the vpdpbusd lowering to_llvm/int8_dot.py): qdense / qmatmul /
qconv2d with constant weights compiled through it equal the ops' numpy references
exactly on odd shapes (primes, 1, K % 4 != 0, N % 16 != 0, per-channel scales, stride 2,
padding, u8 and s8 activations, u8 weights); the kernels really are the qgemm form; the
object code for a VNNI target has vpdpbusd and for an AVX2 target vpmaddwd (exact), or
vpmaddubsw where the weights cannot saturate it; a marked loop that is not the form fails."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp
from xdsl.ir import Block, Region

from dlc.dialects import graph as g
from dlc.dialects.graph_base import tensor_type_of
from dlc.driver import compile, lower_to_llvm_dialect
from dlc.lowering.kernels.quantized_fast import requantize_reference
from dlc.dialects.graph import requant
from dlc.target import Target

RNG = np.random.default_rng(1818)
VNNI = Target.from_string("llvm -mcpu=skylake-avx512 -mattr=+avx512vnni")
AVX2 = Target.from_string("x86-64-v3")


def u8(*shape):
    return RNG.integers(0, 256, shape).astype(np.uint8)


def s8(*shape):
    return RNG.integers(-128, 128, shape).astype(np.int8)


def module_of(op_cls, x: np.ndarray, constants: list[np.ndarray], attrs) -> tuple[ModuleOp, g.GraphOp]:
    """@main(x) with the weight (and bias) as graph constants, as fold-qdq leaves them."""
    block = Block(arg_types=[tensor_type_of(x)])
    consts = [g.ConstantOp.from_numpy(c) for c in constants]
    op = op_cls.make(block.args[0], *(c.results[0] for c in consts), **attrs)
    block.add_ops([*consts, op, func.ReturnOp(*op.results)])
    fn = func.FuncOp("main", FunctionType.from_lists([block.args[0].type], [op.results[0].type]), Region(block))
    return ModuleOp([fn]), op


def check(op_cls, x, constants, **attrs):
    module, op = module_of(op_cls, x, constants, attrs)
    want = op.reference(x, *constants)[0]
    assert kernel_forms(module.clone()) == ["qgemm"]  # the fast kernel, not the plain one
    got = compile(module)(x)[0]
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def kernel_forms(module: ModuleOp) -> list[str | None]:
    from dlc.driver import run_pass

    run_pass("legalize", module)
    run_pass("lower-to-loops{flat-conv=true}", module)
    kernels = [op for op in module.ops if isinstance(op, func.FuncOp) and "tloop.kernel" in op.attributes]
    return [k.attributes["tloop.form"].data if "tloop.form" in k.attributes else None for k in kernels]


def dense_attrs(n: int, xz: int, yz: int = 3, **extra):
    return dict(x_scale=[0.05], x_zero_point=[xz], w_scale=list(RNG.uniform(0.001, 0.02, n)),
                y_scale=[0.4], y_zero_point=[yz], **extra)


@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (13, 37, 29), (7, 16, 4), (3, 5, 97), (17, 33, 6), (2, 3, 3)])
@pytest.mark.parametrize("signed", [False, True])
def test_qdense_equals_reference(m, n, k, signed):
    x = s8(m, k) if signed else u8(m, k)
    xz = -7 if signed else 121
    check(g.QDenseOp, x, [s8(n, k), RNG.integers(-5000, 5000, n).astype(np.int32)], **dense_attrs(n, xz))


def test_qdense_weight_panels_equal_reference():
    # K = 2047, N = 250: the packed weight is split into L2 column panels (defaults_quantized.py)
    x = u8(9, 2047)
    check(g.QDenseOp, x, [s8(250, 2047)], **dense_attrs(250, 99))


def test_qdense_u8_weights_batch_dims_and_clamp():
    x = u8(2, 3, 11)
    w = u8(19, 11)  # u8 weights, zero point 128: shifted to s8 at compile time
    attrs = dense_attrs(19, 100, yz=110, w_zero_point=[128], out_min=110, out_max=200)
    check(g.QDenseOp, x, [w], **attrs)


def test_qmatmul_constant_b_equals_reference():
    a = s8(2, 5, 23)
    b = s8(23, 18)
    check(g.QMatmulOp, a, [b], a_scale=[0.1], a_zero_point=[4], b_scale=[0.02], y_scale=[0.3], y_zero_point=[-2])


@pytest.mark.parametrize("shape,kernel,stride,pad,signed", [
    ((1, 5, 9, 7), 3, 2, 1, False),   # stride 2, padding, odd spatial extents
    ((2, 3, 6, 5), 3, 1, 1, True),    # s8 activations, batch 2
    ((1, 7, 5, 5), 1, 1, 0, False),   # 1x1
    ((1, 4, 8, 8), 3, 2, 0, True),    # stride 2, no padding
])
def test_qconv2d_equals_reference(shape, kernel, stride, pad, signed):
    n, c, h, w = shape
    o = 3  # three output channels with their own scales
    x = s8(*shape) if signed else u8(*shape)
    xz = -3 if signed else 128
    attrs = dict(x_scale=[0.05], x_zero_point=[xz], w_scale=[0.01, 0.02, 0.03], y_scale=[0.1],
                 y_zero_point=[5], strides=[stride, stride], padding=[pad] * 4)
    if not signed:
        attrs["out_min"] = 5  # a fused relu: the low end at the zero point
    check(g.QConv2DOp, x, [s8(o, c, kernel, kernel), RNG.integers(-300, 300, o).astype(np.int32)], **attrs)


def _loop_ir(module: ModuleOp, target: Target) -> tuple[str, str]:
    """(loop IR after the schedule, assembly) of `module` compiled for `target`."""
    from dlc.backends.llvm.jit import parse_and_optimize, target_machine
    from dlc.backends.llvm.translate import translate

    lower_to_llvm_dialect(module, target=target)
    llmod = translate(module, None, triple=target.llvm_triple, define_weights=True).module
    tm = target_machine(target)
    return str(module), tm.emit_assembly(parse_and_optimize(str(llmod), tm))


def _gemm_module():
    x = u8(16, 64)
    return module_of(g.QDenseOp, x, [s8(32, 64)], dense_attrs(32, 128))[0]


def test_vnni_target_object_code_has_vpdpbusd():
    _, asm = _loop_ir(_gemm_module(), VNNI)
    assert "vpdpbusd" in asm


def test_avx2_target_object_code_is_exact_portable_form():
    _, asm = _loop_ir(_gemm_module(), AVX2)
    assert "vpdpbusd" not in asm and "zmm" not in asm
    assert "vpmaddwd" in asm and "vpmaddubsw" not in asm  # vpmaddubsw saturates: not exact
    from test_qconv_nchwc import dot_region_spills

    assert dot_region_spills(asm, "vpmaddwd") == 0  # the 4 x 1 tile (4 accumulators) in ymm


@pytest.mark.parametrize("signed", [False, True])
def test_avx2_7_bit_weights_use_vpmaddubsw_exactly(signed):
    """Weights within +-64 (the kernel states tloop.int8_weight_range): the pmaddubsw form,
    exact at the saturation edge (extreme activations, weights at +-64; s8 activations are
    shifted to u8 in the panel, so theirs reach 0 and 255 too)."""
    m, n, k = 13, 37, 29
    extremes = np.array([-128, 127] if signed else [0, 255])
    x = RNG.choice(extremes, (m, k)).astype(np.int8 if signed else np.uint8)
    w = RNG.choice(np.array([-64, 64, 3]), (n, k), p=[0.45, 0.45, 0.1]).astype(np.int8)
    attrs = dense_attrs(n, -7 if signed else 121)
    attrs["y_scale"] = [40.0]  # sums of ~+-500000: most outputs inside the u8 range
    module, op = module_of(g.QDenseOp, x, [w], attrs)
    want = op.reference(x, w)[0]
    assert 0 < np.mean((want > 0) & (want < 255))
    np.testing.assert_array_equal(compile(module, target="x86-64-v3")(x)[0], want)
    ir, asm = _loop_ir(module_of(g.QDenseOp, x, [w], attrs)[0], AVX2)
    assert '"llvm.x86.avx2.pmadd.ub.sw"' in ir and "vpmaddubsw" in asm


def test_qgemm_tile_is_stated_by_the_kernel():
    from dlc.lowering.kernels.forms import QGEMM_TILE_ATTR
    from dlc.lowering.schedule.core import Schedule, ScheduleError
    from dlc.lowering.schedule.defaults_quantized import schedule_qgemm

    from dlc.driver import run_pass

    module = _gemm_module()
    run_pass("legalize", module)
    run_pass("lower-to-loops{flat-conv=true int8-accumulators=4}", module)
    (kernel,) = [op for op in module.ops if isinstance(op, func.FuncOp) and "tloop.kernel" in op.attributes]
    assert list(kernel.attributes[QGEMM_TILE_ATTR].get_values()) == [4, 1]
    del kernel.attributes[QGEMM_TILE_ATTR]
    with pytest.raises(ScheduleError, match="form qgemm needs tloop.qgemm_tile"):
        schedule_qgemm(Schedule(kernel), AVX2)


def test_weight_zero_point_needs_the_plain_kernel():
    attrs = dense_attrs(5, 3, w_zero_point=[2])  # s8 weights, zero point 2: row sums needed
    module, op = module_of(g.QDenseOp, u8(4, 9), [s8(5, 9)], attrs)
    assert kernel_forms(module) == [None]


def test_grouped_qconv2d_keeps_the_plain_kernel():
    attrs = dict(x_scale=[0.05], w_scale=[0.01], y_scale=[0.1], groups=2, padding=[1] * 4)
    module, op = module_of(g.QConv2DOp, u8(1, 4, 5, 5), [s8(4, 2, 3, 3)], attrs)
    kernels = _kernels(module)
    assert len(kernels) == 1 and "tloop.form" not in kernels[0].attributes
    assert not any(o.name == "memref.alloca" and o.memref.name_hint == "xp" for o in kernels[0].walk())


def _kernels(module: ModuleOp) -> list:
    from dlc.driver import run_pass

    run_pass("legalize", module)
    run_pass("lower-to-loops{flat-conv=true}", module)
    return [op for op in module.ops if isinstance(op, func.FuncOp) and "tloop.kernel" in op.attributes]


@pytest.mark.parametrize("shape,stride,pad,signed", [
    ((1, 3, 9, 7), 2, 1, False), ((2, 5, 6, 6), 1, 1, True), ((1, 4, 7, 8), 1, 0, False)])
def test_depthwise_qconv2d_equals_reference(shape, stride, pad, signed):
    n, c, h, w = shape
    x = s8(*shape) if signed else u8(*shape)
    attrs = dict(x_scale=[0.05], x_zero_point=[-9 if signed else 130], w_scale=list(RNG.uniform(0.01, 0.03, c)),
                 y_scale=[0.1], y_zero_point=[5], groups=c, strides=[stride, stride], padding=[pad] * 4,
                 out_min=5)
    constants = [s8(c, 1, 3, 3), RNG.integers(-300, 300, c).astype(np.int32)]
    module, op = module_of(g.QConv2DOp, x, constants, attrs)
    kernels = _kernels(module.clone())
    assert any(o.name == "memref.alloca" and o.memref.name_hint == "xp" for o in kernels[0].walk())
    got = compile(module)(x)[0]
    np.testing.assert_array_equal(got, op.reference(x, *constants)[0])


def _depthwise_numpy(x, w, bias, xz, wz, real, yz, lo, hi, stride, pad):
    """An independent integer reference: the i32 sums by explicit loops over the taps,
    then TFLite's single-rounding requantization (Python ints)."""
    n, c, h, wd = x.shape
    kh, kw = w.shape[2:]
    xp = np.zeros((n, c, h + 2 * pad, wd + 2 * pad), np.int64)
    xp[:, :, pad:pad + h, pad:pad + wd] = x.astype(np.int64) - xz
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    acc = np.zeros((n, c, oh, ow), np.int64) + bias.reshape(1, c, 1, 1)
    for i in range(kh):
        for j in range(kw):
            acc += xp[:, :, i:i + stride * (oh - 1) + 1:stride, j:j + stride * (ow - 1) + 1:stride] * \
                (w[:, 0, i, j].astype(np.int64) - wz).reshape(1, c, 1, 1)
    out = np.empty_like(acc)
    for ch in range(c):
        m, shift = requant.quantize_multiplier(float(real[ch]))
        t = 31 - shift
        out[:, ch] = (acc[:, ch] * m + (1 << (t - 1))) >> t
    return np.clip(out + yz, lo, hi)


@pytest.mark.parametrize("c,hw,stride,signed", [
    (1, 1, 1, False), (3, 5, 2, True), (17, 9, 1, False), (35, 5, 1, True), (17, 1, 2, False),
    (35, 9, 2, False), (1, 9, 2, True), (3, 5, 1, False)])
def test_depthwise_lanes_odd_shapes(c, hw, stride, signed):
    """The depthwise kernel on channel counts below, at and past a 16-lane block (1, 3,
    17, 35), planes of 1, 5 and 9, strides 1 and 2, per-channel scales,
    activation zero points: equal to an integer numpy reference, exactly."""
    x = s8(2 if c == 3 else 1, c, hw, hw) if signed else u8(1, c, hw, hw)
    xz = -7 if signed else 131
    ws = RNG.uniform(0.004, 0.05, c)
    w, bias = s8(c, 1, 3, 3), RNG.integers(-2000, 2000, c).astype(np.int32)
    attrs = dict(x_scale=[0.04], x_zero_point=[xz], w_scale=list(ws), y_scale=[0.03], y_zero_point=[-3 if signed else 9],
                 groups=c, strides=[stride, stride], padding=[1] * 4)
    module, op = module_of(g.QConv2DOp, x, [w, bias], attrs)
    lo, hi = op.out_range()
    real = np.float64(np.float32(0.04)) * np.asarray(np.float32(ws), np.float64) / np.float64(np.float32(0.03))
    want = _depthwise_numpy(x, w, bias, xz, 0, op.multipliers(), attrs["y_zero_point"][0], lo, hi, stride, 1)
    np.testing.assert_allclose(op.multipliers(), real, rtol=1e-6)
    np.testing.assert_array_equal(op.reference(x, w, bias)[0], want)
    got = compile(module)(x)[0]
    np.testing.assert_array_equal(got.astype(np.int64), want)


def test_requantize_twin_matches_the_ops_fixed_point():
    acc = np.concatenate([RNG.integers(-(1 << 31), 1 << 31, 500), [0, 1, -1, -(1 << 31), (1 << 31) - 1]])
    for real in (0.00037, 0.5, 0.9999, 3.5, 1e-9):
        m, s = requant.quantize_multiplier(real)
        want = requant.multiply_by_quantized_multiplier(acc, m, s)
        got = requantize_reference(acc, np.full(acc.shape, m), np.full(acc.shape, s))
        np.testing.assert_array_equal(got, want)
