"""The server's handle on one worker process (rpc/worker.py): start it, forward
a request, wait for the reply with a deadline, and turn a dead or hung worker
into one clear error.

The pipes are non-blocking and every read and write waits with ``select`` up
to the call's deadline, so a worker that hangs (an endless loop in the model,
or one that stops reading its input) is killed when the deadline passes rather
than blocking the session. A worker that dies (a segfault) closes its pipes:
the error names the signal, "the model crashed (signal 11 SIGSEGV)".
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time

from dlc.rpc.protocol import Channel, ConnectionClosed, RpcError
from dlc.rpc.worker import WORKER_MAX_PAYLOAD


class WorkerDied(RpcError):
    """The worker crashed, exited or was killed after a timeout; the model must be loaded again."""


class _Deadline(Exception):
    """Internal: the call's deadline passed (not a TimeoutError, so Channel lets it through)."""


class _PipeEnd:
    """A non-blocking pipe end that waits at most until ``deadline`` (a time.monotonic value)."""

    def __init__(self, fd: int):
        self.fd = fd
        os.set_blocking(fd, False)
        self.deadline: float | None = None

    def _wait(self, readable: bool) -> None:
        left = None if self.deadline is None else self.deadline - time.monotonic()
        if left is not None and left <= 0:
            raise _Deadline()
        ready = select.select([self.fd] if readable else [], [] if readable else [self.fd], [], left)
        if not (ready[0] or ready[1]):
            raise _Deadline()

    def read1(self, n: int) -> bytes:
        while True:
            self._wait(readable=True)
            try:
                return os.read(self.fd, n)  # b"" at EOF
            except BlockingIOError:
                continue

    def write(self, data) -> None:
        view = memoryview(data).cast("B")
        while view.nbytes:
            self._wait(readable=False)
            try:
                view = view[os.write(self.fd, view):]
            except BlockingIOError:
                continue

    def flush(self) -> None:
        pass


def _package_parent() -> str:
    """The folder that holds the ``dlc`` package (the worker must import the same dlc)."""
    # this file is <parent>/dlc/rpc/worker_proxy.py (not resolved: a symlinked dlc stays one)
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = "unknown signal"
        return f"the model crashed (signal {-returncode} {name})"
    return f"the model's worker process exited with status {returncode}"


class Worker:
    """One model loaded in its own process."""

    def __init__(self, path: str, num_threads: int | None, timeout: float, cwd: str):
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([_package_parent(), *filter(None, [env.get("PYTHONPATH")])])
        argv = [sys.executable, "-m", "dlc.rpc.worker", path] + ([str(num_threads)] if num_threads is not None else [])
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=cwd, env=env,
                                     close_fds=True)
        self._in = _PipeEnd(self.proc.stdout.fileno())
        self._out = _PipeEnd(self.proc.stdin.fileno())
        self.channel = Channel(self._in, self._out, max_payload=WORKER_MAX_PAYLOAD)
        self.dead: str | None = None
        self.timeout = timeout
        self.load_reply = self._receive(time.monotonic() + timeout, "loading the model")

    def call(self, header: dict, payload, what: str) -> tuple[dict, bytes]:
        """Forward one request; the reply (header, payload) or ``WorkerDied``."""
        if self.dead:
            raise WorkerDied(f"{self.dead}; load the model again")
        deadline = time.monotonic() + self.timeout
        self._in.deadline = self._out.deadline = deadline
        try:
            self.channel.send(header, payload)
        except _Deadline:
            self._kill(f"{what} timed out after {self.timeout:g} s (the worker did not read its input): "
                       "the worker was killed")
        except ConnectionClosed:
            self._died()
        return self._receive(deadline, what, with_payload=True)

    def _receive(self, deadline: float, what: str, with_payload: bool = False):
        self._in.deadline = deadline
        try:
            header, payload = self.channel.recv()
        except _Deadline:
            self._kill(f"{what} timed out after {self.timeout:g} s: the worker was killed")
        except ConnectionClosed:
            self._died()
        return (header, payload) if with_payload else header

    def _died(self):
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # closed its pipe but lives on: end it
            self._kill("the model's worker closed its pipe")
        self.dead = describe_exit(code)
        self._close_pipes()
        raise WorkerDied(self.dead)

    def _kill(self, reason: str):
        self.proc.kill()
        self.proc.wait()
        self.dead = reason
        self._close_pipes()
        raise WorkerDied(reason)

    def _close_pipes(self) -> None:
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except OSError:
                pass  # a pipe whose reader is gone: nothing to flush

    def close(self) -> None:
        """End the worker: close its input (it exits on EOF), kill it if it lingers."""
        if self.proc.poll() is None:
            self._close_pipes()
            try:
                self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        else:
            self._close_pipes()
