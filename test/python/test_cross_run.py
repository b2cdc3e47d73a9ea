"""The C runtime cross-built for aarch64 and riscv64, run under qemu-user.

For each architecture: ``build_runtime(dir, arch)`` with the cross gcc, the small CNN
cross-exported (``dlc.compile(..., target=arch).export``), and ``dlc-run`` run under
``qemu-<arch> -L /usr/<prefix>`` (``toolchain.emulator_command``): its outputs match
onnxruntime on this host. Also a hand-written model library cross-compiled from C
(the exporter's ABI), and a host library refused by the cross runner. Skipped, with
the reason printed, where the cross gcc or qemu is missing (CI installs
gcc-aarch64-linux-gnu, gcc-riscv64-linux-gnu and qemu-user).
"""

from __future__ import annotations

import os
import shutil
import subprocess

import numpy as np
import pytest

import dlc
from dlc.backends.c_runtime import build_runtime
from dlc.backends.llvm import toolchain

from test_c_runtime import SMALL_CNN, assert_error, tiny_model

ARCHES = [a for a in ("aarch64", "riscv64") if a != toolchain.host_arch()]


def _skip_without_tools(arch: str) -> None:
    cross = toolchain.CROSS_ARCHES[arch]
    for tool, package in ((f"{cross.gnu_prefix}-gcc", cross.cc_package), (cross.qemu, "qemu-user")):
        if shutil.which(tool) is None:
            reason = f"{tool} is not installed (Debian package {package})"
            print(f"skipped: {reason}")
            pytest.skip(reason)


@pytest.fixture(scope="module", params=ARCHES)
def cross(request, tmp_path_factory):
    arch = request.param
    _skip_without_tools(arch)
    triple = f"{arch}-linux-gnu"
    runtime = build_runtime(str(tmp_path_factory.mktemp(f"runtime-{arch}")), arch, strict=True)
    return arch, triple, runtime


def run_on(cross, *args, timeout=300):
    _, triple, runtime = cross
    return subprocess.run([*toolchain.emulator_command(triple), runtime.runner, *map(str, args)],
                          capture_output=True, text=True, timeout=timeout)


def test_runner_is_for_the_target(cross):
    arch, _, runtime = cross
    with open(runtime.runner, "rb") as f:
        machine = int.from_bytes(f.read(20)[18:20], "little")
    assert machine == {"aarch64": 183, "riscv64": 243}[arch]
    proc = run_on(cross, "--help")
    assert proc.returncode == 0 and "usage: dlc-run" in proc.stdout


def test_small_cnn_cross_exported_matches_onnxruntime(cross, tmp_path):
    ort = pytest.importorskip("onnxruntime")
    arch, _, _ = cross
    so = str(tmp_path / f"small_cnn-{arch}.so")
    dlc.compile(SMALL_CNN, target=arch).export(so)
    x = np.random.default_rng(1).standard_normal((1, 3, 32, 32)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    session = ort.InferenceSession(SMALL_CNN, providers=["CPUExecutionProvider"])
    (reference,) = session.run(None, {session.get_inputs()[0].name: x})
    for threads in ("1", "2"):
        out = tmp_path / f"out{threads}"
        proc = run_on(cross, so, tmp_path / "x.npy", "--threads", threads, "-o", out)
        assert proc.returncode == 0, proc.stderr
        np.testing.assert_allclose(np.load(out / "probs.npy"), reference, rtol=1e-4, atol=1e-5)


def test_hand_written_library_cross_compiled(cross, tmp_path):
    arch, triple, _ = cross
    so = tiny_model(tmp_path, cc=toolchain.c_compiler(triple))
    np.save(tmp_path / "x.npy", np.arange(4, dtype=np.float32))
    proc = run_on(cross, so, tmp_path / "x.npy", "-o", tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "y.npy"), np.arange(4) + 1)


def test_host_library_refused(cross, tmp_path):
    arch, _, _ = cross
    so = tiny_model(tmp_path, name="host")  # built by the host cc
    np.save(tmp_path / "x.npy", np.zeros(4, np.float32))
    with open(so, "rb") as f:
        host_machine = int.from_bytes(f.read(20)[18:20], "little")
    assert_error(run_on(cross, so, tmp_path / "x.npy"),
                 f"built for another machine (ELF machine {host_machine}, this runtime is for {arch})")
    proc = run_on(cross, os.path.join(tmp_path, "none.so"))
    assert_error(proc, "none.so: no such file")
