"""The CUDA target's host code: graph.if / graph.loop / graph.scan as host branches and
loops that launch kernels (backends/cuda/host_code.py, run here by host_exec.py with
emulated kernels), and exported CUDA modules (backends/cuda/export.py, runtime/cuda.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from dlc.backends.cuda import nvcc_build
from dlc.backends.cuda.cuda_c import emit_cuda
from dlc.backends.cuda.emulator import emulate
from dlc.backends.cuda.host_exec import HostExecutor
from dlc.backends.cuda.lower_to_gpu import ensure_gpu_lowered
from dlc.backends.cuda.emulator import emulate_kernel
from dlc.evaluator import evaluate
from dlc.frontends.onnx import import_model
from dlc.passes import GPU_GRAPH_PASSES, load_pass
from test_control_flow import T, _if_module
from test_control_flow_compiled import _counter_loop, _two_input_scan
from test_graph_util import parse, to_text

RNG = np.random.default_rng(20)
HAVE_NVCC = nvcc_build.find_nvcc() is not None
DRIVER_MISSING = nvcc_build.missing_cuda_piece()


def _lowered(module):
    lowered = parse(to_text(module))
    ensure_gpu_lowered(lowered)
    return lowered


def _matches_evaluator(module, inputs, rtol=1e-5):
    want = evaluate(module, inputs)
    lowered = _lowered(module)
    executor = HostExecutor(lowered, "main", emulate_kernel)
    got = executor.run(inputs)
    assert len(got) == len(want)
    for w, o in zip(want, got):
        assert o.shape == w.shape and o.dtype == w.dtype
        np.testing.assert_allclose(o, w, rtol=rtol, atol=1e-6)
    return lowered, executor.launches


def onnx_loop(trips: int, stop_after: int | None = None):
    """x <- x * 0.999 + step, ``trips`` times (a constant M); with ``stop_after`` the
    body's condition (n < stop_after on a carried counter) ends it earlier."""
    nodes = [helper.make_node("Mul", ["x_in", "decay"], ["scaled"]),
             helper.make_node("Add", ["scaled", "step"], ["x_out"]),
             helper.make_node("Add", ["n_in", "one"], ["n_out"])]
    if stop_after is None:
        nodes.append(helper.make_node("Identity", ["c_in"], ["c_out"]))
    else:
        nodes.append(helper.make_node("Less", ["n_out", "limit"], ["c_out"]))
    body = helper.make_graph(
        nodes, "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x_in", TensorProto.FLOAT, [3, 5]),
         helper.make_tensor_value_info("n_in", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x_out", TensorProto.FLOAT, [3, 5]),
         helper.make_tensor_value_info("n_out", TensorProto.INT64, [])])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["M", "cond", "x0", "n0"], ["x", "n"], body=body)], "g",
        [helper.make_tensor_value_info("x0", TensorProto.FLOAT, [3, 5]),
         helper.make_tensor_value_info("step", TensorProto.FLOAT, [3, 5])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 5]),
         helper.make_tensor_value_info("n", TensorProto.INT64, [])],
        [numpy_helper.from_array(np.array(trips, np.int64), "M"),
         numpy_helper.from_array(np.array(True), "cond"),
         numpy_helper.from_array(np.array(0, np.int64), "n0"),
         numpy_helper.from_array(np.array(1, np.int64), "one"),
         numpy_helper.from_array(np.array(stop_after or 0, np.int64), "limit"),
         numpy_helper.from_array(np.array(0.999, np.float32), "decay")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


# ---------------------------------------------------------------------------- control flow


def test_expand_control_flow_is_no_longer_in_the_cuda_pipeline_but_still_a_pass():
    assert "expand-control-flow" not in GPU_GRAPH_PASSES
    assert load_pass("expand-control-flow").name == "expand-control-flow"


def test_onnx_loop_of_twenty_thousand_iterations_is_a_host_loop():
    sources = {trips: emit_cuda(import_model(onnx_loop(trips))) for trips in (3, 20_000)}
    kernels = {trips: src.count("__global__") for trips, src in sources.items()}
    assert kernels[3] == kernels[20_000] <= 6, kernels
    assert "while (1) {" in sources[20_000]
    assert "cudaMemcpyDeviceToHost" in sources[20_000]  # the carried condition, read each iteration
    if HAVE_NVCC:
        nvcc_build.compile_shared_library(sources[20_000])  # nvcc accepts the host loop


@pytest.mark.parametrize("trips,stop_after", [(5, None), (9, 3), (2, 6)])
def test_onnx_loop_through_the_emulator_matches_the_evaluator(trips, stop_after):
    model = import_model(onnx_loop(trips, stop_after))
    x0, step = RNG.standard_normal((2, 3, 5)).astype(np.float32)
    _, launches = _matches_evaluator(model, [x0, step])
    ran = min(trips, stop_after) if stop_after else trips
    assert launches >= 3 * ran  # one launch per body op and iteration, nothing unrolled


@pytest.mark.parametrize("flag", [True, False])
def test_if_takes_one_branch_on_the_host(flag):
    x, y = RNG.standard_normal((2, 7, 3)).astype(np.float32)
    lowered, launches = _matches_evaluator(_if_module(T(7, 3)), [np.array([flag]), x, y])
    assert "if (h" in emit_cuda(lowered)  # the condition is read back to the host
    assert launches == 2  # the taken branch's op and one copy, not both branches


def test_counter_loop_and_two_input_scan_match_the_evaluator():
    acc = np.zeros((1, 3), np.float32)
    x = np.array([[1.0, 0.5, -2.0]], np.float32)
    _matches_evaluator(_counter_loop(10_000), [np.array(7), np.array(True), acc, x])
    module, shapes = _two_input_scan(4, (0, 1), (1, 0), (0, 1), (1, 0))
    inputs = [RNG.standard_normal(3).astype(np.float32)] + [RNG.standard_normal(s).astype(np.float32) for s in shapes]
    lowered, _ = _matches_evaluator(module, inputs)
    assert "for (int64_t" in emit_cuda(lowered)
    assert len(emulate(lowered, inputs)) == 3  # the emulator's entry runs the same host executor


# ---------------------------------------------------------------------------- export


def _two_node_model():
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Relu", ["h"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        [numpy_helper.from_array(RNG.standard_normal((4, 3)).astype(np.float32), "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    if not HAVE_NVCC:
        pytest.skip("nvcc not found")
    import onnx

    d = tmp_path_factory.mktemp("cuda_export")
    model = d / "m.onnx"
    onnx.save(_two_node_model(), model)
    lib = d / "m.so"
    proc = subprocess.run([sys.executable, "-m", "dlc.tools.dlc_cli", "compile", str(model), "--target", "cuda",
                           "-o", str(lib)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return lib


def test_exported_library_metadata_describes_the_entries(exported):
    import dlc.runtime

    data = exported.read_bytes()
    start = data.index(b'{"format": "dlc-2"')
    meta = json.loads(data[start:data.index(b"\0", start)].decode())
    assert meta["target"] == "cuda" and meta["default_entry"] == "main"
    assert meta["device_entries"] == {"main": "main__device"}
    assert meta["entries"]["main"] == {"inputs": [{"name": "x", "shape": [2, 4], "dtype": "float32"}],
                                       "outputs": [{"name": "y", "shape": [2, 3], "dtype": "float32"}]}
    module = dlc.runtime.load(str(exported))  # loads without a GPU: the CUDA runtime is static
    assert module.input_specs == [("x", (2, 4), np.dtype("float32"))]
    assert module.device_entry("main").outputs == [("y", (2, 3), np.dtype("float32"))]


@pytest.mark.skipif(DRIVER_MISSING is None, reason="this machine has a CUDA driver and GPU")
def test_calling_an_exported_module_without_a_driver_is_one_line(exported):
    import dlc.runtime

    module = dlc.runtime.load(str(exported))
    for call in (lambda: module(np.zeros((2, 4), np.float32)), lambda: module.device_entry()(0, 0)):
        with pytest.raises(dlc.runtime.DlcRuntimeError) as info:
            call()
        message = str(info.value)
        assert "\n" not in message and ("no CUDA driver: libcuda.so.1 not found" in message
                                        or "cudaGetDeviceCount" in message), message
    proc = subprocess.run([sys.executable, "-m", "dlc.tools.dlc_cli", "run", str(exported)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1 and "CUDA" in proc.stderr, proc.stderr


@pytest.mark.skipif(not HAVE_NVCC, reason="nvcc not found")
def test_nvcc_failure_in_export_is_one_line(tmp_path):
    import dlc

    program = dlc.compile(_two_node_model(), target="cuda", jit=False)
    program.cuda_source += "\nthis is not C++;\n"
    with pytest.raises(nvcc_build.CudaBuildError, match="^cuda export: nvcc -shared on model.cu failed: ") as info:
        program.export(str(tmp_path / "bad.so"))
    assert "\n" not in str(info.value)
    assert not os.path.exists(tmp_path / "bad.so")  # nothing written half-way


def test_cli_export_with_a_failing_nvcc_is_one_line(tmp_path):
    """`dlc compile --target cuda -o m.so` when nvcc fails: one line naming nvcc, nothing written."""
    import onnx

    fake = tmp_path / "bin"
    fake.mkdir()
    nvcc = fake / "nvcc"
    nvcc.write_text("#!/bin/sh\necho 'model.cu(3): error: identifier \"boom\" is undefined' >&2\nexit 2\n")
    nvcc.chmod(0o755)
    model = tmp_path / "m.onnx"
    onnx.save(_two_node_model(), model)
    env = dict(os.environ, PATH=f"{fake}:{os.environ['PATH']}")
    proc = subprocess.run([sys.executable, "-m", "dlc.tools.dlc_cli", "compile", str(model), "--target", "cuda",
                           "-o", str(tmp_path / "m.so")], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1 and "nvcc" in proc.stderr and "failed" in proc.stderr, proc.stderr
    assert "boom" in proc.stderr, proc.stderr
    assert not (tmp_path / "m.so").exists()
