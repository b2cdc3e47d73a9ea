"""Which task gets the next round of trials (Ansor's gradient-style task scheduler).

The end-to-end time is about sum(count_i x best_i). A warm-up round goes to every task first
(so every task has a measured best); after it, the next round goes to the task with the
largest expected gain ``count x best x rate``, where ``rate`` is the task's relative
improvement over its last rounds (Ansor's backward gradient), floored so that a task that
has stalled for a round still gets a share when it dominates the end-to-end time. A task
with no successful measurement yet is costed at its FLOPs over the median throughput of the
others. Tasks whose space is exhausted are skipped.
"""

from __future__ import annotations

import math
import statistics

MIN_RATE = 0.05   # a stalled task's rate: it keeps a share in proportion to its time
WINDOW = 2        # rounds the improvement rate looks back over


class TaskScheduler:
    def __init__(self, states):
        self.states = list(states)

    def _estimated_cost(self, state) -> float:
        if math.isfinite(state.best_cost):
            return state.best_cost
        rates = [s.task.flops / s.best_cost for s in self.states
                 if math.isfinite(s.best_cost) and s.best_cost > 0 and s.task.flops]
        if rates and state.task.flops:
            return state.task.flops / statistics.median(rates)
        return 1.0  # nothing measured anywhere: all such tasks are equal

    def _rate(self, state) -> float:
        h = state.history
        if len(h) <= WINDOW or not math.isfinite(h[-1 - WINDOW]):
            return 1.0
        return max(MIN_RATE, (h[-1 - WINDOW] - h[-1]) / h[-1 - WINDOW])

    def gain(self, state) -> float:
        return max(1, getattr(state.task, "count", 1)) * self._estimated_cost(state) * self._rate(state)

    def next_task(self) -> int | None:
        """The index of the task for the next round, None when every space is exhausted."""
        open_tasks = [i for i, s in enumerate(self.states) if not s.exhausted]
        if not open_tasks:
            return None
        for i in open_tasks:  # warm-up: a round for every task first
            if not s_rounds(self.states[i]):
                return i
        return max(open_tasks, key=lambda i: self.gain(self.states[i]))


def s_rounds(state) -> int:
    return len(state.history)
