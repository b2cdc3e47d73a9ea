"""Tuning records: measured schedule configs, one JSON object per line (``tune.jsonl``).

    {"workload_key": "matmul|f32[64,64];f32[64,64]->f32[64,64]|h:...|llvm -mcpu=znver4",
     "target": "llvm -mcpu=znver4", "config": {"mr": 8, ...}, "costs": [0.00012, ...],
     "error": null, "flops": 524288.0, "timestamp": 1764650000.0, "version": 1}

``costs`` are seconds per run (empty when the candidate failed: ``error`` says why).
A paired measurement (tune/measure.py, the default) also holds ``baseline_costs``: the
task's default schedule timed in blocks interleaved with the candidate's, one per cost,
and ``ratio``, the median of the per-pair ratios candidate / default (< 1: faster).

:func:`best_configs` picks per workload key, for one target (records of another target
are refused: a log tuned on another machine would apply schedules planned for registers
and caches this one lacks):

* over paired records, the config of the lowest ratio among those that beat the default
  beyond the measured spread (:meth:`TuningRecord.beats_default`: every pair faster, and
  the median by ``MIN_GAIN`` at least); none does: the key is left out, the default
  schedule stays, so a log never makes a kernel slower than its default by what it measured;
* keys with unpaired records only (an RPC tune, or a log of an older dlc): the config of
  the lowest median cost.
"""

from __future__ import annotations

import json
import os
import statistics
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable

from dlc.diagnostics import DiagnosticError
from dlc.target import Target, TargetError, as_target

RECORD_VERSION = 1
MIN_GAIN = 0.03  # a paired candidate's median ratio must be this far below 1 to replace the default


class TuningRecordError(DiagnosticError):
    """A tuning log that cannot be read or does not fit the target (one line, naming the
    file and line)."""


@dataclass
class TuningRecord:
    workload_key: str
    target: str
    config: dict[str, Any]
    costs: list[float] = field(default_factory=list)  # seconds per run; empty on error
    error: str | None = None
    flops: float = 0.0
    timestamp: float = 0.0
    version: int = RECORD_VERSION
    baseline_costs: list[float] = field(default_factory=list)  # the default's, paired with costs
    ratio: float | None = None  # median of costs[i] / baseline_costs[i]

    def __post_init__(self) -> None:
        if self.ratio is None and self.pair_ratios:
            self.ratio = statistics.median(self.pair_ratios)

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.costs)

    @property
    def median_cost(self) -> float:
        return statistics.median(self.costs) if self.costs else float("inf")

    @property
    def paired(self) -> bool:
        return self.ok and bool(self.pair_ratios)

    @property
    def pair_ratios(self) -> list[float]:
        """costs[i] / baseline_costs[i] (empty when not paired)."""
        if not self.costs or len(self.baseline_costs) != len(self.costs):
            return []
        return [c / b for c, b in zip(self.costs, self.baseline_costs) if b > 0]

    def beats_default(self, min_gain: float = MIN_GAIN) -> bool:
        """Paired, faster than the default in every pair, and the median ratio at most
        1 - min_gain: a gain beyond what the pairs' spread could make up."""
        rs = self.pair_ratios
        return self.paired and len(rs) >= 2 and max(rs) < 1.0 and statistics.median(rs) <= 1.0 - min_gain

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @staticmethod
    def from_json(text: str) -> TuningRecord:
        """Parse one line; ValueError (the reason) when it is not a record."""
        data = json.loads(text)  # json.JSONDecodeError is a ValueError
        if not isinstance(data, dict):
            raise ValueError(f"expected a JSON object, got {type(data).__name__}")
        missing = [f for f in ("workload_key", "target", "config") if f not in data]
        if missing:
            raise ValueError(f"missing field '{missing[0]}'")
        unknown = sorted(set(data) - set(TuningRecord.__dataclass_fields__))
        if unknown:
            raise ValueError(f"unknown field '{unknown[0]}'")
        if data.get("version", RECORD_VERSION) != RECORD_VERSION:
            raise ValueError(f"record version {data['version']!r} (this dlc reads version {RECORD_VERSION})")
        checks = [("workload_key", str), ("target", str), ("config", dict), ("costs", list),
                  ("flops", (int, float)), ("timestamp", (int, float))]
        for name, kind in checks:
            if name in data and (not isinstance(data[name], kind) or isinstance(data[name], bool)):
                raise ValueError(f"field '{name}' is {type(data[name]).__name__}, not {_kind_name(kind)}")
        if data.get("error") is not None and not isinstance(data["error"], str):
            raise ValueError("field 'error' is neither null nor a string")
        for name in ("costs", "baseline_costs"):
            values = data.get(name, [])
            if not isinstance(values, list):
                raise ValueError(f"field '{name}' is {type(values).__name__}, not a list")
            if any(not isinstance(c, (int, float)) or isinstance(c, bool) or c < 0 for c in values):
                raise ValueError(f"field '{name}' holds something other than non-negative seconds")
        ratio = data.get("ratio")
        if ratio is not None and (not isinstance(ratio, (int, float)) or isinstance(ratio, bool) or ratio < 0):
            raise ValueError("field 'ratio' is neither null nor a non-negative number")
        for knob, value in data["config"].items():
            if not isinstance(value, (int, str, bool)):
                raise ValueError(f"config knob '{knob}' is {type(value).__name__} (knobs are int, str or bool)")
        return TuningRecord(**{**data, "costs": [float(c) for c in data.get("costs", [])],
                                "baseline_costs": [float(c) for c in data.get("baseline_costs", [])]})


def record_error_text(err: TuningRecordError) -> str:
    """The one-line message of `err`: ``tune.jsonl:12: bad record: ...`` (with its place)."""
    if err.file is None:
        return err.message
    return f"{err.file}:{err.line}: {err.message}" if err.line is not None else f"{err.file}: {err.message}"


def _kind_name(kind) -> str:
    names = {str: "a string", dict: "an object", list: "a list"}
    return names.get(kind, "a number")


def append_records(path: str, records: Iterable[TuningRecord]) -> None:
    """Append `records` to the JSON-lines log at `path` (created if missing), one line each,
    written in one call so that concurrent tuners do not interleave within a line."""
    text = "".join(r.to_json() + "\n" for r in records)
    if not text:
        return
    with open(path, "a", encoding="utf-8") as f:
        f.write(text)


def read_records(path: str) -> list[TuningRecord]:
    """The records of the log at `path`; a malformed line is a TuningRecordError
    ``tune.jsonl:12: error: bad record: ...``; blank lines are skipped."""
    if not os.path.isfile(path):
        raise TuningRecordError(f"cannot open tuning records '{path}': no such file")
    out = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                out.append(TuningRecord.from_json(line))
            except ValueError as err:
                raise TuningRecordError(f"bad record: {str(err).splitlines()[0]}", path, number) from None
    return out


def best_configs(records_or_path, target: Target | str, min_gain: float = MIN_GAIN) -> dict[str, dict[str, Any]]:
    """workload key -> its best config (the module docstring's rule: among paired records
    the lowest ratio of those that beat the default by `min_gain` beyond their spread, keys
    without such a record left out; keys with unpaired records only: the lowest median
    cost), over the successful records (`records_or_path`: a list of TuningRecord or a
    log's path). A record for another target than `target` is a TuningRecordError naming
    both."""
    return {key: dict(r.config) for key, r in best_records(records_or_path, target, min_gain).items()}


def best_records(records_or_path, target: Target | str, min_gain: float = MIN_GAIN) -> dict[str, TuningRecord]:
    """workload key -> the record :func:`best_configs` takes the config of."""
    where = None
    if isinstance(records_or_path, (str, os.PathLike)):
        where = os.fspath(records_or_path)
        records = read_records(where)
    else:
        records = list(records_or_path)
    want = as_target(target)
    best: dict[str, TuningRecord] = {}
    paired_keys: set[str] = set()
    for r in records:
        if not _same_target(r.target, want):
            source = f"tuning records '{where}'" if where else "the tuning records"
            raise TuningRecordError(f"{source} are for target '{r.target}', not for the target "
                                    f"'{want}' of this build: tune again for it")
        if r.paired:
            paired_keys.add(r.workload_key)
    for r in records:
        if not r.ok:
            continue
        held = best.get(r.workload_key)
        if r.workload_key in paired_keys:
            if r.beats_default(min_gain) and (held is None or r.ratio < held.ratio):
                best[r.workload_key] = r
        elif held is None or r.median_cost < held.median_cost:
            best[r.workload_key] = r
    return best


def check_config_keys(configs: dict[str, dict], target: Target | str) -> None:
    """Refuse a dict workload key -> config whose keys (ending in ``|<target>``) name
    another target than `target` (TuningRecordError naming both)."""
    want = as_target(target)
    for key, config in configs.items():
        if not isinstance(key, str) or "|" not in key or not isinstance(config, dict):
            raise TuningRecordError(f"tuning configs: expected workload key -> config dict, got {key!r}")
        named = key.rsplit("|", 1)[1]
        if not _same_target(named, want):
            raise TuningRecordError(f"tuning config for '{key.split('|', 1)[0]}' was tuned for '{named}', "
                                    f"not for the target '{want}'")


def _same_target(text: str, want: Target) -> bool:
    try:
        return Target.from_string(text) == want
    except TargetError:
        return False
