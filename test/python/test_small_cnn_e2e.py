"""The bundled small CNN (examples/small_cnn.mlir, graph IR + weights store):
compiles, runs, matches the reference evaluator, exports to a .so, and the .so
gives the same outputs through the thin runtime in a separate Python process."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from xdsl.parser import Parser

import dlc
from dlc.context import make_context
from dlc.evaluator import evaluate
from dlc.weights import load_for_module

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "small_cnn.mlir")


@pytest.fixture(scope="module")
def compiled():
    return dlc.compile(EXAMPLE)


def _reference(x: np.ndarray) -> np.ndarray:
    module = Parser(make_context(), open(EXAMPLE).read(), EXAMPLE).parse_module()
    load_for_module(module, EXAMPLE)
    return evaluate(module, [x])[0]


def test_small_cnn_matches_reference(compiled):
    rng = np.random.default_rng(7)
    for _ in range(2):
        x = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)
        (out,) = compiled(x)
        ref = _reference(x)
        assert out.shape == (1, 10) and out.dtype == np.float32
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
        assert abs(float(out.sum()) - 1.0) < 1e-5  # softmax output


def test_small_cnn_exported_library_runs_in_fresh_process(compiled, tmp_path):
    so = str(tmp_path / "small_cnn.so")
    compiled.export(so)
    x = np.random.default_rng(8).standard_normal((1, 3, 32, 32)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    script = (
        "import sys, numpy as np, dlc.runtime as rt\n"
        "m = rt.load(sys.argv[1])\n"
        "out = m(np.load(sys.argv[2]))[0]\n"
        "np.save(sys.argv[3], out)\n"
        "assert 'xdsl' not in sys.modules and 'llvmlite' not in sys.modules\n"
    )
    subprocess.run(
        [sys.executable, "-c", script, so, str(tmp_path / "x.npy"), str(tmp_path / "y.npy")],
        check=True, timeout=120,
    )
    from_library = np.load(tmp_path / "y.npy")
    (in_process,) = compiled(x)
    np.testing.assert_array_equal(from_library, in_process)
    np.testing.assert_allclose(from_library, _reference(x), rtol=1e-5, atol=1e-6)
