"""Remote execution of exported models (TVM's RPC): a server on the device runs
what a host uploads, a tracker pools servers by key.

    dlc rpc server [--host 127.0.0.1] [--port 9090] [--key K] [--token-file F]
    dlc rpc tracker [--host 127.0.0.1] [--port 9190] [--list]
    python -m dlc.rpc server|tracker ...   (the same, without xDSL: for devices)

    with dlc.rpc.connect(host, port, token=...) as remote:
        remote.upload("model.so"); model = remote.load("model.so")
        outputs = model(x); timing = model.time_evaluator(x, repeat=10)

Python, numpy and dlc.runtime only (no xDSL, no llvmlite). docs/architecture.md
"RPC" describes the protocol and the security model.
"""

from dlc.rpc.client import RemoteModule, RpcSession, connect, connect_via_tracker
from dlc.rpc.protocol import ProtocolError, RpcError
from dlc.rpc.timing import TimingResult
from dlc.rpc.tracker import tracker_status

__all__ = ["connect", "connect_via_tracker", "tracker_status", "RpcSession", "RemoteModule", "RpcError",
           "ProtocolError", "TimingResult"]
