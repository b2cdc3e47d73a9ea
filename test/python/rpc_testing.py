"""Helpers of the RPC tests: servers and trackers in subprocesses on ephemeral
ports, a per-test deadline, small models (the small CNN, a model that crashes)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SMALL_CNN = os.path.join(REPO, "examples", "small_cnn.onnx")
TEST_DEADLINE_S = 60


@pytest.fixture
def deadline():
    """Fail a test that hangs (SIGALRM raises in the main thread, which interrupts a
    blocking socket call); every RPC call also has its own timeout."""
    def expired(signum, frame):
        raise TimeoutError(f"test took more than {TEST_DEADLINE_S} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(TEST_DEADLINE_S)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def compile_small_cnn(directory) -> str:
    import dlc

    path = os.path.join(str(directory), "small_cnn.so")
    dlc.compile(SMALL_CNN).export(path)
    return path


class Proc:
    """``python -m dlc.rpc ARGS --port 0 --port-file F``: started, its port read."""

    def __init__(self, directory, *args: str, port: int = 0):
        os.makedirs(str(directory), exist_ok=True)
        self.port_file = os.path.join(str(directory), f"port-{time.monotonic_ns()}")
        self.stderr_path = self.port_file + ".stderr"
        self._stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen([sys.executable, "-m", "dlc.rpc", *args, "--port", str(port),
                                      "--port-file", self.port_file],
                                     stdout=subprocess.DEVNULL, stderr=self._stderr)
        end = time.monotonic() + 30
        while not os.path.exists(self.port_file):
            if self.proc.poll() is not None:
                raise RuntimeError(f"{args[0]} exited with {self.proc.returncode}: {self.stderr()}")
            if time.monotonic() > end:
                self.stop()
                raise RuntimeError(f"{args[0]} did not start within 30 s: {self.stderr()}")
            time.sleep(0.05)
        with open(self.port_file) as f:
            self.port = int(f.read())

    def stderr(self) -> str:
        with open(self.stderr_path, "rb") as f:
            return f.read().decode(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._stderr.close()


def start_server(directory, *args: str) -> Proc:
    """A server whose sessions live under ``directory/sessions``."""
    work = os.path.join(str(directory), "sessions")
    os.makedirs(work, exist_ok=True)
    server = Proc(directory, "server", "--work-dir", work, *args)
    server.work_dir = work
    return server


def wait_until(predicate, timeout: float = 10.0, what: str = "condition") -> None:
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError(f"{what}: not reached within {timeout} s")
        time.sleep(0.05)


CRASH_C = r"""
#include <stdint.h>
#include <string.h>
#define SPEC "{\"inputs\":[{\"name\":\"x\",\"shape\":[4],\"dtype\":\"float32\"}]," \
             "\"outputs\":[{\"name\":\"y\",\"shape\":[4],\"dtype\":\"float32\"}]}"
const char dlc_metadata[] = "{\"format\":\"dlc-2\",\"default_entry\":\"crash\",\"entries\":{"
    "\"crash\":" SPEC ",\"hang\":" SPEC ",\"copy\":" SPEC "}}";
int32_t crash(void *x, void *y) { volatile float *p = 0; *p = *(float *)x; return 0; }
int32_t hang(void *x, void *y) { for (volatile int i = 0;; i = 1 - i) {} return 0; }
int32_t copy(void *x, void *y) { memcpy(y, x, 4 * sizeof(float)); return 0; }
void dlc_set_num_threads(int32_t n) { (void)n; }
void dlc_release_workspaces(void) {}
int64_t dlc_alloc_failure_bytes(void) { return 0; }
"""


def build_crash_model(directory) -> str:
    """A library the runtime loads whose entry @crash writes through NULL, @hang
    never returns and @copy copies its input (``x`` float32[4] -> ``y``)."""
    from dlc.runtime.library import append_trailer

    source = os.path.join(str(directory), "crash.c")
    library = os.path.join(str(directory), "crash.so")
    with open(source, "w") as f:
        f.write(CRASH_C)
    subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-o", library, source], check=True)
    append_trailer(library)
    return library
