"""Upstream MLIR reads what dlc prints: every stage of examples/small_cnn.onnx
(graph IR after import and after legalize, loop IR after lower-to-loops and
after scheduling, in generic form, weights inline as dense_resource blobs)
through ``mlir-opt-19 --allow-unregistered-dialect``, and the llvm-dialect stage
(generic and custom form) through ``mlir-translate-19 --mlir-to-llvmir``.

The tools come from Debian's ``mlir-19-tools`` (CI installs it); without them
the test is skipped, saying so.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from dlc.context import make_context
from dlc.frontends.onnx import import_model
from dlc.tools.dlc_opt import apply_pass, build_pipeline
from dlc.tools.printing import module_to_str

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "..", "..", "examples", "small_cnn.onnx")


def _tool(name: str) -> str | None:
    return shutil.which(f"{name}-19") or next(
        (p for p in (f"/usr/lib/llvm-19/bin/{name}",) if os.access(p, os.X_OK)), None)


MLIR_OPT, MLIR_TRANSLATE = _tool("mlir-opt"), _tool("mlir-translate")
pytestmark = pytest.mark.skipif(
    MLIR_OPT is None or MLIR_TRANSLATE is None,
    reason="upstream MLIR tools not found (mlir-opt-19 / mlir-translate-19: apt-get install mlir-19-tools)",
)

# (stage name, passes from the previous stage)
STAGES = [
    ("import", ""),
    ("legalize", "legalize"),
    ("lower-to-loops", "lower-to-loops"),
    ("schedule", "tloop-default-schedule"),
]


def _run(cmd: list[str], text: str, stage: str) -> str:
    done = subprocess.run(cmd, input=text, capture_output=True, text=True, timeout=300)
    first_error = next((line for line in done.stderr.splitlines() if "error" in line), done.stderr[:500])
    assert done.returncode == 0, f"{os.path.basename(cmd[0])} rejects the {stage} stage: {first_error}"
    return done.stdout


@pytest.fixture(scope="module")
def stages() -> dict[str, tuple[str, str]]:
    """stage -> (generic text, custom text)."""
    ctx = make_context()
    module = import_model(MODEL)
    out = {}
    for stage, passes in STAGES + [("llvm", "expand-math,plan-workspace,lower-to-llvm")]:
        for name, pass_ in build_pipeline(passes) if passes else []:
            apply_pass(name, pass_, ctx, module, MODEL)
        out[stage] = (module_to_str(module, generic=True), module_to_str(module))
    return out


@pytest.mark.parametrize("stage", [s for s, _ in STAGES])
def test_mlir_opt_parses_the_generic_form(stages, stage):
    generic, _ = stages[stage]
    assert "dialect_resources" in generic  # the weights travel with the text
    printed = _run([MLIR_OPT, "--allow-unregistered-dialect", "--mlir-print-op-generic"], generic, stage)
    # upstream keeps the weights: the same blobs come back
    assert "dense_resource<conv1.w>" in printed and "conv1.w: \"0x04000000" in printed


@pytest.mark.parametrize("form", ["generic", "custom"])
def test_mlir_translate_accepts_the_llvm_dialect(stages, form):
    text = stages["llvm"][form == "custom"]
    if form == "generic":  # (overflow flags spelled #llvm.overflow<none>, as upstream does)
        assert "overflowFlags = #llvm.overflow<none>" in text
    llvm_ir = _run([MLIR_TRANSLATE, "--mlir-to-llvmir"], text, f"llvm ({form})")
    assert "define i32 @main(" in llvm_ir and "@dlc_set_num_threads" in llvm_ir
