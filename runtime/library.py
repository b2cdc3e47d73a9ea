"""An exported model file checked before it is mapped, and loaded under its content's name.

Why check first: ``dlopen`` maps the file and trusts its headers, so a
truncated library dies with SIGBUS on the first page past the end, and a
library for another machine fails with a cryptic loader message. Why a copy:
``dlopen`` caches by path, so re-exporting a model to the same path and loading
it again in one process would run the old code.

The file format (``CompiledModule.export``, backends/llvm/export.py): the
linked ELF shared library followed by a 48-byte trailer::

    b"DLCSUM01"  u64 little-endian payload length  sha256(payload) (32 bytes)

The loader ignores bytes past the ELF's own extent, so the trailer costs
nothing at load. It covers the whole library (metadata, code, weights): a
corrupt metadata string, a truncated or extended file and a file that is not a
dlc export are each one clear error. ``read_library`` checks, in order: the
path (exists, regular file), the ELF header (magic, 64-bit little-endian
class, a shared object for this host's machine), that every program header's
and section's bytes lie inside the file (catches truncation even without the
trailer), then the trailer (length and hash). ``open_library`` then writes the
verified bytes to ``<fresh private temp dir>/model-<sha256>.so`` and dlopens
that, so a load never gets an older library from dlopen's path cache; the copy
and its directory are removed at once (the mapping stays).

numpy-free and xDSL-free like the rest of ``dlc.runtime``.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import stat
import struct
import tempfile
import threading

TRAILER_MAGIC = b"DLCSUM01"
TRAILER = struct.Struct("<8sQ32s")  # magic, payload length, sha256 of the payload

# e_machine of the ELF files this host runs (platform.machine() -> EM_*); a host
# not listed skips the machine check (dlopen still refuses a foreign file)
_MACHINES = {"x86_64": 62, "amd64": 62, "aarch64": 183, "arm64": 183, "ppc64le": 21,
             "s390x": 22, "riscv64": 243}
_ARCH_OF_MACHINE = {62: "x86_64", 183: "aarch64", 21: "ppc64le", 22: "s390x", 243: "riscv64"}
_ET_DYN = 3
_SHT_NOBITS = 8


class LibraryError(Exception):
    """The file is not a loadable dlc export (the message names what is wrong)."""


def trailer(payload: bytes) -> bytes:
    """The checksum trailer export appends to ``payload`` (the linked library)."""
    return TRAILER.pack(TRAILER_MAGIC, len(payload), hashlib.sha256(payload).digest())


def append_trailer(path: str) -> None:
    """Append the checksum trailer to the freshly linked library at ``path``."""
    with open(path, "rb") as f:
        payload = f.read()
    with open(path, "ab") as f:
        f.write(trailer(payload))


def read_library(path: str) -> tuple[bytes, str]:
    """The verified contents of an exported library and its sha256 (hex); raises
    ``LibraryError`` naming what is wrong."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise LibraryError("no such file") from None
    except OSError as err:
        raise LibraryError(f"cannot open: {err.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise LibraryError("not a regular file" + (" (a directory)" if stat.S_ISDIR(info.st_mode) else ""))
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as err:
        raise LibraryError(f"cannot read: {err.strerror}") from None
    check_elf(data)
    if len(data) < TRAILER.size or data[-TRAILER.size:][:8] != TRAILER_MAGIC:
        raise LibraryError("no dlc checksum trailer: truncated, or not written by dlc's export "
                           "(re-export it with CompiledModule.export or `dlc compile`)")
    _, length, digest = TRAILER.unpack(data[-TRAILER.size:])
    payload = data[:-TRAILER.size]
    if length != len(payload):
        raise LibraryError(f"size mismatch: the export wrote {length} bytes of library, the file has "
                           f"{len(payload)} (truncated or modified)")
    actual = hashlib.sha256(payload).digest()
    if actual != digest:
        raise LibraryError("checksum mismatch: the file was modified or corrupted after export")
    return data, actual.hex()


def check_elf(data: bytes) -> None:
    """ELF header for this host, and every segment and section inside ``data``."""
    size = len(data)
    if size < 64 or data[:4] != b"\x7fELF":
        raise LibraryError("not an ELF shared library (bad magic)" if size >= 4 and data[:4] != b"\x7fELF"
                           else f"not an ELF shared library (only {size} bytes)")
    if data[4] != 2 or data[5] != 1:
        raise LibraryError("not a 64-bit little-endian ELF file (this runtime loads only those)")
    (e_type, e_machine, _, _, e_phoff, e_shoff, _, _, e_phentsize, e_phnum, e_shentsize,
     e_shnum, _) = struct.unpack_from("<HHIQQQIHHHHHH", data, 16)
    if e_type != _ET_DYN:
        raise LibraryError(f"not a shared library (ELF type {e_type})")
    host = platform.machine().lower()
    if host in _MACHINES and e_machine != _MACHINES[host]:
        arch = _ARCH_OF_MACHINE.get(e_machine)
        if arch is None:
            raise LibraryError(f"built for another machine (ELF machine {e_machine}, this host is {host})")
        raise LibraryError(f"built for {arch} (ELF machine {e_machine}), this host is {host}: run it "
                           f"with dlc-run under qemu-{arch}, or over RPC")
    if (e_phnum and e_phentsize != 56) or (e_shnum and e_shentsize != 64):
        raise LibraryError(f"corrupt ELF header (entry sizes {e_phentsize}/{e_shentsize}, expected 56/64)")
    _within("program header table", e_phoff, e_phentsize * e_phnum, size)
    for i in range(e_phnum):
        _, _, p_offset, _, _, p_filesz, _, _ = struct.unpack_from("<IIQQQQQQ", data, e_phoff + i * e_phentsize)
        _within(f"segment {i}", p_offset, p_filesz, size)
    _within("section header table", e_shoff, e_shentsize * e_shnum, size)
    for i in range(e_shnum):
        _, sh_type, _, _, sh_offset, sh_size = struct.unpack_from("<IIQQQQ", data, e_shoff + i * e_shentsize)
        if sh_type != _SHT_NOBITS:
            _within(f"section {i}", sh_offset, sh_size, size)


def _within(what: str, offset: int, length: int, size: int) -> None:
    if offset + length > size:
        raise LibraryError(f"truncated: {what} (bytes {offset}..{offset + length}) lies beyond "
                           f"the end of the file ({size} bytes)")


_load_lock = threading.Lock()


def open_library(data: bytes, digest: str) -> ctypes.CDLL:
    """dlopen the verified bytes from a fresh private path, so that dlopen's cache (by
    path) never hands back an older library that was exported to the same path."""
    with _load_lock:  # one writer of a name at a time: never truncate a file being mapped
        # a fresh 0700 directory per load, removed at once: nothing stays behind even
        # when the process ends by os._exit or a signal
        private = tempfile.mkdtemp(prefix="dlc-runtime-")
        copy = os.path.join(private, f"model-{digest}.so")
        try:
            with open(copy, "wb") as f:
                f.write(data)
            return ctypes.CDLL(copy)
        finally:
            if os.path.exists(copy):
                os.unlink(copy)  # the mapping outlives the name
            os.rmdir(private)
