"""Exported shared libraries get the JIT's host CPU name and features (FMA)."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

import dlc
from dlc.backends.llvm.jit import host_target_machine, initialize, parse_and_optimize

MATMUL = """
func.func @main(%a: tensor<13x96xf32>, %b: tensor<96x40xf32>) -> tensor<13x40xf32> {
  %c = graph.matmul %a, %b : (tensor<13x96xf32>, tensor<96x40xf32>) -> tensor<13x40xf32>
  func.return %c : tensor<13x40xf32>
}
"""


def _host_has_fma() -> bool:
    import llvmlite.binding as llvm

    initialize()
    return bool(llvm.get_host_cpu_features().get("fma"))


def _fma_count(assembly: str) -> int:
    return sum("vfmadd" in line for line in assembly.splitlines())


@pytest.mark.skipif(shutil.which("objdump") is None, reason="needs objdump")
def test_exported_matmul_uses_fma_like_the_jit(tmp_path):
    if not _host_has_fma():
        pytest.skip("host CPU has no FMA")
    module = dlc.compile(MATMUL)
    path = str(tmp_path / "matmul.so")
    module.export(path)
    disassembly = subprocess.run(["objdump", "-d", path], capture_output=True, text=True,
                                 check=True).stdout
    exported = _fma_count(disassembly)
    tm = host_target_machine()
    jit = _fma_count(tm.emit_assembly(parse_and_optimize(module.llvm_ir, tm)))
    assert jit > 0
    assert exported == jit

    # and the library computes the product
    from dlc.runtime import load

    rng = np.random.default_rng(0)
    a = rng.standard_normal((13, 96), dtype=np.float32)
    b = rng.standard_normal((96, 40), dtype=np.float32)
    out = load(path)(a, b)
    out = out[0] if isinstance(out, (list, tuple)) else out
    np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-4)
