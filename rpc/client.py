"""The host side of dlc RPC: ``dlc.rpc.connect(host, port, token=...)``.

    with dlc.rpc.connect("127.0.0.1", 9090, token=b"...") as remote:
        remote.upload("model.so")
        model = remote.load("model.so")
        (y,) = model(x)
        timing = model.time_evaluator(x, repeat=10, number=5)   # measured on the server
        print(timing.median, timing.spread)

A session is one TCP connection; its calls are serialized (a lock), so one
session may be shared by threads, but concurrent work wants one session each.
"""

from __future__ import annotations

import os
import socket
import threading

import numpy as np

from dlc.rpc.auth import proof, token_from
from dlc.rpc.protocol import (
    Channel,
    ProtocolError,
    RpcError,
    check_reply,
    decode_arrays,
    encode_arrays,
    specs_from_wire,
)
from dlc.rpc.timing import TimingResult, check_timing_args

DEFAULT_TIMEOUT = 120.0  # seconds to wait for any reply (the server has its own per-call limit)
CLIENT_MAX_PAYLOAD = 1 << 40  # replies: outputs and downloads the client asked for


def connect(host: str, port: int, token: bytes | str | None = None, timeout: float = DEFAULT_TIMEOUT,
            token_file: str | None = None) -> "RpcSession":
    """A session on the server at ``host:port``; RpcError when it cannot connect,
    the peer is no dlc server, or the token is wrong or missing."""
    secret = token_from(token, token_file)
    try:
        sock = socket.create_connection((host, int(port)), timeout=timeout)
    except OSError as err:
        raise RpcError(f"cannot connect to {host}:{port}: {err.strerror or err}") from None
    try:
        return RpcSession(sock, secret, timeout, f"{host}:{port}")
    except BaseException:
        sock.close()
        raise


def connect_via_tracker(tracker_host: str, tracker_port: int, key: str, token: bytes | str | None = None,
                        timeout: float = DEFAULT_TIMEOUT, token_file: str | None = None,
                        wait_timeout: float | None = None) -> "RpcSession":
    """A session on a free server with ``key`` from the tracker's pool, waiting in
    its FIFO queue (up to ``wait_timeout`` s). The server stays reserved for this
    session until ``close()`` (rpc/tracker.py)."""
    from dlc.rpc.tracker import request_server

    secret = token_from(token, token_file)
    host, port, lease = request_server((tracker_host, int(tracker_port)), key, wait_timeout)
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
        return RpcSession(sock, secret, timeout, f"{host}:{port}", lease=lease)
    except OSError as err:
        lease.close()
        raise RpcError(f"cannot connect to {host}:{port} (from the tracker): {err.strerror or err}") from None
    except BaseException:
        lease.close()
        raise


class RpcSession:
    def __init__(self, sock: socket.socket, token: bytes | None, timeout: float, where: str,
                 lease: object | None = None):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.where = where
        self._sock = sock
        self._lease = lease  # a tracker lease: closed with the session, which frees the server
        self._lock = threading.Lock()
        self._channel = Channel(sock, max_payload=CLIENT_MAX_PAYLOAD)
        self._timeout = timeout
        self._closed = False
        self._channel.set_timeout(timeout)
        self._channel.send_hello()
        try:
            self._channel.expect_hello()
            hello, _ = self._channel.recv(timeout=timeout, idle_timeout=timeout)
        except ProtocolError as err:
            raise RpcError(f"handshake: {err}") from None
        if hello.get("ok") is False:  # a refusal (server busy) instead of the hello
            check_reply(hello, "connect")
        if hello.get("auth") and token is None:
            raise RpcError("the server requires a token (pass token= or --rpc-token-file)")
        answer = None
        if hello.get("auth"):
            try:
                answer = proof(token, bytes.fromhex(hello.get("nonce")))
            except (TypeError, ValueError):
                raise RpcError("handshake: the server sent a malformed challenge") from None
        self._request({"op": "auth", "hmac": answer}, what="connect")
        self.key = hello.get("key")

    # -- plumbing --------------------------------------------------------------

    def _request(self, header: dict, payload=b"", what: str = "request") -> tuple[dict, bytes]:
        if self._closed:
            raise RpcError("the session is closed")
        try:
            self._channel.send(header, payload)
            reply, data = self._channel.recv(timeout=self._timeout, idle_timeout=self._timeout)
        except ProtocolError as err:
            self._drop()
            raise RpcError(f"{what}: {err}") from None
        return check_reply(reply, what), data

    def _drop(self) -> None:
        self._closed = True
        self._sock.close()
        if self._lease is not None:
            self._lease.close()

    # -- API -------------------------------------------------------------------

    def upload(self, local_path: str, name: str | None = None) -> str:
        """Send a file; it is stored in the session's directory as ``name`` (default:
        the file's base name). Returns the name."""
        name = os.path.basename(local_path) if name is None else name
        try:
            f = open(local_path, "rb")
        except OSError as err:
            raise RpcError(f"cannot read '{local_path}': {err.strerror or err}") from None
        with self._lock, f:
            size = os.fstat(f.fileno()).st_size
            self._request({"op": "upload", "name": name, "size": size}, what=f"upload '{name}'")
            try:
                self._channel.send_file({"op": "upload-data"}, size, f)
                reply, _ = self._channel.recv(timeout=self._timeout, idle_timeout=self._timeout)
            except ProtocolError as err:
                self._drop()
                raise RpcError(f"upload '{name}': {err}") from None
            check_reply(reply, f"upload '{name}'")
        return name

    def download(self, name: str, local_path: str | None = None) -> bytes:
        """The bytes of the session file ``name`` (also written to ``local_path`` if given)."""
        with self._lock:
            _, data = self._request({"op": "download", "name": name}, what=f"download '{name}'")
        if local_path is not None:
            with open(local_path, "wb") as f:
                f.write(data)
        return data

    def load(self, name: str, num_threads: int | None = None) -> "RemoteModule":
        """Load an uploaded model in a fresh worker process on the server."""
        with self._lock:
            reply, _ = self._request({"op": "load", "name": name, "num_threads": num_threads},
                                     what=f"load '{name}'")
        return RemoteModule(self, reply, name)

    def close(self) -> None:
        """End the session: the server removes its files and workers."""
        if self._closed:
            return
        with self._lock:
            try:
                self._channel.send({"op": "close"})
                self._channel.recv(timeout=self._timeout, idle_timeout=self._timeout)
            except ProtocolError:
                pass  # the server went first: the session is over either way
            finally:
                self._drop()

    def __enter__(self) -> "RpcSession":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class RemoteModule:
    """A model loaded on the server, called like a ``dlc.runtime`` NativeModule."""

    def __init__(self, session: RpcSession, reply: dict, name: str):
        self._session = session
        self.name = name
        self.handle = reply["handle"]
        self.default_entry = reply["default_entry"]
        self.entries = {e: (specs_from_wire(s["inputs"]), specs_from_wire(s["outputs"]))
                        for e, s in reply["entries"].items()}

    @property
    def input_specs(self):
        return list(self.entries[self.default_entry][0])

    @property
    def output_specs(self):
        return list(self.entries[self.default_entry][1])

    def _arrays(self, entry: str, arrays) -> tuple[list[dict], list]:
        if entry not in self.entries:
            raise RpcError(f"no entry point named @{entry} in '{self.name}' (have {', '.join(self.entries)})")
        specs = self.entries[entry][0]
        if len(arrays) != len(specs):
            raise RpcError(f"@{entry} takes {len(specs)} inputs ({', '.join(n for n, _, _ in specs)}), "
                           f"got {len(arrays)}")
        for value, (name, shape, dtype) in zip(arrays, specs):
            a = np.asarray(value)
            if a.shape != shape or a.dtype != dtype:
                raise RpcError(f"@{entry}: input '{name}' is {a.dtype}{list(a.shape)}, expected {dtype}{list(shape)}")
        return encode_arrays(arrays)

    def run(self, entry: str, *arrays) -> list[np.ndarray]:
        entries, buffers = self._arrays(entry, arrays)
        with self._session._lock:
            reply, data = self._session._request({"op": "run", "handle": self.handle, "entry": entry,
                                                  "arrays": entries}, buffers, what=f"run @{entry}")
        try:
            return decode_arrays(reply.get("arrays"), data)
        except ProtocolError as err:
            raise RpcError(f"run @{entry}: malformed outputs from the server: {err}") from None

    def __call__(self, *arrays) -> list[np.ndarray]:
        return self.run(self.default_entry, *arrays)

    def time_evaluator(self, *arrays, repeat: int = 3, number: int = 1, min_repeat_ms: float = 0,
                       entry: str | None = None) -> TimingResult:
        """Time the call on the server, in the worker, around the native call
        (rpc/timing.py): seconds per call, one sample per repeat."""
        entry = entry or self.default_entry
        try:
            check_timing_args(repeat, number, min_repeat_ms)
        except ValueError as err:
            raise RpcError(f"time_evaluator: {err}") from None
        entries, buffers = self._arrays(entry, arrays)
        with self._session._lock:
            reply, _ = self._session._request(
                {"op": "time", "handle": self.handle, "entry": entry, "arrays": entries, "repeat": repeat,
                 "number": number, "min_repeat_ms": min_repeat_ms}, buffers, what=f"time @{entry}")
        samples = reply.get("samples")
        if not isinstance(samples, list) or not samples or not all(isinstance(s, (int, float)) for s in samples):
            raise RpcError(f"time @{entry}: malformed timing reply from the server")
        return TimingResult([float(s) for s in samples], int(reply.get("number", number)))

    def free(self) -> None:
        """Stop this model's worker on the server."""
        with self._session._lock:
            self._session._request({"op": "free", "handle": self.handle}, what=f"free '{self.name}'")
