"""Paired measurement (each candidate timed interleaved with its task's default) and the
rule that a log never replaces a default by a config that did not beat it beyond the
spread. Fake clocks and fake runners: deterministic, no timing of real code."""

from __future__ import annotations

import math

import pytest
from tune_testing import FakeTask

from dlc.lowering.schedule.records import MIN_GAIN, TuningRecord, best_configs, best_records, read_records
from dlc.tune import run_worker
from dlc.tune.measure import LocalRunner, MeasureOptions, MeasureResult
from dlc.tune.tuner import summary, tune

TARGET = "llvm"
KEY = "fake|f32[256]->f32[256]|llvm"


class FakeClock:
    """time.perf_counter for run_worker: advances by what the fake calls cost, times a
    load factor that changes every `period` calls (a loaded machine)."""

    def __init__(self, loads=(1.0, 3.0, 1.5, 2.5), period=7):
        self.now = 0.0
        self.calls = 0
        self.loads = loads
        self.period = period

    def __call__(self):
        return self.now

    def call(self, seconds):
        def run():
            self.now += seconds * self.loads[(self.calls // self.period) % len(self.loads)]
            self.calls += 1
        return run


def test_paired_timing_alternates_and_keeps_the_ratio_under_a_swinging_load(monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(run_worker.time, "perf_counter", clock)
    order = []
    cand, base = clock.call(0.8e-3), clock.call(1.0e-3)
    costs, base_costs = run_worker.paired_timing(lambda: (order.append("c"), cand()),
                                                 lambda: (order.append("b"), base()), repeat=6, number=1)
    assert len(costs) == len(base_costs) == 6
    assert order[:2] == ["c", "b"]  # one warm-up each
    absolute = max(costs) / min(costs)
    assert absolute > 1.5  # the load swings the absolute times...
    ratios = sorted(c / b for c, b in zip(costs, base_costs))
    assert ratios[len(ratios) // 2] == pytest.approx(0.8, rel=0.2)  # ...the pairs hold the ratio


def test_paired_timing_calibrates_each_side_to_min_repeat_ms(monkeypatch):
    clock = FakeClock(loads=(1.0,))
    monkeypatch.setattr(run_worker.time, "perf_counter", clock)
    counts = {"c": 0, "b": 0}
    cand, base = clock.call(1e-3), clock.call(4e-3)

    def c():
        counts["c"] += 1
        cand()

    def b():
        counts["b"] += 1
        base()

    costs, base_costs = run_worker.paired_timing(c, b, repeat=2, number=1, min_repeat_ms=8.0)
    assert costs == pytest.approx([1e-3, 1e-3]) and base_costs == pytest.approx([4e-3, 4e-3])
    # calibration 1+2+4+8 calls (c) and 1+2 (b), then 2 samples of 8 and of 2, plus warm-ups
    assert counts == {"c": 1 + 15 + 16, "b": 1 + 3 + 4}


def _rec(config, costs, base, error=None):
    return TuningRecord(KEY, TARGET, config, list(costs), error, 512.0, 0.0, baseline_costs=list(base))


def test_a_record_stores_its_ratio_and_round_trips(tmp_path):
    r = _rec({"reps": 4}, [0.9, 1.8, 0.85], [1.0, 2.0, 1.0])
    assert r.ratio == pytest.approx(0.9) and r.paired
    back = TuningRecord.from_json(r.to_json())
    assert back == r and back.ratio == pytest.approx(0.9)
    old = TuningRecord.from_json('{"workload_key": "k|x|llvm", "target": "llvm", "config": {}, "costs": [1.0]}')
    assert old.ratio is None and not old.paired  # a log of an older dlc still reads
    with pytest.raises(ValueError, match="field 'baseline_costs' holds"):
        TuningRecord.from_json('{"workload_key": "k", "target": "llvm", "config": {}, "baseline_costs": [-1]}')


def test_best_configs_takes_only_a_win_beyond_the_spread():
    default = _rec({"reps": 1}, [1.0, 1.0, 1.0], [1.0, 1.0, 1.0])
    # fastest absolute time (measured while the machine was quiet) but slower than the default
    quiet_but_slower = _rec({"reps": 2}, [0.3, 0.3, 0.3], [0.25, 0.25, 0.25])
    noisy = _rec({"reps": 4}, [0.7, 0.7, 1.1], [1.0, 1.0, 1.0])        # one pair slower
    marginal = _rec({"reps": 16}, [0.99, 0.985, 0.99], [1.0, 1.0, 1.0])  # under MIN_GAIN
    win = _rec({"reps": 64}, [1.8, 0.9, 2.7], [2.0, 1.0, 3.0])          # 0.9 in every pair
    failed = _rec({"reps": 256}, [], [], error="run crashed")
    assert not quiet_but_slower.beats_default() and not noisy.beats_default()
    assert not marginal.beats_default() and win.beats_default() and not failed.beats_default()
    assert best_configs([default, quiet_but_slower, noisy, marginal, failed], TARGET) == {}
    assert best_configs([default, quiet_but_slower, noisy, win, marginal], TARGET) == {KEY: {"reps": 64}}
    assert best_records([win], TARGET)[KEY] is win
    assert best_configs([win], TARGET, min_gain=0.2) == {}


def test_best_configs_of_unpaired_records_is_the_lowest_median():
    a = TuningRecord("k|a|llvm", TARGET, {"x": 1}, [2.0, 2.0])
    b = TuningRecord("k|a|llvm", TARGET, {"x": 2}, [1.0, 3.0, 1.0])
    assert best_configs([a, b], TARGET) == {"k|a|llvm": {"x": 2}}


class SwingRunner:
    """A runner whose absolute times swing 10x from batch to batch (the load) while each
    candidate's time relative to the default stays what `speed` says."""

    name = "swing"

    def __init__(self, speed):
        self.speed = speed
        self.batch = 0

    def start(self, tasks):
        self.tasks = tasks

    def measure(self, jobs):
        self.batch += 1
        load = 10.0 if self.batch % 2 else 1.0
        out = []
        for _, config in jobs:
            rel = self.speed(config)
            base = [1e-3 * load * f for f in (1.0, 1.1, 0.9)]
            out.append(MeasureResult(costs=[b * rel for b in base], baseline_costs=base))
        return out

    def close(self):
        pass


def test_the_search_ranks_by_the_ratio_and_the_log_never_slows_the_default(tmp_path):
    task = FakeTask(reps=(1, 4, 16, 64))
    default = task.space.default()

    def speed(config):  # reps=16 is the one real win; everything else is slower than the default
        if config == default:
            return 1.0
        return 0.8 if config["reps"] == 16 and config["pad"] == 2 else 1.3

    log = str(tmp_path / "swing.jsonl")
    records = tune(None, trials=16, batch_size=4, log=log, tasks=[task], cost_model="random",
                   runner=SwingRunner(speed))  # 16: the whole space
    assert all(r.paired for r in records) and len(read_records(log)) == 16
    # absolute times: a slower config measured in a quiet batch looks fastest...
    fastest = min(records, key=lambda r: r.median_cost)
    assert speed(fastest.config) > 1.0
    # ...the log applies the win by ratio, or nothing
    assert best_configs(log, TARGET) == {KEY: {"mode": "ok", "reps": 16, "pad": 2}}
    assert "applied: 0.800x" in summary(records)[0]


def test_all_slower_candidates_leave_the_default(tmp_path):
    task = FakeTask(reps=(1, 4))
    default = task.space.default()
    records = tune(None, trials=8, batch_size=4, log=str(tmp_path / "slow.jsonl"), tasks=[task],
                   cost_model="random", runner=SwingRunner(lambda c: 1.0 if c == default else 1.02))
    assert len(records) == 8 and best_configs(records, TARGET) == {}
    assert "default kept" in summary(records)[0]


def test_local_runner_times_each_candidate_paired_with_the_default():
    task = FakeTask(reps=(1, 1024))
    options = MeasureOptions(repeat=3, min_repeat_ms=1.0, timeout=5.0, n_parallel=2)
    runner = LocalRunner(options)
    runner.start([task])
    try:
        results = runner.measure([(0, {"mode": "ok", "reps": 1024, "pad": 0}), (0, {"mode": "ok", "reps": 1, "pad": 1})])
    finally:
        runner.close()
    assert all(r.error is None and len(r.costs) == len(r.baseline_costs) == 3 for r in results)
    # reps 1024 computes 1024x the default's work: slower in every pair, whatever the load
    slow = [c / b for c, b in zip(results[0].costs, results[0].baseline_costs)]
    assert min(slow) > 2.0
    unpaired = LocalRunner(MeasureOptions(repeat=2, min_repeat_ms=1.0, timeout=5.0, paired=False))
    unpaired.start([task])
    try:
        (r,) = unpaired.measure([(0, {"mode": "ok", "reps": 4, "pad": 0})])
    finally:
        unpaired.close()
    assert len(r.costs) == 2 and r.baseline_costs == [] and math.isfinite(r.costs[0])
