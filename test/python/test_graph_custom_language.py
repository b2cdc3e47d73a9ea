"""graph.custom's languages are filled in by their frontends: the dialect never
imports a frontend, and an op whose language is not loaded fails loudly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_WITHOUT_TE = r"""
import sys
from xdsl.dialects.builtin import f32
from xdsl.ir import Block
from xdsl.utils.exceptions import VerifyException
from dlc.dialects import graph as g
from dlc.dialects.graph_base import tensor_type

assert not [m for m in sys.modules if m.startswith(("dlc.frontends", "dlc.lowering", "dlc.transforms"))], \
    sorted(m for m in sys.modules if m.startswith("dlc."))
(a,) = Block(arg_types=[tensor_type([4], f32)]).args
try:
    g.CustomOp.make(a, te="B[i] = A[i] * 2.0")
except VerifyException as err:
    print(err)
"""


def test_dialect_imports_no_frontend_and_names_a_missing_language():
    out = subprocess.run([sys.executable, "-c", _WITHOUT_TE], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert "graph.custom: custom-op language 'te' is not loaded" in out.stdout
    assert "dlc.frontends.te for 'te'" in out.stdout


def test_te_frontend_registers_its_language_and_kernel():
    import dlc.frontends.te  # noqa: F401
    from dlc.dialects.graph.custom import CUSTOM_LANGUAGES
    from dlc.lowering.kernels import KERNELS

    assert "te" in CUSTOM_LANGUAGES
    assert "graph.custom" in KERNELS


def test_lower_to_loops_imports_no_frontend():
    source = (ROOT / "lowering" / "lower_to_loops.py").read_text()
    assert "dlc.frontends" not in source
