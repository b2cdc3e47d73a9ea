"""Dense default schedules (lowering/schedule/defaults_dense.py) and the `distribute` primitive.

Scheduled matmul / batched matmul / conv2d compiled through dlc.compile match
the reference evaluator on odd shapes (primes, 1, broadcasting); the schedule
really applies (register tile, packing, parallel, FMA in the machine code).
"""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.parser import Parser

from dlc.context import make_context
from dlc.driver import compile, load_module, run_pass
from dlc.evaluator import evaluate
from dlc.lowering.schedule import Schedule, ScheduleError
from dlc.lowering.schedule.core import loop_name
from dlc.lowering.schedule.defaults_forms import apply_form_schedule
from dlc.target import Target

RNG = np.random.default_rng(5)


def matmul_src(a_shape, b_shape):
    out = np.matmul(np.zeros(a_shape, np.float32), np.zeros(b_shape, np.float32)).shape
    t = lambda s: "tensor<" + "x".join(map(str, s)) + "xf32>"  # noqa: E731
    return (f"func.func @main(%a: {t(a_shape)}, %b: {t(b_shape)}) -> {t(out)} {{\n"
            f"  %c = graph.matmul %a, %b : ({t(a_shape)}, {t(b_shape)}) -> {t(out)}\n"
            f"  func.return %c : {t(out)}\n}}")


def conv_src(x_shape, w_shape, stride=1, pad=1, groups=1):
    n, _, h, w = x_shape
    o, _, kh, kw = w_shape
    oh, ow = (h + 2 * pad - kh) // stride + 1, (w + 2 * pad - kw) // stride + 1
    t = lambda s: "tensor<" + "x".join(map(str, s)) + "xf32>"  # noqa: E731
    out = (n, o, oh, ow)
    return (f"func.func @main(%x: {t(x_shape)}, %w: {t(w_shape)}) -> {t(out)} {{\n"
            f"  %y = graph.conv2d %x, %w {{strides = array<i64: {stride}, {stride}>, "
            f"padding = array<i64: {pad}, {pad}, {pad}, {pad}>, groups = {groups} : i64}} : ({t(x_shape)}, {t(w_shape)}) -> {t(out)}\n"
            f"  func.return %y : {t(out)}\n}}")


def loop_module(src):
    module = load_module(src)
    for name in ("fold-constant", "legalize", "lower-to-loops"):
        run_pass(name, module)
    return module


def schedule_dense(kernel) -> bool:
    """The kernel's form schedule (matmul, conv2d), for this machine."""
    return apply_form_schedule(kernel, Target.host())


def kernel_of(module, suffix):
    return next(op for op in module.ops if getattr(op, "sym_name", None) is not None
                and op.sym_name.data.endswith(suffix))


def check_against_evaluator(src, shapes):
    inputs = [RNG.standard_normal(s).astype(np.float32) for s in shapes]
    expected = evaluate(load_module(src), inputs)[0]
    got = compile(src, num_threads=2)(*inputs)[0]
    scale = max(1.0, float(np.abs(expected).max()))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5 * scale)


MATMUL_SHAPES = [
    ((1, 16), (16, 16)),            # one row
    ((7, 5), (5, 13)),              # primes, smaller than a tile
    ((17, 19), (19, 31)),           # primes over a tile
    ((64, 300), (300, 48)),         # exact tiles, k unsplit
    ((37, 521), (521, 41)),         # k split with a guard
    ((3, 5, 17), (17, 19)),         # batch, B broadcast
    ((2, 1, 9, 11), (3, 11, 16)),   # batch dims broadcast on both sides
    ((1, 1, 8, 8), (8, 8)),         # size-1 batch dims
]


@pytest.mark.parametrize("a_shape,b_shape", MATMUL_SHAPES)
def test_scheduled_matmul_matches_evaluator(a_shape, b_shape):
    src = matmul_src(a_shape, b_shape)
    assert schedule_dense(kernel_of(loop_module(src), "_matmul")), "the blocked schedule did not apply"
    check_against_evaluator(src, [a_shape, b_shape])


@pytest.mark.parametrize("a_shape,b_shape", [((9,), (9, 12)), ((12, 9), (9,)), ((5, 3), (3, 2))])
def test_matrix_vector_falls_back_and_stays_correct(a_shape, b_shape):
    src = matmul_src(a_shape, b_shape)
    assert not schedule_dense(kernel_of(loop_module(src), "_matmul"))
    check_against_evaluator(src, [a_shape, b_shape])


def test_matmul_schedule_structure():
    module = loop_module(matmul_src((64, 64), (64, 64)))
    kernel = kernel_of(module, "_matmul")
    assert schedule_dense(kernel)
    module.verify()
    text = str(kernel)
    names = [loop_name(l) for l in Schedule(kernel).loops()]
    for name in ("ko", "mi", "ni", "ki", "mr", "nr", "b_pack_d0", "acc_d0", "acc_out_d0"):
        assert name in names
    assert "memref.alloca" in text and "fastmath<contract>" in text
    assert " parallel " in text and " vectorized " in text and " unrolled " in text


@pytest.mark.parametrize("m,k,n", [(1, 4096, 1000), (1, 257, 13), (3, 64, 1003)])
def test_equal_columns_give_equal_results(m, k, n):
    """Every column of C rounds the same way, vector body and loop remainder alike (the
    remainder once rounded twice: VGG-19's 1000 equal logits came out as two values)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = np.repeat(rng.standard_normal((k, 1)).astype(np.float32), n, axis=1)
    (c,) = compile(matmul_src((m, k), (k, n)), num_threads=2)(a, b)
    for row in np.asarray(c):
        assert len(np.unique(row)) == 1, np.unique(row)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def test_gemm_machine_code_uses_fma():
    compiled = compile(matmul_src((64, 64), (64, 64)), num_threads=1)
    assert '@"llvm.fmuladd.f32"' in compiled.llvm_ir  # the schedule's contracted mul + add
    jit = compiled._jit
    asm = jit.target_machine.emit_assembly(jit.module)
    assert "vfmadd231ps" in asm and ("ymm" in asm or "zmm" in asm)


@pytest.mark.parametrize("x_shape,w_shape,stride,pad", [
    ((1, 3, 7, 11), (8, 3, 3, 3), 1, 1),     # oc blocked by 8, padding guards
    ((2, 5, 9, 17), (4, 5, 3, 3), 1, 0),     # batch 2, no padding, ow > 16
    ((1, 2, 13, 13), (3, 2, 3, 3), 2, 1),    # stride 2, oc not blocked
    ((1, 4, 5, 19), (16, 4, 1, 1), 1, 0),    # 1x1 conv
])
def test_scheduled_conv2d_matches_evaluator(x_shape, w_shape, stride, pad):
    src = conv_src(x_shape, w_shape, stride, pad)
    assert schedule_dense(kernel_of(loop_module(src), "_conv2d"))
    check_against_evaluator(src, [x_shape, w_shape])


@pytest.mark.parametrize("x_shape,w_shape,groups", [
    ((1, 8, 9, 11), (8, 1, 3, 3), 8),       # depthwise
    ((2, 6, 7, 17), (4, 3, 3, 3), 2),       # grouped
])
def test_grouped_conv2d_stays_correct(x_shape, w_shape, groups):
    check_against_evaluator(conv_src(x_shape, w_shape, 1, 1, groups), [x_shape, w_shape])


# -- distribute ------------------------------------------------------------------

INIT_ACC = """
func.func @k(%a: memref<7x5xf32>, %c: memref<7xf32>) attributes {tloop.kernel} {
  tloop.for %i = 0 to 7 {
    %z = arith.constant 0.0 : f32
    memref.store %z, %c[%i] : memref<7xf32>
    tloop.for %j = 0 to 5 {
      %x = memref.load %a[%i, %j] : memref<7x5xf32>
      %s = memref.load %c[%i] : memref<7xf32>
      %t = arith.addf %s, %x : f32
      memref.store %t, %c[%i] : memref<7xf32>
    }
  }
  func.return
}
"""

SHIFTED = """
func.func @k(%a: memref<8xf32>, %c: memref<8xf32>) attributes {tloop.kernel} {
  tloop.for %i = 0 to 7 {
    %x = memref.load %a[%i] : memref<8xf32>
    memref.store %x, %c[%i] : memref<8xf32>
    %one = arith.constant 1 : index
    %n = arith.addi %i, %one : index
    %y = memref.load %c[%n] : memref<8xf32>
    memref.store %y, %a[%i] : memref<8xf32>
  }
  func.return
}
"""


def test_distribute_splits_init_from_accumulation():
    from tloop_exec import run_kernel

    module = Parser(make_context(), INIT_ACC).parse_module()
    args = [RNG.standard_normal((7, 5)).astype(np.float32), np.zeros(7, np.float32)]
    expected = run_kernel(module, "k", [a.copy() for a in args])[-1]
    s = Schedule.of(module, "k")
    first, second = s.distribute("i")
    assert [loop_name(first), loop_name(second)] == ["i", "i_s1"]
    module.verify()
    s.reorder("i_s1", "j")  # the accumulation nest is now perfect
    got = run_kernel(module, "k", [a.copy() for a in args])[-1]
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_distribute_refuses_a_backward_dependence():
    module = Parser(make_context(), SHIFTED).parse_module()
    with pytest.raises(ScheduleError, match=r"@k, loop 'i': cannot distribute: %c is written by one statement"):
        Schedule.of(module, "k").distribute("i")


def test_distribute_needs_two_statements():
    module = Parser(make_context(), INIT_ACC).parse_module()
    with pytest.raises(ScheduleError, match="fewer than two statements"):
        Schedule.of(module, "k").distribute("j")


@pytest.mark.parametrize("target,lanes", [("x86-64-v4", 16), ("x86-64-v3", 8)])
def test_matrix_vector_columns_take_the_targets_vector_width(target, lanes):
    """The skinny (few rows) schedule's column loop streams B: it states the target's full
    vector width (dlc.vector_lanes; zmm loads on AVX-512), which the LLVM lowering turns
    into its vectorize width; other loops keep the generic 32-byte default."""
    from xdsl.dialects.builtin import IntegerAttr

    from dlc.dialects.tloop import VECTOR_LANES_ATTR, ForOp
    from dlc.driver import lower_to_llvm_dialect
    from dlc.lowering.to_llvm.function import VECTOR_WIDTH_ATTR

    module = loop_module(matmul_src((1, 64), (64, 512)))
    kernel = kernel_of(module, "matmul")
    assert apply_form_schedule(kernel, Target.from_string(target))
    marked = [op for op in kernel.walk() if isinstance(op, ForOp) and VECTOR_LANES_ATTR in op.attributes]
    assert [loop_name(op) for op in marked] == ["nn"] and marked[0].loop_kind == "vectorized"
    assert marked[0].attributes[VECTOR_LANES_ATTR] == IntegerAttr(lanes, 64)
    lower_to_llvm_dialect(module, target=Target.from_string(target))
    widths = {op.attributes[VECTOR_WIDTH_ATTR].value.data for op in module.walk() if VECTOR_WIDTH_ATTR in op.attributes}
    assert lanes in widths
