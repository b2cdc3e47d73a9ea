"""bench/modern_models.py --quick on its smallest model: both engines in their own
processes, the outputs compared, the table printed (a smoke test of the harness)."""

import os

import pytest

pytest.importorskip("torch")
pytest.importorskip("onnxruntime")

from dlc.bench import modern_models  # noqa: E402


def test_quick_lstm_lm(tmp_path, capsys):
    rc = modern_models.main(["--quick", "--models", "lstm_lm", "--threads", "1", "--rounds", "1",
                             "--block", "1", "--cache", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 0, out
    row = next(line for line in out.splitlines() if line.startswith("lstm_lm"))
    assert row.split()[-1] == "ok", row
    assert "geomean modern (1)" in out


def test_unknown_model_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        modern_models.main(["--models", "resnet"])
    assert exc.value.code == 2
    assert "unknown model 'resnet'" in capsys.readouterr().err


SMALL_CNN = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(modern_models.__file__))),
                         "examples", "small_cnn.onnx")


def test_onnx_file_model_and_group_geomeans(tmp_path, capsys):
    """An ONNX file (onnx:PATH, the light models' path through the harness): random inputs
    from the graph's inputs, its row, its group's geomean."""
    rc = modern_models.main(["--quick", "--models", f"onnx:{SMALL_CNN}", "--threads", "1",
                             "--rounds", "1", "--block", "1", "--cache", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 0, out
    row = next(line for line in out.splitlines() if line.startswith("onnx:small_cnn"))
    assert row.split()[-1] == "ok", row
    assert "geomean onnx (1)" in out and "geomean modern" not in out


def test_light_selection_names_the_nine_shipped_files():
    args = modern_models.parse_args(["--light", "--models", "lstm_lm"])
    assert args.models[0] == "lstm_lm" and len(args.models) == 10
    assert [modern_models.group_of(m) for m in args.models[1:]] == ["light"] * 9
    for name in args.models[1:]:
        assert os.path.isfile(modern_models.onnx_path(name)), name
    shapes = [x.shape for x in modern_models.random_inputs(modern_models.onnx_path("light:zfnet512"))]
    assert shapes == [(1, 3, 224, 224)]  # its initializers listed as graph inputs are not inputs


@pytest.mark.parametrize("models, message", [
    ("light:resnet", "unknown model 'light:resnet'"),
    ("onnx:/nonexistent.onnx", "no such file /nonexistent.onnx"),
])
def test_bad_onnx_model_names_are_usage_errors(models, message, capsys):
    with pytest.raises(SystemExit) as exc:
        modern_models.main(["--models", models])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err
