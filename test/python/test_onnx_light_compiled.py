"""The onnx `light` models compiled with `dlc compile`, run from the exported
.so with `dlc run --expect`, against the outputs onnx ships (rtol 1e-3,
atol 1e-4). The fast ones run here; `python conformance/run_light_models.py`
runs all nine (and the `slow` marker below does too). Also: `dlc run`'s
`--expect` and `--output` options on a small graph."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from dlc.tools import dlc_cli

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "conformance"))

import run_light_models  # noqa: E402

# compile in ~10 s each on this machine; the other five take 15-60 s
FAST_LIGHT = ["squeezenet", "bvlc_alexnet"]

ADD = """\
func.func @main(%a: tensor<3x5xf32>, %b: tensor<5xf32>) -> tensor<3x5xf32> {
  %c = graph.add %a, %b : (tensor<3x5xf32>, tensor<5xf32>) -> tensor<3x5xf32>
  func.return %c : tensor<3x5xf32>
}
"""


@pytest.mark.parametrize("name", FAST_LIGHT)
def test_light_model_compiled_matches_shipped_output(name, tmp_path):
    result = run_light_models.run_model(name, str(tmp_path))
    assert result["ok"], result["message"]
    assert result["max_abs"] is not None and result["max_abs"] <= 1e-4


@pytest.mark.slow
@pytest.mark.parametrize("name", run_light_models.ALL_LIGHT)
def test_every_light_model_compiled(name, tmp_path):
    result = run_light_models.run_model(name, str(tmp_path))
    assert result["ok"], result["message"]


def test_light_input_is_the_onnx_runner_input():
    x = run_light_models.light_input("squeezenet")
    assert x.shape == (1, 3, 224, 224) and x.dtype == np.float32
    assert x.flat[0] == 0 and abs(x.flat[-1] - (1 - 1 / x.size)) < 1e-6


def _add_files(tmp_path):
    path = tmp_path / "add.mlir"
    path.write_text(ADD)
    a = np.arange(15, dtype=np.float32).reshape(3, 5)
    b = np.linspace(-1, 1, 5, dtype=np.float32)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    return str(path), a, b


def test_run_expect_and_output(tmp_path, capsys):
    path, a, b = _add_files(tmp_path)
    np.save(tmp_path / "want.npy", a + b)
    out = tmp_path / "got.npy"
    code = dlc_cli.main(["run", path, "--input", str(tmp_path / "a.npy"), "--input", str(tmp_path / "b.npy"),
                         "--expect", str(tmp_path / "want.npy"), "--output", str(out), "--repeat", "1"])
    assert code == 0, capsys.readouterr().err
    np.testing.assert_array_equal(np.load(out), a + b)


def test_run_expect_mismatch_fails_and_writes_nothing(tmp_path, capsys):
    path, a, b = _add_files(tmp_path)
    np.save(tmp_path / "want.npy", a + b + 1e-2)
    out = tmp_path / "got.npy"
    code = dlc_cli.main(["run", path, "--input", str(tmp_path / "a.npy"), "--input", str(tmp_path / "b.npy"),
                         "--expect", str(tmp_path / "want.npy"), "--output", str(out), "--repeat", "1"])
    captured = capsys.readouterr()
    assert code == 1
    assert "outputs differ from the --expect files" in captured.err
    assert "Traceback" not in captured.err
    assert not out.exists()


def test_run_expect_reads_onnx_tensor_pb(tmp_path, capsys):
    from onnx import numpy_helper

    path, a, b = _add_files(tmp_path)
    (tmp_path / "want.pb").write_bytes(numpy_helper.from_array(a + b).SerializeToString())
    code = dlc_cli.main(["run", path, "--input", str(tmp_path / "a.npy"), "--input", str(tmp_path / "b.npy"),
                         "--expect", str(tmp_path / "want.pb"), "--repeat", "1"])
    assert code == 0, capsys.readouterr().err


@pytest.mark.parametrize("content", [b"", b"\x00garbage\xff" * 3])
def test_run_expect_bad_file(tmp_path, capsys, content):
    path, _, _ = _add_files(tmp_path)
    (tmp_path / "bad.pb").write_bytes(content)
    (tmp_path / "bad.npy").write_bytes(content)
    for bad in ("bad.npy", "missing.npy"):
        code = dlc_cli.main(["run", path, "--expect", str(tmp_path / bad), "--repeat", "1"])
        err = capsys.readouterr().err
        assert code == 1 and "Traceback" not in err and bad in err
        assert len(err.strip().splitlines()) == 1


def test_run_too_many_outputs(tmp_path, capsys):
    path, _, _ = _add_files(tmp_path)
    code = dlc_cli.main(["run", path, "--output", str(tmp_path / "x.npy"), "--output", str(tmp_path / "y.npy"),
                         "--repeat", "1"])
    err = capsys.readouterr().err
    assert code == 1 and "has 1 outputs" in err
    assert not (tmp_path / "x.npy").exists()
