"""The int8 convolution of the blocked layout (graph.qconv2d_nchwc, kernels/quantized_nchwc.py,
its schedule in schedule/defaults_quantized.py) and alter-op-layout's int8 chains: the compiled
kernel equals the op's numpy integer reference exactly, and a chain compiled in the blocked
layout equals the same chain on the plain int8 path (qgemm kernels, layout="NCHW") exactly."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp
from xdsl.ir import Block, Region

from dlc.dialects import graph as g
from dlc.dialects.graph_base import tensor_type_of
from dlc.driver import compile, run_pass
from dlc.lowering.kernels.quantized_nchwc import register_tile
from dlc.target import Target

RNG = np.random.default_rng(1819)
VNNI = Target.from_string("llvm -mcpu=skylake-avx512 -mattr=+avx512vnni")
AVX2 = Target.from_string("x86-64-v3")


def u8(*shape):
    return RNG.integers(0, 256, shape).astype(np.uint8)


def s8(*shape):
    return RNG.integers(-128, 128, shape).astype(np.int8)


def _module(build, *inputs: np.ndarray) -> ModuleOp:
    block = Block(arg_types=[tensor_type_of(x) for x in inputs])
    ops: list = []
    out = build(ops, *block.args)
    block.add_ops(ops + [func.ReturnOp(out)])
    fn = func.FuncOp("main", FunctionType.from_lists([a.type for a in block.args], [out.type]), Region(block))
    return ModuleOp([fn])


def _const(ops, array):
    op = g.ConstantOp.from_numpy(array)
    ops.append(op)
    return op.results[0]


def _qconv_nchwc(x: np.ndarray, consts: list[np.ndarray], attrs) -> tuple[ModuleOp, g.QConv2DNCHWcOp]:
    """@main(x) = graph.qconv2d_nchwc(x, *consts) (constants), and the op."""
    def build(ops, xv):
        op = g.QConv2DNCHWcOp.make(xv, *(_const(ops, c) for c in consts), **attrs)
        ops.append(op)
        return op.results[0]

    module = _module(build, x)
    return module, next(o_ for o_ in module.walk() if isinstance(o_, g.QConv2DNCHWcOp))


def quant_attrs(o: int, xz: int, per_channel: bool, yz: int = 5):
    w_scale = list(RNG.uniform(0.001, 0.02, o)) if per_channel else [0.01]
    return dict(x_scale=[0.05], x_zero_point=[xz], w_scale=w_scale, y_scale=[0.1], y_zero_point=[yz])


def _kernel_forms(module: ModuleOp) -> list[str | None]:
    run_pass("legalize", module)
    run_pass("lower-to-loops{flat-conv=true}", module)
    kernels = [op for op in module.ops if isinstance(op, func.FuncOp) and "tloop.kernel" in op.attributes]
    return [k.attributes["tloop.form"].data if "tloop.form" in k.attributes else None for k in kernels]


# -- the op's kernel vs its reference -----------------------------------------------------

@pytest.mark.parametrize("cb,ib,c,o,hw,k,stride,xz,per_channel,bias", [
    (1, 4, 3, 17, (7, 7), 3, 1, 128, True, True),    # a 3-channel image in NCHW4c
    (2, 4, 5, 33, (9, 7), 3, 2, 0, False, True),     # stride 2, per-tensor scale, zero point 0
    (2, 16, 17, 5, (7, 7), 1, 1, 77, True, False),   # 1x1, 17 channels in two blocks
    (3, 16, 33, 19, (1, 1), 1, 1, 128, False, True),  # H = W = 1
    (1, 16, 16, 64, (8, 19), 3, 1, 3, True, True),   # a row of 17 pixels: the tail nest
    (2, 8, 13, 16, (7, 9), 1, 2, 255, True, False),  # 1x1 stride 2
])
def test_qconv2d_nchwc_equals_reference(cb, ib, c, o, hw, k, stride, xz, per_channel, bias):
    x = u8(1, cb, hw[0] + k - 1, hw[1] + k - 1, ib)  # padded input: OH x OW = hw (stride 1)
    consts = [s8(o, c, k, k)] + ([RNG.integers(-3000, 3000, o).astype(np.int32)] if bias else [])
    attrs = dict(quant_attrs(o, xz, per_channel), strides=[stride, stride], out_min=5)

    def build(ops, xv):
        op = g.QConv2DNCHWcOp.make(xv, *(_const(ops, a) for a in consts), **attrs)
        ops.append(op)
        return op.results[0]

    module = _module(build, x)
    op = next(o_ for o_ in module.walk() if isinstance(o_, g.QConv2DNCHWcOp))
    want = op.reference(x, *consts)[0]
    assert _kernel_forms(module.clone()) == ["qconv2d_nchwc"]
    got = compile(module)(x)[0]
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_u8_weights_with_zero_point_128():
    x = u8(1, 1, 6, 6, 4)
    w = u8(9, 4, 3, 3)

    def build(ops, xv):
        op = g.QConv2DNCHWcOp.make(xv, _const(ops, w), **quant_attrs(9, 100, True), w_zero_point=[128])
        ops.append(op)
        return op.results[0]

    module = _module(build, x)
    op = next(o_ for o_ in module.walk() if isinstance(o_, g.QConv2DNCHWcOp))
    np.testing.assert_array_equal(compile(module)(x)[0], op.reference(x, w)[0])


# -- alter-op-layout's int8 chains vs the plain int8 path -----------------------------------

def _chain(c: int, o: int, xz: int, per_channel: bool):
    """qconv 3x3 s2 (padding) -> qconv 1x1 -> qconv 3x3 (padding) -> qadd residual ->
    max_pool (plain: a transform each way) -> qconv 1x1 to 5 channels."""
    weights = [s8(o, c, 3, 3), s8(o, o, 1, 1), s8(o, o, 3, 3), s8(5, o, 1, 1)]
    biases = [RNG.integers(-500, 500, n).astype(np.int32) for n in (o, o, o, 5)]

    def build(ops, xv):
        def conv(v, i, stride, pad, zin):
            n = weights[i].shape[0]
            attrs = dict(quant_attrs(n, zin, per_channel, yz=7), strides=[stride] * 2, padding=[pad] * 4, out_min=7)
            op = g.QConv2DOp.make(v, _const(ops, weights[i]), _const(ops, biases[i]), **attrs)
            ops.append(op)
            return op.results[0]

        a = conv(xv, 0, 2, 1, xz)
        b = conv(conv(a, 1, 1, 0, 7), 2, 1, 1, 7)
        add = g.QAddOp.make(b, a, a_scale=[0.1], a_zero_point=[7], b_scale=[0.1], b_zero_point=[7],
                            y_scale=[0.15], y_zero_point=[3])
        pool = g.MaxPool2DOp.make(add.results[0], kernel=[2, 2], strides=[1, 1])
        ops.extend([add, pool])
        return conv(pool.results[0], 3, 1, 0, 3)

    return build


@pytest.mark.parametrize("c,o,hw,xz,per_channel", [
    (3, 17, 9, 128, True),
    (5, 33, 7, 0, False),
    (17, 16, 14, 90, True),
    (33, 5, 4, 128, False),
])
def test_blocked_chain_equals_plain_int8_path(c, o, hw, xz, per_channel):
    x = u8(1, c, hw, hw)
    module = _module(_chain(c, o, xz, per_channel), x)
    blocked = module.clone()
    run_pass("alter-op-layout", blocked)
    names = [op.name for op in blocked.walk()]
    assert names.count("graph.qconv2d_nchwc") == 4 and "graph.qconv2d" not in names
    want = compile(module.clone(), layout="NCHW")(x)[0]
    got = compile(module)(x)[0]
    np.testing.assert_array_equal(got, want)


def test_s8_activations_keep_the_plain_int8_path():
    x = s8(1, 4, 5, 5)

    def build(ops, xv):
        op = g.QConv2DOp.make(xv, _const(ops, s8(4, 4, 1, 1)), x_scale=[0.05], w_scale=[0.01], y_scale=[0.1])
        ops.append(op)
        return op.results[0]

    module = _module(build, x)
    run_pass("alter-op-layout", module)
    assert not any(op.name == "graph.qconv2d_nchwc" for op in module.walk())


# -- object code: vpdpbusd on VNNI, the exact portable form elsewhere ----------------------

def _asm(target: Target, w: np.ndarray | None = None) -> str:
    from dlc.backends.llvm.jit import parse_and_optimize, target_machine
    from dlc.backends.llvm.translate import translate
    from dlc.driver import lower_to_llvm_dialect

    w = s8(32, 16, 3, 3) if w is None else w

    def build(ops, xv):
        op = g.QConv2DNCHWcOp.make(xv, _const(ops, w), **quant_attrs(32, 128, True))
        ops.append(op)
        return op.results[0]

    module = _module(build, u8(1, 1, 10, 10, 16))
    lower_to_llvm_dialect(module, target=target)
    llmod = translate(module, None, triple=target.llvm_triple, define_weights=True).module
    tm = target_machine(target)
    return tm.emit_assembly(parse_and_optimize(str(llmod), tm))


def test_vnni_target_register_tile_uses_vpdpbusd():
    asm = _asm(VNNI)
    dots = [line for line in asm.splitlines() if "vpdpbusd" in line]
    assert dots and not any("(%rsp" in line for line in dots)  # accumulators in registers


def dot_region_spills(asm: str, mnemonic: str) -> int:
    """Vector operands on the stack between the first and the last ``mnemonic``."""
    lines = asm.splitlines()
    at = [i for i, line in enumerate(lines) if mnemonic in line]
    assert at, f"no {mnemonic} in the object code"
    return sum("(%rsp" in line and "mm" in line for line in lines[at[0]: at[-1] + 1])


def test_avx2_target_register_tile_uses_vpmaddwd():
    """AVX2 (no VNNI): the exact pmaddwd form (int8_dot.py), 4 accumulators of 2 ymm and
    the ic4 loop kept rolled: a 3x3 of 16 channels had 279 ymm spills when LLVM unrolled
    kw x ic4 and reassociated the sums (ROLLED_ATTR)."""
    asm = _asm(AVX2)
    assert "vpdpbusd" not in asm and "zmm" not in asm and "vpmaddubsw" not in asm  # vpmaddubsw saturates
    assert dot_region_spills(asm, "vpmaddwd") == 0


def test_avx2_target_with_7_bit_weights_uses_vpmaddubsw():
    """Weights within +-64 (onnxruntime's reduce_range): the pmaddubsw form, no spills."""
    asm = _asm(AVX2, RNG.integers(-64, 65, (32, 16, 3, 3)).astype(np.int8))
    assert "vpmaddubsw" in asm and "zmm" not in asm
    assert dot_region_spills(asm, "vpmaddubsw") == 0


@pytest.mark.parametrize("w_low,w_high,form", [(-64, 64, "pmaddubsw"), (-65, 64, "pmaddwd"),
                                               (-64, 65, "pmaddwd"), (-128, 127, "pmaddwd")])
def test_avx2_form_follows_the_weight_range(w_low, w_high, form):
    """The kernel states its weights' range (tloop.int8_weight_range) and the schedule picks
    pmaddubsw only where its i16 pair sums cannot saturate; all-255 activations against
    weights at both bounds (pair sums of +-32640 for +-64) stay exact either way."""
    x = np.full((1, 1, 5, 7, 16), 255, np.uint8)
    x[0, 0, 1, ::2] = 0
    w = RNG.choice(np.array([w_low, w_high, 0]), (19, 16, 3, 3), p=[0.45, 0.45, 0.1]).astype(np.int8)
    attrs = dict(x_scale=[0.05], x_zero_point=[0], w_scale=[0.01], y_scale=[20.0], y_zero_point=[128])
    module, op = _qconv_nchwc(x, [w], attrs)
    want = op.reference(x, w)[0]
    assert 0 < np.mean((want > 0) & (want < 255))  # not all saturated: the sums are checked
    np.testing.assert_array_equal(compile(module, target="x86-64-v3")(x)[0], want)

    scheduled = _qconv_nchwc(x, [w], attrs)[0]
    run_pass("lower-to-loops{flat-conv=true int8-accumulators=4}", scheduled)
    run_pass('tloop-default-schedule{target="x86-64-v3"}', scheduled)
    marks = {o_.attributes["dlc.int8_dot"].data for o_ in scheduled.walk() if "dlc.int8_dot" in o_.attributes}
    assert marks == {form}


def test_register_tile_fits_the_accumulator_budget():
    assert register_tile(10, 2) == (5, 2) and register_tile(56, 4) == (8, 2)  # AVX-512: 16
    assert register_tile(9, 4, 4) == (3, 1)  # AVX2: 4 (3 x 3 pixels, no tail)
    assert register_tile(56, 4, 4) == (4, 1) and register_tile(7, 1, 4) == (4, 1)
    assert register_tile(2, 4, 4) == (2, 2)
    assert Target.from_string("x86-64-v3").int8_accumulators == 4
    assert Target.from_string("x86-64-v4").int8_accumulators == 16


@pytest.mark.parametrize("target,x_shape,oc,ic,bias", [
    ("x86-64-v2", (1, 1, 7, 6, 16), 18, 16, False),  # SSE4.2: neither VNNI nor AVX2, the unmarked loop
    ("x86-64-v3", (1, 2, 8, 9, 8), 21, 13, True),  # AVX2: the pmaddwd form; 13 of 16 blocked channels
])
def test_non_vnni_targets_run_exactly(target, x_shape, oc, ic, bias):
    """The non-VNNI forms executed on this host (any x86-64 with AVX2), odd channel counts."""
    x = u8(*x_shape)
    consts = [s8(oc, ic, 3, 3)]
    if bias:
        consts.append(RNG.integers(-900, 900, oc).astype(np.int32))
    module, op = _qconv_nchwc(x, consts, quant_attrs(oc, 128, True))
    want = op.reference(x, *consts)[0]
    np.testing.assert_array_equal(compile(module, target=target)(x)[0], want)


@pytest.mark.parametrize("y_scale,mid", [(1e-4, False), (1.5, True), (40.0, True)])  # (multipliers > 1:
def test_requantization_extremes_equal_reference(y_scale, mid):  # left shifts, all saturated)
    """Large sums (all-255 activations, +-127 weights) and multipliers above and far below 1:
    the kernel's single-rounding fixed point (requantize_i64 for 1e-4, the high-word form
    requantize_high_word for the others: multipliers below 0.5) equals the op's reference."""
    rng = np.random.default_rng(29)  # its own draws: the "not all saturated" premise holds for them
    x = np.full((1, 2, 5, 5, 16), 255, np.uint8)
    x[0, 0, ::2] = 0
    w = np.where(rng.random((32, 32, 3, 3)) < 0.5, 127, -128).astype(np.int8)
    attrs = dict(x_scale=[0.05], x_zero_point=[0], w_scale=list(rng.uniform(0.001, 0.5, 32)), y_scale=[y_scale],
                 y_zero_point=[128])
    module, op = _qconv_nchwc(x, [w], attrs)
    want = op.reference(x, w)[0]
    assert not mid or 0 < np.count_nonzero((want > 0) & (want < 255))  # not all saturated
    np.testing.assert_array_equal(compile(module)(x)[0], want)


def test_high_word_shift_equals_the_i64_shift():
    """requantize_high_word's identity, in numpy: for totals of at least 32, the i32 shift
    of p's high word by min(total - 32, 31) is p >> total, for any p the kernels can form
    (|acc * m + half| < 2**62), and shift_tables picks it only then."""
    from dlc.dialects.graph import requant
    from dlc.lowering.kernels.requant import rounding_constants, shift_tables

    acc = RNG.integers(-2**31, 2**31, 300_000).astype(np.int64)
    m, total, half = rounding_constants(*requant.quantize_multipliers(RNG.uniform(1e-9, 0.4999, acc.size)))
    p = acc * m + half
    tables = shift_tables(total)
    assert set(tables) == {"shift_hi", "half"} and tables["shift_hi"].dtype == np.int32
    high = (p >> 32).astype(np.int32)
    np.testing.assert_array_equal(high >> tables["shift_hi"], p >> total)
    assert set(shift_tables(np.array([40, 31]))) == {"total", "half"}


def test_requantize_i64_formula_equals_the_reference():
    """The identity requantize_i64 emits (lowering/kernels/requant.py), in numpy, against
    the ops' reference (requant.requantize: single-rounding MBQM, saturated, + zero point,
    clamped) on random i32 accumulators and multipliers of positive scales (shifts of
    both signs) and clamp ranges."""
    from dlc.dialects.graph import requant
    from dlc.lowering.kernels.requant import rounding_constants

    x = np.concatenate([RNG.integers(-2**31, 2**31, 200_000), RNG.integers(-3000, 3000, 200_000),
                        [-2**31, 2**31 - 1, 0, -1, 1]]).astype(np.int64)
    reals = RNG.uniform(1e-6, 3.0, x.size)
    m, total, half = rounding_constants(*requant.quantize_multipliers(reals))
    for zo, lo, hi in ((5, 0, 255), (-3, -128, 127), (120, 120, 200)):
        got = np.clip(((x * m + half) >> total) + zo, lo, hi)
        want = np.array([requant.requantize(x[i:i + 1], reals[i], zo, lo, hi)[0] for i in range(0, x.size, 997)])
        np.testing.assert_array_equal(got[::997], want)
