"""Build and run a :class:`~dlc.backends.c.build.CProgram`: with the host C compiler and
``harness/host_main.c`` (the tests' check against onnxruntime/numpy), and for a
Cortex-M4 with ``arm-none-eabi-gcc`` under ``qemu-system-arm -M mps2-an386``
(``harness/m4_startup.c``, ``harness/mps2_an386.ld``, ``harness/m4_main.c``: semihosting
output, no C library beyond libm).

A missing tool is a :class:`CToolError` naming the Debian package that provides it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass

import numpy as np

from dlc.backends.c.build import CProgram

HARNESS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "harness")
# what every archive must compile under (the portability bar)
STRICT_FLAGS = ("-std=c99", "-Wall", "-Wextra", "-Werror", "-ffreestanding")
M4_FLAGS = ("-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16")
M4_TOOLS = {  # tool -> Debian package
    "arm-none-eabi-gcc": "gcc-arm-none-eabi",
    "arm-none-eabi-size": "binutils-arm-none-eabi",
    "qemu-system-arm": "qemu-system-arm",
}
NEWLIB_LIBM = "/usr/lib/arm-none-eabi/newlib"  # libnewlib-arm-none-eabi's libm.a lives below


class CToolError(Exception):
    """A tool is missing, or compiling/running the C failed (one line)."""


def _run(cmd: list[str], cwd: str, what: str, timeout: float = 300) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        lines = [ln for ln in (proc.stderr + proc.stdout).splitlines() if ln.strip()]
        first = next((ln for ln in lines if "error" in ln), lines[0] if lines else f"exit {proc.returncode}")
        raise CToolError(f"{what} failed (exit {proc.returncode}): {first}")
    return proc


def write_archive(program: CProgram, folder: str) -> None:
    """The archive's files under ``folder`` (src/, include/, metadata.json)."""
    for path, data in program.files().items():
        target = os.path.join(folder, path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as f:
            f.write(data)


def host_cc() -> str:
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return name
    raise CToolError("no C compiler (cc/gcc/clang) found: install gcc (Debian package gcc)")


def compile_objects(program: CProgram, folder: str, cc: str | None = None,
                    flags: tuple[str, ...] = ("-O2",)) -> list[str]:
    """src/*.c compiled with :data:`STRICT_FLAGS` (+ ``flags``) into objects; their paths."""
    write_archive(program, folder)
    objects = []
    for src in (f"src/{program.name}.c", "src/weights.c"):
        obj = src[:-2] + ".o"
        _run([cc or host_cc(), *STRICT_FLAGS, *flags, "-Iinclude", "-c", src, "-o", obj], folder, f"compiling {src}")
        objects.append(os.path.join(folder, obj))
    return objects


def undefined_symbols(objects: list[str], nm: str = "nm") -> set[str]:
    proc = _run([nm, "-u", *objects], os.path.dirname(objects[0]) or ".", "nm -u")
    return {line.split()[-1] for line in proc.stdout.splitlines() if line.strip() and not line.endswith(":")}


def run_on_host(program: CProgram, inputs: list[np.ndarray], folder: str, cc: str | None = None,
                flags: tuple[str, ...] = ("-O2",)) -> list[np.ndarray]:
    """Compile the archive and ``harness/host_main.c`` here and run it on ``inputs``."""
    if program.name != "model":
        raise CToolError(f"the host harness runs model name 'model', not '{program.name}'")
    objects = compile_objects(program, folder, cc, flags)
    exe = os.path.join(folder, "run")
    _run([cc or host_cc(), "-std=c99", *flags, "-Iinclude", os.path.join(HARNESS, "host_main.c"), *objects,
          "-lm", "-o", exe], folder, "linking the host harness")
    specs_in, specs_out = program.input_specs, program.output_specs
    if len(inputs) != len(specs_in):
        raise CToolError(f"expected {len(specs_in)} inputs, got {len(inputs)}")
    args = []
    for k, ((_, shape, dtype), array) in enumerate(zip(specs_in, inputs)):
        path = os.path.join(folder, f"in{k}.bin")
        np.ascontiguousarray(array, dtype=dtype).reshape(shape).tofile(path)
        args.append(path)
    outs = [os.path.join(folder, f"out{k}.bin") for k in range(len(specs_out))]
    _run([exe, *args, *outs], folder, "the host harness")
    return [np.fromfile(p, dtype=dtype).reshape(shape) for p, (_, shape, dtype) in zip(outs, specs_out)]


# --------------------------------------------------------------------------- Cortex-M4


def missing_m4_tools() -> str | None:
    """Why the Cortex-M4 build cannot run here (the Debian packages to install), or None."""
    missing = [f"{tool} (Debian package {pkg})" for tool, pkg in M4_TOOLS.items() if shutil.which(tool) is None]
    if not missing and not os.path.isdir(NEWLIB_LIBM):
        missing.append(f"newlib's libm in {NEWLIB_LIBM} (Debian package libnewlib-arm-none-eabi)")
    return "missing " + ", ".join(missing) if missing else None


@dataclass
class M4Run:
    outputs: list[np.ndarray]
    status: int
    stack_bytes: int  # stack the run used (painted stack's high-water mark)
    sizes: dict[str, int]  # the ELF's .text, .rodata, .data, .bss bytes (arm-none-eabi-size -A)
    model_flash: int  # text + rodata of the model's own objects (model.o + weights.o, or lib/model.o)
    ram: int  # .data + .bss of the ELF (the arena, the output buffers) + the stack used
    elf: str


def _io_source(program: CProgram, inputs: list[np.ndarray]) -> str:
    lines = ["#include <stdint.h>", ""]
    for k, ((_, shape, dtype), array) in enumerate(zip(program.input_specs, inputs)):
        data = np.ascontiguousarray(array, dtype=dtype).reshape(shape).tobytes()
        words = np.frombuffer(data + b"\0" * (-len(data) % 4), dtype="<u4")
        body = ",\n  ".join(", ".join(f"0x{w:08x}u" for w in words[i:i + 8]) for i in range(0, len(words), 8))
        lines.append(f"static const uint32_t input{k}[{max(1, len(words))}] = {{\n  {body or '0'}\n}};")
    for k, (_, shape, dtype) in enumerate(program.output_specs):
        nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
        lines.append(f"static uint32_t output{k}[{max(1, (nbytes + 3) // 4)}];")
    ins = ", ".join(f"input{k}" for k in range(len(program.input_specs))) or "0"
    outs = ", ".join(f"output{k}" for k in range(len(program.output_specs)))
    lines += [f"const void *const dlc_test_inputs[] = {{{ins}}};",
              f"void *const dlc_test_outputs[] = {{{outs}}};", ""]
    return "\n".join(lines)


def build_m4(program: CProgram, inputs: list[np.ndarray], folder: str, opt: str = "-O2") -> str:
    """The archive + fixed ``inputs`` linked for the mps2-an386 board: the ELF's path."""
    missing = missing_m4_tools()
    if missing is not None:
        raise CToolError(f"cortex-m4 build: {missing}")
    write_archive(program, folder)
    with open(os.path.join(folder, "dlc_test_io.c"), "w") as f:
        f.write(_io_source(program, inputs))
    cc = "arm-none-eabi-gcc"
    objects = _m4_objects(program, folder, opt)
    harness = [os.path.join(HARNESS, f) for f in ("m4_startup.c", "m4_main.c")]
    elf = os.path.join(folder, "model.elf")
    _run([cc, *M4_FLAGS, "-std=c99", opt, "-ffreestanding", "-nostartfiles", "-Iinclude",
          "-T", os.path.join(HARNESS, "mps2_an386.ld"), "-Wl,--gc-sections", *harness, "dlc_test_io.c", *objects,
          "-lm", "-lc", "-lgcc", "-o", elf], folder, "linking for cortex-m4")
    return elf


def _m4_objects(program: CProgram, folder: str, opt: str = "-O2") -> list[str]:
    """The model's own objects for the Cortex-M4 (paths relative to ``folder``): the
    archive's object (an llvm bare-metal build: backends/llvm/bare_metal.py, its
    metadata's "object"), or src/*.c compiled with arm-none-eabi-gcc (the C target)."""
    if "object" in program.metadata:
        return [program.metadata["object"]]  # written by write_archive
    objects = []
    for src in (f"src/{program.name}.c", "src/weights.c"):
        obj = src[:-2] + ".m4.o"
        _run(["arm-none-eabi-gcc", *M4_FLAGS, *STRICT_FLAGS, opt, "-ffunction-sections", "-fdata-sections",
              "-Iinclude", "-c", src, "-o", obj], folder, f"arm-none-eabi-gcc {src}")
        objects.append(obj)
    return objects


def run_m4(program: CProgram, inputs: list[np.ndarray], folder: str, timeout: float = 120) -> M4Run:
    """Build for the Cortex-M4 and run on ``qemu-system-arm -M mps2-an386`` with semihosting."""
    elf = build_m4(program, inputs, folder)
    log = os.path.join(folder, "semihosting.txt")
    if os.path.exists(log):
        os.unlink(log)
    # semihosting output into a file chardev: qemu's own stdout, when a pipe, lost lines
    proc = subprocess.run(["qemu-system-arm", "-M", "mps2-an386", "-display", "none", "-monitor", "none",
                           "-serial", "none", "-chardev", f"file,id=semihosting,path={log}",
                           "-semihosting-config", "enable=on,target=native,chardev=semihosting", "-kernel", elf],
                          capture_output=True, text=True, timeout=timeout, cwd=folder)
    text = open(log).read() if os.path.exists(log) else ""
    status = re.search(r"^status (\d+)$", text, re.M)
    stack = re.search(r"^stack-bytes (\d+)$", text, re.M)
    if status is None or stack is None:
        raise CToolError(f"qemu-system-arm (exit {proc.returncode}) printed no result: "
                         f"{(text + proc.stderr).strip().splitlines()[:1]}")
    if int(status.group(1)) != 0:
        raise CToolError(f"the model returned status {status.group(1)} on the cortex-m4")
    outputs = []
    blocks = re.split(r"^output \d+$", text, flags=re.M)[1:]
    for block, (_, shape, dtype) in zip(blocks, program.output_specs):
        words = np.array([int(w, 16) for w in block.split()], dtype="<u4")
        nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
        outputs.append(np.frombuffer(words.tobytes()[:nbytes], dtype=dtype).reshape(shape).copy())
    sections = _sections(elf, folder)
    sizes = {k: sections.get(k, 0) for k in (".text", ".rodata", ".data", ".bss")}
    model = _size([os.path.join(folder, p) for p in _m4_objects_built(program)], folder)
    flash = sum(s["text"] for s in model.values())  # size's "text" counts .text + .rodata
    ram = sizes[".data"] + sizes[".bss"] + int(stack.group(1))
    return M4Run(outputs, 0, int(stack.group(1)), sizes, flash, ram, elf)


def _m4_objects_built(program: CProgram) -> list[str]:
    """The paths :func:`_m4_objects` made (without compiling again)."""
    if "object" in program.metadata:
        return [program.metadata["object"]]
    return [f"src/{program.name}.m4.o", "src/weights.m4.o"]


def _size(paths: list[str], folder: str) -> dict[str, dict[str, int]]:
    """Berkeley ``arm-none-eabi-size``: text (code + read-only data), data, bss per file."""
    proc = _run(["arm-none-eabi-size", *paths], folder, "arm-none-eabi-size")
    out = {}
    for line in proc.stdout.splitlines()[1:]:
        fields = line.split()
        out[fields[-1]] = {"text": int(fields[0]), "data": int(fields[1]), "bss": int(fields[2])}
    return {p: out.get(p, out.get(os.path.relpath(p, folder), {})) for p in paths}


def _sections(elf: str, folder: str) -> dict[str, int]:
    """``arm-none-eabi-size -A``: section name -> bytes."""
    proc = _run(["arm-none-eabi-size", "-A", elf], folder, "arm-none-eabi-size -A")
    out = {}
    for line in proc.stdout.splitlines():
        fields = line.split()
        if len(fields) >= 2 and fields[0].startswith(".") and fields[1].isdigit():
            out[fields[0]] = int(fields[1])
    return out
