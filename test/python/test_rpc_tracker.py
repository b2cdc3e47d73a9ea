"""The RPC tracker: servers register by key, clients get a free one in FIFO
order and wait when all are busy; servers come back after a tracker restart."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import dlc.rpc
from rpc_testing import Proc, build_crash_model, deadline, start_server, wait_until

pytestmark = pytest.mark.usefixtures("deadline")
_ = deadline  # the fixture, used by pytestmark


def pool_size(port: int, key: str = "cpu") -> int:
    return sum(s["key"] == key for s in dlc.rpc.tracker_status("127.0.0.1", port)["servers"])


def test_two_servers_three_clients_the_third_waits(tmp_path):
    tracker = Proc(tmp_path / "tracker", "tracker")
    servers = [start_server(tmp_path / f"s{i}", "--tracker", f"127.0.0.1:{tracker.port}", "--key", "cpu")
               for i in range(2)]
    model = build_crash_model(tmp_path)
    try:
        wait_until(lambda: pool_size(tracker.port) == 2, what="both servers registered")
        first = dlc.rpc.connect_via_tracker("127.0.0.1", tracker.port, "cpu")
        second = dlc.rpc.connect_via_tracker("127.0.0.1", tracker.port, "cpu")
        assert {first.where, second.where} == {f"127.0.0.1:{s.port}" for s in servers}
        got: list = []
        third = threading.Thread(target=lambda: got.append(
            dlc.rpc.connect_via_tracker("127.0.0.1", tracker.port, "cpu")))
        third.start()
        wait_until(lambda: dlc.rpc.tracker_status("127.0.0.1", tracker.port)["queue"] == {"cpu": 1},
                   what="the third client queued")
        time.sleep(0.3)
        assert got == [] and third.is_alive()
        status = dlc.rpc.tracker_status("127.0.0.1", tracker.port)
        assert [s["busy"] for s in status["servers"]] == [True, True]
        freed = first.where
        first.close()
        third.join(10)
        assert not third.is_alive() and got[0].where == freed
        with got[0] as remote:  # the server it got works
            remote.upload(model, "m.so")
            x = np.arange(4, dtype=np.float32)
            np.testing.assert_array_equal(remote.load("m.so").run("copy", x)[0], x)
        second.close()
        wait_until(lambda: not any(s["busy"] for s in dlc.rpc.tracker_status("127.0.0.1", tracker.port)["servers"]),
                   what="both servers free again")
        listing = subprocess.run([sys.executable, "-m", "dlc.rpc", "tracker", "--list", "--port", str(tracker.port)],
                                 capture_output=True, text=True, timeout=30)
        assert listing.returncode == 0
        assert [line.split()[0::2] for line in listing.stdout.splitlines()[1:]] == [["cpu", "free"]] * 2
    finally:
        for proc in [*servers, tracker]:
            proc.stop()


def test_servers_register_again_after_a_tracker_restart(tmp_path):
    tracker = Proc(tmp_path / "tracker", "tracker")
    port = tracker.port
    server = start_server(tmp_path / "s", "--tracker", f"127.0.0.1:{port}", "--key", "cpu")
    try:
        wait_until(lambda: pool_size(port) == 1, what="registered")
        tracker.stop()
        tracker = Proc(tmp_path / "tracker2", "tracker", port=port)
        wait_until(lambda: pool_size(port) == 1, what="registered with the new tracker")
    finally:
        server.stop()
        tracker.stop()


def test_no_server_for_a_key(tmp_path):
    tracker = Proc(tmp_path, "tracker")
    try:
        with pytest.raises(dlc.rpc.RpcError, match="no server with key 'gpu' became free within 0.5 s"):
            dlc.rpc.connect_via_tracker("127.0.0.1", tracker.port, "gpu", wait_timeout=0.5)
        wait_until(lambda: dlc.rpc.tracker_status("127.0.0.1", tracker.port)["queue"] == {},
                   what="the client that gave up left the queue")
    finally:
        tracker.stop()
    with pytest.raises(dlc.rpc.RpcError, match="cannot connect to the tracker"):
        dlc.rpc.tracker_status("127.0.0.1", tracker.port)


def test_dlc_run_through_the_tracker(tmp_path, capsys):
    from dlc.tools import dlc_cli

    tracker = Proc(tmp_path / "tracker", "tracker")
    server = start_server(tmp_path / "s", "--tracker", f"127.0.0.1:{tracker.port}", "--key", "cpu")
    model = build_crash_model(tmp_path)
    np.save(tmp_path / "x.npy", np.arange(4, dtype=np.float32))
    try:
        wait_until(lambda: pool_size(tracker.port) == 1, what="registered")
        assert dlc_cli.main(["run", model, "--entry", "copy", "--input", str(tmp_path / "x.npy"),
                             "--rpc-key", "cpu", "--tracker", f"127.0.0.1:{tracker.port}"]) == 0
        out = capsys.readouterr().out
        assert out.startswith("output 0 'y': shape (4,) float32 sum=6 first=[0, 1, 2, 3]\n")
        assert f"(remote 127.0.0.1:{server.port}: min" in out
        assert dlc_cli.main(["run", model, "--rpc-key", "cpu"]) == 1
        assert "--tracker and --rpc-key go together" in capsys.readouterr().err
    finally:
        server.stop()
        tracker.stop()
