"""Tensor cores (mma.sync), cp.async staging and warp-shuffle reductions on the CUDA
target: the PTX fragment layouts, the emulator's warp semantics, every new kernel
against the evaluator on odd shapes (emulated), and one nvcc -arch=sm_90 -cubin
(nvcc + ptxas) over all of them."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
from xdsl.dialects.builtin import UnitAttr
from xdsl.parser import Parser

from dlc.backends.cuda.emulator import EmulationError, emulate
from dlc.backends.cuda.lower_to_gpu import ensure_gpu_lowered, is_kernel
from dlc.backends.cuda.mma_cases import emulator_cases, matmul_case, tolerance_error
from dlc.backends.cuda.mma_schedule import combine_precision
from dlc.backends.cuda.tensor_core import a_coords, b_coords, c_coords, mma_warp, round_inputs
from dlc.context import make_context
from dlc.evaluator import evaluate

NVCC = shutil.which("nvcc")
CASES = emulator_cases()


def lowered(case):
    module = Parser(make_context(), case.text).parse_module()
    if case.allow_tf32:
        module.attributes["gpu.allow_tf32"] = UnitAttr()
    return ensure_gpu_lowered(module)


def schedules(module) -> list[str]:
    return [k.attributes["gpu.schedule"].data for k in module.ops if is_kernel(k)]


# --------------------------------------------------------------------------- layouts


def test_fragment_layouts_are_the_ptx_isa_tables():
    # lane 5: groupID 1, threadID_in_group 1 (PTX ISA, "Matrix fragments for mma.m16n8k16")
    assert [a_coords("f16", 5, i) for i in range(8)] == [
        (1, 2), (1, 3), (9, 2), (9, 3), (1, 10), (1, 11), (9, 10), (9, 11)]
    assert [b_coords("f16", 5, i) for i in range(4)] == [(2, 1), (3, 1), (10, 1), (11, 1)]
    assert [c_coords(5, i) for i in range(4)] == [(1, 2), (1, 3), (9, 2), (9, 3)]
    # m16n8k8 .tf32: a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4); b0 (t, g), b1 (t+4, g)
    assert [a_coords("tf32", 5, i) for i in range(4)] == [(1, 1), (9, 1), (1, 5), (9, 5)]
    assert [b_coords("tf32", 5, i) for i in range(2)] == [(1, 1), (5, 1)]
    # every element of each matrix is held by exactly one (lane, register)
    for kind, k in (("f16", 16), ("tf32", 8)):
        n_a = 8 if k == 16 else 4
        assert sorted(a_coords(kind, lane, i) for lane in range(32) for i in range(n_a)) == \
            [(r, c) for r in range(16) for c in range(k)]
        assert sorted(b_coords(kind, lane, i) for lane in range(32) for i in range(n_a // 2)) == \
            [(r, c) for r in range(k) for c in range(8)]


@pytest.mark.parametrize("kind", ["f16", "bf16", "tf32"])
def test_mma_warp_is_a_times_b_plus_c(kind):
    rng = np.random.default_rng(3)
    k = 8 if kind == "tf32" else 16
    A = rng.standard_normal((16, k)).astype(np.float32)
    B = rng.standard_normal((k, 8)).astype(np.float32)
    C = rng.standard_normal((16, 8)).astype(np.float32)
    n_a, n_b = (4, 2) if kind == "tf32" else (8, 4)
    a = np.array([[A[a_coords(kind, lane, i)] for i in range(n_a)] for lane in range(32)])
    b = np.array([[B[b_coords(kind, lane, i)] for i in range(n_b)] for lane in range(32)])
    c = np.array([[C[c_coords(lane, i)] for i in range(4)] for lane in range(32)])
    d = mma_warp(kind, a, b, c)
    D = np.zeros((16, 8), np.float32)
    for lane in range(32):
        for i in range(4):
            D[c_coords(lane, i)] = d[lane, i]
    want = round_inputs(kind, A) @ round_inputs(kind, B) + C
    np.testing.assert_allclose(D, want, rtol=1e-6, atol=1e-6)


def test_tf32_rounds_to_nearest_ties_away():
    one = np.float32(1.0)
    ulp = np.float32(2.0**-10)
    got = round_inputs("tf32", np.array([one + ulp / 2, one + ulp / 4, -(one + ulp / 2)], np.float32))
    assert list(got) == [1 + 2.0**-10, 1.0, -(1 + 2.0**-10)]


def test_precision_choice():
    assert combine_precision("f16", "f16", False) == "f16"
    assert combine_precision("bf16", "bf16", False) == "bf16"
    assert combine_precision("f16", "bf16", False) == "tf32"  # both exact in tf32
    assert combine_precision("f16", None, False) is None  # an f32 input: CUDA cores
    assert combine_precision(None, None, True) == "tf32"


def test_f32_matmul_stays_on_cuda_cores_without_allow_tf32():
    assert "mma" not in schedules(lowered(matmul_case("mm", 5, 3, 7, "f32")))
    assert "mma" in schedules(lowered(matmul_case("mm", 5, 3, 7, "f32", allow_tf32=True)))


# --------------------------------------------------------------------------- emulated kernels


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_emulated_kernel_matches_evaluator(case):
    module = lowered(case)
    assert case.schedule in schedules(module), schedules(module)
    inputs = case.inputs(seed=1)
    (want,) = evaluate(Parser(make_context(), case.text).parse_module(), inputs)
    (got,) = emulate(module, inputs, entry=case.id)
    assert tolerance_error(got, want, case) is None, tolerance_error(got, want, case)


def test_emulator_rejects_a_shuffle_in_divergent_lanes():
    text = """
    func.func @k(%x: memref<32xf32>) attributes {tloop.kernel, gpu.kernel, gpu.grid = array<i64: 1, 1, 1>, gpu.block = array<i64: 32, 1, 1>} {
      %t = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
      %c = arith.constant 3 : index
      %p = arith.cmpi ult, %t, %c : index
      scf.if %p {
        %v = memref.load %x[%t] : memref<32xf32>
        %s = cuda.shfl %v, 1 {mode = "xor"} : f32
        memref.store %s, %x[%t] : memref<32xf32>
      }
      func.return
    }
    """
    module = Parser(make_context(), text).parse_module()
    kernel = next(iter(module.ops))
    with pytest.raises(EmulationError, match="divergent"):
        from dlc.backends.cuda.emulator import emulate_kernel

        emulate_kernel(kernel, [np.zeros(32, np.float32)])


# --------------------------------------------------------------------------- nvcc


@pytest.mark.skipif(NVCC is None, reason="nvcc not found: CUDA C not compiled")
def test_every_new_kernel_compiles_for_sm_90(tmp_path):
    from dlc.backends.cuda import emit_cuda

    module = Parser(make_context(), "".join(c.text for c in CASES)).parse_module()
    module.attributes["gpu.allow_tf32"] = UnitAttr()
    source = emit_cuda(module)
    for needle in ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "m16n8k16.row.col.f32.bf16",
                   "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", "cp.async.ca.shared.global",
                   "cp.async.wait_group 1", "__shfl_xor_sync(0xffffffffu"):
        assert needle in source
    cu = tmp_path / "tc.cu"
    cu.write_text(source)
    # -cubin runs ptxas too: the inline PTX is assembled, not only parsed
    proc = subprocess.run([NVCC, "-arch=sm_90", "-cubin", "-o", str(tmp_path / "tc.cubin"), str(cu)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_allow_tf32_is_for_the_cuda_target():
    import dlc
    from dlc.driver import CompileError

    with pytest.raises(CompileError, match="allow_tf32=True is for the cuda target"):
        dlc.compile(matmul_case("main", 3, 2, 5, "f32").text, target="llvm", allow_tf32=True)


def test_f16_weights_count_as_f16_inputs():
    """A weight whose values are all f16 (fold-constant widened it) is an exact f16 input."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from dlc.frontends.onnx import import_model

    w = np.random.default_rng(0).uniform(-1, 1, (7, 3)).astype(np.float16)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [5, 7])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [5, 3])],
        [numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    module = ensure_gpu_lowered(import_model(onnx.load_from_string(model.SerializeToString())))
    assert "mma" in schedules(module)
    x = np.random.default_rng(1).uniform(-1, 1, (5, 7)).astype(np.float16)
    hosts = [op.sym_name.data for op in module.ops if "gpu.host" in op.attributes]
    (got,) = emulate(module, [x], entry=hosts[0])
    want = (x.astype(np.float32) @ w.astype(np.float32)).astype(np.float16)
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-3, atol=2e-3)


CUDA_OPS = """func.func @k(%v: f32, %a: memref<8xf32>, %b: memref<4xf32>, %c: memref<4xf32>, %s: memref<16xf32>, %g: memref<3x5xf32>, %i: index, %p: i1) {
  %r = cuda.shfl %v, 16 {mode = "xor"} : f32
  %d = cuda.shfl %v, 1 {mode = "down"} : f32
  cuda.mma_sync %a, %b, %c {ab_type = "f16"} : memref<8xf32>, memref<4xf32>, memref<4xf32>
  cuda.cp_async %s[%i], %g[%i], %p : memref<16xf32>, memref<3x5xf32>
  cuda.cp_async_commit
  cuda.cp_async_wait 1
  func.return
}
"""


def test_cuda_dialect_round_trips_and_verifies():
    from xdsl.printer import Printer
    import io

    module = Parser(make_context(), CUDA_OPS).parse_module()
    module.verify()
    text = str(module)
    assert str(Parser(make_context(), text).parse_module()) == text
    generic = io.StringIO()
    Printer(stream=generic, print_generic_format=True).print_op(module)
    assert str(Parser(make_context(), generic.getvalue()).parse_module()) == text
    for bad, why in [('{mode = "xor"}', '{mode = "up"}'), ('%v, 16', '%v, 40'), ('ab_type = "f16"', 'ab_type = "tf32"')]:
        with pytest.raises(Exception, match="cuda\\."):
            Parser(make_context(), CUDA_OPS.replace(bad, why, 1)).parse_module().verify()
