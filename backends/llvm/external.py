"""Build the C sources of BYOC external kernels (dlc.byoc.ExternalKernel).

``compile_objects`` compiles every source with the C compiler of the target
(``toolchain.c_compiler(triple)``; -O3 -fPIC -std=c11, the kernel's include dirs)
into a folder; ``link_flags`` gives the -L/-l/-rpath flags for the exported .so;
``load_for_jit`` links the objects into one private shared library, loads it (after
each kernel's ``preload`` libraries, RTLD_GLOBAL) and binds each kernel symbol to its
address for the MCJIT module (``llvm.add_symbol``, as the JIT binds weights: every
compile names its partitions alike, so a process-wide lookup could find an earlier
model's kernel). A compiler failure is an ExternalBuildError
naming the partition and the compiler's first message.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import tempfile

from dlc.backends.llvm.toolchain import ToolchainError, c_compiler, host_c_compiler
from dlc.byoc.targets import ExternalKernel


class ExternalBuildError(Exception):
    """A BYOC kernel's C code did not compile or link."""


def _run(cmd: list[str], what: str) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        lines = [line for line in (proc.stderr or proc.stdout).splitlines() if "error" in line] or \
            (proc.stderr or proc.stdout).strip().splitlines()
        raise ExternalBuildError(f"{what}: {cmd[0]} failed: {lines[0].strip() if lines else proc.returncode}")


def compile_objects(kernels: list[ExternalKernel], folder: str, triple: str | None = None) -> list[str]:
    try:
        cc = c_compiler(triple) if triple else host_c_compiler()
    except ToolchainError as err:
        raise ExternalBuildError(str(err)) from None
    objects = []
    for kernel in kernels:
        for i, (name, text) in enumerate(kernel.sources):
            base = os.path.basename(name) or f"{kernel.symbol}_{i}.c"
            src = os.path.join(folder, f"{kernel.symbol}_{i}_{base}")
            with open(src, "w") as f:
                f.write(text)
            obj = src.rsplit(".", 1)[0] + ".o"
            _run([cc, "-O3", "-fPIC", "-std=c11", *(f"-I{d}" for d in kernel.include_dirs), "-c", src, "-o", obj],
                 f"BYOC target '{kernel.target_name}', partition @{kernel.symbol}")
            objects.append(obj)
    return objects


def link_flags(kernels: list[ExternalKernel]) -> list[str]:
    flags: list[str] = []
    for kernel in kernels:
        flags += [f"-L{d}" for d in kernel.library_dirs]
        flags += [f"-Wl,-rpath,{d}" for d in kernel.runtime_library_dirs]
    for kernel in kernels:
        flags += [f"-l{lib}" for lib in kernel.libraries]
    return flags


def load_for_jit(kernels: list[ExternalKernel]) -> ctypes.CDLL | None:
    """Build the kernels into a private shared library and load it RTLD_GLOBAL (kept
    loaded for the process: MCJIT code calls into it). None when there are none."""
    if not kernels:
        return None
    import llvmlite.binding as llvm

    from dlc.runtime.native import prefer_short_omp_spin

    prefer_short_omp_spin()  # a kernel library may pull in libgomp (oneDNN's OpenMP build)
    for kernel in kernels:
        for lib in kernel.preload:
            try:
                ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)
            except OSError as err:
                raise ExternalBuildError(f"BYOC target '{kernel.target_name}': cannot load {lib}: {err}") from None
    folder = tempfile.mkdtemp(prefix="dlc-byoc-")
    objects = compile_objects(kernels, folder)
    lib_path = os.path.join(folder, "libdlc_byoc.so")
    try:
        cc = host_c_compiler()
    except ToolchainError as err:
        raise ExternalBuildError(str(err)) from None
    _run([cc, "-shared", "-o", lib_path, *objects, *link_flags(kernels)],
         "BYOC kernels (JIT library)")
    try:
        # RTLD_LOCAL and each symbol bound by address: every compile's partitions are
        # named @c_main_0..., so a process-wide lookup would find another model's kernel
        handle = ctypes.CDLL(lib_path)
        for kernel in kernels:
            llvm.add_symbol(kernel.symbol, ctypes.cast(getattr(handle, kernel.symbol), ctypes.c_void_p).value)
    except (OSError, AttributeError) as err:
        raise ExternalBuildError(f"BYOC kernels: cannot load {lib_path}: {err}") from None
    finally:
        shutil.rmtree(folder, ignore_errors=True)  # the mapping stays; nothing left in /tmp
    return handle
