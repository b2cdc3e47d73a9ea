"""``dlc.compile(..., target="cuda")`` and ``dlc run --target cuda``: on a machine with
nvcc, a driver and a GPU the program runs and matches the evaluator; elsewhere the
error is one line naming what is missing (nvcc, the driver or the GPU), and it comes
before nvcc spends time compiling."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from xdsl.parser import Parser

import dlc
from dlc.backends.cuda import nvcc_build
from dlc.context import make_context
from dlc.driver import CompileError
from dlc.evaluator import evaluate

PROGRAM = """
func.func @main(%a: tensor<3x37xf32>, %b: tensor<37xf32>) -> tensor<3x37xf32> {
  %s = graph.add %a, %b : (tensor<3x37xf32>, tensor<37xf32>) -> tensor<3x37xf32>
  %r = graph.softmax %s {axis = 1 : i64} : (tensor<3x37xf32>) -> tensor<3x37xf32>
  func.return %r : tensor<3x37xf32>
}
"""
MISSING = nvcc_build.missing_cuda_piece()
EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "small_cnn.onnx")


def test_unknown_target_names_the_known_ones():
    with pytest.raises(CompileError, match="unknown target 'tpu' .*llvm or cuda or c"):
        dlc.compile(PROGRAM, target="tpu")


def test_missing_nvcc_is_one_line(monkeypatch):
    monkeypatch.setattr(nvcc_build, "find_nvcc", lambda: None)
    with pytest.raises(CompileError, match="^cuda build: nvcc not found") as info:
        dlc.compile(PROGRAM, target="cuda")
    assert "\n" not in str(info.value)


@pytest.mark.skipif(MISSING is None, reason="this machine can run CUDA: covered by the run test")
def test_missing_driver_or_gpu_is_reported_before_compiling(monkeypatch):
    def no_nvcc_run(*args, **kwargs):
        raise AssertionError("nvcc ran although the program cannot run here")

    monkeypatch.setattr(nvcc_build, "compile_shared_library", no_nvcc_run)
    with pytest.raises(CompileError) as info:
        dlc.compile(PROGRAM, target="cuda")
    message = str(info.value)
    assert message == MISSING and "\n" not in message
    assert any(word in message for word in ("nvcc", "driver", "GPU")), message


@pytest.mark.skipif(MISSING is not None, reason=f"cannot run CUDA here: {MISSING}")
def test_compiled_cuda_program_matches_the_evaluator():
    program = dlc.compile(PROGRAM, target="cuda")
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 37)).astype(np.float32), rng.standard_normal(37).astype(np.float32)
    (want,) = evaluate(Parser(make_context(), PROGRAM).parse_module(), [a, b])
    (got,) = program(a, b)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    assert [s[1] for s in program.input_specs] == [(3, 37), (37,)]
    assert "__global__" in program.cuda_source and "nvcc" in program.timings


def test_cli_run_target_cuda(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "dlc.tools.dlc_cli", "run", "--target", "cuda", EXAMPLE],
                          capture_output=True, text=True, timeout=300)
    if MISSING is None:
        assert proc.returncode == 0, proc.stderr
        assert "median run time" in proc.stdout
    else:
        assert proc.returncode == 1
        assert proc.stderr.strip().endswith(MISSING), proc.stderr
        assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


@pytest.mark.slow
def test_gpu_check_script_runs_on_the_emulator():
    """bench/gpu/run_gpu_checks.py's plumbing (cases, comparison, table, exit status)
    without a GPU: ``--emulate --quick`` (about a minute)."""
    script = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "gpu", "run_gpu_checks.py")
    proc = subprocess.run([sys.executable, script, "--emulate", "--quick"], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "10/10 op cases and 2/2 models match the evaluator" in proc.stdout  # the CNN + the export plumbing
    assert "control-flow" in proc.stdout and "all ok" in proc.stdout
