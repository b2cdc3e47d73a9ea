"""Timing of a call the way TVM's ``time_evaluator`` does it, shared by the RPC
worker (remote timing, measured next to the native call) and by local
measurements (bench/bench_rpc.py), so that both count exactly the same work.

One warm-up call, then ``repeat`` samples; a sample runs the call ``number``
times back to back and records the mean time per call. With ``min_repeat_ms``,
``number`` grows (doubling, as TVM does) until one sample lasts at least that
long, so short calls are not dominated by the clock's resolution.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

MAX_REPEAT = 10_000
MAX_NUMBER = 1_000_000


@dataclass
class TimingResult:
    """Seconds per call: ``samples`` (one per repeat) and their summary.
    ``spread`` is (max - min) / median."""

    samples: list[float]
    number: int

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def min(self) -> float:
        return min(self.samples)

    @property
    def max(self) -> float:
        return max(self.samples)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.samples)

    @property
    def spread(self) -> float:
        return (self.max - self.min) / self.median if self.median > 0 else 0.0

    def summary(self) -> str:
        return (f"median {self.median * 1e3:.3f} ms, min {self.min * 1e3:.3f}, max {self.max * 1e3:.3f}, "
                f"spread {self.spread * 100:.1f}% over {len(self.samples)}x{self.number} runs")

    def to_wire(self) -> dict:
        return {"samples": self.samples, "number": self.number}


def check_timing_args(repeat, number, min_repeat_ms) -> None:
    """ValueError naming the first argument out of range."""
    for name, value, top in (("repeat", repeat, MAX_REPEAT), ("number", number, MAX_NUMBER)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= top:
            raise ValueError(f"{name} must be an integer in 1..{top}, got {value!r}")
    if isinstance(min_repeat_ms, bool) or not isinstance(min_repeat_ms, (int, float)) \
            or not 0 <= min_repeat_ms <= 60_000:
        raise ValueError(f"min_repeat_ms must be a number in 0..60000, got {min_repeat_ms!r}")


def calibrate_number(call: Callable[[], object], number: int, min_repeat_ms: float) -> int:
    """``number`` doubled (up to MAX_NUMBER) until ``number`` calls last ``min_repeat_ms``."""
    clock = time.perf_counter
    while min_repeat_ms > 0 and number < MAX_NUMBER:
        start = clock()
        for _ in range(number):
            call()
        if (clock() - start) * 1e3 >= min_repeat_ms:
            break
        number = min(number * 2, MAX_NUMBER)
    return number


def time_calls(call: Callable[[], object], repeat: int = 3, number: int = 1,
               min_repeat_ms: float = 0) -> TimingResult:
    check_timing_args(repeat, number, min_repeat_ms)
    call()  # warm-up: first-touch page faults, libgomp's thread start, workspace allocation
    clock = time.perf_counter
    number = calibrate_number(call, number, min_repeat_ms)
    samples = []
    for _ in range(repeat):
        start = clock()
        for _ in range(number):
            call()
        samples.append((clock() - start) / number)
    return TimingResult(samples, number)
