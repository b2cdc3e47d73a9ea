"""CUDA C / PTX emission and the nvcc build: every kernel class in one module, compiled
once with ``nvcc -ptx`` and once through llvmlite + ``ptxas`` (skipped, visibly, when
the tool is absent), plus the one-line errors."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
from xdsl.parser import Parser

from dlc.backends.cuda import CudaEmitError, emit_cuda
from dlc.backends.cuda.cuda_c import float_literal
from dlc.context import make_context
from dlc.lowering.lower_to_loops import lower_module

NVCC = shutil.which("nvcc")
PTXAS = shutil.which("ptxas")

# One function per kernel class and element type: elementwise (broadcast, f16, i32
# pooling), row reductions (softmax, global pool), tiled matmul, strided conv2d.
PROGRAM = """
func.func @add(%a: tensor<3x1x5xf32>, %b: tensor<1x7x5xf32>) -> tensor<3x7x5xf32> {
  %r = graph.add %a, %b : (tensor<3x1x5xf32>, tensor<1x7x5xf32>) -> tensor<3x7x5xf32>
  func.return %r : tensor<3x7x5xf32>
}
func.func @half(%a: tensor<3x7xf16>) -> tensor<3x7xf16> {
  %r = graph.exp %a : (tensor<3x7xf16>) -> tensor<3x7xf16>
  func.return %r : tensor<3x7xf16>
}
func.func @ipool(%i: tensor<1x2x5x5xi32>) -> tensor<1x2x6x6xi32> {
  %r = graph.max_pool2d %i {kernel = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x2x5x5xi32>) -> tensor<1x2x6x6xi32>
  func.return %r : tensor<1x2x6x6xi32>
}
func.func @softmax(%a: tensor<3x37xf32>) -> tensor<3x37xf32> {
  %r = graph.softmax %a {axis = 1 : i64} : (tensor<3x37xf32>) -> tensor<3x37xf32>
  func.return %r : tensor<3x37xf32>
}
func.func @gap(%a: tensor<2x3x7x5xf32>) -> tensor<2x3x1x1xf32> {
  %r = graph.global_avg_pool %a : (tensor<2x3x7x5xf32>) -> tensor<2x3x1x1xf32>
  func.return %r : tensor<2x3x1x1xf32>
}
func.func @mm(%a: tensor<2x67x33xf32>, %b: tensor<33x71xf32>) -> tensor<2x67x71xf32> {
  %r = graph.matmul %a, %b : (tensor<2x67x33xf32>, tensor<33x71xf32>) -> tensor<2x67x71xf32>
  func.return %r : tensor<2x67x71xf32>
}
func.func @conv(%x: tensor<1x3x11x13xf32>, %w: tensor<5x3x3x3xf32>) -> tensor<1x5x6x7xf32> {
  %r = graph.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x3x11x13xf32>, tensor<5x3x3x3xf32>) -> tensor<1x5x6x7xf32>
  func.return %r : tensor<1x5x6x7xf32>
}
"""
FUNCTIONS = ["add", "half", "ipool", "softmax", "gap", "mm", "conv"]


def loop_module():
    module = Parser(make_context(), PROGRAM).parse_module()
    lower_module(module)
    return module


@pytest.fixture(scope="module")
def cuda_text() -> str:
    return emit_cuda(loop_module())


def test_cuda_text_is_readable_and_complete(cuda_text):
    kernels = re.findall(r'extern "C" __global__ void __launch_bounds__\((\d+)\) (\w+)\(', cuda_text)
    assert [name for _, name in kernels] == [f"{f}_0_{op}" for f, op in zip(
        FUNCTIONS, ["add", "exp", "max_pool2d", "softmax", "global_avg_pool", "matmul", "conv2d"])]
    assert all(0 < int(n) <= 1024 for n, _ in kernels)
    for f, op in [("softmax", "softmax"), ("mm", "matmul"), ("conv", "conv2d")]:
        assert f"// @{f}_0_{op}: graph.{op}\n" in cuda_text
    for f in FUNCTIONS:
        assert f'extern "C" int dlc_{f}(' in cuda_text
    assert "__shared__ float a_tile[1024];" in cuda_text  # tiled matmul
    assert "__shfl_xor_sync(0xffffffffu, " in cuda_text  # block reductions: warp shuffles
    assert cuda_text.count("DLC_CHECK(cudaGetLastError());") == len(FUNCTIONS)


@pytest.mark.skipif(NVCC is None, reason="nvcc not found: CUDA C not compiled")
def test_cuda_text_compiles_with_nvcc(cuda_text, tmp_path):
    source = tmp_path / "program.cu"
    source.write_text(cuda_text)
    proc = subprocess.run([NVCC, "-arch=sm_90", "-ptx", str(source), "-o", str(tmp_path / "p.ptx")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "warning" not in proc.stderr, proc.stderr


@pytest.mark.skipif(PTXAS is None, reason="ptxas not found: PTX not assembled")
def test_ptx_from_llvmlite_assembles_with_ptxas(tmp_path):
    from dlc.backends.cuda import emit_ptx

    ptx = emit_ptx(loop_module(), arch="sm_90")
    assert ".target sm_90" in ptx and ptx.count(".entry ") == len(FUNCTIONS)
    assert ".maxntid 16, 16, 1" in ptx and "bar.sync" in ptx and ".shared" in ptx
    path = tmp_path / "k.ptx"
    path.write_text(ptx)
    proc = subprocess.run([PTXAS, "-arch=sm_90", str(path), "-o", str(tmp_path / "k.cubin")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_emit_ptx_rejects_unknown_arch():
    from dlc.backends.cuda import PtxEmitError, emit_ptx

    with pytest.raises(PtxEmitError, match="arch must be one of .*got 'sm_70'"):
        emit_ptx(loop_module(), arch="sm_70")


def test_emit_ptx_names_unsupported_f64_transcendental():
    from dlc.backends.cuda import PtxEmitError, emit_ptx

    text = """func.func @e(%a: tensor<5xf64>) -> tensor<5xf64> {
  %r = graph.exp %a : (tensor<5xf64>) -> tensor<5xf64>
  func.return %r : tensor<5xf64>
}"""
    module = Parser(make_context(), text).parse_module()
    lower_module(module)
    with pytest.raises(PtxEmitError, match=r"kernel @e_0_exp: f64 transcendental .* 'math.exp'"):
        emit_ptx(module)


def test_emit_cuda_names_unsupported_op():
    import cuda_kernels as K

    module, _ = K.broadcast_add((3,), (3,))
    kernel = next(iter(module.ops))
    loop = next(iter(kernel.body.block.ops))
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType, f32

    const = arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(TensorType(f32, [2]), [1.0, 2.0]))
    loop.body.block.insert_op_before(const, loop.body.block.first_op)
    with pytest.raises(CudaEmitError, match="kernel @main_0_add: dense constants are not supported"):
        emit_cuda(module)


def test_float_literals():
    from xdsl.dialects.builtin import f16, f32, f64

    assert float_literal(1.0, f32) == "1.0f"
    assert float_literal(float("-inf"), f32) == "-INFINITY"
    assert float_literal(2.5, f64) == "2.5"
    assert float_literal(0.5, f16) == "__float2half(0.5f)"


def test_build_without_nvcc_is_a_clear_error(monkeypatch):
    from dlc.backends.cuda import CudaBuildError, build
    from dlc.backends.cuda import nvcc_build

    monkeypatch.setattr(nvcc_build, "find_nvcc", lambda: None)
    with pytest.raises(CudaBuildError, match="nvcc not found"):
        build(loop_module())


@pytest.mark.skipif(NVCC is None, reason="nvcc not found: nothing to build")
def test_build_compiles_and_names_the_missing_gpu(tmp_path):
    """Compiles the .so; without a GPU the error names the driver/GPU, with one it runs."""
    import cuda_kernels as K

    from dlc.backends.cuda import CudaBuildError, build

    module, ref = K.broadcast_add((3, 7), (1, 7))
    program = build(module, cache_dir=str(tmp_path), require_device=False)
    x, y = np.ones((3, 7), np.float32), np.arange(7, dtype=np.float32)[None]
    if program.device_count() > 0:
        np.testing.assert_allclose(program(x, y)[0], ref(x, y))
    else:
        with pytest.raises(CudaBuildError, match="no (usable CUDA driver|usable GPU|CUDA GPU found)"):
            program(x, y)


def test_cli_errors_are_one_line(tmp_path):
    bad = tmp_path / "bad.mlir"
    bad.write_text("builtin.module { func.func @k( }")
    proc = subprocess.run([sys.executable, "-m", "dlc.backends.cuda", str(bad)], capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stderr.startswith("dlc-cuda: ") and proc.stderr.count("\n") == 1, proc.stderr
    assert "Traceback" not in proc.stderr
