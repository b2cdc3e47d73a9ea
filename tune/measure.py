"""Building and measuring tuning candidates, each in a process of its own.

A candidate is ``(task, config)``. :class:`LocalBuilder` builds candidates (``Task.build``,
a .so) in forked child processes, ``n_parallel`` at a time, each with a deadline: a build
that raises or hangs is killed and becomes an error. Runners time the built libraries:

* :class:`LocalRunner`: a ``python -m dlc.tune.run_worker`` process (numpy + dlc.runtime)
  loads each library and times it (``dlc.rpc.timing.time_calls``: one warm-up call, then
  ``repeat`` samples of ``number`` calls, ``number`` doubled until a sample lasts
  ``min_repeat_ms``, TVM's time_evaluator). A candidate that crashes the worker (a
  segfault) or outlives ``timeout`` is recorded as an error, the worker is killed and a
  fresh one serves the next candidate.
* :class:`RPCRunner`: the same over dlc.rpc: a session from the tracker (``key``), the
  library uploaded, loaded in a worker on the server and timed there (``time_evaluator``);
  the server's per-call timeout ends a hanging candidate, a crash ends only its worker.
* :class:`RayRunner`: every candidate is one Ray task that builds and times it on a node
  of the cluster (Ray is an optional extra: ``pip install 'dlc[ray]'``).

Every runner returns one :class:`MeasureResult` per candidate, in order: the costs
(seconds per call, one per repeat) or the error; tuning goes on either way.
"""

from __future__ import annotations

import json
import multiprocessing
import multiprocessing.connection
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field

from dlc.diagnostics import DiagnosticError


class MeasureError(DiagnosticError):
    """A runner that cannot start (no tracker, Ray missing, bad arguments)."""


@dataclass
class MeasureOptions:
    """TVM's ``number`` / ``repeat`` / ``min_repeat_ms``, the run and build deadlines in
    seconds, the thread count of the timed library (None: the library's default) and the
    number of builds at once. ``paired``: time each candidate interleaved with its task's
    default schedule (LocalRunner, and RayRunner through it; the RPC runner times alone)."""

    number: int = 1
    repeat: int = 5
    min_repeat_ms: float = 20.0
    timeout: float = 10.0
    build_timeout: float = 120.0
    threads: int | None = None
    n_parallel: int = max(1, min(4, os.cpu_count() or 1))
    seed: int = 0
    paired: bool = True


@dataclass
class MeasureResult:
    """``costs``: seconds per call, one per repeat; ``baseline_costs``: the task default's,
    measured in pairs with them (empty when not paired)."""

    costs: list[float] = field(default_factory=list)
    error: str | None = None
    baseline_costs: list[float] = field(default_factory=list)
    build_s: float = 0.0
    run_s: float = 0.0


def _signal_text(code: int) -> str:
    if code >= 0:
        return f"exit status {code}"
    try:
        return f"signal {-code} {signal.Signals(-code).name}"
    except ValueError:
        return f"signal {-code}"


# ---------------------------------------------------------------------------
# building
# ---------------------------------------------------------------------------

_FORKED_TASKS: list = []  # the tasks the forked builders see (inherited, never pickled)


def _build_child(index: int, config: dict, path: str, conn) -> None:
    try:
        built = _FORKED_TASKS[index].build(config, path)
        conn.send(("ok", built))
    except BaseException as err:  # the child reports any failure of the build as its error
        first = str(err).splitlines()[0] if str(err) else ""
        conn.send(("error", f"build failed: {type(err).__name__}: {first}" if first else
                   f"build failed: {traceback.format_exc().splitlines()[-1]}"))
    finally:
        conn.close()


class LocalBuilder:
    """Builds candidates in forked children (``Task.build(config, path)``), at most
    ``n_parallel`` at once, each killed past ``timeout`` seconds. Fork, not spawn: the child
    inherits the parsed tasks instead of re-importing xDSL (seconds) for every build, and
    a build runs no OpenMP code (runtime/native.py's fork caveat does not apply)."""

    def __init__(self, tasks, work_dir: str, n_parallel: int = 1, timeout: float = 120.0):
        self.tasks = list(tasks)
        self.work_dir = work_dir
        self.n_parallel = max(1, n_parallel)
        self.timeout = timeout
        self._count = 0
        self._ctx = multiprocessing.get_context("fork")

    def build(self, jobs: list[tuple[int, dict]]) -> list[tuple[str | None, str | None, float]]:
        """(path or None, error or None, seconds) per job, in order."""
        global _FORKED_TASKS
        _FORKED_TASKS = self.tasks
        results: list = [None] * len(jobs)
        pending = list(enumerate(jobs))
        running: dict = {}
        while pending or running:
            while pending and len(running) < self.n_parallel:
                slot, (index, config) = pending.pop(0)
                self._count += 1
                path = os.path.join(self.work_dir, f"cand{self._count}_{os.getpid()}.so")
                parent, child = self._ctx.Pipe(duplex=False)
                proc = self._ctx.Process(target=_build_child, args=(index, config, path, child), daemon=True)
                proc.start()
                child.close()
                running[slot] = (proc, parent, time.monotonic())
            ready = multiprocessing.connection.wait([p[1] for p in running.values()], timeout=0.05)
            now = time.monotonic()
            for slot, (proc, conn, start) in list(running.items()):
                if conn in ready:
                    try:
                        status, value = conn.recv()
                    except EOFError:  # died without a word: a crash in native code
                        proc.join()
                        status, value = "error", f"build crashed ({_signal_text(proc.exitcode or 0)})"
                    results[slot] = (value if status == "ok" else None, value if status != "ok" else None,
                                     now - start)
                elif now - start > self.timeout:
                    proc.kill()
                    results[slot] = (None, f"build timed out after {self.timeout:g} s", now - start)
                else:
                    continue
                proc.join()
                conn.close()
                del running[slot]
        return results


# ---------------------------------------------------------------------------
# running locally
# ---------------------------------------------------------------------------


STARTUP_TIMEOUT = 120.0  # seconds for a fresh run worker's imports (a busy machine)


class _RunWorker:
    """One ``python -m dlc.tune.run_worker`` process and its pipes."""

    def __init__(self):
        self.proc = subprocess.Popen([sys.executable, "-m", "dlc.tune.run_worker"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
        ready, _, _ = select.select([self.proc.stdout], [], [], STARTUP_TIMEOUT)
        line = self.proc.stdout.readline() if ready else ""
        if not line.startswith('{"ready"'):
            self.kill()
            raise MeasureError(f"the run worker (python -m dlc.tune.run_worker) did not start within "
                               f"{STARTUP_TIMEOUT:g} s")

    def measure(self, request: dict, timeout: float) -> MeasureResult:
        start = time.monotonic()
        try:
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass  # it died already; the read below reports how
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else None
        elapsed = time.monotonic() - start
        if line is None:
            self.kill()
            return MeasureResult(error=f"run timed out after {timeout:g} s", run_s=elapsed)
        if not line:
            code = self.proc.wait()
            return MeasureResult(error=f"run crashed ({_signal_text(code)})" if code < 0 else
                                 f"run worker exited with status {code}", run_s=elapsed)
        reply = json.loads(line)
        if "error" in reply:
            return MeasureResult(error=f"run failed: {reply['error']}", run_s=elapsed)
        return MeasureResult(costs=[float(c) for c in reply["costs"]],
                             baseline_costs=[float(c) for c in reply.get("baseline_costs", [])], run_s=elapsed)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except BrokenPipeError:
                pass


def run_request(path: str, options: MeasureOptions, baseline: str | None = None) -> dict:
    request = {"path": path, "repeat": options.repeat, "number": options.number,
               "min_repeat_ms": options.min_repeat_ms, "threads": options.threads, "seed": options.seed}
    if baseline is not None:
        request["baseline"] = baseline
    return request


class LocalRunner:
    """Builds with :class:`LocalBuilder` and times on this machine, one candidate at a time
    (timings of candidates measured side by side would disturb each other)."""

    name = "local"

    def __init__(self, options: MeasureOptions | None = None):
        self.options = options or MeasureOptions()
        self._worker: _RunWorker | None = None
        self._builder: LocalBuilder | None = None
        self._dir: tempfile.TemporaryDirectory | None = None
        self._tasks: list = []
        self._baselines: dict[int, str | None] = {}  # task index -> its default's library (None: failed)

    def start(self, tasks) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="dlc-tune-")
        self._tasks = list(tasks)
        self._baselines = {}
        self._builder = LocalBuilder(tasks, self._dir.name, self.options.n_parallel, self.options.build_timeout)

    def _paired(self) -> bool:
        return self.options.paired

    def measure(self, jobs: list[tuple[int, dict]]) -> list[MeasureResult]:
        """One result per job, in order. Paired: the first batch of a task also builds its
        default's library (kept until close); when that build fails the task's candidates
        are timed alone (no baseline_costs)."""
        extra = []
        if self._paired():
            extra = sorted({index for index, _ in jobs if index not in self._baselines})
        built = self._builder.build([(index, self._tasks[index].space.default()) for index in extra] + list(jobs))
        for index, (path, _, _) in zip(extra, built):
            self._baselines[index] = path
        out = []
        for (index, _), (path, error, build_s) in zip(jobs, built[len(extra):]):
            if path is None:
                out.append(MeasureResult(error=error, build_s=build_s))
                continue
            result = self._run(path, self._baselines.get(index))
            result.build_s = build_s
            os.unlink(path)
            out.append(result)
        return out

    def _run(self, path: str, baseline: str | None = None) -> MeasureResult:
        if self._worker is None or not self._worker.alive():
            self._worker = _RunWorker()
        # paired: twice the calls, so twice the deadline
        timeout = self.options.timeout * (2 if baseline else 1)
        result = self._worker.measure(run_request(path, self.options, baseline), timeout)
        if result.error is not None and not self._worker.alive():
            self._worker.kill()
            self._worker = None
        return result

    def close(self) -> None:
        if self._worker is not None:
            self._worker.kill()
            self._worker = None
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None


# ---------------------------------------------------------------------------
# running over RPC
# ---------------------------------------------------------------------------


def parse_address(text: str, what: str) -> tuple[str, int]:
    host, sep, port = str(text).rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise MeasureError(f"{what} '{text}': expected HOST:PORT")
    return host, int(port)


class RPCRunner(LocalRunner):
    """Builds here and times on a server from the tracker's pool ``key`` (dlc.rpc): one
    session, the library uploaded, loaded in a fresh worker on the server and timed there
    with ``time_evaluator``. A crash or a hang (the server's ``--timeout`` kills the worker)
    is that candidate's error; a dropped session is opened again for the next one."""

    name = "rpc"

    def __init__(self, tracker: str, key: str, options: MeasureOptions | None = None,
                 token: bytes | str | None = None, token_file: str | None = None,
                 wait_timeout: float | None = 60.0):
        super().__init__(options)
        self.tracker = parse_address(tracker, "--rpc-tracker")
        self.key = key
        self._token = token
        self._token_file = token_file
        self._wait = wait_timeout
        self._session = None

    def _connect(self):
        from dlc.rpc import RpcError, connect_via_tracker

        if self._session is None or self._session._closed:
            try:
                self._session = connect_via_tracker(*self.tracker, self.key, token=self._token,
                                                    token_file=self._token_file,
                                                    timeout=self.options.timeout + 30, wait_timeout=self._wait)
            except RpcError as err:
                raise MeasureError(f"RPC tracker {self.tracker[0]}:{self.tracker[1]} key '{self.key}': {err}") from None
        return self._session

    def start(self, tasks) -> None:
        super().start(tasks)
        self._connect()

    def _paired(self) -> bool:
        return False  # the server times one library per call: candidates are timed alone

    def _run(self, path: str, baseline: str | None = None) -> MeasureResult:
        from dlc.rpc import RpcError
        from dlc.tune.run_worker import random_inputs

        session = self._connect()
        start = time.monotonic()
        try:
            name = session.upload(path)
            model = session.load(name, num_threads=self.options.threads)
            try:
                inputs = random_inputs(model.input_specs, self.options.seed)
                timing = model.time_evaluator(*inputs, repeat=self.options.repeat, number=self.options.number,
                                              min_repeat_ms=self.options.min_repeat_ms)
            finally:
                if not session._closed:
                    try:
                        model.free()
                    except RpcError:
                        pass  # the worker is gone already (it crashed or was killed): nothing to free
        except RpcError as err:
            return MeasureResult(error=f"rpc: {str(err).splitlines()[0]}", run_s=time.monotonic() - start)
        return MeasureResult(costs=list(timing.samples), run_s=time.monotonic() - start)

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None
        super().close()


# ---------------------------------------------------------------------------
# running on a Ray cluster
# ---------------------------------------------------------------------------


def _build_and_run(task, config: dict, options: MeasureOptions):
    """A Ray task's body: build the candidate (and, paired, the task's default) in child
    processes and time it in a run worker, on whichever node runs it."""
    runner = LocalRunner(options)
    runner.start([task])
    try:
        (result,) = runner.measure([(0, config)])
    finally:
        runner.close()
    return result.costs, result.error, result.build_s, result.run_s, result.baseline_costs


class RayRunner:
    """Every candidate is one Ray task (``num_cpus=cpus_per_trial``) that builds and times it
    on a node of the cluster at ``address`` ("auto": the running cluster; None: a local one
    started by ``ray.init``). Tasks are sent once per tuning task (``ray.put``). The cluster's
    workers must import the same dlc (on a multi-node cluster: install it there, or pass
    ``runtime_env``)."""

    name = "ray"

    def __init__(self, address: str | None = "auto", options: MeasureOptions | None = None,
                 cpus_per_trial: float = 1, runtime_env: dict | None = None):
        self.address = address
        self.options = options or MeasureOptions()
        self.cpus_per_trial = cpus_per_trial
        self.runtime_env = runtime_env
        self._refs: list = []
        self._remote = None

    def _ray(self):
        try:
            import ray
        except ImportError:
            raise MeasureError("--ray needs Ray, which is not installed: pip install 'dlc[ray]'") from None
        return ray

    def start(self, tasks) -> None:
        ray = self._ray()
        if not ray.is_initialized():
            try:
                ray.init(address=self.address, runtime_env=self.runtime_env, log_to_driver=False)
            except ConnectionError as err:
                raise MeasureError(f"cannot connect to the Ray cluster at '{self.address}': "
                                   f"{str(err).splitlines()[0]}") from None
        self._remote = ray.remote(num_cpus=self.cpus_per_trial, max_retries=0)(_build_and_run)
        self._refs = [ray.put(task) for task in tasks]

    def measure(self, jobs: list[tuple[int, dict]]) -> list[MeasureResult]:
        ray = self._ray()
        futures = [self._remote.remote(self._refs[index], config, self.options) for index, config in jobs]
        out = []
        deadline = 2 * (self.options.build_timeout + self.options.timeout) + 60  # paired: two builds, two runs
        for future in futures:
            try:
                costs, error, build_s, run_s, baseline_costs = ray.get(future, timeout=deadline)
            except ray.exceptions.GetTimeoutError:
                ray.cancel(future, force=True)
                out.append(MeasureResult(error=f"ray task timed out after {deadline:g} s"))
                continue
            except ray.exceptions.RayError as err:
                out.append(MeasureResult(error=f"ray: {type(err).__name__}: {str(err).splitlines()[0]}"))
                continue
            out.append(MeasureResult(costs=costs, error=error, build_s=build_s, run_s=run_s,
                                     baseline_costs=baseline_costs))
        return out

    def close(self) -> None:
        self._refs = []
