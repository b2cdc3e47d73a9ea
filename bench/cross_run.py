"""An ONNX light model cross-compiled and run through the C runtime under qemu-user
(not part of CI).

    python bench/cross_run.py [--model resnet50] [--arch aarch64 riscv64] [--threads 2] [--repeat 3]

For each architecture: ``dlc build-runtime``'s builder with the cross gcc,
``dlc.compile(model, target=arch).export``, then ``dlc-run`` under ``qemu-<arch> -L
/usr/<prefix>`` on the input onnx's backend runner feeds the light models
(``arange(n)/n``). Prints per architecture the compile time, the max abs error
against onnxruntime on this host and against the output onnx ships, and the
median and min time of one inference under emulation (qemu-user: a measure of the
emulator, not of a device).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import numpy_helper

import dlc
from dlc.backends.c_runtime import RuntimeBuildError, build_runtime
from dlc.backends.llvm import toolchain

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "conformance"))
import run_light_models  # noqa: E402


def reference(model_path: str, x: np.ndarray) -> np.ndarray:
    import onnxruntime as ort

    session = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x})[0]


def run_arch(arch: str, name: str, threads: int, repeat: int, workdir: str) -> str:
    triple = f"{arch}-linux-gnu"
    try:
        emulator = toolchain.emulator_command(triple)
        runtime = build_runtime(os.path.join(workdir, f"runtime-{arch}"), arch)
    except (toolchain.ToolchainError, RuntimeBuildError) as err:  # no cross gcc or qemu: say so, go on
        return f"{arch}: skipped: {err}"
    model_path = os.path.join(run_light_models.LIGHT_DIR, f"light_{name}.onnx")
    so = os.path.join(workdir, f"{name}-{arch}.so")
    start = time.perf_counter()
    dlc.compile(model_path, target=arch).export(so)
    compile_s = time.perf_counter() - start
    x = run_light_models.light_input(name)
    np.save(os.path.join(workdir, "x.npy"), x)
    out = os.path.join(workdir, f"out-{arch}")
    proc = subprocess.run([*emulator, runtime.runner, so, os.path.join(workdir, "x.npy"), "--threads", str(threads),
                           "--repeat", str(repeat), "-o", out], capture_output=True, text=True)
    if proc.returncode != 0:
        return f"{arch}: dlc-run failed: {proc.stderr.strip()}"
    (output,) = os.listdir(out)
    y = np.load(os.path.join(out, output))
    shipped = numpy_helper.to_array(onnx.load_tensor(
        os.path.join(run_light_models.LIGHT_DIR, f"light_{name}_output_0.pb")))
    timing = next(line for line in proc.stdout.splitlines() if line.startswith("time:"))
    return (f"{arch}: {name} compiled in {compile_s:.1f} s, {os.path.getsize(so) / 2**20:.1f} MiB; "
            f"max abs err vs onnxruntime {np.abs(y - reference(model_path, x)).max():.3g}, "
            f"vs shipped output {np.abs(y - shipped).max():.3g}; under {os.path.basename(emulator[0])}, "
            f"{threads} threads: {timing[len('time: '):]}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="resnet50", choices=run_light_models.ALL_LIGHT)
    ap.add_argument("--arch", nargs="+", default=["aarch64", "riscv64"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="dlc-cross-run-") as workdir:
        for arch in args.arch:
            print(run_arch(arch, args.model, args.threads, args.repeat, workdir), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
