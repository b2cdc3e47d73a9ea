"""Evolutionary search over one task's schedule space, guided by the cost model.

Per round (:meth:`EvolutionarySearch.propose`): a population of the best measured configs,
the space's default and random points; a few generations of mutation (a random neighbor:
one knob one step, ``Space.neighbors``) with the cost model's scores choosing the parents
(tournaments) and the survivors; then the batch: the best-scored configs not measured yet,
with an epsilon share of random unmeasured ones (exploration, so a wrong model cannot trap
the search). Before the model is fitted the batch is the default (when new) plus random
points. A config already measured (this run or an earlier one in the log) is never proposed
again: that is how a resumed tune skips what it has.

:class:`TaskState` holds what is known of a task (measured configs, best cost, the best
cost after each round for the task scheduler); :class:`Featurizer` caches the feature
vector of each config (scheduling a kernel costs milliseconds).
"""

from __future__ import annotations

import json
import math
import random
import time
from dataclasses import dataclass, field

import numpy as np

from dlc.tune.features import config_features, loop_features


def config_key(config: dict) -> str:
    return json.dumps(config, sort_keys=True)


@dataclass
class TaskState:
    task: object
    measured: dict[str, float] = field(default_factory=dict)  # config key -> best cost (inf: failed)
    configs: dict[str, dict] = field(default_factory=dict)    # config key -> config
    best_cost: float = math.inf
    best_config: dict | None = None
    trials: int = 0
    errors: int = 0
    history: list[float] = field(default_factory=list)       # best cost after each round
    rejected: set[str] = field(default_factory=set)          # configs the schedule refuses
    stalled: bool = False                                    # the search found nothing new

    def add(self, config: dict, cost: float) -> None:
        key = config_key(config)
        self.measured[key] = min(cost, self.measured.get(key, math.inf))
        self.configs[key] = config
        if cost < self.best_cost:
            self.best_cost, self.best_config = cost, dict(config)

    def top(self, n: int) -> list[dict]:
        ranked = sorted((c, k) for k, c in self.measured.items() if math.isfinite(c))
        return [self.configs[k] for _, k in ranked[:n]]

    @property
    def exhausted(self) -> bool:
        return self.stalled or len(self.measured) + len(self.rejected) >= self.task.space.size

    @property
    def best_gflops(self) -> float:
        flops = getattr(self.task, "flops", 0) or 0
        return flops / self.best_cost / 1e9 if math.isfinite(self.best_cost) and self.best_cost > 0 else 0.0


class Featurizer:
    """Feature vectors of (task, config), cached: loop features of the scheduled kernel
    (``Task.scheduled_kernel(config)``) and the config's knob values. None for a config the
    schedule's steps refuse (ScheduleConfigError): the search drops it."""

    def __init__(self):
        self._cache: dict[tuple[int, str], np.ndarray | None] = {}
        self.refused: dict[tuple[int, str], str] = {}

    def __call__(self, task_index: int, task, config: dict) -> np.ndarray | None:
        from dlc.lowering.schedule.space import ScheduleConfigError

        key = (task_index, config_key(config))
        if key not in self._cache:
            try:
                kernel = task.scheduled_kernel(config)
            except ScheduleConfigError as err:
                self.refused[key] = str(err)
                self._cache[key] = None
            else:
                self._cache[key] = np.concatenate([loop_features(kernel), config_features(task.space, config)])
        return self._cache[key]


class EvolutionarySearch:
    def __init__(self, model, featurizer: Featurizer, seed: int = 0, population: int = 32,
                 generations: int = 3, epsilon: float = 0.2, seconds: float = 4.0):
        self.model = model
        self.featurizer = featurizer
        self.rng = random.Random(seed)
        self.population = population
        self.generations = generations
        self.epsilon = epsilon
        self.seconds = seconds  # featurizing a conv config schedules it (~0.1 s): evolve at most this long

    def _random_new(self, state: TaskState, taken: set[str], n: int) -> list[dict]:
        space = state.task.space
        out = []
        for _ in range(n * 20):
            if len(out) >= n:
                break
            config = space.random(self.rng)
            key = config_key(config)
            if key not in taken and key not in state.measured and key not in state.rejected:
                taken.add(key)
                out.append(config)
        return out

    def _scores(self, index: int, state: TaskState, configs: list[dict]) -> list[tuple[float, dict]]:
        rows, kept = [], []
        for config in configs:
            row = self.featurizer(index, state.task, config)
            if row is None:
                state.rejected.add(config_key(config))
                continue
            rows.append(row)
            kept.append(config)
        if not rows:
            return []
        scores = self.model.predict(np.stack(rows))
        return sorted(zip((float(s) for s in scores), kept), key=lambda p: -p[0])

    def propose(self, index: int, state: TaskState, n: int) -> list[dict]:
        """Up to `n` configs of task `index` not measured yet (fewer when the space runs out)."""
        space = state.task.space
        taken: set[str] = set()
        batch: list[dict] = []
        default = space.default()
        if config_key(default) not in state.measured and config_key(default) not in state.rejected:
            batch.append(default)
            taken.add(config_key(default))
        if not self.model.fitted:
            return batch + self._random_new(state, taken, n - len(batch))

        # population: the best measured, their neighbors, random points
        pool: dict[str, dict] = {}
        for config in state.top(8):
            pool[config_key(config)] = config
        for config in self._random_new(state, set(taken), self.population // 2):
            pool[config_key(config)] = config
        start = time.monotonic()
        scored = self._scores(index, state, list(pool.values()))
        for _ in range(self.generations):
            if not scored or time.monotonic() - start > self.seconds:
                break
            children = {}
            for _ in range(self.population):
                a, b = self.rng.choice(scored), self.rng.choice(scored)
                parent = a[1] if a[0] >= b[0] else b[1]  # a tournament of two
                neighbors = space.neighbors(parent)
                if neighbors:
                    child = self.rng.choice(neighbors)
                    children[config_key(child)] = child
            have = {config_key(c) for _, c in scored}
            fresh = [c for k, c in children.items() if k not in have and k not in state.rejected]
            scored = sorted(scored + self._scores(index, state, fresh), key=lambda p: -p[0])[:self.population]

        n_explore = max(1, int(round(self.epsilon * n))) if n > 1 else 0
        for _, config in scored:
            if len(batch) >= n - n_explore:
                break
            key = config_key(config)
            if key not in taken and key not in state.measured:
                taken.add(key)
                batch.append(config)
        return batch + self._random_new(state, taken, n - len(batch))
