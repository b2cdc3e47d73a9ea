"""``server`` and ``tracker`` commands, shared by ``dlc rpc ...`` (tools/rpc_cli.py)
and ``python -m dlc.rpc ...`` (this module's ``main``: no xDSL, for devices).
Bad options are one ``error:`` line and exit status 1."""

from __future__ import annotations

import argparse
import os
import sys

from dlc.rpc.protocol import DEFAULT_MAX_PAYLOAD, RpcError


def parse_address(text: str, flag: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[v6]:PORT`` too) -> (host, port); RpcError naming ``flag``."""
    host, sep, port = text.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise RpcError(f"{flag} {text!r}: expected HOST:PORT with a port in 1..65535")
    return host, int(port)


def add_server_arguments(p: argparse.ArgumentParser) -> None:
    from dlc.rpc.server import DEFAULT_PORT, DEFAULT_TIMEOUT

    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1; "
                   "any other needs --token-file)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0: any free port)")
    p.add_argument("--key", default="default", help="device key announced to the tracker (default: default)")
    p.add_argument("--token-file", help="file holding the shared secret clients must prove they know")
    p.add_argument("--tracker", metavar="HOST:PORT", help="register with this tracker (and again if it restarts)")
    p.add_argument("--max-upload", type=int, default=DEFAULT_MAX_PAYLOAD, metavar="BYTES",
                   help=f"largest upload or request payload (default {DEFAULT_MAX_PAYLOAD})")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="S",
                   help=f"per-call limit (load, run, time); a worker past it is killed (default {DEFAULT_TIMEOUT:g})")
    p.add_argument("--work-dir", help="where the per-session directories go (default: the temp directory)")
    p.add_argument("--port-file", help="write the bound port to this file once listening")


def add_tracker_arguments(p: argparse.ArgumentParser) -> None:
    from dlc.rpc.tracker import DEFAULT_TRACKER_PORT

    p.add_argument("--host", default="127.0.0.1", help="address to listen on (or of the tracker, with --list)")
    p.add_argument("--port", type=int, default=DEFAULT_TRACKER_PORT,
                   help=f"port (default {DEFAULT_TRACKER_PORT}; 0: any free port)")
    p.add_argument("--list", action="store_true", help="print the pool of a running tracker and exit")
    p.add_argument("--port-file", help="write the bound port to this file once listening")


def _check_port(port: int) -> None:
    if not 0 <= port < 65536:
        raise RpcError(f"--port {port}: expected 0..65535")


def write_port_file(path: str | None, port: int) -> None:
    if path:
        tmp = f"{path}.tmp{os.getpid()}"
        with open(tmp, "w") as f:
            f.write(f"{port}\n")
        os.replace(tmp, path)  # a reader never sees a half-written number


def server_command(args) -> int:
    from dlc.rpc.auth import read_token_file
    from dlc.rpc.server import Server, ServerConfig

    _check_port(args.port)
    config = ServerConfig(host=args.host, port=args.port, key=args.key,
                          token=read_token_file(args.token_file) if args.token_file else None,
                          tracker=parse_address(args.tracker, "--tracker") if args.tracker else None,
                          max_upload=args.max_upload, timeout=args.timeout, work_dir=args.work_dir)
    server = Server(config)
    write_port_file(args.port_file, server.port)
    print(f"dlc rpc server: listening on {config.host}:{server.port} (key '{config.key}', "
          f"{'token required' if config.token else 'no token: loopback only'})", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        server.shutdown()
    return 0


def tracker_command(args) -> int:
    from dlc.rpc.tracker import Tracker, format_status, tracker_status

    _check_port(args.port)
    if args.list:
        print(format_status(tracker_status(args.host, args.port)))
        return 0
    tracker = Tracker(args.host, args.port)
    write_port_file(args.port_file, tracker.port)
    print(f"dlc rpc tracker: listening on {args.host}:{tracker.port}", flush=True)
    try:
        tracker.serve_forever()
    except KeyboardInterrupt:
        tracker.shutdown()
    return 0


def add_commands(sub) -> None:
    server = sub.add_parser("server", help="serve uploaded models (run this on the device)")
    add_server_arguments(server)
    tracker = sub.add_parser("tracker", help="pool servers by key and hand them to clients")
    add_tracker_arguments(tracker)


def run_command(args) -> int:
    return server_command(args) if args.rpc_command == "server" else tracker_command(args)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dlc.rpc", description="dlc RPC server and tracker")
    sub = ap.add_subparsers(dest="rpc_command", metavar="COMMAND", required=True)
    add_commands(sub)
    args = ap.parse_args(argv)
    try:
        return run_command(args)
    except RpcError as err:
        print(f"dlc rpc: error: {err}", file=sys.stderr)
        return 1
