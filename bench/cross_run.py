"""An ONNX light model cross-compiled and run through the C runtime under qemu-user
(not part of CI).

    python bench/cross_run.py [--model resnet50] [--arch aarch64 riscv64] [--threads 2] [--repeat 3]
                              [--shipped-weights]

For each architecture: ``dlc build-runtime``'s builder with the cross gcc,
``dlc.compile(model, target=arch).export``, then ``dlc-run`` under ``qemu-<arch> -L
/usr/<prefix>`` on the input onnx's backend runner feeds the light models
(``arange(n)/n``). Prints per architecture the compile time, the max abs error
against onnxruntime on this host and against the output onnx ships, and the
median and min time of one inference under emulation (qemu-user: a measure of the
emulator, not of a device).

The light models build every weight with ConstantOfShape (one value per tensor), so
their output is uniform (resnet50: 0.001 in all 1000 classes) whatever the code
computes. By default the script replaces those weights with seeded random ones
(normal with std sqrt(0.5 / fan_in) for 2-D and larger: resnet50's probabilities then
span 5e-5..0.009, neither uniform nor one-hot; U(0.5, 1.5) for 1-D: positive
batch-norm variances), so the comparison with onnxruntime is a real one; ``--shipped-weights`` keeps the model
as shipped and also compares with its stored output.
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


def random_weights(model: onnx.ModelProto, seed: int = 0) -> onnx.ModelProto:
    """``model`` with each ConstantOfShape of a constant shape replaced by a random
    initializer of that shape (see the module docstring)."""
    rng = np.random.default_rng(seed)
    shapes = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    out = onnx.ModelProto()
    out.CopyFrom(model)
    del out.graph.node[:]
    for node in model.graph.node:
        if node.op_type != "ConstantOfShape" or node.input[0] not in shapes:
            out.graph.node.append(node)
            continue
        shape = [int(d) for d in shapes[node.input[0]]]
        if len(shape) >= 2:
            value = rng.standard_normal(shape) * np.sqrt(0.5 / max(1, int(np.prod(shape[1:]))))
        else:
            value = rng.uniform(0.5, 1.5, shape)
        out.graph.initializer.append(numpy_helper.from_array(value.astype(np.float32), node.output[0]))
    return out


def reference(model_path: str, x: np.ndarray) -> np.ndarray:
    import onnxruntime as ort

    session = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x})[0]


def run_arch(arch: str, name: str, model_path: str, threads: int, repeat: int, workdir: str,
             shipped: bool) -> str:
    triple = f"{arch}-linux-gnu"
    try:
        emulator = toolchain.emulator_command(triple)
        runtime = build_runtime(os.path.join(workdir, f"runtime-{arch}"), arch)
    except (toolchain.ToolchainError, RuntimeBuildError) as err:  # no cross gcc or qemu: say so, go on
        return f"{arch}: skipped: {err}"
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
    timing = next(line for line in proc.stdout.splitlines() if line.startswith("time:"))
    expected = reference(model_path, x)
    errors = f"max abs err vs onnxruntime {np.abs(y - expected).max():.3g} (outputs in [{expected.min():.3g}, " \
             f"{expected.max():.3g}])"
    if shipped:
        stored = numpy_helper.to_array(onnx.load_tensor(
            os.path.join(run_light_models.LIGHT_DIR, f"light_{name}_output_0.pb")))
        errors += f", vs shipped output {np.abs(y - stored).max():.3g}"
    return (f"{arch}: {name} ({'shipped' if shipped else 'random'} weights) compiled in {compile_s:.1f} s, "
            f"{os.path.getsize(so) / 2**20:.1f} MiB; {errors}; under {os.path.basename(emulator[0])}, "
            f"{threads} threads: {timing[len('time: '):]}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="resnet50", choices=run_light_models.ALL_LIGHT)
    ap.add_argument("--arch", nargs="+", default=["aarch64", "riscv64"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--shipped-weights", action="store_true",
                    help="keep the light model's constant weights (and compare with its stored output)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="dlc-cross-run-") as workdir:
        model_path = os.path.join(run_light_models.LIGHT_DIR, f"light_{args.model}.onnx")
        if not args.shipped_weights:
            randomized = os.path.join(workdir, f"{args.model}-random.onnx")
            onnx.save(random_weights(onnx.load(model_path)), randomized)
            model_path = randomized
        for arch in args.arch:
            print(run_arch(arch, args.model, model_path, args.threads, args.repeat, workdir, args.shipped_weights),
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
