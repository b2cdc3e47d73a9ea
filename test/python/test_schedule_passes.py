"""The tloop-* passes: registered under their command-line names, options parsed by
xDSL's pipeline syntax, failures as one-line located diagnostics (lit tests in
test/lit/schedule cover the dlc-opt side)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from xdsl.parser import Parser
from xdsl.utils.exceptions import DiagnosticException
from xdsl.utils.arg_spec import parse_pipeline

from dlc.context import make_context
from dlc.dialects.tloop import ForOp
from dlc.passes import PASSES, available_passes
from schedule_kernels import BROADCAST_ADD, HOST_CHAIN, MATMUL, MATMUL_ACC, SIBLINGS, STENCIL, random_args
from tloop_exec import run_kernel

SCHEDULE_PASSES = ["tloop-split", "tloop-tile", "tloop-reorder", "tloop-fuse", "tloop-fuse-siblings",
                   "tloop-unroll", "tloop-vectorize", "tloop-parallel", "tloop-cache-read",
                   "tloop-cache-write", "tloop-inline", "tloop-compute-at", "tloop-default-schedule"]


def run_pipeline(text: str, pipeline: str):
    ctx = make_context()
    module = Parser(ctx, text).parse_module()
    for spec in parse_pipeline(pipeline):
        PASSES[spec.name]().from_pass_spec(spec).apply(ctx, module)
    module.verify()
    return module


@pytest.mark.parametrize("name", SCHEDULE_PASSES)
def test_registered_with_its_file_name(name):
    assert name in available_passes()
    cls = PASSES[name]()
    assert cls.name == name
    # tloop-default-schedule has its own file; the single-primitive passes are rows of one table
    module = "tloop_default_schedule" if name == "tloop-default-schedule" else "tloop_schedule"
    assert cls.__module__ == "dlc.transforms." + module
    assert cls.__doc__.strip()


@pytest.mark.parametrize("text,kernel,pipeline", [
    (MATMUL, "mm", 'tloop-split{kernel="mm" loop="k" factor=2},tloop-parallel{kernel="mm" loop="i"}'),
    (MATMUL_ACC, "mma", 'tloop-tile{kernel="mma" outer="i" inner="j" outer-factor=4 inner-factor=3}'),
    (MATMUL_ACC, "mma", 'tloop-reorder{kernel="mma" order=k,j},tloop-vectorize{kernel="mma" loop="j"}'),
    (MATMUL_ACC, "mma", 'tloop-fuse{kernel="mma" outer="i" inner="j"},tloop-parallel{kernel="mma" loop="i_j_fused"}'),
    (SIBLINGS, "sib", 'tloop-fuse-siblings{kernel="sib" first="i" second="j"}'),
    (MATMUL, "mm", 'tloop-unroll{kernel="mm" loop="k" expand=true},tloop-unroll{kernel="mm" loop="j"}'),
    (MATMUL, "mm", 'tloop-cache-read{kernel="mm" buffer="a" loop="i"},tloop-cache-write{kernel="mm" buffer="c" loop="j"}'),
    (BROADCAST_ADD, "badd", "tloop-default-schedule"),
    (STENCIL, "stencil", 'tloop-compute-at{kernel="stencil" producer="p" consumer="i"}'),
])
def test_pass_pipelines_preserve_results(text, kernel, pipeline):
    original = Parser(make_context(), text).parse_module()
    args = random_args(original, kernel, 7)
    expected = run_kernel(original, kernel, args)
    scheduled = run_pipeline(text, pipeline)
    assert str(scheduled) != str(original)
    for want, got in zip(expected, run_kernel(scheduled, kernel, args)):
        np.testing.assert_array_equal(got, want)


def test_inline_pass_preserves_results():
    original = Parser(make_context(), HOST_CHAIN).parse_module()
    args = random_args(original, "main", 2)
    expected = run_kernel(original, "main", args)
    scheduled = run_pipeline(HOST_CHAIN, 'tloop-inline{kernel="main_0_exp"}')
    np.testing.assert_array_equal(run_kernel(scheduled, "main", args)[-1], expected[-1])


def test_failure_is_a_diagnostic_naming_kernel_and_loop():
    with pytest.raises(DiagnosticException, match=r"^@mm, loop 'j': only an outermost loop can be parallel"):
        run_pipeline(MATMUL, 'tloop-parallel{kernel="mm" loop="j"}')
    with pytest.raises(DiagnosticException, match=r"no kernel named @x"):
        run_pipeline(MATMUL, 'tloop-vectorize{kernel="x" loop="j"}')


def test_default_schedule_pass_marks_loops():
    module = run_pipeline(BROADCAST_ADD, "tloop-default-schedule{min-parallel-iterations=1}")
    assert [op.loop_kind for op in module.walk() if isinstance(op, ForOp)] == ["parallel", "vectorized"]


def test_dlc_opt_reports_one_line_without_traceback(tmp_path):
    path = tmp_path / "mm.mlir"
    path.write_text(MATMUL)
    proc = subprocess.run([sys.executable, "-m", "dlc.tools.dlc_opt", str(path), "-p",
                           'tloop-reorder{kernel="mm" order=k,j}'], capture_output=True, text=True)
    if "No module named" in proc.stderr:
        pytest.skip("dlc-opt is not runnable as a module")
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "error: pass 'tloop-reorder' failed: @mm, loop 'j': not a perfect nest" in proc.stderr
