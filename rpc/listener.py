"""A listening TCP socket that serves each connection on its own thread: what the RPC
server (rpc/server.py) and the tracker (rpc/tracker.py) share."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable

from dlc.rpc.protocol import RpcError


class Listener:
    """Bound and listening at construction (port 0: an ephemeral port, read back as
    ``port``); ``serve_forever(handle)`` calls ``handle(conn, addr)`` on a daemon thread
    per connection until ``shutdown``."""

    def __init__(self, host: str, port: int, backlog: int = 64):
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.sock.bind((host, port))
        except OSError as err:
            self.sock.close()
            raise RpcError(f"cannot listen on {host}:{port}: {err.strerror or err}") from None
        self.sock.listen(backlog)
        self.port = self.sock.getsockname()[1]
        self.stopped = threading.Event()

    def serve_forever(self, handle: Callable[[socket.socket, tuple], None]) -> None:
        while not self.stopped.is_set():
            try:
                conn, addr = self.sock.accept()
            except OSError:
                if self.stopped.is_set():
                    return  # shutdown closed the socket under accept()
                raise
            threading.Thread(target=handle, args=(conn, addr), daemon=True).start()

    def shutdown(self) -> None:
        self.stopped.set()
        self.sock.close()
