"""The RPC server: ``dlc rpc server`` (or ``python -m dlc.rpc server`` on a device
without xDSL). It runs code it receives, so it only takes it from who is allowed:

* it binds loopback unless told otherwise, and refuses a non-loopback bind
  without a token (rpc/auth.py: an HMAC challenge per connection);
* every connection is a session on its own thread with a private 0700 directory
  (rpc/session_files.py) removed when the session ends, however it ends;
* an upload announces its size first: more than ``max_upload`` is refused before
  a byte is read, and the data frame must carry exactly the announced size;
* each loaded model runs in its own worker process (rpc/worker_proxy.py): a
  crash or a hang (past ``timeout``) kills that worker, never the server;
* a connection that breaks the protocol (garbage, a truncated frame, an
  oversized header) gets one error frame and is closed; other sessions go on.

Requests (JSON headers, rpc/protocol.py): upload {name, size} then one
upload-data frame; load {name, num_threads} -> handle, entries; run / time
{handle, entry, arrays, repeat, number, min_repeat_ms}; free {handle};
download {name}; close.
"""

from __future__ import annotations

import os
import socket
import sys
import tempfile
import threading
from dataclasses import dataclass

from dlc.rpc.auth import check_proof, is_loopback, new_nonce
from dlc.rpc.listener import Listener
from dlc.rpc.protocol import (
    DEFAULT_MAX_PAYLOAD,
    Channel,
    ConnectionClosed,
    ProtocolError,
    RpcError,
    error_reply,
)
from dlc.rpc.session_files import SessionDir, check_name
from dlc.rpc.worker_proxy import Worker, WorkerDied

DEFAULT_PORT = 9090
DEFAULT_TIMEOUT = 60.0  # seconds per call (load, run, time) and per frame once it has started
IDLE_TIMEOUT = 600.0  # a session that sends nothing for this long is closed
MAX_SESSIONS = 64
MAX_MODELS_PER_SESSION = 16


@dataclass
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    key: str = "default"
    token: bytes | None = None
    tracker: tuple[str, int] | None = None
    max_upload: int = DEFAULT_MAX_PAYLOAD
    timeout: float = DEFAULT_TIMEOUT
    work_dir: str | None = None  # where session directories go (default: the system temp dir)
    idle_timeout: float = IDLE_TIMEOUT


def log(message: str) -> None:
    print(f"dlc rpc server: {message}", file=sys.stderr, flush=True)


class Server:
    def __init__(self, config: ServerConfig):
        if config.token is None and not is_loopback(config.host):
            raise RpcError(f"refusing to listen on non-loopback address '{config.host}' without a token "
                           "(pass --token-file; anyone who can connect could run code here)")
        if config.max_upload < 1:
            raise RpcError(f"max upload must be at least 1 byte, got {config.max_upload}")
        if not config.timeout > 0:
            raise RpcError(f"timeout must be positive, got {config.timeout}")
        self.config = config
        self.work_dir = config.work_dir or tempfile.gettempdir()
        if not os.path.isdir(self.work_dir):
            raise RpcError(f"work directory '{self.work_dir}' does not exist")
        self._listener = Listener(config.host, config.port)
        self.port = self._listener.port
        self._sessions = threading.BoundedSemaphore(MAX_SESSIONS)
        self._stop = self._listener.stopped

    def serve_forever(self) -> None:
        if self.config.tracker:
            from dlc.rpc.tracker import register_forever

            threading.Thread(target=register_forever, daemon=True,
                             args=(self.config.tracker, self.config.key, self.config.host, self.port,
                                   self._stop)).start()
        self._listener.serve_forever(self._session)

    def shutdown(self) -> None:
        self._listener.shutdown()

    # -- one connection --------------------------------------------------------

    def _session(self, conn: socket.socket, addr) -> None:
        peer = f"{addr[0]}:{addr[1]}"
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        channel = Channel(conn, max_payload=self.config.max_upload)
        if not self._sessions.acquire(blocking=False):
            self._refuse(channel, f"server busy: {MAX_SESSIONS} sessions already open")
            conn.close()
            return
        session: Session | None = None
        greeted = False  # our hello went out: a refusal then needs none
        try:
            channel.set_timeout(self.config.timeout)
            channel.expect_hello()
            channel.send_hello()
            greeted = True
            self._authenticate(channel)
            session = Session(self.config, SessionDir(self.work_dir), channel)
            session.serve()
        except ConnectionClosed as err:
            if err.partial:
                log(f"{peer}: {err}")
        except ProtocolError as err:
            log(f"{peer}: protocol error: {err}")
            self._refuse(channel, f"protocol error: {err}", greeted)
        except RpcError as err:  # authentication failed: the client was told
            log(f"{peer}: {err}")
        finally:
            if session is not None:
                session.end()
            conn.close()
            self._sessions.release()

    def _refuse(self, channel: Channel, message: str, greeted: bool = False) -> None:
        """Best effort: the peer may not speak the protocol or may be gone already."""
        try:
            channel.set_timeout(1.0)
            if not greeted:
                channel.send_hello()
            channel.send(error_reply(message))
        except (ProtocolError, OSError):
            pass  # nobody is listening: the connection closes anyway

    def _authenticate(self, channel: Channel) -> None:
        token = self.config.token
        nonce = new_nonce() if token else b""
        channel.send({"op": "hello", "auth": token is not None, "nonce": nonce.hex(), "key": self.config.key})
        header, payload = channel.recv(timeout=self.config.timeout, idle_timeout=self.config.timeout)
        if header.get("op") != "auth" or payload:
            raise ProtocolError("expected an auth request after the handshake")
        if token is not None and not check_proof(token, nonce, header.get("hmac")):
            channel.send(error_reply("authentication failed: wrong or missing token"))
            raise RpcError("authentication failed")
        channel.send({"ok": True})


class Session:
    """One client's uploads and loaded models."""

    def __init__(self, config: ServerConfig, files: SessionDir, channel: Channel):
        self.config, self.files, self.channel = config, files, channel
        self.models: dict[int, Worker] = {}
        self._next_handle = 1

    def serve(self) -> None:
        handlers = {"upload": self._upload, "load": self._load, "run": self._forward, "time": self._forward,
                    "free": self._free, "download": self._download}
        while True:
            header, size = self.channel.recv_header(idle_timeout=self.config.idle_timeout,
                                                    timeout=self.config.timeout)
            op = header.get("op")
            if op == "close":
                self.channel.recv_payload(size)
                self.channel.send({"ok": True})
                return
            if not isinstance(op, str) or op not in handlers:  # (a list is unhashable)
                self.channel.recv_payload(size)
                self.channel.send(error_reply(f"unknown request {op!r}"))
                continue
            try:
                reply, payload = handlers[op](header, size)
            except ProtocolError:
                raise
            except RpcError as err:
                reply, payload = error_reply(str(err)), b""
            except OSError as err:  # the server's own disk or process table (full, limits)
                log(f"{op}: {err}")
                reply, payload = error_reply(f"{op}: server error: {err.strerror or err}"), b""
            self.channel.send(reply, payload)

    def _upload(self, header: dict, size: int):
        self.channel.recv_payload(size)
        name, length = header.get("name"), header.get("size")
        if isinstance(length, bool) or not isinstance(length, int) or length < 0:
            raise RpcError(f"upload: size must be a non-negative integer, got {length!r}")
        check_name(name)
        if length > self.config.max_upload:
            raise RpcError(f"upload '{name}': {length} bytes exceeds the server's limit of "
                           f"{self.config.max_upload} bytes (--max-upload)")
        self.channel.send({"ok": True, "ready": True})

        def write_into(f):
            data_header, data_size = self.channel.recv_header(timeout=self.config.timeout,
                                                              idle_timeout=self.config.timeout)
            if data_header.get("op") != "upload-data" or data_size != length:
                raise ProtocolError(f"upload '{name}': expected an upload-data frame of {length} bytes, "
                                    f"got {data_header.get('op')!r} with {data_size}")
            self.channel.stream_payload(data_size, f)

        try:
            self.files.receive(name, length, write_into)
        except OSError as err:  # disk full mid-stream: the rest of the frame is unread, so the connection ends
            raise ProtocolError(f"upload '{name}': the server cannot store it ({err.strerror or err})") from None
        return {"ok": True, "size": length}, b""

    def _load(self, header: dict, size: int):
        self.channel.recv_payload(size)
        path = self.files.file(header.get("name"))
        threads = header.get("num_threads")
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int)):
            raise RpcError(f"load: num_threads must be an integer, got {threads!r}")
        if len(self.models) >= MAX_MODELS_PER_SESSION:
            raise RpcError(f"load: {MAX_MODELS_PER_SESSION} models are loaded in this session already "
                           "(free one first)")
        try:
            worker = Worker(path, threads, self.config.timeout, cwd=self.files.path)
        except WorkerDied as err:  # a library whose constructor crashes or hangs
            raise RpcError(f"load '{header.get('name')}': {err}") from None
        reply = worker.load_reply
        if not reply.get("ok"):
            worker.close()
            raise RpcError(f"load '{header.get('name')}': {reply.get('error')}")
        handle = self._next_handle
        self._next_handle += 1
        self.models[handle] = worker
        return {**reply, "handle": handle}, b""

    def _worker(self, header: dict) -> Worker:
        handle = header.get("handle")
        if not isinstance(handle, int) or isinstance(handle, bool) or handle not in self.models:
            raise RpcError(f"no loaded model with handle {handle!r} in this session")
        return self.models[handle]

    def _forward(self, header: dict, size: int):
        payload = self.channel.recv_payload(size)
        worker = self._worker(header)
        request = {k: header[k] for k in ("op", "entry", "arrays", "repeat", "number", "min_repeat_ms")
                   if k in header}
        try:
            return worker.call(request, payload, header["op"])
        except WorkerDied as err:
            raise RpcError(str(err)) from None

    def _free(self, header: dict, size: int):
        self.channel.recv_payload(size)
        self._worker(header)
        self.models.pop(header["handle"]).close()
        return {"ok": True}, b""

    def _download(self, header: dict, size: int):
        self.channel.recv_payload(size)
        path = self.files.file(header.get("name"))
        with open(path, "rb") as f:
            data = f.read()
        return {"ok": True, "size": len(data)}, data

    def end(self) -> None:
        for worker in self.models.values():
            worker.close()
        self.models.clear()
        self.files.remove()

