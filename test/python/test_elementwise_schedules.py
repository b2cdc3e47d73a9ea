"""Default schedules of non-dense kernels (lowering/schedule/defaults_elementwise.py):
the parallel loop skips batch loops of 1 iteration, innermost loops are vectorized,
and an epilogue nest left by a dense schedule is scheduled too."""

from __future__ import annotations

import numpy as np

import dlc
from dlc.dialects.tloop import ForOp
from dlc.driver import load_module, run_pass
from dlc.lowering.schedule import apply_default_schedules


def _loops(text: str, passes=("legalize", "fuse-ops", "lower-to-loops")):
    module = load_module(text)
    for name in passes:
        run_pass(name, module)
    apply_default_schedules(module)
    out = {}
    for kernel in module.ops:
        if "tloop.kernel" in kernel.attributes:
            out[kernel.sym_name.data] = [(op.induction_var.name_hint, op.loop_kind)
                                         for op in kernel.walk() if isinstance(op, ForOp)]
    return out


def _unary(shape, op="relu"):
    t = "tensor<" + "x".join(map(str, shape)) + "xf32>"
    return f"""func.func @main(%x: {t}) -> {t} {{
  %y = graph.{op} %x : ({t}) -> {t}
  func.return %y : {t}
}}"""


def test_batch_one_loop_is_skipped_for_parallelism():
    loops = _loops(_unary((1, 67, 71, 61)))  # enough work to pay for a fork/join
    assert loops == {"main_0_relu": [("d0", "serial"), ("d1", "parallel"), ("d2", "serial"),
                                     ("d3", "vectorized")]}


def test_row_vector_keeps_its_vectorized_loop():
    loops = _loops(_unary((1, 40009)))
    assert loops == {"main_0_relu": [("d0", "serial"), ("d1", "vectorized")]}


def test_small_kernels_stay_serial():
    loops = _loops(_unary((3, 5)))
    assert loops == {"main_0_relu": [("d0", "serial"), ("d1", "vectorized")]}


def test_reduction_parallel_over_kept_rows_and_serial_inside():
    text = """func.func @main(%x: tensor<1x257x1031xf32>) -> tensor<1x257x1xf32> {
  %y = graph.reduce_sum %x {axes = array<i64: 2>, keepdims = true} : (tensor<1x257x1031xf32>) -> tensor<1x257x1xf32>
  func.return %y : tensor<1x257x1xf32>
}"""
    (kinds,) = _loops(text).values()
    # rfactor (lowering/schedule/rfactor.py): 16 partial sums in a vectorized lane loop, the
    # lanes folded in order, then the 1031 % 16 tail in order
    assert kinds == [("d0", "serial"), ("d1", "parallel"), ("r0_li", "vectorized"), ("r0_ro", "serial"),
                     ("r0_l", "vectorized"), ("r0_lf", "serial"), ("r0", "serial")]


def test_fused_dense_epilogue_nest_is_scheduled_and_correct():
    text = """func.func @main(%a: tensor<67x129xf32>, %b: tensor<129x131xf32>, %c: tensor<131xf32>) -> tensor<67x131xf32> {
  %m = graph.matmul %a, %b : (tensor<67x129xf32>, tensor<129x131xf32>) -> tensor<67x131xf32>
  %s = graph.add %m, %c : (tensor<67x131xf32>, tensor<131xf32>) -> tensor<67x131xf32>
  %r = graph.tanh %s : (tensor<67x131xf32>) -> tensor<67x131xf32>
  func.return %r : tensor<67x131xf32>
}"""
    module = load_module(text)
    for name in ("legalize", "fuse-ops", "lower-to-loops"):
        run_pass(name, module)
    apply_default_schedules(module)
    (kernel,) = [k for k in module.ops if "tloop.kernel" in k.attributes]
    assert kernel.attributes["tloop.fused"].data == "graph.matmul+add+tanh"
    # every top-level nest (init, blocked product, epilogue) got some schedule
    for top in [op for op in kernel.body.block.ops if isinstance(op, ForOp)]:
        assert any(loop.loop_kind != "serial" for loop in top.walk() if isinstance(loop, ForOp))
    rng = np.random.default_rng(5)
    a, b, c = (rng.normal(size=s).astype(np.float32) for s in [(67, 129), (129, 131), (131,)])
    compiled = dlc.compile(text)
    np.testing.assert_allclose(compiled(a, b, c)[0], np.tanh(a @ b + c), rtol=1e-4, atol=1e-5)
