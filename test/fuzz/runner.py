"""Prepare case directories, run cases in worker processes, judge and summarize.

Cases without ``env``/``isolated`` share a worker per family (batched: a tool
run in-process costs tens of milliseconds, a process start about a second);
the others get one each. A worker that dies or hangs on a case is replaced and
the rest of its batch continues in a new one; a case that crashed a shared
worker is rerun alone so its result does not depend on the cases before it.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass

from .case import Case, Outcome, diff_listing, first_line, judge, listing

FUZZ_DIR = os.path.dirname(os.path.abspath(__file__))
STARTUP_S = 60.0  # a worker's imports, on a loaded 2-core machine


@dataclass
class Result:
    case: Case
    outcome: Outcome
    problems: list[str]

    @property
    def passed(self) -> bool:
        return not self.problems


def _prepare(case: Case, root: str) -> str:
    cwd = os.path.join(root, "cases", case.id)
    os.makedirs(cwd)
    for rel, data in case.files.items():
        path = os.path.join(cwd, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
    for rel, kind in case.special.items():
        path = os.path.join(cwd, rel)
        if kind == "dir":
            os.makedirs(path, exist_ok=True)
        elif kind == "fifo":
            os.mkfifo(path)
        elif kind.startswith("symlink:"):
            os.symlink(kind.removeprefix("symlink:"), path)
        else:
            raise ValueError(f"{case.id}: unknown special file kind {kind}")
    return cwd


class _FifoReaders:
    """Drain the cases' FIFOs while they run: a tool that (rightly) writes through
    a FIFO must not block on it. Opened non-blocking, so no writer is needed."""

    def __init__(self, cases: list[Case], root: str):
        self.stop = threading.Event()
        self.threads = []
        for case in cases:
            for rel, kind in case.special.items():
                if kind == "fifo":
                    path = os.path.join(root, "cases", case.id, rel)
                    t = threading.Thread(target=self._drain, args=(path,), daemon=True)
                    t.start()
                    self.threads.append(t)

    def _drain(self, path: str) -> None:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        try:
            while not self.stop.is_set():
                try:
                    if not os.read(fd, 1 << 16):
                        time.sleep(0.01)
                except BlockingIOError:
                    time.sleep(0.01)
        finally:
            os.close(fd)

    def close(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join()


def _special_kinds(case: Case, cwd: str) -> list[str]:
    """The case's FIFOs, symlinks and directories that are no longer what they were."""
    want = {"dir": 0o04, "fifo": 0o01}
    broken = []
    for rel, kind in case.special.items():
        path = os.path.join(cwd, rel)
        if not os.path.lexists(path):
            broken.append(f"{rel} removed")
            continue
        mode = os.lstat(path).st_mode >> 12
        expected = 0o12 if kind.startswith("symlink:") else want[kind]
        if mode != expected:
            broken.append(f"{rel} ({kind.split(':')[0]}) replaced")
    return broken


def _worker_env(extra: dict[str, str]) -> dict[str, str]:
    """The caller's environment without the knobs that change what a case prints
    (DLC_TRACEBACK) or how many threads it uses, plus the case's own variables."""
    env = {k: v for k, v in os.environ.items() if k not in ("DLC_TRACEBACK", "DLC_NUM_THREADS")}
    return {**env, **extra}


def _run_batch(cases: list[Case], root: str, env: dict[str, str]) -> dict[str, Outcome]:
    readers = _FifoReaders(cases, root)
    try:
        return _run_batch_in(cases, root, env)
    finally:
        readers.close()


def _run_batch_in(cases: list[Case], root: str, env: dict[str, str]) -> dict[str, Outcome]:
    """Run ``cases`` in one worker; restart it after a case kills or hangs it."""
    outcomes: dict[str, Outcome] = {}
    pending = list(cases)
    while pending:
        items, before = [], {}
        for case in pending:
            cwd = os.path.join(root, "cases", case.id)
            before[case.id] = listing(cwd)
            items.append({"case": case.to_json(), "cwd": cwd, "io": os.path.join(root, "io", case.id)})
        batch_file = os.path.join(root, "io", f"batch-{pending[0].id}.json")
        with open(batch_file, "w") as f:
            json.dump({"cases": items}, f)
        proc = subprocess.Popen(
            [sys.executable, FUZZ_DIR, "--worker", batch_file],
            stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, env=_worker_env(env),
            start_new_session=True,
        )
        by_id = {c.id: c for c in pending}
        current: str | None = None
        started = time.monotonic()
        deadline = time.monotonic() + STARTUP_S + pending[0].timeout
        buf = b""
        done: list[str] = []
        died: str | None = None
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                died = f"timeout (no result in {by_id[current].timeout if current else STARTUP_S:.0f} s)"
                break
            ready, _, _ = select.select([proc.stdout], [], [], min(left, 1.0))
            if not ready:
                continue
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                code = proc.wait()
                if current is not None:
                    died = f"signal {-code}" if code < 0 else f"worker exit {code}"
                break
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                text = line.decode(errors="replace")
                if text.startswith("BEGIN "):
                    current = text[6:]
                    started = time.monotonic()
                    deadline = time.monotonic() + by_id[current].timeout
                elif text.startswith("END "):
                    r = json.loads(text[4:])
                    cwd = os.path.join(root, "cases", r["id"])
                    outcomes[r["id"]] = Outcome(
                        returncode=r["rc"], stderr=r["stderr"], stdout_len=r["stdout_len"],
                        listing_changed=diff_listing(before[r["id"]], listing(cwd)),
                        api_error=r["api_error"], api_note=r["api_note"],
                        specials_broken=_special_kinds(by_id[r["id"]], cwd),
                        seconds=time.monotonic() - started,
                    )
                    done.append(r["id"])
                    current = None
        if died is not None and current is None and not done:
            current = pending[0].id  # died during start-up
        if died is None and current is None:
            if len(done) != len(pending):
                died = f"worker exit {proc.returncode} before all cases"
                current = next(c.id for c in pending if c.id not in done)
        if died is not None:
            err_path = os.path.join(root, "io", current + ".err")
            tail = open(err_path, errors="replace").read(4000) if os.path.exists(err_path) else ""
            outcomes[current] = Outcome(returncode=None, stderr=tail, died=died,
                                        seconds=time.monotonic() - started)
            done.append(current)
        pending = [c for c in pending if c.id not in done]
    return outcomes


def run_cases(cases: list[Case], keep: str | None = None, isolated: bool = False) -> list[Result]:
    root = keep or tempfile.mkdtemp(prefix="dlc-fuzz-")
    os.makedirs(os.path.join(root, "io"), exist_ok=True)
    try:
        for case in cases:
            _prepare(case, root)
        outcomes: dict[str, Outcome] = {}
        shared: dict[str, list[Case]] = {}
        for case in cases:
            if isolated or case.isolated or case.env:
                outcomes.update(_run_batch([case], root, case.env))
            else:
                shared.setdefault(case.family, []).append(case)
        for family_cases in shared.values():
            got = _run_batch(family_cases, root, {})
            for cid, out in got.items():
                if out.died is not None and len(family_cases) > 1:
                    # Rerun alone, in a fresh directory: a crash must not depend on earlier cases.
                    case = next(c for c in family_cases if c.id == cid)
                    shutil.rmtree(os.path.join(root, "cases", cid))
                    _prepare(case, root)
                    alone = _run_batch([case], root, {})[cid]
                    if alone.died is None:
                        alone.died = f"{out.died} in a shared worker (passes alone: an earlier case broke the process)"
                    got[cid] = alone
            outcomes.update(got)
        return [Result(c, outcomes[c.id], judge(c, outcomes[c.id])) for c in cases]
    finally:
        if keep is None:
            shutil.rmtree(root, ignore_errors=True)


def summary(results: list[Result]) -> str:
    lines = []
    families: dict[str, list[Result]] = {}
    for r in results:
        families.setdefault(r.case.family, []).append(r)
    total_failed = 0
    for family, rs in families.items():
        failed = [r for r in rs if not r.passed]
        total_failed += len(failed)
        lines.append(f"{family}: {len(rs)} cases, {len(rs) - len(failed)} passed, {len(failed)} failed")
    lines.append(f"total: {len(results)} cases, {len(results) - total_failed} passed, {total_failed} failed")
    slow = sorted(results, key=lambda r: -r.outcome.seconds)[:5]
    lines.append("slowest: " + ", ".join(f"{r.case.id} {r.outcome.seconds:.1f}s" for r in slow))
    for r in results:
        if not r.passed:
            detail = r.outcome.api_error if r.case.api else first_line(r.outcome.stderr)
            detail = "".join(ch if ch >= " " else f"\\x{ord(ch):02x}" for ch in (detail or "")[:200])
            lines.append(f"FAIL {r.case.id} [{r.case.what}]: {'; '.join(r.problems)} | {detail or '(no stderr)'}")
    return "\n".join(lines)
