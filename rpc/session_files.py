"""A session's private directory on the server: uploads under checked names.

Each session gets ``mkdtemp`` (mode 0700) under the server's work directory.
An upload name must be a plain file name: 1 to ``MAX_NAME`` characters of
letters, digits, ``.``, ``_``, ``-``, not starting with ``.`` (so no ``..``, no
hidden files, no ``/``, no NUL, nothing absolute). A bad name is refused with
the reason, never silently renamed. An upload streams into a temporary
``.part-*`` file in the same directory and is renamed into place only when
every announced byte has arrived; if the connection breaks, the part file is
removed at once, and the whole directory when the session ends, however it ends.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile

from dlc.rpc.protocol import RpcError

MAX_NAME = 128
_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")


def check_name(name) -> str:
    """``name`` if it is an acceptable file name, else RpcError saying why."""
    if not isinstance(name, str) or not name:
        raise RpcError(f"file name {name!r}: expected a non-empty string")
    shown = repr(name) if len(name) <= 60 else repr(name[:60]) + "..."
    if "\x00" in name:
        raise RpcError(f"file name {shown}: contains a NUL byte")
    if name.startswith("/"):
        raise RpcError(f"file name {shown}: absolute paths are not allowed (give a plain file name)")
    if "/" in name or "\\" in name:
        raise RpcError(f"file name {shown}: contains a path separator (give a plain file name)")
    if name in (".", ".."):
        raise RpcError(f"file name {shown}: '.' and '..' are not file names")
    if len(name) > MAX_NAME:
        raise RpcError(f"file name {shown}: {len(name)} characters, at most {MAX_NAME}")
    if not _NAME.fullmatch(name):
        raise RpcError(f"file name {shown}: only letters, digits, '.', '_' and '-' are allowed, "
                       "and it must not start with '.'")
    return name


class SessionDir:
    def __init__(self, root: str):
        self.path = tempfile.mkdtemp(prefix="session-", dir=root)  # 0700

    def file(self, name) -> str:
        """Path of the existing session file ``name``."""
        path = os.path.join(self.path, check_name(name))
        if not os.path.isfile(path):
            raise RpcError(f"no uploaded file named '{name}' in this session")
        return path

    def receive(self, name: str, size: int, write_into) -> str:
        """Store an upload: ``write_into(f)`` writes exactly ``size`` bytes to the
        part file (it raises on a broken connection, and then nothing stays)."""
        final = os.path.join(self.path, check_name(name))
        fd, part = tempfile.mkstemp(prefix=".part-", dir=self.path)
        try:
            with os.fdopen(fd, "wb") as f:
                write_into(f)
                if f.tell() != size:
                    raise RpcError(f"upload '{name}': got {f.tell()} bytes, announced {size}")
            os.replace(part, final)
        except BaseException:
            os.unlink(part)
            raise
        return final

    def remove(self) -> None:
        try:
            shutil.rmtree(self.path)
        except FileNotFoundError:
            pass  # already gone (a second close)
