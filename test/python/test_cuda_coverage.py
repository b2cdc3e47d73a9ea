"""The GPU target covers every graph op and the small CNNs.

* One module holds one function per case of ``dlc.backends.cuda.op_cases`` (every
  op class; composite ops are legalized by the GPU pipeline): its CUDA C compiles
  with one ``nvcc -arch=sm_90 -ptx`` call and its PTX (llvmlite NVPTX) assembles
  with one ``ptxas -arch=sm_90`` call. Skipped, visibly, when the tool is absent.
* Each case, lowered for the GPU, runs on the emulator (every thread, race
  checks) against ``dlc.evaluator`` — with small matmul tiles, as the emulator
  interprets every thread in Python.
* The small CNN imported from ``examples/small_cnn.onnx`` and one written in graph
  IR (weights in the store, constants, composite ops) go the same way.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import numpy as np
import pytest
from xdsl.parser import Parser

from dlc.backends.cuda import emit_cuda, emit_ptx
from dlc.backends.cuda.emulator import emulate
from dlc.passes import GPU_GRAPH_PASSES
from dlc.backends.cuda.op_cases import OP_CASES, OpCase, case_inputs, case_module, covered_op_names, max_error
import dlc.frontends.te  # noqa: F401  (graph.custom cases need the te language, as the tools load it)
from dlc.context import make_context
from dlc.dialects.graph import GRAPH_OPS
from dlc.evaluator import evaluate
from dlc.backends.cuda.lower_to_gpu import ensure_gpu_lowered, is_kernel
from dlc.weights import WeightStore, attach

NVCC = shutil.which("nvcc")
PTXAS = shutil.which("ptxas")
EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")
CNN_ONNX = os.path.join(EXAMPLES, "small_cnn.onnx")

# A small CNN in graph IR: weights from the store, a constant, composite ops
# (batch_norm, dense, softmax), a depthwise conv and a residual add; odd spatial size 7x5.
GRAPH_CNN = """
func.func @main(%x: tensor<2x3x7x5xf32>) -> tensor<2x5xf32> {
  %w1 = graph.weight "conv1.w" : tensor<4x3x3x3xf32>
  %c1 = graph.conv2d %x, %w1 {padding = array<i64: 1, 1, 1, 1>} : (tensor<2x3x7x5xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x7x5xf32>
  %s = graph.weight "bn.scale" : tensor<4xf32>
  %b = graph.weight "bn.bias" : tensor<4xf32>
  %m = graph.weight "bn.mean" : tensor<4xf32>
  %v = graph.weight "bn.var" : tensor<4xf32>
  %n1 = graph.batch_norm %c1, %s, %b, %m, %v {epsilon = 1.000000e-05 : f32} : (tensor<2x4x7x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x7x5xf32>
  %r1 = graph.relu %n1 : (tensor<2x4x7x5xf32>) -> tensor<2x4x7x5xf32>
  %w2 = graph.weight "conv2.w" : tensor<4x1x3x3xf32>
  %c2 = graph.conv2d %r1, %w2 {padding = array<i64: 1, 1, 1, 1>, groups = 4 : i64} : (tensor<2x4x7x5xf32>, tensor<4x1x3x3xf32>) -> tensor<2x4x7x5xf32>
  %res = graph.add %c2, %r1 : (tensor<2x4x7x5xf32>, tensor<2x4x7x5xf32>) -> tensor<2x4x7x5xf32>
  %p1 = graph.max_pool2d %res {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, ceil_mode = true} : (tensor<2x4x7x5xf32>) -> tensor<2x4x4x3xf32>
  %gap = graph.global_avg_pool %p1 : (tensor<2x4x4x3xf32>) -> tensor<2x4x1x1xf32>
  %flat = graph.reshape %gap {shape = array<i64: 2, 4>} : (tensor<2x4x1x1xf32>) -> tensor<2x4xf32>
  %fw = graph.weight "fc.w" : tensor<5x4xf32>
  %fb = graph.constant dense<[0.1, -0.2, 0.3, 0.0, 0.5]> : tensor<5xf32>
  %logits = graph.dense %flat, %fw, %fb : (tensor<2x4xf32>, tensor<5x4xf32>, tensor<5xf32>) -> tensor<2x5xf32>
  %probs = graph.softmax %logits {axis = -1 : i64} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  func.return %probs : tensor<2x5xf32>
}
"""


def graph_cnn():
    module = Parser(make_context(), GRAPH_CNN).parse_module()
    rng = np.random.default_rng(5)
    arrays = {name: (rng.standard_normal(shape) * 0.3).astype(np.float32) for name, shape in [
        ("conv1.w", (4, 3, 3, 3)), ("conv2.w", (4, 1, 3, 3)), ("fc.w", (5, 4)),
        ("bn.scale", (4,)), ("bn.bias", (4,)), ("bn.mean", (4,))]}
    arrays["bn.var"] = rng.uniform(0.5, 1.5, 4).astype(np.float32)
    attach(module, WeightStore(arrays))
    return module


def onnx_cnn():
    pytest.importorskip("onnx")
    from dlc.frontends.onnx import import_model

    return import_model(CNN_ONNX)


@pytest.fixture
def small_tiles(monkeypatch):
    """Matmul tiles small enough for the emulator (the default 64x64 tile runs 256 threads)."""
    import dlc.backends.cuda.matmul_schedule as S

    for name, value in dict(TILE_M=8, TILE_N=8, TILE_K=4, THREADS_Y=4, THREADS_X=4, REG_M=2, REG_N=2).items():
        monkeypatch.setattr(S, name, value)


def nvcc_ptx(source: str, tmp_path) -> None:
    path = tmp_path / "program.cu"
    path.write_text(source)
    proc = subprocess.run([NVCC, "-arch=sm_90", "-ptx", str(path), "-o", str(tmp_path / "program.ptx")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "warning" not in proc.stderr, proc.stderr[-3000:]


def ptxas(ptx: str, tmp_path) -> None:
    path = tmp_path / "kernels.ptx"
    path.write_text(ptx)
    proc = subprocess.run([PTXAS, "-arch=sm_90", str(path), "-o", str(tmp_path / "kernels.cubin")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]


# --------------------------------------------------------------------------- every op


def test_every_graph_op_has_a_gpu_case():
    # constant and weight have no kernel of their own: the CNNs below cover them. The
    # blocked int8 convs are built only by the CPU pipeline's alter-op-layout (not in
    # GPU_GRAPH_PASSES) for the x86 vpdpbusd / lane kernels, with constant weights; the
    # panel-packed matmul only by the CPU pipeline's pack-matmul-weights (its register tile).
    # nonzero / compress / unique / non_max_suppression return run-time extents, which only
    # the llvm target's runtime reads: dlc.compile refuses them for cuda (test_data_dependent_ops.py)
    cpu_only = {"graph.qconv2d_nchwc", "graph.qdepthwise_conv2d_nchwc", "graph.matmul_packed",
                "graph.nonzero", "graph.compress", "graph.unique", "graph.non_max_suppression"}
    assert "alter-op-layout" not in GPU_GRAPH_PASSES
    expected = {op.name for op in GRAPH_OPS} - {"graph.constant", "graph.weight"} - cpu_only
    assert sorted(expected - covered_op_names()) == []


@pytest.fixture(scope="module")
def all_ops_module():
    module = case_module()
    ensure_gpu_lowered(module)
    return module


@pytest.fixture(scope="module")
def all_ops_cuda(all_ops_module) -> str:
    return emit_cuda(all_ops_module)


def test_all_ops_emit_one_named_kernel_per_op(all_ops_module, all_ops_cuda):
    kernels = [op for op in all_ops_module.ops if is_kernel(op)]
    for kernel in kernels:
        name = kernel.sym_name.data
        threads = int(np.prod(kernel.attributes["gpu.block"].get_values()))
        assert f'extern "C" __global__ void __launch_bounds__({threads}) {name}(' in all_ops_cuda
        assert f"// @{name}: {kernel.attributes['tloop.source'].data}\n// launch: grid (" in all_ops_cuda
        assert kernel.attributes["gpu.schedule"].data in ("generic", "row-reduction", "matmul")
    for case in OP_CASES:
        assert f'extern "C" int dlc_{case.id}(' in all_ops_cuda


@pytest.mark.skipif(NVCC is None, reason="nvcc not found: CUDA C of every op not compiled")
def test_all_ops_compile_with_nvcc(all_ops_cuda, tmp_path):
    nvcc_ptx(all_ops_cuda, tmp_path)


@pytest.mark.skipif(PTXAS is None, reason="ptxas not found: PTX of every op not assembled")
def test_all_ops_ptx_assembles(all_ops_module, tmp_path):
    ptx = emit_ptx(all_ops_module, arch="sm_90")
    assert ptx.count(".entry ") == sum(1 for op in all_ops_module.ops if is_kernel(op))
    ptxas(ptx, tmp_path)


@pytest.mark.parametrize("case", OP_CASES, ids=[c.id for c in OP_CASES])
def test_op_on_emulated_gpu(case: OpCase, small_tiles):
    module = case_module([case])
    inputs = case_inputs(case)
    expected = evaluate(module, inputs)
    ensure_gpu_lowered(module)
    outputs = emulate(module, inputs, entry=case.id)
    assert len(outputs) == len(expected)
    for got, want in zip(outputs, expected):
        problem = max_error(got, want, case)
        assert problem is None, f"{case.id}: {problem}"


# --------------------------------------------------------------------------- CNNs


@pytest.mark.parametrize("make", [graph_cnn, onnx_cnn], ids=["graph_ir", "onnx"])
@pytest.mark.skipif(NVCC is None or PTXAS is None, reason="nvcc/ptxas not found: CNN not compiled")
def test_cnn_compiles_with_nvcc_and_ptxas(make, tmp_path):
    module = make()
    source = emit_cuda(module)
    # the softmax is one kernel (fuse-ops re-forms it); the flatten is a view, no kernel
    assert source.count("__global__") >= 6
    nvcc_ptx(source, tmp_path)
    ptxas(emit_ptx(module), tmp_path)


def test_graph_cnn_on_emulated_gpu(small_tiles):
    module = graph_cnn()
    x = np.random.default_rng(1).standard_normal((2, 3, 7, 5)).astype(np.float32)
    (want,) = evaluate(module, [x])
    ensure_gpu_lowered(module)
    (got,) = emulate(module, [x])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
