"""Progress of long commands (issue 22): ``dlc.compile(progress=...)`` reports its
stages (and the schedule stage per kernel); ``dlc compile`` and the conformance runner
draw it on a terminal and print nothing more when stderr is piped."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import dlc
from dlc.tools.progress import compile_progress, task_progress


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _two_node_model(path: str) -> str:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Exp", ["r"], ["y"])],
                              "two", [x], [y])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_compile_reports_every_stage_and_each_kernel(tmp_path):
    calls = []
    compiled = dlc.compile(_two_node_model(str(tmp_path / "m.onnx")), layout="NCHW",
                           progress=lambda stage, detail: calls.append((stage, detail)))
    x = np.linspace(-1, 1, 32, dtype=np.float32).reshape(4, 8)
    np.testing.assert_allclose(compiled(x)[0], np.exp(np.maximum(x, 0)), rtol=1e-6)
    stages = [stage for stage, detail in calls if detail is None]
    for stage in ("load", "legalize", "fuse-ops", "lower-to-loops", "schedule", "lower-to-llvm",
                  "translate", "llvm-jit"):
        assert stage in stages
    assert stages.index("load") < stages.index("lower-to-loops") < stages.index("schedule") \
        < stages.index("lower-to-llvm") < stages.index("llvm-jit")
    kernels = [detail for stage, detail in calls if detail is not None]
    assert kernels and all(stage == "schedule" for stage, d in calls if d is not None)
    n = kernels[0][1]
    assert kernels == [(i, n) for i in range(n)]


def test_progress_is_silent_off_a_terminal():
    with compile_progress(io.StringIO()) as report:
        assert report is None
    quiet = io.StringIO()
    with task_progress(3, "cases", quiet) as advance:
        advance("a")
    assert quiet.getvalue() == ""


def test_progress_draws_on_a_terminal():
    screen = FakeTerminal()
    with compile_progress(screen) as report:
        assert report is not None
        report("legalize", None)
        report("schedule", (0, 2))
    assert "compiling" in screen.getvalue()
    screen = FakeTerminal()
    with task_progress(2, "conformance", screen) as advance:
        advance("test_relu")
    assert "conformance" in screen.getvalue()


def test_dlc_compile_piped_prints_nothing(tmp_path):
    model = _two_node_model(str(tmp_path / "m.onnx"))
    proc = subprocess.run([sys.executable, "-m", "dlc.tools.dlc_cli", "compile", model, "-o",
                           str(tmp_path / "m.so")], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and proc.stderr == ""
    assert os.path.exists(tmp_path / "m.so")


def test_conformance_runner_progress_only_on_a_terminal(monkeypatch, capsys):
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "conformance"))
    try:
        import run_conformance
    finally:
        sys.path.pop(0)
    from test_onnx_frontend_models import small_cases

    cases = small_cases()[:1]
    results = run_conformance.run_all(cases, "evaluator", 1, 30, verbose=False)
    assert results["test_relu"][0] == "pass"
    assert capsys.readouterr().err == ""  # captured stderr is not a terminal
    screen = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", screen)
    results = run_conformance.run_all(cases, "evaluator", 1, 30, verbose=False)
    assert results["test_relu"][0] == "pass"
    assert "conformance" in screen.getvalue()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
