"""The process that runs one loaded model for the RPC server:
``python -m dlc.rpc.worker MODEL.so [NUM_THREADS]``.

It talks to the server over its stdin/stdout with the frames of
rpc/protocol.py. A model that crashes (a segfault in generated or uploaded code)
or hangs takes only this process down; the server sees the pipe close or the
call time out and reports it (rpc/worker_proxy.py). Started with ``subprocess``
(fork + exec, a fresh interpreter), never a bare fork of the server: libgomp's
pool does not survive fork (runtime/native.py).

First reply: the model's entries and their specs, or the load error. Then, per
request: ``run`` (entry, arrays -> arrays) or ``time`` (entry, arrays, repeat,
number, min_repeat_ms -> samples timed here, around the native call). The
worker ends when its stdin closes.
"""

from __future__ import annotations

import os
import sys

from dlc.rpc.protocol import Channel, ProtocolError, decode_arrays, encode_arrays, error_reply, specs_to_wire
from dlc.rpc.timing import check_timing_args, time_calls

WORKER_MAX_PAYLOAD = 1 << 40  # the server already bounded what it forwards


def _protocol_streams():
    """(in, out) binary streams for frames; fd 1 then points at stderr so that a
    model or library printing to stdout cannot corrupt the frames."""
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(os.dup(0), "rb"), out


def _load(channel: Channel, path: str, threads: int | None):
    from dlc.runtime import DlcRuntimeError, load

    try:
        module = load(path, num_threads=threads)
    except DlcRuntimeError as err:
        channel.send(error_reply(str(err).replace(path, os.path.basename(path))))
        return None
    channel.send({"ok": True, "default_entry": module.default_entry,
                  "entries": {name: {"inputs": specs_to_wire(p.inputs), "outputs": specs_to_wire(p.outputs)}
                              for name, p in module.entries.items()}})
    return module


def _serve(channel: Channel, module) -> None:
    from dlc.runtime import DlcRuntimeError

    while True:
        try:
            header, payload = channel.recv()
        except ProtocolError:
            return  # the server closed the pipe (or broke it): nothing left to answer
        op, entry = header.get("op"), header.get("entry", module.default_entry)
        try:
            if not isinstance(entry, str) or entry not in module.entries:
                raise DlcRuntimeError(f"no entry point named @{entry} (have {', '.join(module.entries)})")
            point = module.entries[entry]
            inputs = decode_arrays(header.get("arrays", []), payload)
            if op == "run":
                entries, buffers = encode_arrays(point(*inputs))
                channel.send({"ok": True, "arrays": entries}, buffers)
            elif op == "time":
                repeat, number = header.get("repeat", 3), header.get("number", 1)
                min_ms = header.get("min_repeat_ms", 0)
                check_timing_args(repeat, number, min_ms)
                point(*inputs)  # argument errors before timing starts
                result = time_calls(lambda: point(*inputs), repeat, number, min_ms)
                channel.send({"ok": True, **result.to_wire()})
            else:
                channel.send(error_reply(f"unknown worker request {op!r}"))
        except (DlcRuntimeError, ValueError, ProtocolError) as err:
            channel.send(error_reply(str(err)))


def main(argv: list[str]) -> int:
    if len(argv) not in (1, 2):
        print("usage: python -m dlc.rpc.worker MODEL.so [NUM_THREADS]", file=sys.stderr)
        return 2
    reader, writer = _protocol_streams()
    channel = Channel(reader, writer, max_payload=WORKER_MAX_PAYLOAD)
    module = _load(channel, argv[0], int(argv[1]) if len(argv) == 2 else None)
    if module is not None:
        _serve(channel, module)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
