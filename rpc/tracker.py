"""The tracker: a pool of RPC servers by key, handed one at a time to clients in
FIFO order (TVM's rpc_tracker). ``dlc rpc tracker [--host] [--port]``;
``dlc rpc tracker --list`` or ``dlc.rpc.tracker_status()`` shows the pool.

* A server (``dlc rpc server --tracker HOST:PORT --key K``) keeps one connection
  open to the tracker while it lives: ``register`` {key, host, port}. When that
  connection closes the server leaves the pool. If the tracker goes away the
  server reconnects and registers again every ``RETRY_S`` seconds, so a
  restarted tracker fills up again by itself.
* A client sends ``request`` {key} and waits in that key's queue until it is
  first and a server with that key is free; the reply is that server's
  address. The server stays busy, for the tracker, until the client closes
  this request connection: ``RpcSession.close()`` does it, and so does the
  client's death (the socket closes), so a crashed client never leaks a device.
* ``status`` returns the servers (key, address, busy) and the queue lengths.

Same frames as the server (rpc/protocol.py). The tracker runs no code and holds
no files; it binds loopback by default. It does not authenticate: anyone who can
reach it could register a server or take one from the pool (the servers'
tokens still guard the devices themselves), so bind it only where the clients
and servers are trusted.
"""

from __future__ import annotations

import itertools
import select
import socket
import sys
import threading
from collections import deque

from dlc.rpc.listener import Listener
from dlc.rpc.protocol import Channel, ConnectionClosed, ProtocolError, RpcError, check_reply, error_reply

DEFAULT_TRACKER_PORT = 9190
RETRY_S = 1.0
POLL_S = 0.2  # how often a queued request checks that its client is still there


def log(message: str) -> None:
    print(f"dlc rpc tracker: {message}", file=sys.stderr, flush=True)


def _closed(sock: socket.socket) -> bool:
    """True when the peer closed ``sock`` (or broke it); never consumes data."""
    readable, _, _ = select.select([sock], [], [], 0)
    if not readable:
        return False
    try:
        return sock.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


class Tracker:
    def __init__(self, host: str = "127.0.0.1", port: int = DEFAULT_TRACKER_PORT):
        self._listener = Listener(host, port)
        self.host, self.port = host, self._listener.port
        self._cond = threading.Condition()
        self._servers: list[dict] = []  # {"key", "host", "port", "busy", "id"}
        self._queues: dict[str, deque] = {}
        self._ids = itertools.count(1)
        self._stop = self._listener.stopped

    def serve_forever(self) -> None:
        self._listener.serve_forever(self._connection)

    def shutdown(self) -> None:
        self._listener.shutdown()

    def _connection(self, conn: socket.socket, addr) -> None:
        channel = Channel(conn, max_payload=0)
        try:
            channel.set_timeout(30)
            channel.expect_hello()
            channel.send_hello()
            header, _ = channel.recv(timeout=30, idle_timeout=30)
            op = header.get("op")
            if op == "register":
                self._register(channel, conn, addr, header)
            elif op == "request":
                self._request(channel, conn, header)
            elif op == "status":
                channel.send({"ok": True, **self.status()})
            else:
                channel.send(error_reply(f"unknown tracker request {op!r}"))
        except ConnectionClosed:
            pass  # the peer left: what it held was released by the handler's finally
        except ProtocolError as err:
            log(f"{addr[0]}:{addr[1]}: protocol error: {err}")
            try:
                channel.send(error_reply(f"protocol error: {err}"))
            except ProtocolError:
                pass  # the peer is gone
        finally:
            conn.close()

    def status(self) -> dict:
        with self._cond:
            return {"servers": [{k: s[k] for k in ("key", "host", "port", "busy")} for s in self._servers],
                    "queue": {key: len(q) for key, q in self._queues.items() if q}}

    def _register(self, channel: Channel, conn: socket.socket, addr, header: dict) -> None:
        key, host, port = header.get("key"), header.get("host"), header.get("port")
        if not isinstance(key, str) or not key or not isinstance(port, int) or not 0 < port < 65536:
            channel.send(error_reply("register needs a key and a port"))
            return
        if not isinstance(host, str) or host in ("", "0.0.0.0", "::"):
            host = addr[0]  # a wildcard bind: clients reach it where the tracker saw it
        record = {"key": key, "host": host, "port": port, "busy": False, "id": next(self._ids)}
        with self._cond:
            self._servers.append(record)
            self._cond.notify_all()
        log(f"server {host}:{port} registered with key '{key}'")
        try:
            channel.send({"ok": True})
            conn.settimeout(None)
            while conn.recv(4096):  # nothing is expected: wait for the server to go away
                pass
        except OSError:
            pass  # a reset connection: the server is gone
        finally:
            with self._cond:
                self._servers.remove(record)
                self._cond.notify_all()
            log(f"server {host}:{port} (key '{key}') left the pool")

    def _request(self, channel: Channel, conn: socket.socket, header: dict) -> None:
        key = header.get("key")
        if not isinstance(key, str) or not key:
            channel.send(error_reply("request needs a key"))
            return
        ticket = object()
        server = None
        with self._cond:
            queue = self._queues.setdefault(key, deque())
            queue.append(ticket)
            try:
                while True:
                    if queue[0] is ticket:
                        server = next((s for s in self._servers if s["key"] == key and not s["busy"]), None)
                        if server is not None:
                            server["busy"] = True
                            break
                    self._cond.wait(POLL_S)
                    if _closed(conn):
                        return  # gave up waiting (the finally leaves the queue)
            finally:
                queue.remove(ticket)
                self._cond.notify_all()
        try:
            channel.send({"ok": True, "host": server["host"], "port": server["port"]})
            conn.settimeout(None)
            while conn.recv(4096):  # the lease lasts as long as this connection
                pass
        except (OSError, ProtocolError):
            pass  # the client is gone: so is its lease
        finally:
            with self._cond:
                server["busy"] = False
                self._cond.notify_all()


# ---------------------------------------------------------------------------
# the other ends: servers registering, clients asking
# ---------------------------------------------------------------------------


def _open(tracker: tuple[str, int], timeout: float | None) -> tuple[socket.socket, Channel]:
    host, port = tracker
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except OSError as err:
        raise RpcError(f"cannot connect to the tracker at {host}:{port}: {err.strerror or err}") from None
    channel = Channel(sock, max_payload=1 << 20)
    try:
        channel.send_hello()
        channel.expect_hello()
    except ProtocolError as err:
        sock.close()
        raise RpcError(f"tracker {host}:{port}: {err}") from None
    return sock, channel


def register_forever(tracker: tuple[str, int], key: str, host: str, port: int, stop: threading.Event) -> None:
    """A server's registration: connect, register, hold the connection; again after
    ``RETRY_S`` whenever the tracker is unreachable or restarts."""
    warned = False
    while not stop.is_set():
        try:
            sock, channel = _open(tracker, timeout=10)
            try:
                channel.send({"op": "register", "key": key, "host": host, "port": port})
                check_reply(channel.recv(timeout=10, idle_timeout=10)[0], "register")
                log(f"registered with the tracker at {tracker[0]}:{tracker[1]} as '{key}'")
                warned = False
                sock.settimeout(None)
                while sock.recv(4096):
                    pass
            finally:
                sock.close()
        except (RpcError, OSError) as err:
            if not warned:
                log(f"tracker {tracker[0]}:{tracker[1]}: {err} (retrying every {RETRY_S:g} s)")
                warned = True
        stop.wait(RETRY_S)


def request_server(tracker: tuple[str, int], key: str,
                   wait_timeout: float | None = None) -> tuple[str, int, socket.socket]:
    """(host, port, lease) of a free server with ``key``, waiting in the queue up to
    ``wait_timeout`` seconds (None: as long as it takes). Closing ``lease`` frees it."""
    sock, channel = _open(tracker, timeout=10)
    try:
        channel.send({"op": "request", "key": key})
        try:
            reply, _ = channel.recv(idle_timeout=wait_timeout, timeout=10)
        except ProtocolError as err:
            if "timed out" in str(err):
                raise RpcError(f"no server with key '{key}' became free within {wait_timeout:g} s") from None
            raise RpcError(f"tracker: {err}") from None
        check_reply(reply, f"request '{key}'")
    except BaseException:
        sock.close()
        raise
    return reply["host"], int(reply["port"]), sock


def tracker_status(host: str = "127.0.0.1", port: int = DEFAULT_TRACKER_PORT) -> dict:
    """{"servers": [{key, host, port, busy}], "queue": {key: waiting clients}}."""
    sock, channel = _open((host, port), timeout=10)
    try:
        channel.send({"op": "status"})
        reply, _ = channel.recv(timeout=10, idle_timeout=10)
        check_reply(reply, "tracker status")
    except ProtocolError as err:
        raise RpcError(f"tracker {host}:{port}: {err}") from None
    finally:
        sock.close()
    return {"servers": reply["servers"], "queue": reply["queue"]}


def format_status(status: dict) -> str:
    lines = [f"{'key':<16} {'address':<24} state"]
    for s in status["servers"]:
        lines.append(f"{s['key']:<16} {s['host'] + ':' + str(s['port']):<24} {'busy' if s['busy'] else 'free'}")
    for key, n in sorted(status["queue"].items()):
        lines.append(f"queue '{key}': {n} waiting")
    if not status["servers"]:
        lines.append("(no servers registered)")
    return "\n".join(lines)

