"""``dlc.tune``: tune the schedules of a model's kernels and log every measurement.

    records = dlc.tune("model.onnx", trials=200, log="tune.jsonl")
    model = dlc.compile("model.onnx", tuning_records="tune.jsonl")

The loop: the task scheduler (scheduler.py) picks a task, the evolutionary search
(search.py) proposes a batch of its configs scored by the cost model (cost_model.py), the
runner (measure.py) builds and times them in separate processes, and every result,
successful or not, is appended to the log at once as a TuningRecord (a killed tune keeps
what it measured). The model is refitted after every batch. Resuming: the log's records for
these tasks are loaded first (the model trains on them, their configs are not measured
again). The budget is ``trials`` measurements and/or ``seconds`` of wall time (whichever
ends first; at least one of them).

Ranking under load: a paired measurement (MeasureOptions.paired, the local and Ray
runners) gives each candidate's ratio to its task's default, timed interleaved in one
process. The search and the task scheduler then see a candidate's cost as that ratio
times the task's reference time (the median of the default's first paired timing), so
configs are ranked by the ratio (a load swing between two candidates' measurements
does not reorder them) while the scheduler still weighs tasks by seconds.
"""

from __future__ import annotations

import math
import os
import time

import numpy as np

from dlc.diagnostics import DiagnosticError
from dlc.lowering.schedule.records import TuningRecord, append_records, read_records
from dlc.target import Target, as_target
from dlc.tune.cost_model import make_cost_model
from dlc.tune.measure import LocalRunner, MeasureOptions
from dlc.tune.scheduler import TaskScheduler
from dlc.tune.search import EvolutionarySearch, Featurizer, TaskState, config_key

DEFAULT_BATCH = 8


class TuneError(DiagnosticError):
    """Bad arguments of a tune, or a log that does not fit it."""


def _runner(runner, options: MeasureOptions):
    if runner is None or runner == "local":
        return LocalRunner(options)
    if isinstance(runner, str):
        raise TuneError(f"unknown runner '{runner}' (pass 'local', an RPCRunner or a RayRunner)")
    return runner


def _same_target(text: str, target: Target) -> bool:
    from dlc.target import TargetError

    try:
        return as_target(text) == target
    except TargetError:
        return False


def _median(costs: list[float]) -> float:
    return float(np.median(costs)) if costs else math.inf


class _Progress:
    """One rich line per task: trials done and best GFLOP/s (off a terminal: silent)."""

    def __init__(self, states, enabled: bool):
        self._bar = None
        if not enabled:
            return
        import sys

        from rich.console import Console
        from rich.progress import Progress, TextColumn

        self._bar = Progress(TextColumn("{task.description}"), TextColumn("{task.fields[trials]:>5} trials"),
                             TextColumn("best {task.fields[gflops]:8.2f} GFLOP/s"),
                             TextColumn("{task.fields[errors]} errors"), console=Console(file=sys.stderr))
        self._ids = [self._bar.add_task(_short(s.task.key), trials=s.trials, gflops=s.best_gflops, errors=s.errors)
                     for s in states]
        self._bar.start()

    def update(self, index: int, state) -> None:
        if self._bar is not None:
            self._bar.update(self._ids[index], trials=state.trials, gflops=state.best_gflops, errors=state.errors)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()


def _short(key: str) -> str:
    parts = key.split("|")
    return f"{parts[0]} {parts[1]}" if len(parts) > 1 else key


def tune(source, target: Target | str = "llvm", trials: int | None = None, seconds: float | None = None,
         log: str = "tune.jsonl", runner="local", input_shapes=None, cost_model: str = "xgb",
         batch_size: int = DEFAULT_BATCH, options: MeasureOptions | None = None, seed: int = 0,
         progress: bool | None = None, tasks=None) -> list[TuningRecord]:
    """Tune `source`'s kernels for `target`; returns the records measured by this call (all
    also appended to `log`). `tasks` (a list of dlc.tune.Task) replaces the extraction."""
    if trials is None and seconds is None:
        raise TuneError("give a budget: trials and/or seconds")
    if trials is not None and (isinstance(trials, bool) or not isinstance(trials, int) or trials < 1):
        raise TuneError(f"trials must be a positive integer, got {trials!r}")
    if seconds is not None and (not isinstance(seconds, (int, float)) or seconds <= 0):
        raise TuneError(f"seconds must be a positive number, got {seconds!r}")
    if batch_size < 1:
        raise TuneError(f"batch_size must be a positive integer, got {batch_size!r}")
    model = make_cost_model(cost_model, seed)  # before any work: a missing xgboost fails at once
    target = as_target(target)
    if tasks is None:
        from dlc.tune.tasks import extract_tasks

        tasks = extract_tasks(source, target, input_shapes=input_shapes)
    if not tasks:
        raise TuneError("the model has no tunable kernels (no kernel form with a schedule space)")
    target_text = str(target)
    states = [TaskState(task) for task in tasks]
    by_key = {task.key: i for i, task in enumerate(tasks)}
    featurizer = Featurizer()
    rows: list[np.ndarray] = []
    ys: list[float] = []
    groups: list[int] = []

    refs: dict[int, float] = {}  # task -> its reference time: the default's first paired median

    def cost_of(index: int, costs: list[float], baseline_costs: list[float], ok: bool) -> float:
        if not ok:
            return math.inf
        ratios = [c / b for c, b in zip(costs, baseline_costs) if b > 0]
        if len(ratios) == len(costs) and ratios:
            ref = refs.setdefault(index, _median(baseline_costs))
            return float(np.median(ratios)) * ref
        return _median(costs)

    def learn(index: int, config: dict, cost: float) -> None:
        row = featurizer(index, tasks[index], config)
        if row is not None:
            rows.append(row)
            ys.append(tasks[index].flops / cost if math.isfinite(cost) and cost > 0 else 0.0)
            groups.append(index)

    if os.path.exists(log):  # resume: what the log measured is known, not measured again
        for record in read_records(log):
            if record.target != target_text and not _same_target(record.target, target):
                raise TuneError(f"'{log}' holds records tuned for '{record.target}', not for '{target_text}': "
                                "tune into another log")
            index = by_key.get(record.workload_key)
            if index is None or not tasks[index].space.valid(record.config):
                continue
            cost = cost_of(index, record.costs, record.baseline_costs, record.ok)
            states[index].add(record.config, cost)
            learn(index, record.config, cost)
        if rows:
            model.update(np.array(rows), np.array(ys), np.array(groups))
        for state in states:
            if state.measured:
                state.history.append(state.best_cost)

    options = options or MeasureOptions()
    runner = _runner(runner, options)
    search = EvolutionarySearch(model, featurizer, seed=seed)
    scheduler = TaskScheduler(states)
    if progress is None:
        from dlc.tools.progress import interactive

        progress = interactive()
    bar = _Progress(states, progress)
    done: list[TuningRecord] = []
    start = time.monotonic()
    runner.start(tasks)
    try:
        while trials is None or len(done) < trials:
            if seconds is not None and time.monotonic() - start >= seconds:
                break
            index = scheduler.next_task()
            if index is None:
                break  # every space measured
            state = states[index]
            # the warm-up round of a task is half a batch: a model has tens of tasks
            n = batch_size if state.history else max(2, batch_size // 2)
            n = n if trials is None else min(n, trials - len(done))
            configs = search.propose(index, state, n)
            if not configs:  # no unmeasured config found: the space is (nearly) measured out
                state.stalled = True
                continue
            results = runner.measure([(index, config) for config in configs])
            records = []
            for config, result in zip(configs, results):
                records.append(TuningRecord(tasks[index].key, target_text, dict(config), list(result.costs),
                                            result.error, float(tasks[index].flops), time.time(),
                                            baseline_costs=list(result.baseline_costs)))
                cost = cost_of(index, result.costs, result.baseline_costs, records[-1].ok)
                state.add(config, cost)
                state.trials += 1
                state.errors += result.error is not None
                learn(index, config, cost)
            append_records(log, records)
            done.extend(records)
            state.history.append(state.best_cost)
            model.update(np.array(rows), np.array(ys), np.array(groups))
            bar.update(index, state)
    finally:
        runner.close()
        bar.close()
    return done


def summary(records: list[TuningRecord], tasks=None) -> list[str]:
    """One line per workload key: trials, errors, best time and GFLOP/s; for paired
    records also the ratio of the config ``--tuning-records`` applies (or that none beat
    the default beyond the spread)."""
    from dlc.lowering.schedule.records import MIN_GAIN

    by_key: dict[str, list[TuningRecord]] = {}
    for r in records:
        by_key.setdefault(r.workload_key, []).append(r)
    lines = []
    for key, rs in by_key.items():
        ok = [r for r in rs if r.ok]
        best = min((r.median_cost for r in ok), default=math.inf)
        flops = rs[0].flops
        gflops = flops / best / 1e9 if ok and best > 0 else 0.0
        line = (f"{_short(key)}: {len(rs)} trials, {len(rs) - len(ok)} errors, "
                + (f"best {best * 1e6:.1f} us ({gflops:.2f} GFLOP/s)" if ok else "no success"))
        if any(r.paired for r in ok):
            wins = [r for r in ok if r.beats_default()]
            line += (f"; applied: {min(r.ratio for r in wins):.3f}x the default's time" if wins else
                     f"; none beats the default by {100 * MIN_GAIN:.0f}% beyond the spread: default kept")
        lines.append(line)
    return lines
