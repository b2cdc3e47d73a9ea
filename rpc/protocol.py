"""The dlc RPC wire format: a handshake, then length-prefixed frames of a JSON
header plus raw payload bytes. Nothing received is unpickled or evaluated.

Handshake: each side first sends ``HELLO`` = ``b"DLCRPC"`` + u16 little-endian
protocol version. A peer whose first 8 bytes differ gets one error frame and is
disconnected (garbage bytes, an HTTP request, another version).

Frame: ``<u32 header length><u64 payload length>`` (little-endian), the header
(UTF-8 JSON object, at most ``MAX_HEADER`` bytes), then the payload (at most the
reader's ``max_payload``; both limits are checked before anything is read or
allocated). Replies carry ``"ok": true`` or ``"ok": false, "error": "..."``.

Arrays travel as ``{"dtype": name, "shape": [...], "nbytes": n}`` entries in the
header's ``"arrays"`` list, their raw little-endian C-order bytes concatenated in
the payload. ``decode_arrays`` checks every entry: a dtype from ``DTYPES``, at most
``MAX_DIMS`` non-negative int dims, ``nbytes == prod(shape) * itemsize``, and the
byte counts adding up to the payload length exactly.

Any violation is a ``ProtocolError`` for that connection only; the server closes
it and keeps serving others. numpy + the standard library only (no xDSL).
"""

from __future__ import annotations

import json
import math
import socket
import struct
from typing import BinaryIO

import numpy as np

MAGIC = b"DLCRPC"
VERSION = 1
HELLO = MAGIC + struct.pack("<H", VERSION)
FRAME = struct.Struct("<IQ")  # header length, payload length
MAX_HEADER = 64 << 10  # a header is a small JSON object: names, specs, options
MAX_DIMS = 32
MAX_ARRAYS = 1024
DEFAULT_MAX_PAYLOAD = 1 << 30  # per frame; the server's --max-upload overrides it
CHUNK = 1 << 20  # uploads and downloads are streamed in pieces of this size

# element types that travel over the wire (numpy names, all fixed-size, no objects)
DTYPES = frozenset({"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                    "uint64", "float16", "float32", "float64"})


class RpcError(Exception):
    """A remote operation failed (the message is the server's or the client's reason)."""


class ProtocolError(RpcError):
    """The peer broke the wire format: the connection cannot continue."""


class ConnectionClosed(ProtocolError):
    """The peer closed the connection (``partial``: in the middle of a frame)."""

    def __init__(self, message: str, partial: bool = False):
        super().__init__(message)
        self.partial = partial


# ---------------------------------------------------------------------------
# byte streams: a socket or a pipe
# ---------------------------------------------------------------------------


class Channel:
    """Frames over a socket or a pair of binary pipes (the worker's stdin/stdout)."""

    def __init__(self, reader, writer=None, max_payload: int = DEFAULT_MAX_PAYLOAD):
        self._sock = reader if isinstance(reader, socket.socket) else None
        self._reader: BinaryIO | None = None if self._sock else reader
        self._writer = writer if writer is not None else reader
        self.max_payload = max_payload

    # -- raw bytes -----------------------------------------------------------

    def read_exact(self, n: int, what: str, started: bool = True) -> bytes:
        """``n`` bytes; ``ConnectionClosed`` on EOF (``partial`` if some came or
        the frame had ``started``)."""
        parts, got = [], 0
        while got < n:
            try:
                chunk = self._sock.recv(min(n - got, CHUNK)) if self._sock else self._reader.read1(min(n - got, CHUNK))
            except socket.timeout:
                raise ProtocolError(f"timed out waiting for {what}") from None
            except (ConnectionResetError, BrokenPipeError) as err:
                raise ConnectionClosed(f"connection lost while reading {what} ({err.strerror})",
                                       partial=started or got > 0) from None
            if not chunk:
                partial = started or got > 0
                raise ConnectionClosed(f"connection closed in the middle of {what} "
                                       f"({got} of {n} bytes)" if partial else "connection closed",
                                       partial=partial)
            parts.append(chunk)
            got += len(chunk)
        return b"".join(parts)

    def write(self, data: bytes | memoryview) -> None:
        try:
            if self._sock:
                self._sock.sendall(data)
            else:
                self._writer.write(data)
                self._writer.flush()
        except (ConnectionResetError, BrokenPipeError, socket.timeout) as err:
            raise ConnectionClosed(f"connection lost while sending ({err})", partial=True) from None

    def set_timeout(self, seconds: float | None) -> None:
        if self._sock:
            self._sock.settimeout(seconds)

    # -- handshake -----------------------------------------------------------

    def send_hello(self) -> None:
        self.write(HELLO)

    def expect_hello(self) -> None:
        got = self.read_exact(len(HELLO), "the handshake", started=False)
        if got[:len(MAGIC)] != MAGIC:
            raise ProtocolError(f"not a dlc RPC peer (handshake bytes {got!r}, expected {HELLO!r})")
        version = struct.unpack("<H", got[len(MAGIC):])[0]
        if version != VERSION:
            raise ProtocolError(f"protocol version {version}, this side speaks {VERSION}")

    # -- frames --------------------------------------------------------------

    def send(self, header: dict, payload: bytes | memoryview | list = b"") -> None:
        """One frame; ``payload`` may be a list of buffers sent back to back."""
        parts = payload if isinstance(payload, list) else [payload]
        text = json.dumps(header, separators=(",", ":")).encode()
        if len(text) > MAX_HEADER:
            raise ProtocolError(f"header of {len(text)} bytes exceeds the {MAX_HEADER}-byte limit")
        size = sum(memoryview(p).nbytes for p in parts)
        self.write(FRAME.pack(len(text), size) + text)
        for part in parts:
            if memoryview(part).nbytes:
                self.write(memoryview(part).cast("B"))

    def send_file(self, header: dict, size: int, f: BinaryIO) -> None:
        """One frame whose payload is ``size`` bytes of ``f``, sent a chunk at a time."""
        text = json.dumps(header, separators=(",", ":")).encode()
        self.write(FRAME.pack(len(text), size) + text)
        left = size
        while left:
            chunk = f.read(min(left, CHUNK))
            if not chunk:
                raise RpcError(f"the file shrank while being sent ({size - left} of {size} bytes)")
            self.write(chunk)
            left -= len(chunk)

    def recv_header(self, idle_timeout: float | None = None, timeout: float | None = None) -> tuple[dict, int]:
        """(header, payload length) of the next frame; the payload is still unread
        (``recv_payload`` or ``stream_payload`` must follow)."""
        self.set_timeout(idle_timeout)
        prefix = self.read_exact(FRAME.size, "a frame", started=False)
        self.set_timeout(timeout)
        header_len, payload_len = FRAME.unpack(prefix)
        if header_len > MAX_HEADER:
            raise ProtocolError(f"frame header of {header_len} bytes exceeds the {MAX_HEADER}-byte limit")
        if payload_len > self.max_payload:
            raise ProtocolError(f"frame payload of {payload_len} bytes exceeds the "
                                f"{self.max_payload}-byte limit")
        raw = self.read_exact(header_len, "a frame header")
        try:
            header = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as err:
            raise ProtocolError(f"frame header is not UTF-8 JSON ({err})") from None
        if not isinstance(header, dict):
            raise ProtocolError(f"frame header is a JSON {type(header).__name__}, expected an object")
        return header, payload_len

    def recv_payload(self, n: int) -> bytes:
        return self.read_exact(n, "a frame payload") if n else b""

    def stream_payload(self, n: int, out: BinaryIO) -> None:
        """Copy ``n`` payload bytes to ``out`` a chunk at a time (never all in memory)."""
        left = n
        while left:
            chunk = self.read_exact(min(left, CHUNK), f"an upload ({n - left} of {n} bytes received)")
            out.write(chunk)
            left -= len(chunk)

    def recv(self, idle_timeout: float | None = None, timeout: float | None = None) -> tuple[dict, bytes]:
        header, n = self.recv_header(idle_timeout, timeout)
        return header, self.recv_payload(n)


# ---------------------------------------------------------------------------
# arrays
# ---------------------------------------------------------------------------


def encode_arrays(arrays) -> tuple[list[dict], list]:
    """(header entries, payload buffers) for ``arrays``: little-endian C order."""
    entries, buffers = [], []
    for array in arrays:
        a = np.asarray(array)
        if a.dtype.name not in DTYPES:
            raise RpcError(f"arrays of dtype {a.dtype} cannot be sent (supported: {', '.join(sorted(DTYPES))})")
        if a.ndim > MAX_DIMS:
            raise RpcError(f"an array of {a.ndim} dims cannot be sent (at most {MAX_DIMS})")
        a = np.asarray(a, dtype=a.dtype.newbyteorder("<"), order="C")  # ascontiguousarray makes 0-d 1-d
        entries.append({"dtype": a.dtype.name, "shape": list(a.shape), "nbytes": a.nbytes})
        buffers.append(a.reshape(-1).view(np.uint8) if a.nbytes else b"")
    if len(entries) > MAX_ARRAYS:
        raise RpcError(f"{len(entries)} arrays in one call (at most {MAX_ARRAYS})")
    return entries, buffers


def decode_arrays(entries, payload: bytes) -> list[np.ndarray]:
    """Arrays described by header ``entries`` over ``payload``; ``ProtocolError``
    naming the first entry that breaks a rule (see the module docstring)."""
    if not isinstance(entries, list) or len(entries) > MAX_ARRAYS:
        raise ProtocolError(f"'arrays' must be a list of at most {MAX_ARRAYS} entries")
    arrays, offset = [], 0
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ProtocolError(f"array {i}: expected an object with dtype, shape and nbytes")
        dtype, shape, nbytes = entry.get("dtype"), entry.get("shape"), entry.get("nbytes")
        if dtype not in DTYPES:
            raise ProtocolError(f"array {i}: unknown dtype {dtype!r} (supported: {', '.join(sorted(DTYPES))})")
        if not isinstance(shape, list) or len(shape) > MAX_DIMS or not all(
                isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
            raise ProtocolError(f"array {i}: shape must be a list of at most {MAX_DIMS} non-negative integers, "
                                f"got {shape!r}")
        dt = np.dtype(dtype).newbyteorder("<")
        expected = math.prod(shape) * dt.itemsize
        if not isinstance(nbytes, int) or isinstance(nbytes, bool) or nbytes != expected:
            raise ProtocolError(f"array {i}: nbytes {nbytes!r} does not match shape {shape} {dtype} "
                                f"({expected} bytes)")
        if offset + nbytes > len(payload):
            raise ProtocolError(f"array {i}: {nbytes} bytes announced, only {len(payload) - offset} left "
                                "in the payload")
        flat = np.frombuffer(payload, dtype=dt, count=math.prod(shape), offset=offset)
        arrays.append(flat.reshape(tuple(shape)).astype(dt.newbyteorder("="), copy=True))
        offset += nbytes
    if offset != len(payload):
        raise ProtocolError(f"payload has {len(payload) - offset} bytes beyond the arrays it describes")
    return arrays


def specs_to_wire(specs) -> list[dict]:
    return [{"name": n, "shape": list(s), "dtype": np.dtype(d).name} for n, s, d in specs]


def specs_from_wire(items) -> list[tuple[str, tuple[int, ...], np.dtype]]:
    try:
        return [(str(d["name"]), tuple(int(x) for x in d["shape"]), np.dtype(d["dtype"])) for d in items]
    except (KeyError, TypeError, ValueError) as err:
        raise ProtocolError(f"malformed model specs from the peer ({err})") from None


def error_reply(message: str) -> dict:
    return {"ok": False, "error": message}


def check_reply(header: dict, what: str) -> dict:
    """``header`` when it says ok, else ``RpcError`` with the peer's reason."""
    if header.get("ok") is True:
        return header
    raise RpcError(f"{what}: {header.get('error') or 'the server gave no reason'}")
