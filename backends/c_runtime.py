"""Building the C runtime (``dlc/runtime/c/``) and the ``dlc-run`` program for a target.

``build_runtime(out_dir, target)`` compiles the C sources shipped with the package
with the target's C compiler (``dlc.backends.llvm.toolchain.c_compiler``: the host's
cc, or Debian's ``<prefix>-gcc`` for a cross build) and writes::

    out_dir/include/dlc_runtime.h     the API
    out_dir/libdlc_runtime.a          the library (libc + libdl only)
    out_dir/libdlc_runtime.so         the same, shared
    out_dir/dlc-run                   the runner (.npy in, .npy out)

Everything is built in a temporary directory and moved into ``out_dir`` only when
all of it built, so a failed build leaves no half of it behind. ``strict`` adds
``-Werror -pedantic`` (the tests build so; a user's newer compiler may warn where
gcc 12 does not, which should not stop the build).

Why here (backends) and not in ``dlc.runtime``: the runtime layer stays numpy +
ctypes at run time; building needs the toolchain module of the LLVM backend.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass

from dlc.backends.llvm.toolchain import ToolchainError, c_compiler, host_arch

LIBRARY_SOURCES = ("dlc_runtime.c", "dlc_metadata.c", "dlc_sha256.c")
RUNNER_SOURCES = ("dlc_run.c", "dlc_npy.c")
HEADER = "dlc_runtime.h"
CFLAGS = ("-std=c99", "-O2", "-Wall", "-Wextra", "-fPIC")
STRICT_CFLAGS = ("-Werror", "-pedantic")


class RuntimeBuildError(Exception):
    """The C runtime could not be built (the message names the tool and the first error)."""


@dataclass(frozen=True)
class RuntimeBuild:
    """The paths ``build_runtime`` wrote."""

    triple: str
    directory: str
    header: str
    static_library: str
    shared_library: str
    runner: str


def source_dir() -> str:
    """``dlc/runtime/c``: the C sources (package data)."""
    import dlc.runtime

    return os.path.join(os.path.dirname(os.path.abspath(dlc.runtime.__file__)), "c")


def target_triple(target=None) -> str:
    """The triple to build for: None = this machine; a ``dlc.target.Target``; or what
    ``Target.from_string`` reads (a preset such as ``aarch64``, a triple, ``llvm
    -mtriple=...``)."""
    if target is None:
        return f"{host_arch()}-linux-gnu"
    if not isinstance(target, str):
        return target.triple
    from dlc.target import Target, TargetError

    try:
        return Target.from_string(target.strip()).triple
    except TargetError as err:
        raise RuntimeBuildError(str(err)) from None


def _archiver(cc: str) -> str:
    """``ar`` of the compiler's binutils: ``aarch64-linux-gnu-gcc`` -> ``aarch64-linux-gnu-ar``."""
    name = os.path.basename(cc)
    ar = os.environ.get("AR") if not name.endswith("-gcc") else None
    ar = ar or (cc[: -len("gcc")] + "ar" if name.endswith("-gcc") else "ar")
    if shutil.which(ar) is None:
        package = f"binutils-{name[:-len('-gcc')].replace('_', '-')}" if name.endswith("-gcc") else "binutils"
        raise RuntimeBuildError(f"building the C runtime needs {ar} (Debian package {package})")
    return ar


def _run(cmd: list[str], cwd: str) -> None:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
    except OSError as err:
        raise RuntimeBuildError(f"build-runtime: cannot run {cmd[0]}: {err.strerror}") from None
    if proc.returncode != 0:
        lines = [line for line in (proc.stderr or proc.stdout).splitlines() if "error" in line] or \
            (proc.stderr or proc.stdout).strip().splitlines()
        raise RuntimeBuildError(f"build-runtime: {os.path.basename(cmd[0])} failed: "
                                f"{lines[0].strip() if lines else f'exit status {proc.returncode}'}")


def build_runtime(out_dir: str, target=None, strict: bool = False) -> RuntimeBuild:
    """Build the header, static and shared library and ``dlc-run`` for ``target``
    (see ``target_triple``) into ``out_dir`` (created if missing)."""
    triple = target_triple(target)
    out_dir = os.path.abspath(out_dir)  # the compilers run inside the staging folder (cwd)
    try:
        cc = c_compiler(triple)
    except ToolchainError as err:
        raise RuntimeBuildError(str(err)) from None
    ar = _archiver(cc)
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise RuntimeBuildError(f"build-runtime: '{out_dir}' exists and is not a directory")
    src = source_dir()
    include = os.path.join(src, "include")
    flags = [*CFLAGS, *(STRICT_CFLAGS if strict else ()), f"-I{include}"]
    os.makedirs(out_dir, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".dlc-build-runtime-", dir=out_dir) as tmp:
        objects = {}
        for name in LIBRARY_SOURCES + RUNNER_SOURCES:
            obj = os.path.join(tmp, name[:-2] + ".o")
            _run([cc, *flags, "-c", os.path.join(src, name), "-o", obj], tmp)
            objects[name] = obj
        library = [objects[n] for n in LIBRARY_SOURCES]
        _run([ar, "rcs", os.path.join(tmp, "libdlc_runtime.a"), *library], tmp)
        _run([cc, "-shared", "-o", os.path.join(tmp, "libdlc_runtime.so"), *library, "-ldl"], tmp)
        _run([cc, "-o", os.path.join(tmp, "dlc-run"), *(objects[n] for n in RUNNER_SOURCES),
              os.path.join(tmp, "libdlc_runtime.a"), "-ldl", "-lm"], tmp)
        os.makedirs(os.path.join(tmp, "include"))
        shutil.copyfile(os.path.join(include, HEADER), os.path.join(tmp, "include", HEADER))
        os.makedirs(os.path.join(out_dir, "include"), exist_ok=True)
        for rel in (os.path.join("include", HEADER), "libdlc_runtime.a", "libdlc_runtime.so", "dlc-run"):
            os.replace(os.path.join(tmp, rel), os.path.join(out_dir, rel))
    return RuntimeBuild(triple, out_dir, os.path.join(out_dir, "include", HEADER),
                        os.path.join(out_dir, "libdlc_runtime.a"), os.path.join(out_dir, "libdlc_runtime.so"),
                        os.path.join(out_dir, "dlc-run"))
