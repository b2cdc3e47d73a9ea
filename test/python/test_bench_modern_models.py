"""bench/modern_models.py --quick on its smallest model: both engines in their own
processes, the outputs compared, the table printed (a smoke test of the harness)."""

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
    assert "geomean" in out


def test_unknown_model_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        modern_models.main(["--models", "resnet"])
    assert exc.value.code == 2
    assert "unknown model 'resnet'" in capsys.readouterr().err
