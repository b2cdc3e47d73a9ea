"""Whole models: onnx's nine `light` models imported and run by the reference
evaluator against their shipped outputs; the conformance runner's bookkeeping
(expected failures: a regression or a newly passing case fails the run)."""

from __future__ import annotations

import glob
import os
import sys

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from dlc.evaluator import evaluate
from dlc.frontends.onnx import import_model

LIGHT_DIR = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
ALL_LIGHT = sorted(os.path.basename(p)[len("light_"):-len(".onnx")]
                   for p in glob.glob(os.path.join(LIGHT_DIR, "light_*.onnx")))
# a few seconds together in the reference evaluator; the rest (vgg19: ~15 s) are slow
FAST_LIGHT = ["squeezenet", "shufflenet", "inception_v1", "bvlc_alexnet"]

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "conformance"))


def run_light(name: str) -> None:
    module = import_model(os.path.join(LIGHT_DIR, f"light_{name}.onnx"))
    fn = next(iter(module.ops))
    shape = fn.body.block.args[0].type.get_shape()
    # the input onnx's backend test runner feeds these models
    n = int(np.prod(shape))
    x = (np.arange(n).reshape(shape) / n).astype(np.float32)
    got = evaluate(module, [x])
    want = numpy_helper.to_array(onnx.load_tensor(os.path.join(LIGHT_DIR, f"light_{name}_output_0.pb")))
    assert len(got) == 1 and got[0].shape == want.shape
    np.testing.assert_allclose(got[0], want, rtol=1e-3, atol=1e-4)


def test_all_nine_light_models_are_there():
    assert len(ALL_LIGHT) == 9


@pytest.mark.parametrize("name", FAST_LIGHT)
def test_light_model(name):
    run_light(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", ALL_LIGHT)
def test_light_model_all(name):
    run_light(name)


# ---------------------------------------------------------------------------
# the conformance runner
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def runner():
    import run_conformance

    return run_conformance


def fake_case(name, op, inputs, outputs, **attrs):
    """A conformance case like onnx's (name, model, data_sets, rtol, atol)."""
    from types import SimpleNamespace

    from test_onnx_frontend_util import node_model

    model = node_model(op, dict(inputs), **attrs)
    return SimpleNamespace(name=name, model=model, data_sets=[(list(inputs.values()), outputs)],
                           rtol=1e-3, atol=1e-7)


def small_cases():
    x = np.array([-1.5, 0.0, 2.0], np.float32)
    return [
        fake_case("test_relu", "Relu", {"x": x}, [np.maximum(x, 0)]),
        fake_case("test_abs_wrong", "Abs", {"x": x}, [x]),  # wrong expected values: "fail"
        fake_case("test_lstm_like", "Multinomial", {"x": x}, [x]),  # unsupported: "error"
    ]


def test_conformance_run_case_statuses(runner):
    results = {c.name: runner.run_case(runner._payload(c, "evaluator", 30))[1:] for c in small_cases()}
    assert results["test_relu"] == ("pass", "")
    assert results["test_abs_wrong"][0] == "fail" and "values differ" in results["test_abs_wrong"][1]
    status, message = results["test_lstm_like"]
    assert status == "error" and "unsupported ONNX op type" in message and "Multinomial x1" in message
    assert runner.case_op(small_cases()[0]) == "Relu"


def test_conformance_expected_failures_bookkeeping(runner, tmp_path, capsys):
    expected = tmp_path / "expected.txt"

    def run():
        return runner.main(["--executor", "evaluator", "-j", "1", "--expected", str(expected)],
                           cases=small_cases())

    # a failing case missing from the file is a regression
    expected.write_text("test_abs_wrong  # fail: expected values are wrong on purpose\n")
    assert run() == 1
    assert "REGRESSION test_lstm_like" in capsys.readouterr().out
    # a listed case that passes is newly passing: also a failure of the run
    expected.write_text("test_relu  # fail: stale\ntest_abs_wrong  # fail\ntest_lstm_like  # error\n")
    assert run() == 1
    assert "NEWLY PASSING test_relu" in capsys.readouterr().out
    # exactly the failing cases listed: the run passes
    expected.write_text("test_abs_wrong  # fail\ntest_lstm_like  # error: LSTM\n")
    assert run() == 0
    out = capsys.readouterr().out
    assert "Relu" in out and "TOTAL" in out and "1/3 pass" in out
    # --update with a filter rewrites only the entries of the cases that ran
    expected.write_text("test_other  # error: kept\ntest_relu  # fail: stale\n")
    assert runner.main(["--executor", "evaluator", "-j", "1", "--expected", str(expected),
                        "-k", "relu|abs", "--update"], cases=small_cases()) == 0
    entries = runner.read_expected(str(expected))
    assert sorted(entries) == ["test_abs_wrong", "test_other"]
    assert entries["test_other"] == "error: kept"


def _stuck_on_relu(payload):
    import time

    if payload[0] == "test_relu":
        time.sleep(600)  # no alarm set here: only the parent's hard deadline ends it
    return payload[0], "pass", ""


def test_conformance_stuck_worker_is_killed(runner, monkeypatch):
    monkeypatch.setattr(runner, "run_case", _stuck_on_relu)
    monkeypatch.setattr(runner, "HARD_GRACE_S", 1)
    results = runner.run_all(small_cases(), "evaluator", jobs=2, timeout=1, verbose=False)
    assert results["test_relu"][0] == "timeout"
    assert results["test_abs_wrong"] == ("pass", "") and results["test_lstm_like"] == ("pass", "")


def test_conformance_checked_in_files_parse(runner):
    for path in runner.EXPECTED.values():
        if os.path.exists(path):
            entries = runner.read_expected(path)
            assert entries and all(name.startswith("test_") and reason for name, reason in entries.items())

