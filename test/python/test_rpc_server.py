"""dlc.rpc on loopback: upload and run match local results, concurrent clients
stay apart, and every hostile or broken input (wrong token, oversized upload,
path-escaping names, garbage bytes, a client killed mid-upload, a model that
segfaults or hangs) is refused or contained with a clear error while the server
keeps serving."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading

import numpy as np
import pytest

import dlc.rpc
import dlc.runtime
from dlc.rpc.protocol import FRAME, Channel
from rpc_testing import build_crash_model, compile_small_cnn, deadline, start_server, wait_until

pytestmark = pytest.mark.usefixtures("deadline")
_ = deadline  # the fixture, used by pytestmark


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    directory = tmp_path_factory.mktemp("models")
    return {"cnn": compile_small_cnn(directory), "crash": build_crash_model(directory)}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    proc = start_server(tmp_path_factory.mktemp("server"))
    yield proc
    proc.stop()


def cnn_input(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, (1, 3, 32, 32)).astype(np.float32)


def assert_serving(port: int, cnn: str) -> None:
    """A normal session still works: upload, load, run, same result as local."""
    x = cnn_input(99)
    with dlc.rpc.connect("127.0.0.1", port) as remote:
        remote.upload(cnn, "cnn.so")
        (y,) = remote.load("cnn.so", num_threads=1)(x)
    np.testing.assert_array_equal(y, dlc.runtime.load(cnn)(x)[0])


def test_upload_run_time_download_match_local(server, models):
    x = cnn_input(0)
    local = dlc.runtime.load(models["cnn"])
    with dlc.rpc.connect("127.0.0.1", server.port) as remote:
        assert remote.upload(models["cnn"]) == "small_cnn.so"
        model = remote.load("small_cnn.so")
        assert model.input_specs == local.input_specs and model.output_specs == local.output_specs
        np.testing.assert_array_equal(model(x)[0], local(x)[0])
        np.testing.assert_array_equal(model.run("main", x)[0], local.run("main", x)[0])
        timing = model.time_evaluator(x, repeat=4, number=3)
        assert len(timing.samples) == 4 and timing.number == 3 and 0 < timing.min <= timing.median <= timing.max
        with open(models["cnn"], "rb") as f:
            assert remote.download("small_cnn.so") == f.read()
        with pytest.raises(dlc.rpc.RpcError, match=r"input 'image' is float64\[1, 3, 32, 32\]"):
            model(x.astype(np.float64))
        with pytest.raises(dlc.rpc.RpcError, match="takes 1 inputs"):
            model()
        model.free()
        with pytest.raises(dlc.rpc.RpcError, match="no loaded model with handle"):
            model(x)


def test_eight_concurrent_clients_fifty_runs_each(server, models):
    local = dlc.runtime.load(models["cnn"])
    inputs = {c: [cnn_input(1000 * c + i) for i in range(50)] for c in range(8)}
    expected = {c: [local(x)[0] for x in xs] for c, xs in inputs.items()}
    failures: list[str] = []

    def client(c: int) -> None:
        try:
            with dlc.rpc.connect("127.0.0.1", server.port) as remote:
                remote.upload(models["cnn"], f"client{c}.so")  # same name in every session: isolated dirs
                remote.upload(models["cnn"], "model.so")
                model = remote.load("model.so", num_threads=1)
                for x, want in zip(inputs[c], expected[c]):
                    (got,) = model(x)
                    if not np.array_equal(got, want):
                        failures.append(f"client {c}: wrong output")
        except Exception as err:  # reported below, with the client's number
            failures.append(f"client {c}: {type(err).__name__}: {err}")

    threads = [threading.Thread(target=client, args=(c,)) for c in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(50)
    assert not any(t.is_alive() for t in threads), "a client hung"
    assert failures == []


def test_sessions_see_only_their_own_files(server, models):
    with dlc.rpc.connect("127.0.0.1", server.port) as a, dlc.rpc.connect("127.0.0.1", server.port) as b:
        a.upload(models["cnn"], "mine.so")
        with pytest.raises(dlc.rpc.RpcError, match="no uploaded file named 'mine.so'"):
            b.load("mine.so")
    wait_until(lambda: os.listdir(server.work_dir) == [], what="session directories removed")


KILLED_CLIENT = r"""
import socket, sys, time
from dlc.rpc.protocol import Channel
sock = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
ch = Channel(sock)
ch.send_hello(); ch.expect_hello(); ch.recv()
ch.send({"op": "auth", "hmac": None}); ch.recv()
ch.send({"op": "upload", "name": "big.so", "size": 4 << 20}); ch.recv()
ch.write(b'\x16\x00\x00\x00' + (4 << 20).to_bytes(8, "little") + b'{"op":"upload-data"}  ' + b"x" * (2 << 20))
print("half sent", flush=True)
time.sleep(60)
"""


def test_client_killed_mid_upload_leaves_nothing(tmp_path, models):
    server = start_server(tmp_path)
    try:
        child = subprocess.Popen([sys.executable, "-c", KILLED_CLIENT, str(server.port)], stdout=subprocess.PIPE)
        assert child.stdout.readline() == b"half sent\n"

        def part_file_exists():
            return any(name.startswith(".part-") for d in os.listdir(server.work_dir)
                       for name in os.listdir(os.path.join(server.work_dir, d)))

        wait_until(part_file_exists, what="the upload's part file")  # the test sees the file it expects gone
        child.send_signal(signal.SIGKILL)
        child.wait()
        wait_until(lambda: os.listdir(server.work_dir) == [], what="the session directory removed")
        assert_serving(server.port, models["cnn"])
    finally:
        server.stop()


def test_wrong_or_missing_token(tmp_path, models):
    (tmp_path / "token").write_text("s3cret\n")
    server = start_server(tmp_path, "--token-file", str(tmp_path / "token"))
    try:
        with pytest.raises(dlc.rpc.RpcError, match="authentication failed: wrong or missing token"):
            dlc.rpc.connect("127.0.0.1", server.port, token="wrong")
        with pytest.raises(dlc.rpc.RpcError, match="the server requires a token"):
            dlc.rpc.connect("127.0.0.1", server.port)
        with dlc.rpc.connect("127.0.0.1", server.port, token_file=str(tmp_path / "token")) as remote:
            remote.upload(models["crash"], "m.so")
            assert remote.load("m.so").run("copy", np.ones(4, np.float32))[0].tolist() == [1, 1, 1, 1]
        assert "authentication failed" in server.stderr()
    finally:
        server.stop()


def test_non_loopback_bind_needs_a_token(tmp_path):
    run = subprocess.run([sys.executable, "-m", "dlc.rpc", "server", "--host", "0.0.0.0", "--port", "0"],
                         capture_output=True, text=True, timeout=30)
    assert run.returncode == 1
    assert run.stderr.strip() == ("dlc rpc: error: refusing to listen on non-loopback address '0.0.0.0' "
                                  "without a token (pass --token-file; anyone who can connect could run code here)")
    (tmp_path / "token").write_text("s3cret")
    server = start_server(tmp_path, "--host", "0.0.0.0", "--token-file", str(tmp_path / "token"))
    server.stop()  # it started: a token makes the bind acceptable


def test_oversized_upload(tmp_path, models):
    server = start_server(tmp_path, "--max-upload", "100000")
    big = tmp_path / "big.so"
    big.write_bytes(b"\0" * 200_000)
    try:
        with dlc.rpc.connect("127.0.0.1", server.port) as remote:
            with pytest.raises(dlc.rpc.RpcError, match=r"200000 bytes exceeds the server's limit of 100000 "
                                                       r"bytes \(--max-upload\)"):
                remote.upload(str(big))
            remote.upload(models["crash"], "m.so")  # the same session goes on
            assert remote.load("m.so").run("copy", np.ones(4, np.float32))[0].tolist() == [1, 1, 1, 1]
        # a data frame longer than announced: a protocol error, that connection closed
        sock, channel = raw_session(server.port)
        channel.send({"op": "upload", "name": "x.so", "size": 10})
        assert channel.recv()[0] == {"ok": True, "ready": True}
        channel.send({"op": "upload-data"}, b"y" * 20)
        reply, _ = channel.recv()
        assert reply["error"] == ("protocol error: upload 'x.so': expected an upload-data frame of 10 bytes, "
                                  "got 'upload-data' with 20")
        assert_closed(sock)
        assert_serving(server.port, models["cnn"])
    finally:
        server.stop()


def assert_closed(sock: socket.socket) -> None:
    """The server closed the connection (a reset when our unread bytes were left in its buffer)."""
    try:
        assert sock.recv(1) == b""
    except ConnectionResetError:
        pass  # closed with data unread: the kernel sends RST instead of FIN


def raw_session(port: int) -> tuple[socket.socket, Channel]:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    channel = Channel(sock)
    channel.send_hello()
    channel.expect_hello()
    channel.recv()
    channel.send({"op": "auth", "hmac": None})
    assert channel.recv()[0] == {"ok": True}
    return sock, channel


@pytest.mark.parametrize("name, reason", [
    ("../x", "contains a path separator"), ("/etc/passwd", "absolute paths are not allowed"),
    ("a/b", "contains a path separator"), ("x\x00y", "contains a NUL byte"), ("..", "'..' are not file names"),
])
def test_path_escaping_names_are_refused(server, models, name, reason):
    with dlc.rpc.connect("127.0.0.1", server.port) as remote:
        with pytest.raises(dlc.rpc.RpcError, match=f"upload .*: file name .*{re.escape(reason)}"):
            remote.upload(models["crash"], name)
        with pytest.raises(dlc.rpc.RpcError, match=re.escape(reason)):
            remote.load(name)
        with pytest.raises(dlc.rpc.RpcError, match=re.escape(reason)):
            remote.download(name)
        remote.upload(models["crash"], "fine.so")  # the session goes on
    assert not os.path.exists(os.path.join(os.path.dirname(server.work_dir), "x"))
    assert_serving(server.port, models["cnn"])


def test_garbage_bytes(server, models):
    for garbage in (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", os.urandom(64)):
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        sock.sendall(garbage)
        channel = Channel(sock)
        channel.expect_hello()
        assert channel.recv()[0]["error"].startswith("protocol error: not a dlc RPC peer")
        sock.close()
    for frame, message in [(FRAME.pack(1 << 30, 0), "frame header of 1073741824 bytes exceeds the 65536-byte limit"),
                           (FRAME.pack(5, 0) + b"nope!", "frame header is not UTF-8 JSON"),
                           (FRAME.pack(2, 1 << 40), "frame payload of 1099511627776 bytes exceeds")]:
        sock, channel = raw_session(server.port)
        channel.write(frame)
        assert channel.recv()[0]["error"].startswith(f"protocol error: {message}")
        sock.close()
    sock, channel = raw_session(server.port)  # a truncated frame, then the client leaves
    channel.write(FRAME.pack(100, 0) + b'{"op":')
    sock.close()
    sock, channel = raw_session(server.port)  # malformed arrays: an error reply, the session goes on
    channel.send({"op": "upload", "name": "m.so", "size": os.path.getsize(models["crash"])})
    channel.recv()
    with open(models["crash"], "rb") as f:
        channel.send_file({"op": "upload-data"}, os.path.getsize(models["crash"]), f)
    channel.recv()
    channel.send({"op": "load", "name": "m.so"})
    handle = channel.recv()[0]["handle"]
    channel.send({"op": "run", "handle": handle, "entry": "copy",
                  "arrays": [{"dtype": "float32", "shape": [4], "nbytes": 64}]}, b"\0" * 16)
    assert "nbytes 64 does not match shape [4] float32 (16 bytes)" in channel.recv()[0]["error"]
    channel.send({"op": "eval", "code": "print(1)"})
    assert channel.recv()[0]["error"] == "unknown request 'eval'"
    channel.send({"op": ["run"]})  # JSON values of the wrong type: errors, not a crashed session
    assert channel.recv()[0]["error"] == "unknown request ['run']"
    channel.send({"op": "run", "handle": [handle]})
    assert channel.recv()[0]["error"] == f"no loaded model with handle [{handle}] in this session"
    channel.send({"op": "run", "handle": handle, "entry": ["copy"], "arrays": []})
    assert channel.recv()[0]["error"].startswith("no entry point named @['copy']")
    sock.close()
    assert_serving(server.port, models["cnn"])


def test_segfaulting_model_kills_only_its_worker(server, models):
    x = np.arange(4, dtype=np.float32)
    with dlc.rpc.connect("127.0.0.1", server.port) as remote:
        remote.upload(models["crash"], "crash.so")
        model = remote.load("crash.so")
        np.testing.assert_array_equal(model.run("copy", x)[0], x)
        with pytest.raises(dlc.rpc.RpcError, match=r"run @crash: the model crashed \(signal 11 SIGSEGV\)$"):
            model(x)
        with pytest.raises(dlc.rpc.RpcError, match=r"the model crashed \(signal 11 SIGSEGV\); load the model again"):
            model.run("copy", x)
        np.testing.assert_array_equal(remote.load("crash.so").run("copy", x)[0], x)  # same session, new worker
    assert_serving(server.port, models["cnn"])


def test_hung_model_is_killed_at_the_timeout(tmp_path, models):
    server = start_server(tmp_path, "--timeout", "1.5")
    x = np.arange(4, dtype=np.float32)
    try:
        with dlc.rpc.connect("127.0.0.1", server.port) as remote:
            remote.upload(models["crash"], "m.so")
            model = remote.load("m.so")
            with pytest.raises(dlc.rpc.RpcError, match="run @hang: run timed out after 1.5 s: the worker was killed"):
                model.run("hang", x)
            np.testing.assert_array_equal(remote.load("m.so").run("copy", x)[0], x)
    finally:
        server.stop()


def test_load_errors_are_reported(server, tmp_path):
    (tmp_path / "junk.so").write_bytes(b"not a library")
    with dlc.rpc.connect("127.0.0.1", server.port) as remote:
        remote.upload(str(tmp_path / "junk.so"))
        with pytest.raises(dlc.rpc.RpcError, match=r"load 'junk.so': .*not an ELF shared library"):
            remote.load("junk.so")
        with pytest.raises(dlc.rpc.RpcError, match="no uploaded file named 'absent.so'"):
            remote.load("absent.so")


def test_dlc_run_rpc_matches_the_local_run(server, models, tmp_path, capsys):
    from dlc.tools import dlc_cli

    assert dlc_cli.main(["run", models["cnn"], "--output", str(tmp_path / "local.npy")]) == 0
    local_out = capsys.readouterr().out
    assert dlc_cli.main(["run", models["cnn"], "--rpc", f"127.0.0.1:{server.port}", "--repeat", "3",
                         "--output", str(tmp_path / "remote.npy")]) == 0
    remote_out = capsys.readouterr().out
    assert remote_out.splitlines()[0] == local_out.splitlines()[0]  # the output line: same values
    assert f"over 3 runs (remote 127.0.0.1:{server.port}: min" in remote_out
    np.testing.assert_array_equal(np.load(tmp_path / "remote.npy"), np.load(tmp_path / "local.npy"))
    assert dlc_cli.main(["run", models["cnn"], "--rpc", "127.0.0.1"]) == 1
    assert "--rpc '127.0.0.1': expected HOST:PORT" in capsys.readouterr().err
    assert dlc_cli.main(["run", models["cnn"], "--rpc", f"127.0.0.1:{server.port}", "--check"]) == 1
    assert "--check runs locally" in capsys.readouterr().err
