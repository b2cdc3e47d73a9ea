"""Reading and formatting the per-kernel profile of a module compiled with ``profile=True``
(numpy + ctypes only).

The native side (lowering/to_llvm/profile.py) appends ``(site, start ns, end ns)`` for
every kernel call, and one record for the whole host function, to a buffer this module
hands it through ``dlc_profile_begin``; ``dlc_profile_end`` says how many records the
call made. The record table (``sites``: site -> kernel, source ops, form, schedule,
FLOPs, bytes) comes from the compiler. :class:`Profile` holds the records of some calls
and writes them as a Chrome trace (chrome://tracing, Perfetto) or a table.
"""

from __future__ import annotations

import ctypes
import json
import threading
from dataclasses import dataclass

import numpy as np

FIELDS = 3  # site, start ns, end ns
DEFAULT_CAPACITY = 1 << 16  # records per call (a graph.loop body may call kernels many times)


class ProfileError(Exception):
    """The module was not compiled for profiling, or a call overflowed the buffer."""


@dataclass(frozen=True)
class KernelRow:
    """One kernel's line of the table: its calls over all profiled runs."""

    kernel: str
    source: str
    form: str | None
    schedule: str
    calls: int
    total_ns: int
    flops: int | None  # per call
    bytes: int | None  # per call
    nodes: tuple[tuple[str, ...], ...] = ()  # source-model node names of each call site

    def node_label(self, width: int = 40) -> str:
        """The first site's nodes, ``+N sites`` when the kernel is shared."""
        if not self.nodes or not any(self.nodes):
            return "-"
        label = ",".join(self.nodes[0])
        if len(label) > width:
            label = label[: width - 3] + "..."
        more = len(self.nodes) - 1
        return label + (f" +{more} site{'s' if more > 1 else ''}" if more else "")

    def gflops(self) -> float | None:
        return self.flops * self.calls / self.total_ns if self.flops and self.total_ns else None

    def gbytes(self) -> float | None:
        return self.bytes * self.calls / self.total_ns if self.bytes and self.total_ns else None


class Profile:
    """The kernel records of ``runs`` profiled calls: ``records`` is one int64 array
    ``[n, 3]`` (site, start ns, end ns) per run; ``sites`` the compiler's record table."""

    def __init__(self, sites: list[dict], records: list[np.ndarray]):
        self.sites = sites
        self.records = records

    @property
    def runs(self) -> int:
        return len(self.records)

    def _is_entry(self, site: int) -> bool:
        return self.sites[site]["kind"] == "entry"

    def entry_ns(self) -> int:
        """Measured time of the entry (host function) calls, all runs."""
        return int(sum(int(e - s) for r in self.records for site, s, e in r if self._is_entry(site)))

    def kernel_ns(self) -> int:
        """Sum of the kernel calls' times, all runs."""
        return int(sum(int(e - s) for r in self.records for site, s, e in r if not self._is_entry(site)))

    def rows(self) -> list[KernelRow]:
        """One row per kernel (calls of a shared kernel from several sites add up), slowest first."""
        calls: dict[str, int] = {}
        total: dict[str, int] = {}
        first_site: dict[str, int] = {}
        sites_of: dict[str, dict[int, None]] = {}
        for r in self.records:
            for site, start, end in r:
                site = int(site)
                if self._is_entry(site):
                    continue
                name = self.sites[site]["kernel"]
                calls[name] = calls.get(name, 0) + 1
                total[name] = total.get(name, 0) + int(end - start)
                first_site.setdefault(name, site)
                sites_of.setdefault(name, {})[site] = None
        rows = []
        for name, site in first_site.items():
            info = self.sites[site]
            rows.append(KernelRow(name, info.get("source", ""), info.get("form"), info.get("schedule", ""),
                                  calls[name], total[name], info.get("flops"), info.get("bytes"),
                                  tuple(tuple(self.sites[s].get("nodes") or ()) for s in sites_of[name])))
        return sorted(rows, key=lambda row: -row.total_ns)

    # -- Chrome trace event format ----------------------------------------------------
    def to_chrome_trace(self) -> dict:
        """``{"traceEvents": [...], "displayTimeUnit": "ms"}``: one complete event (``ph
        "X"``, ``ts``/``dur`` in microseconds) per entry call (tid 0) and kernel call (tid 1)."""
        starts = [int(r[:, 1].min()) for r in self.records if len(r)]
        origin = min(starts) if starts else 0
        events = []
        for run, r in enumerate(self.records):
            for site, start, end in r:
                info = self.sites[int(site)]
                entry = info["kind"] == "entry"
                args = {"run": run, "site": int(site)}
                if not entry:
                    args.update({k: info[k] for k in ("source", "nodes", "form", "schedule", "flops", "bytes")
                                 if info.get(k) is not None})
                events.append({
                    "name": info["kernel"], "cat": info["kind"], "ph": "X",
                    "ts": (int(start) - origin) / 1e3, "dur": (int(end) - int(start)) / 1e3,
                    "pid": 1, "tid": 0 if entry else 1, "args": args,
                })
        events.sort(key=lambda e: (e["ts"], e["tid"]))
        return {"traceEvents": events, "displayTimeUnit": "ms"}

    def save(self, path: str) -> str:
        """Write the Chrome trace JSON to ``path``."""
        with open(path, "w") as f:
            json.dump(self.to_chrome_trace(), f)
        return path

    # -- the table ---------------------------------------------------------------------
    def table(self, limit: int | None = None) -> str:
        """Kernel, source ops, source-model nodes, calls, total ms, % of the run, GFLOP/s, GB/s, form and
        schedule, slowest kernel first (``limit``: only that many rows)."""
        entry = self.entry_ns()
        kernels = self.kernel_ns()
        rows = self.rows()
        shown = rows if limit is None else rows[:limit]
        head = ("kernel", "source ops", "nodes", "calls", "total ms", "%run", "GFLOP/s", "GB/s", "form",
                "schedule")
        lines = [head]
        for row in shown:
            gf, gb = row.gflops(), row.gbytes()
            lines.append((row.kernel, _short_source(row.source), row.node_label(), str(row.calls), f"{row.total_ns / 1e6:.4f}",
                          f"{100 * row.total_ns / entry:.1f}" if entry else "-",
                          f"{gf:.1f}" if gf is not None else "-", f"{gb:.1f}" if gb is not None else "-",
                          row.form or "-", row.schedule))
        widths = [max(len(line[i]) for line in lines) for i in range(len(head) - 1)]
        out = ["  ".join(cell.ljust(w) if i in (0, 1, 2, 8) else cell.rjust(w)
                         for i, (cell, w) in enumerate(zip(line[:-1], widths))) + "  " + line[-1]
               for line in lines]
        if limit is not None and len(rows) > limit:
            out.append(f"... {len(rows) - limit} more kernels")
        runs = self.runs
        out.append(f"{runs} run{'s' if runs != 1 else ''}: entry {entry / 1e6 / max(runs, 1):.4f} ms/run, "
                   f"kernels {kernels / 1e6 / max(runs, 1):.4f} ms/run "
                   f"({100 * kernels / entry:.1f}% of the entry)" if entry else "no entry time recorded")
        return "\n".join(out)


def _short_source(source: str) -> str:
    """``graph.conv2d+graph.add+graph.relu`` -> ``conv2d+add+relu``."""
    return "+".join(part.removeprefix("graph.") for part in source.split("+"))


class Profiler:
    """Runs calls of a profiled module with the native buffer set; one call at a time."""

    def __init__(self, begin_address: int, end_address: int, sites: list[dict],
                 capacity: int = DEFAULT_CAPACITY):
        self._begin = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64)(begin_address)
        self._end = ctypes.CFUNCTYPE(ctypes.c_int64)(end_address)
        self.sites = sites
        self.capacity = capacity
        self._lock = threading.Lock()

    def record(self, call) -> np.ndarray:
        """Run ``call()`` once; returns its records, an int64 array ``[n, 3]``."""
        with self._lock:
            buffer = np.zeros((self.capacity, FIELDS), np.int64)
            self._begin(buffer.ctypes.data, self.capacity)
            try:
                call()
            finally:
                count = int(self._end())
                self._begin(None, 0)  # nothing writes into the freed buffer later
        if count > self.capacity:
            raise ProfileError(f"one call made {count} kernel records, more than the buffer's "
                               f"{self.capacity}; profile with a larger capacity")
        return buffer[:count].copy()

    def profile(self, call, repeat: int = 1, warmup: int = 1) -> Profile:
        """``warmup`` unrecorded calls (first-touch, workspace allocation), then ``repeat``
        recorded ones."""
        if repeat < 1:
            raise ProfileError(f"repeat must be >= 1, got {repeat}")
        for _ in range(warmup):
            call()
        return Profile(self.sites, [self.record(call) for _ in range(repeat)])
