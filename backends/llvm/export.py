"""Shared-library emission: optimized module -> object, weights -> ``.incbin``, ``cc -shared``.

Weights never become LLVM IR text: they are written to one raw file and a tiny
generated assembler file defines each weight symbol with ``.incbin`` (64-byte
aligned, hidden visibility), assembled with ``cc -c`` and linked with the
object llvmlite emits. The library links libgomp for parallel loops. A large module's
code is generated in parts side by side (parallel_codegen.py: one object per part,
the extra parts in worker processes) and the parts' objects are linked together; the
weights are assembled meanwhile.

Code generation uses ``target_machine(target)`` (jit.py): for the host (no target,
or ``Target.host()``) the JIT's own ``host_target_machine``, the host CPU name and
its full feature list (AVX2/AVX-512/FMA where present), only position-independent.
So a host export is the same machine code as the JIT's (``test_export_fma.py``
checks that a matmul keeps its ``vfmadd``), and runs only on CPUs with the
exporting host's features. For another target (``dlc.target.Target``: another
CPU, or another architecture: a cross export) the object is code for its triple,
CPU and features, and the C compiler, the libgomp and the assembler of the
weights are the target's (``toolchain.py``: ``aarch64-linux-gnu-gcc`` and the
sysroot's libgomp for aarch64...); a missing one is an ``ExportError`` naming
the Debian package.

The linked library gets a checksum trailer (magic, length, sha256 of the whole
library: metadata, code and weights; ``dlc.runtime.library``), which
``dlc.runtime.load`` verifies before mapping the file.
"""

from __future__ import annotations

import os
import subprocess
import tempfile

import numpy as np

from dlc.backends.llvm import toolchain
from dlc.backends.llvm.codegen_worker import CodegenError, stage_clock
from dlc.backends.llvm.jit import JITError, machine_spec
from dlc.backends.llvm.parallel_codegen import SplitError, compile_parts, parallel_jobs
from dlc.output_files import check_writable, publish_file
from dlc.runtime.library import append_trailer
from dlc.target import Target


class ExportError(Exception):
    """The C compiler/linker failed, or no C compiler (or libgomp) for the target is available."""


def _run(cmd: list[str]) -> None:
    _finish(*_start(cmd))


def _start(cmd: list[str]) -> tuple[list[str], subprocess.Popen]:
    return cmd, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(cmd: list[str], proc: subprocess.Popen) -> None:
    out, err = proc.communicate()
    if proc.returncode != 0:
        first = (err or out).strip().splitlines()
        raise ExportError(f"export: {' '.join(cmd[:2])} failed: {first[0] if first else proc.returncode}")


def weights_assembly(weights: dict[str, np.ndarray], blob_path: str) -> str:
    """Write the arrays to ``blob_path`` and return assembler text defining their symbols."""
    lines = ['\t.section .rodata.dlc_weights,"a"']
    offset = 0
    with open(blob_path, "wb") as blob:
        for symbol, array in weights.items():
            data = np.ascontiguousarray(array).tobytes()
            pad = (-offset) % 64
            blob.write(b"\0" * pad)
            offset += pad
            blob.write(data)
            size = max(len(data), 1)
            lines += [
                "\t.balign 64",
                f"\t.globl {symbol}",
                f"\t.hidden {symbol}",
                f"\t.type {symbol}, @object",
                f"\t.size {symbol}, {size}",
                f"{symbol}:",
                f'\t.incbin "{blob_path}", {offset}, {len(data)}' if data else "\t.byte 0",
            ]
            offset += len(data)
    lines.append('\t.section .note.GNU-stack,"",@progbits')
    return "\n".join(lines) + "\n"


def export_shared_library(llvm_ir: str, weights: dict[str, np.ndarray], path: str, opt: int = 3,
                          target: Target | None = None, externals=(), jobs: int | None = None,
                          timings: dict[str, float] | None = None) -> None:
    """Compile ``llvm_ir`` (unoptimized is fine) for ``target`` (default: the host) into
    the shared library ``path``; ``externals``: BYOC kernels (dlc.byoc.ExternalKernel)
    compiled and linked in, with their -L/-l/-rpath (backends/llvm/external.py).
    ``jobs``: parts compiled side by side (parallel_codegen.py; default
    ``parallel_jobs()``); ``timings`` gets the LLVM stages and "link"."""
    check_writable(path)  # a directory or a missing one: fail before the work
    triple = target.triple if target is not None else Target.host().triple
    try:  # the toolchain first: a missing cross compiler fails before the LLVM work
        cc = toolchain.c_compiler(triple)
        gomp = toolchain.libgomp(triple)
    except toolchain.ToolchainError as err:
        raise ExportError(f"export: {err}") from None
    timings = timings if timings is not None else {}
    with tempfile.TemporaryDirectory(prefix="dlc-export-") as tmp:
        clock = stage_clock(timings)
        assembler = None
        objects: list[str] = []
        if weights:  # assembled while LLVM works
            asm = os.path.join(tmp, "weights.s")
            with open(asm, "w") as f:
                f.write(weights_assembly(weights, os.path.join(tmp, "weights.bin")))
            weights_obj = os.path.join(tmp, "weights.o")
            assembler = _start([cc, "-c", asm, "-o", weights_obj])
        clock("write-weights")
        try:  # the host's machine: the JIT's CPU name + features (FMA...)
            jobs = parallel_jobs() if jobs is None else jobs
            objects += compile_parts(llvm_ir, machine_spec(target, pic=True, opt=opt), tmp, jobs, timings)
        except (JITError, CodegenError, SplitError) as err:  # a cross build has had no JIT run to catch these
            if assembler is not None:
                assembler[1].kill()
                assembler[1].wait()
            raise ExportError(f"export: {err}") from None
        clock = stage_clock(timings)
        if assembler is not None:
            _finish(*assembler)
            objects.append(weights_obj)
        extra: list[str] = []
        if externals:
            from dlc.backends.llvm.external import ExternalBuildError, compile_objects, link_flags

            try:
                objects += compile_objects(list(externals), tmp, triple)
            except ExternalBuildError as err:
                raise ExportError(f"export: {err}") from None
            # -Bsymbolic: the model's calls bind to its own kernels, even when another
            # library in the process defines the same partition name
            extra = link_flags(list(externals))
        # linked into a temporary file, then put at `path` by dlc.output_files' rule:
        # renamed over a file (a symlink's target), written through a device or
        # FIFO, an error for a directory or a missing one

        def link(staged: str) -> None:
            # -Bsymbolic: references inside the library (entry -> kernels, the C runtime's
            # <entry>__packed -> entry, the model's calls to its BYOC kernels) bind to its
            # own definitions, never to a same-named one of the program (riscv64
            # executables export `main`) or of another model (partition names repeat)
            _run([cc, "-shared", "-o", staged, *objects, *extra, *([gomp] if gomp else []), "-lm",
                  "-Wl,-z,noexecstack", "-Wl,-Bsymbolic", *toolchain.linker_flags(triple)])
            append_trailer(staged)  # verified by dlc.runtime.load before dlopen

        publish_file(link, path)
        clock("link")
