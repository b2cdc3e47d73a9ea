"""Shared-library emission: optimized module -> object, weights -> ``.incbin``, ``cc -shared``.

Weights never become LLVM IR text: they are written to one raw file and a tiny
generated assembler file defines each weight symbol with ``.incbin`` (64-byte
aligned, hidden visibility), assembled with ``cc -c`` and linked with the
object llvmlite emits. The library links libgomp for parallel loops.

Code generation uses the JIT's own ``host_target_machine`` (jit.py): the host
CPU name and its full feature list (AVX2/AVX-512/FMA where present), only
position-independent. So an exported kernel is the same machine code as the
JIT's (``test_export_fma.py`` checks that a matmul keeps its ``vfmadd``), and
the library runs only on CPUs with the exporting host's features.

The linked library gets a checksum trailer (magic, length, sha256 of the whole
library: metadata, code and weights; ``dlc.runtime.library``), which
``dlc.runtime.load`` verifies before mapping the file.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

import numpy as np

from dlc.backends.llvm.jit import host_target_machine, libgomp_path, parse_and_optimize
from dlc.output_files import check_writable, publish_file
from dlc.runtime.library import append_trailer


class ExportError(Exception):
    """The C compiler/linker failed, or no C compiler is available."""


def _cc() -> str:
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return name
    raise ExportError("export: no C compiler (cc/gcc/clang) found to link the shared library")


def _run(cmd: list[str]) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        first = (proc.stderr or proc.stdout).strip().splitlines()
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
                          externals=()) -> None:
    """Compile ``llvm_ir`` (unoptimized is fine) for the host into the shared library ``path``;
    ``externals``: BYOC kernels (dlc.byoc.ExternalKernel) compiled and linked in, with
    their -L/-l/-rpath (backends/llvm/external.py)."""
    check_writable(path)  # a directory or a missing one: fail before the work
    tm = host_target_machine(pic=True, opt=opt)  # the JIT's CPU name + features (FMA...)
    module = parse_and_optimize(llvm_ir, tm, opt)
    cc = _cc()
    with tempfile.TemporaryDirectory(prefix="dlc-export-") as tmp:
        code_obj = os.path.join(tmp, "code.o")
        with open(code_obj, "wb") as f:
            f.write(tm.emit_object(module))
        objects = [code_obj]
        if weights:
            asm = os.path.join(tmp, "weights.s")
            with open(asm, "w") as f:
                f.write(weights_assembly(weights, os.path.join(tmp, "weights.bin")))
            weights_obj = os.path.join(tmp, "weights.o")
            _run([cc, "-c", asm, "-o", weights_obj])
            objects.append(weights_obj)
        extra: list[str] = []
        if externals:
            from dlc.backends.llvm.external import ExternalBuildError, compile_objects, link_flags

            try:
                objects += compile_objects(list(externals), tmp)
            except ExternalBuildError as err:
                raise ExportError(f"export: {err}") from None
            # -Bsymbolic: the model's calls bind to its own kernels, even when another
            # library in the process defines the same partition name
            extra = [*link_flags(list(externals)), "-Wl,-Bsymbolic"]
        gomp = libgomp_path()
        # linked into a temporary file, then put at `path` by dlc.output_files' rule:
        # renamed over a file (a symlink's target), written through a device or
        # FIFO, an error for a directory or a missing one

        def link(staged: str) -> None:
            _run([cc, "-shared", "-o", staged, *objects, *extra, *([gomp] if gomp else []), "-lm",
                  "-Wl,-z,noexecstack"])
            append_trailer(staged)  # verified by dlc.runtime.load before dlopen

        publish_file(link, path)
