"""The flattened padded conv2d form (lowering/kernels/conv.py) and its register-blocked
schedule (lowering/schedule/defaults_conv.py).

Compiled results match the reference evaluator on odd shapes (prime channels and
sizes, 1-wide outputs, asymmetric padding, dilation, strides with phase planes,
groups and depthwise, batch, fused epilogues); the form is chosen only where it
applies (NCHW/OIHW f32, the CPU driver), and the schedule really register-blocks
(vector FMAs with broadcast weights in the machine code, a parallel outer loop).
"""

from __future__ import annotations

import re

import pytest

from conv_testing import check_against_evaluator, conv_kernel, conv_src, lowered
from dlc.driver import compile
from dlc.lowering.schedule import Schedule
from dlc.lowering.schedule.core import loop_name
from dlc.lowering.schedule.defaults_forms import apply_form_schedule
from dlc.target import Target


def loop_module(src, flat=True):
    return lowered(src, flat=flat)


def schedule_dense(kernel) -> bool:
    """The kernel's form schedule, for this machine."""
    return apply_form_schedule(kernel, Target.host())


def is_flat(kernel) -> bool:
    return "%xpad" in str(kernel) or "%xflat" in str(kernel)



FLAT_CASES = [
    # x shape, w shape, padding (t, l, b, r), dilations, strides
    ((1, 3, 7, 11), (8, 3, 3, 3), (1, 1, 1, 1), (1, 1), (1, 1)),      # primes, oc blocked by 8
    ((1, 5, 13, 13), (7, 5, 3, 3), (1, 1, 1, 1), (1, 1), (1, 1)),     # prime oc: one channel per tile
    ((2, 4, 9, 17), (12, 4, 3, 3), (0, 0, 0, 0), (1, 1), (1, 1)),     # batch 2, no padding, oc by 4
    ((1, 2, 5, 7), (16, 2, 3, 3), (2, 0, 1, 3), (1, 1), (1, 1)),      # asymmetric padding
    ((1, 3, 11, 9), (8, 3, 3, 3), (2, 2, 2, 2), (2, 2), (1, 1)),      # dilation 2
    ((1, 1, 1, 1), (8, 1, 3, 3), (1, 1, 1, 1), (1, 1), (1, 1)),       # 1x1 image: only padding around it
    ((1, 6, 8, 3), (2, 6, 5, 3), (2, 1, 2, 1), (1, 1), (1, 1)),       # non-square window, 3 columns
    ((1, 4, 7, 7), (16, 4, 1, 3), (0, 1, 0, 1), (1, 1), (1, 1)),      # 1x3 window
    ((1, 4, 5, 19), (16, 4, 1, 1), (0, 0, 0, 0), (1, 1), (1, 1)),     # 1x1: a GEMM over p = oh * 19 + ow
    ((1, 7, 7, 7), (24, 7, 1, 1), (0, 0, 0, 0), (1, 1), (1, 1)),      # 1x1 on 7 x 7 (49 of 64 columns)
    ((1, 3, 4, 4), (8, 3, 1, 1), (1, 0, 2, 1), (1, 1), (1, 1)),       # padded 1x1
    ((1, 4, 13, 11), (8, 4, 3, 3), (1, 1, 1, 1), (1, 1), (2, 2)),     # stride 2: four phase planes
    ((1, 3, 17, 17), (16, 3, 7, 7), (3, 3, 3, 3), (1, 1), (2, 2)),    # the ResNet stem, smaller
    ((1, 5, 9, 10), (8, 5, 1, 1), (0, 0, 0, 0), (1, 1), (2, 2)),      # 1x1 stride 2: one phase plane
    ((1, 2, 11, 13), (4, 2, 3, 2), (1, 0, 2, 1), (1, 2), (3, 2)),     # strides 3, 2, dilation 2
    ((1, 3, 9, 9), (8, 3, 3, 3), (2, 2, 2, 2), (2, 2), (2, 2)),       # dilation = stride: one plane
    ((1, 3, 23, 23), (8, 3, 11, 11), (0, 0, 0, 0), (1, 1), (4, 4)),   # AlexNet-like: 16 phase planes
]


@pytest.mark.parametrize("x_shape,w_shape,pad,dil,stride", FLAT_CASES)
def test_flat_conv_matches_evaluator(x_shape, w_shape, pad, dil, stride):
    src = conv_src(x_shape, w_shape, stride=stride, pad=pad, dil=dil)
    kernel = conv_kernel(loop_module(src))
    assert is_flat(kernel), "the flattened form did not apply"
    assert schedule_dense(kernel), "the flat conv schedule did not apply"
    check_against_evaluator(src, [x_shape, w_shape])


def test_flat_conv_single_thread_matches_evaluator():
    shapes = ((1, 17, 14, 14), (24, 17, 3, 3))
    check_against_evaluator(conv_src(*shapes), list(shapes), threads=1)


def test_fused_bias_relu_epilogue_in_the_copy_out():
    x_shape, w_shape = (1, 5, 9, 7), (8, 5, 3, 3)
    src = conv_src(x_shape, w_shape, epilogue=True)
    kernel = conv_kernel(lowered(src, ("fold-constant", "legalize", "fuse-ops")))
    assert is_flat(kernel) and "tloop.fused" in kernel.attributes
    assert "arith.maximumf" in str(kernel) or "arith.maxnumf" in str(kernel) or "arith.select" in str(kernel)
    check_against_evaluator(src, [x_shape, w_shape, (1, 8, 1, 1)])


@pytest.mark.parametrize("x_shape,w_shape,stride,groups", [
    # depthwise and >= 8 output channels per group: kernels/conv_grouped.py (test_conv_grouped.py)
    ((1, 6, 7, 17), (4, 3, 3, 3), (1, 1), 2),          # grouped, 2 output channels per group
    ((1, 9, 5, 7), (9, 3, 1, 1), (1, 1), 3),           # grouped 1x1 (ShuffleNet)
])
def test_grouped_flat_conv_matches_evaluator(x_shape, w_shape, stride, groups):
    src = conv_src(x_shape, w_shape, stride=stride, groups=groups)
    kernel = conv_kernel(loop_module(src))
    assert is_flat(kernel) and schedule_dense(kernel)
    check_against_evaluator(src, [x_shape, w_shape])


NHWC_CONV = """func.func @main(%x: tensor<1x5x7x3xf32>, %w: tensor<3x3x3x4xf32>) -> tensor<1x5x7x4xf32> {
  %y = graph.conv2d %x, %w {data_layout = "NHWC", kernel_layout = "HWIO", padding = array<i64: 1, 1, 1, 1>} : (tensor<1x5x7x3xf32>, tensor<3x3x3x4xf32>) -> tensor<1x5x7x4xf32>
  func.return %y : tensor<1x5x7x4xf32>
}"""


def test_direct_form_for_other_layouts():
    assert not is_flat(conv_kernel(loop_module(NHWC_CONV)))
    check_against_evaluator(NHWC_CONV, [(1, 5, 7, 3), (3, 3, 3, 4)])


def test_the_cpu_driver_uses_the_flat_form():
    """dlc.compile turns the form on (its heap scratch: the only allocation of this graph)."""
    compiled = compile(conv_src((1, 3, 7, 7), (8, 3, 3, 3)), num_threads=1)
    assert "aligned_alloc" in compiled.llvm_ir


def test_flat_form_off_outside_the_cpu_driver():
    """lower-to-loops alone (dlc-opt, the GPU lowering) keeps the direct form."""
    src = conv_src((1, 3, 7, 7), (8, 3, 3, 3))
    assert not is_flat(conv_kernel(loop_module(src, flat=False)))


def test_scratch_budget_falls_back_to_the_direct_form():
    # a 1024 x 258 x 258 padded input: over 256 MiB of scratch
    src = conv_src((1, 1024, 256, 256), (8, 1024, 3, 3))
    assert not is_flat(conv_kernel(loop_module(src)))


def test_flat_schedule_structure():
    kernel = conv_kernel(loop_module(conv_src((1, 16, 14, 14), (32, 16, 3, 3))))
    assert schedule_dense(kernel)
    names = [loop_name(l) for l in Schedule(kernel).loops()]
    for name in ("pad_n", "oco", "po", "oci", "pi", "acc_d0", "acc_out_d0", "out_w"):
        assert any(n == name or n.startswith(name + "_") or n.endswith("_" + name) for n in names), name
    text = str(kernel)
    assert " parallel " in text and " unrolled " in text and "fastmath<contract>" in text
    pi = next(l for l in Schedule(kernel).loops() if loop_name(l) == "pi")
    assert pi.loop_kind == "vectorized" and pi.trip_count == 16


@pytest.mark.parametrize("x_shape,w_shape,stride,pad", [
    ((1, 4, 30, 30), (32, 4, 3, 3), (1, 1), (1, 1, 1, 1)),      # copies big enough to tempt a thread team
    ((1, 3, 224, 224), (64, 3, 7, 7), (2, 2), (3, 3, 3, 3)),    # the ResNet-50 stem
])
def test_flat_schedule_applies_to_large_layers(x_shape, w_shape, stride, pad):
    from dlc.lowering.schedule import apply_default_schedules

    module = loop_module(conv_src(x_shape, w_shape, stride=stride, pad=pad))
    apply_default_schedules(module)
    kernel = conv_kernel(module)
    assert "acc" in [loop_name(l)[:3] for l in Schedule(kernel).loops()], "the register tile is missing"
    parallel = [loop_name(l) for l in Schedule(kernel).loops() if l.loop_kind == "parallel"]
    # one thread-team wake-up for the accumulation; the stride-1 copies stay serial (vectorized)
    assert any(n.startswith("n_s1_") for n in parallel), parallel
    if stride == (1, 1):
        assert len(parallel) == 1, parallel


def test_flat_conv_machine_code_is_a_vector_fma_tile():
    compiled = compile(conv_src((1, 16, 14, 14), (32, 16, 3, 3)), num_threads=1, layout="NCHW")
    jit = compiled._jit
    asm = jit.target_machine.emit_assembly(jit.module)
    reg = "zmm" if Target.host().vector_bits == 512 else "ymm"
    vector_fmas = re.findall(rf"vfmadd\d+ps\s+[^\n]*{reg}", asm)
    # 8 (AVX-512) or 4 output channels x 3 unrolled kw steps, weights broadcast from memory
    assert len(vector_fmas) >= 12
    if reg == "zmm":  # AVX-512's embedded broadcast; AVX2 broadcasts into a register first
        assert re.search(r"vfmadd\d+ps\s+[^\n]*\{1to(16|8)\}", asm)
    else:
        assert re.search(r"vbroadcastss\s", asm)
    assert not re.search(r"vfmadd\d+ss", asm), "a scalar FMA: the register tile did not vectorize"


def test_blocked_conv_machine_code_feeds_two_fmas_per_input_broadcast():
    """The NCHWc tile with AVX-512 takes two output-channel blocks (defaults_nchwc
    register_tile_blocks): one input broadcast into a register, two zmm FMAs from it."""
    if Target.host().vector_bits != 512:
        pytest.skip("the two-block tile is AVX-512's (one zmm per 16-channel block)")
    compiled = compile(conv_src((1, 16, 14, 14), (32, 16, 3, 3)), num_threads=1, layout="NCHWc")
    jit = compiled._jit
    asm = jit.target_machine.emit_assembly(jit.module)
    fmas = re.findall(r"vfmadd\d+ps\s+[^\n]*zmm", asm)
    broadcasts = re.findall(r"vbroadcastss\s", asm)
    assert broadcasts and len(fmas) >= 2 * len(broadcasts), (len(fmas), len(broadcasts))
