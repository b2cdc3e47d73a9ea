"""dlc.tune: search, cost model, measurement in separate processes, runners (local, RPC,
Ray), resume, the CLI and ``dlc compile --tuning-records``. Small kernels, few trials."""

from __future__ import annotations

import json
import math
import os
import sys

import numpy as np
import pytest
from rpc_testing import Proc, deadline, start_server, wait_until  # noqa: F401  (deadline: a fixture)
from tune_testing import FakeTask, matmul_onnx

from dlc.lowering.schedule.records import TuningRecord, read_records
from dlc.tune.cost_model import CostModelError, RandomModel, XGBModel, make_cost_model
from dlc.tune.measure import LocalRunner, MeasureError, MeasureOptions, RayRunner, RPCRunner
from dlc.tune.search import config_key
from dlc.tune.tuner import TuneError, tune

FAST = dict(repeat=2, min_repeat_ms=1.0, timeout=2.0, n_parallel=2)
RECORD_FIELDS = set(TuningRecord.__dataclass_fields__)


@pytest.fixture(scope="module")
def mm_model(tmp_path_factory):
    return matmul_onnx(str(tmp_path_factory.mktemp("mm") / "mm.onnx"))


def _log_lines(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def test_tune_matmul_writes_records_that_compile_uses(mm_model, tmp_path, capsys):
    import dlc
    from dlc.tools.dlc_cli import main

    log = str(tmp_path / "tune.jsonl")
    records = dlc.tune(mm_model, trials=20, log=log, options=MeasureOptions(**FAST))
    assert len(records) == 20
    on_disk = read_records(log)
    assert [r.config for r in on_disk] == [r.config for r in records]
    assert all(set(line) == RECORD_FIELDS for line in _log_lines(log))
    assert len({config_key(r.config) for r in records}) == 20  # no config measured twice
    assert sum(r.ok for r in records) >= 18 and all(r.flops > 0 for r in records)
    # the default is measured in the first round: the tuned best is never worse than it
    default = next(r for r in records if r.config == records[0].config)
    assert min(r.median_cost for r in records if r.ok) <= default.median_cost
    out = str(tmp_path / "mm.so")
    assert main(["compile", mm_model, "-o", out, "--tuning-records", log, "-v"]) == 0
    # applied when a candidate beat the default in every pair (records.best_configs), else the default
    from dlc.lowering.schedule.records import best_configs

    applied = len(best_configs(log, "llvm"))
    assert f"tuning: {applied} of 1 kernels from" in capsys.readouterr().err
    x = np.random.default_rng(1).standard_normal((64, 64)).astype(np.float32)
    (y,) = dlc.runtime.load(out)(x)
    import onnx
    from onnx import numpy_helper

    w = numpy_helper.to_array(onnx.load(mm_model).graph.initializer[0])
    np.testing.assert_allclose(y, x @ w, rtol=1e-4, atol=1e-4)


def test_crashing_and_hanging_candidates_are_errors_and_tuning_goes_on(tmp_path):
    task = FakeTask(modes=("ok", "crash", "hang", "build-error"), reps=(1, 4))
    runner = LocalRunner(MeasureOptions(**dict(FAST, timeout=1.0)))
    runner.start([task])
    try:
        results = runner.measure([(0, {"mode": m, "reps": 1, "pad": 0})
                                  for m in ("crash", "ok", "hang", "ok", "build-error", "ok")])
    finally:
        runner.close()
    # (2 s: a paired run times the candidate and its default, so twice the run deadline)
    assert [r.error for r in results] == ["run crashed (signal 11 SIGSEGV)", None, "run timed out after 2 s", None,
                                          "build failed: RuntimeError: this candidate does not build", None]
    assert all(len(r.costs) == 2 and min(r.costs) > 0 for r in results[1::2])

    log = str(tmp_path / "fake.jsonl")
    records = tune(None, trials=12, batch_size=4, log=log, tasks=[task], cost_model="random",
                   options=MeasureOptions(**dict(FAST, timeout=1.0)))
    assert len(records) == 12 == len(read_records(log))
    errors = {r.config["mode"] for r in records if r.error}
    assert {"crash", "hang"} <= errors  # every crash and hang was recorded...
    assert all(r.ok == (r.config["mode"] == "ok") for r in records)
    assert any(r.ok for r in records)  # ...and the candidates after them were measured


def test_resume_skips_measured_configs(tmp_path):
    task = FakeTask()
    log = str(tmp_path / "resume.jsonl")
    first = tune(None, trials=6, batch_size=3, log=log, tasks=[task], options=MeasureOptions(**FAST))
    second = tune(None, trials=6, batch_size=3, log=log, tasks=[task], options=MeasureOptions(**FAST))
    keys = [config_key(r.config) for r in read_records(log)]
    assert len(keys) == 12 == len(set(keys))
    assert not {config_key(r.config) for r in first} & {config_key(r.config) for r in second}


def test_log_for_another_target_is_refused(tmp_path):
    task = FakeTask()
    log = tmp_path / "other.jsonl"
    log.write_text(TuningRecord(task.key, "aarch64-linux-gnu", {"mode": "ok", "reps": 1, "pad": 0},
                                [1e-6]).to_json() + "\n")
    with pytest.raises(TuneError, match="holds records tuned for 'aarch64-linux-gnu', not for 'llvm"):
        tune(None, trials=2, log=str(log), tasks=[task], options=MeasureOptions(**FAST))


def test_budget_and_cost_model_arguments():
    with pytest.raises(TuneError, match="give a budget"):
        tune(None, tasks=[FakeTask()])
    with pytest.raises(CostModelError, match="unknown cost model 'svm'"):
        make_cost_model("svm")


def test_missing_xgboost_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "xgboost", None)  # import xgboost -> ImportError
    with pytest.raises(CostModelError, match=r"pip install 'dlc\[tune\]'"):
        make_cost_model("xgb")


def _spearman(a, b) -> float:
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    return float(np.corrcoef(ra, rb)[0, 1])


def test_xgb_ranking_beats_random_on_a_synthetic_set():
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, size=(400, 12))
    # a throughput with interactions and a cliff, as tile sizes give
    y = np.exp(2 * x[:, 0] - (x[:, 1] - 0.5) ** 2 * 4) * np.where(x[:, 2] > 0.7, 0.2, 1.0) + 0.1 * x[:, 3] * x[:, 4]
    groups = np.zeros(400, dtype=int)
    xgb, rnd = XGBModel(), RandomModel()
    for model in (xgb, rnd):
        model.update(x[:300], y[:300], groups[:300])
    truth = y[300:]
    assert _spearman(xgb.predict(x[300:]), truth) > 0.8
    assert _spearman(rnd.predict(x[300:]), truth) < 0.3
    top = set(np.argsort(-truth)[:10])  # the best 10 of 100 among the model's top 20
    assert len(top & set(np.argsort(-xgb.predict(x[300:]))[:20])) >= 7


def test_rpc_runner_through_a_tracker(tmp_path, deadline):  # noqa: F811
    tracker = Proc(tmp_path, "tracker")
    server = start_server(tmp_path, "--tracker", f"127.0.0.1:{tracker.port}", "--key", "tune-test",
                          "--timeout", "2")
    try:
        from dlc.rpc import tracker_status

        wait_until(lambda: tracker_status("127.0.0.1", tracker.port)["servers"], what="server registered")
        task = FakeTask(modes=("ok", "crash", "hang"), reps=(1,))
        runner = RPCRunner(f"127.0.0.1:{tracker.port}", "tune-test", MeasureOptions(**FAST))
        runner.start([task])
        try:
            results = runner.measure([(0, {"mode": m, "reps": 1, "pad": 0}) for m in ("ok", "crash", "hang", "ok")])
        finally:
            runner.close()
        assert results[0].error is None and len(results[0].costs) == 2
        assert "crashed" in results[1].error and results[1].error.startswith("rpc: ")
        assert results[2].error.startswith("rpc: ") and results[3].error is None
        log = str(tmp_path / "rpc.jsonl")
        runner = RPCRunner(f"127.0.0.1:{tracker.port}", "tune-test", MeasureOptions(**FAST))
        records = tune(None, trials=4, batch_size=2, log=log, tasks=[FakeTask()], runner=runner)
        assert all(r.ok for r in records) and all(set(line) == RECORD_FIELDS for line in _log_lines(log))
    finally:
        server.stop()
        tracker.stop()


def test_rpc_runner_without_tracker_is_one_error():
    with pytest.raises(MeasureError, match="--rpc-tracker 'nowhere': expected HOST:PORT"):
        RPCRunner("nowhere", "k")


def test_ray_missing_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(MeasureError, match=r"pip install 'dlc\[ray\]'"):
        RayRunner(None).start([])


@pytest.mark.ray
def test_ray_local_cluster_tune_has_the_local_record_format(mm_model, tmp_path):
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": os.environ.get("PYTHONPATH", "")}})
    try:
        log = str(tmp_path / "ray.jsonl")
        records = tune(mm_model, trials=20, log=log, runner=RayRunner(None, MeasureOptions(**FAST)))
    finally:
        ray.shutdown()
    assert len(records) == 20 and sum(r.ok for r in records) >= 18
    assert all(set(line) == RECORD_FIELDS for line in _log_lines(log))
    assert len({config_key(r.config) for r in records}) == 20
    assert all(math.isfinite(r.median_cost) for r in records if r.ok)


def test_features_have_one_length_and_follow_the_schedule(mm_model):
    from dlc.tune.features import N_FEATURES, features
    from dlc.tune.tasks import extract_tasks

    (task,) = extract_tasks(mm_model)
    default = task.space.default()
    other = dict(default, parallel="none", unroll=not default["unroll"])
    assert task.space.valid(other)
    a = features(task.scheduled_kernel(default), task.space, default)
    b = features(task.scheduled_kernel(other), task.space, other)
    assert a.shape == b.shape == (N_FEATURES,) and np.isfinite(a).all()
    assert not np.array_equal(a, b)
    fake = FakeTask()
    small = features(fake.scheduled_kernel({"mode": "ok", "reps": 1, "pad": 0}), fake.space,
                     {"mode": "ok", "reps": 1, "pad": 0})
    assert small[1] == pytest.approx(math.log2(17))  # one statement: 16 iterations


def test_scheduler_warms_up_every_task_then_follows_the_gain():
    from dlc.tune.scheduler import TaskScheduler
    from dlc.tune.search import TaskState

    states = [TaskState(FakeTask(key=f"t{i}")) for i in range(3)]
    scheduler = TaskScheduler(states)
    order = []
    for i in range(3):
        index = scheduler.next_task()
        order.append(index)
        states[index].add({"mode": "ok", "reps": 1, "pad": 0}, [1e-3, 5e-3, 1e-4][index])
        states[index].history.append(states[index].best_cost)
    assert order == [0, 1, 2]
    assert scheduler.next_task() == 1  # the slowest task holds the largest gain
    states[0].task.count = 10          # ...unless another one runs ten times as often
    assert scheduler.next_task() == 0
