"""Writing the tools' output files: never half-written, never clobbering what
the path names.

The core layer's one place that decides how an output path is written (every
``-o``/``--output`` of dlc-opt, dlc-translate and dlc, and
``CompiledModule.export``). The rule, by what the path names now:

* a regular file, or nothing (its directory exists): the data goes to a
  temporary file beside the target, which is renamed over it once complete, so
  a failure leaves the old file (or no file) and readers never see half of
  one; an existing file keeps its permission bits;
* a symlink: its target, by the same rule (the link stays a link);
* a character or block device, a FIFO, a socket (``/dev/null``, a terminal):
  the data is written through the path (opened and written, no rename), as a
  shell's ``>`` would;
* a process's open file (``/dev/stdout``, ``/dev/fd/N``, ``/proc/self/fd/N``
  when they lead to a regular file, e.g. a redirected stdout): this process's
  own descriptor is written at its offset, as ``print`` would; another
  process's file is appended to (a rename would detach the file from the
  output, truncating it would drop what was written there before);
* another file under /proc or /sys (``/proc/sys/...``): written in place, as
  ``echo 1 > FILE`` does (no file can be created there);
* a directory, a missing directory, a path that cannot be written: a
  :class:`DiagnosticError` naming the path as the user gave it (never a
  temporary path), before anything is written.

Several outputs of one command appear all or none: :class:`OutputSet` stages
every output first (temporary files written, targets checked) and publishes
them only when all staged; on any failure the temporary files are removed and
no target is touched. Written-through outputs cannot be taken back: they are
written after every staged file is complete, just before the renames.

    with OutputSet() as out:
        out.add("model.mlir", text)
        out.add_writer("model.mlir.weights.npz", store.write)   # write(binary file)
        out.add_file("model.so", lambda tmp: link(..., "-o", tmp))  # a tool writes tmp

Why not ``tempfile.NamedTemporaryFile`` + ``os.replace`` alone (what dlc did):
the rename replaces a FIFO, a device node or a symlink with a regular file.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import BinaryIO

from dlc.diagnostics import DiagnosticError


def _error(path: str, why: str) -> DiagnosticError:
    return DiagnosticError(f"cannot write '{path}': {why}")


def _reason(err: OSError) -> str:
    if err.errno == errno.EACCES or err.errno == errno.EPERM:
        return "permission denied"
    if err.errno == errno.EROFS:
        return "read-only file system"
    if err.errno == errno.ENOSPC:
        return "no space left on device"
    if err.errno == errno.ELOOP:
        return "too many levels of symbolic links"
    return err.strerror[:1].lower() + err.strerror[1:] if err.strerror else str(err)


@dataclass
class _Plan:
    """How one output is written: ``staged`` (a temporary file renamed to
    ``target``) or written through ``target``."""

    path: str  # as the user gave it: every message names this
    target: str  # the file written: the symlink-resolved path, or the path itself
    staged: bool
    mode: int | None  # permission bits to give the new file (an existing file's)
    # written through one of this process's open files (/dev/stdout): its fd
    fd: int | None = None
    # written through another process's open file: appended, what it holds is kept
    append: bool = False


def _missing_parent(path: str, target: str) -> DiagnosticError | None:
    """The error for an output whose directory does not exist (or is a file)."""
    # name the directory as the user wrote it, unless a symlink led elsewhere
    parent = os.path.dirname(target if os.path.islink(path) else path)
    if os.path.isdir(parent or "."):
        return None
    ancestor = parent  # the first ancestor that exists decides the message
    while ancestor and not os.path.lexists(ancestor) and os.path.dirname(ancestor) != ancestor:
        ancestor = os.path.dirname(ancestor)
    if ancestor and os.path.lexists(ancestor) and not os.path.isdir(ancestor):
        return _error(path, f"'{ancestor}' is not a directory")
    return _error(path, f"no such directory '{parent}'")


# files the kernel makes up: written in place (no file can be created there)
_KERNEL_FILES = ("/proc/", "/sys/")

# /proc/PID/fd/N (and /proc/PID/task/TID/fd/N): a link to a file some process
# has open, which /dev/stdout, /dev/fd/N and /proc/self/fd/N lead to
_OPEN_FILE_LINK = re.compile(r"/proc/([^/]+)/(?:task/[^/]+/)?fd/([0-9]+)")


def _open_file_link(path: str) -> tuple[int, int] | None:
    """(pid, fd) when ``path`` leads to a process's open file (``/dev/stdout``
    when stdout is redirected to a file): a rename would detach that file from
    the output, and truncating it would drop what was written to it before."""
    current = os.path.abspath(path)
    for _ in range(40):  # the kernel's own limit on a chain of links
        hop = os.path.join(os.path.realpath(os.path.dirname(current)), os.path.basename(current))
        match = _OPEN_FILE_LINK.fullmatch(hop)
        if match and match.group(1).isdigit():
            return int(match.group(1)), int(match.group(2))
        if not os.path.islink(hop):
            return None
        current = os.path.normpath(os.path.join(os.path.dirname(hop), os.readlink(hop)))
    return None


def plan_output(path: str) -> _Plan:
    """Check that ``path`` can be written and decide how (see the module doc).

    Raises a :class:`DiagnosticError` naming ``path`` when it cannot be: a
    directory, a missing directory, a symlink loop, no permission to look."""
    path = os.fspath(path)
    if not path:
        raise DiagnosticError("cannot write '': empty output path")
    try:
        st = os.stat(path)  # follows symlinks
    except FileNotFoundError:
        st = None
    except NotADirectoryError:
        err = _missing_parent(path, os.path.abspath(path))
        raise err or _error(path, "a component of the path is not a directory") from None
    except OSError as err:
        raise _error(path, _reason(err)) from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise _error(path, "is a directory")
    if st is not None and not stat.S_ISREG(st.st_mode):
        return _Plan(path, path, staged=False, mode=None)
    link = _open_file_link(path) if st is not None else None
    if link is not None:  # our own fd: written at its offset; another process's: appended
        own = link[0] == os.getpid()
        return _Plan(path, path, staged=False, mode=None, fd=link[1] if own else None, append=not own)
    target = os.path.realpath(path)
    if st is not None and target.startswith(_KERNEL_FILES):  # /proc/sys/...: echo's way
        return _Plan(path, path, staged=False, mode=None)
    if st is None and target.startswith("/proc/"):
        raise _error(path, "no such file (files cannot be created in /proc)")
    if st is None:
        err = _missing_parent(path, target)
        if err is not None:
            raise err
    return _Plan(path, target, staged=True, mode=None if st is None else stat.S_IMODE(st.st_mode))


def is_file_output(path: str) -> bool:
    """Whether ``path`` is (or becomes) a regular file put in place by a rename,
    rather than a device, FIFO or open file written through (where a sidecar
    such as ``PATH.weights.npz`` has no place to go)."""
    return plan_output(path).staged


def check_writable(path: str) -> None:
    """Fail now, before the work, when ``path`` cannot be an output (a directory,
    a missing directory): ``dlc compile -o DIR`` should not compile first."""
    plan_output(path)


def _temp_beside(target: str, path: str) -> str:
    """A fresh name beside ``target`` (its extension kept: linkers look at it),
    made as an empty file, which fails here (naming ``path``) when the directory
    cannot be written."""
    directory, name = os.path.split(target)
    _, ext = os.path.splitext(name)
    for _ in range(100):
        tmp = os.path.join(directory, f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp{ext}")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        except OSError as err:
            raise _error(path, _reason(err)) from None
        os.close(fd)
        return tmp
    raise _error(path, "cannot make a temporary file beside it")


class OutputSet:
    """Outputs of one command, published all or none (see the module doc).

    ``add*`` stage an output at once (a staged output's temporary file is
    written then); :meth:`commit` (the end of a ``with`` block without an
    exception) publishes them; :meth:`discard` (an exception) removes the
    temporary files. The same file twice is an error (a device such as
    /dev/null may be given several times)."""

    def __init__(self) -> None:
        # (plan, temporary file): staged outputs have theirs beside the target,
        # written-through ones in a private directory, copied at commit
        self._pending: list[tuple[_Plan, str]] = []
        self._private_dir: str | None = None
        self._done = False

    def __enter__(self) -> OutputSet:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.discard()

    # -- staging --------------------------------------------------------------

    def add(self, path: str, data: str | bytes) -> None:
        """Stage ``data`` (text is written as UTF-8) for ``path``."""
        payload = data.encode("utf-8") if isinstance(data, str) else data
        self.add_writer(path, lambda f: f.write(payload))

    def add_writer(self, path: str, write: Callable[[BinaryIO], object]) -> None:
        """Stage what ``write(file)`` writes to an open binary file for ``path``."""

        def produce(tmp: str) -> None:
            with open(tmp, "wb") as f:
                write(f)

        self.add_file(path, produce)

    def add_file(self, path: str, produce: Callable[[str], object]) -> None:
        """Stage the file ``produce(tmp)`` creates at the path ``tmp`` (e.g. a
        linker's ``-o tmp``) for ``path``."""
        if self._done:
            raise RuntimeError("OutputSet: already committed or discarded")
        plan = plan_output(path)
        if plan.staged and any(p.staged and p.target == plan.target for p, _ in self._pending):
            raise _error(path, "the same file is given as two outputs")
        tmp = _temp_beside(plan.target, path) if plan.staged else self._private_temp(path)
        # the name is reserved (and the directory known writable): the producer
        # makes the file itself, with its own mode (a linker's 0755 for a .so)
        os.unlink(tmp)
        self._pending.append((plan, tmp))
        try:
            produce(tmp)
        except OSError as err:  # e.g. the disk filled up: name the user's path
            self.discard()
            raise _error(path, _reason(err)) from None
        except BaseException:
            self.discard()
            raise
        if not os.path.isfile(tmp):
            self.discard()
            raise RuntimeError(f"OutputSet: nothing was written for '{path}'")

    def _private_temp(self, path: str) -> str:
        if self._private_dir is None:
            self._private_dir = tempfile.mkdtemp(prefix="dlc-output-")
        name = os.path.basename(path) or "output"
        tmp = os.path.join(self._private_dir, f"{len(self._pending)}.{name}")
        open(tmp, "wb").close()
        return tmp

    # -- publishing -----------------------------------------------------------

    def commit(self) -> None:
        """Publish every staged output: written-through ones first (copied from
        their temporary file), then the renames."""
        if self._done:
            return
        try:
            for plan, tmp in self._pending:
                if not plan.staged:
                    self._write_through(plan, tmp)
            for plan, tmp in self._pending:
                if plan.staged:
                    try:
                        if plan.mode is not None:  # an existing file keeps its permissions
                            os.chmod(tmp, plan.mode)
                        os.replace(tmp, plan.target)
                    except OSError as err:
                        raise _error(plan.path, _reason(err)) from None
        finally:
            self.discard()

    @staticmethod
    def _write_through(plan: _Plan, tmp: str) -> None:
        sys.stdout.flush()  # what this process printed comes first
        sys.stderr.flush()
        try:
            if plan.fd is not None:  # the same open file, at its offset, as print() would
                with open(tmp, "rb") as src, open(plan.fd, "wb", closefd=False) as dst:
                    shutil.copyfileobj(src, dst)
                return
            with open(tmp, "rb") as src, open(plan.target, "ab" if plan.append else "wb") as dst:
                shutil.copyfileobj(src, dst)
        except OSError as err:
            raise _error(plan.path, _reason(err)) from None

    def discard(self) -> None:
        """Remove every temporary file; publish nothing (more)."""
        self._done = True
        pending, self._pending = self._pending, []
        for _, tmp in pending:
            if os.path.lexists(tmp):
                os.unlink(tmp)
        if self._private_dir is not None:
            shutil.rmtree(self._private_dir)
            self._private_dir = None


def write_atomically(path: str, data: str | bytes) -> None:
    """Write one output ``path`` by the rule of this module: all of ``data`` or
    nothing for a file, written through to a device or FIFO."""
    with OutputSet() as out:
        out.add(path, data)


def publish_file(produce: Callable[[str], object], path: str) -> None:
    """The one output ``produce(tmp)`` writes at a temporary path, published at
    ``path`` (a linker's output, say)."""
    with OutputSet() as out:
        out.add_file(path, produce)
