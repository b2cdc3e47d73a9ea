"""dlc.rpc's wire format, names, auth and timing arguments, without a server:
every malformed frame or array is a ProtocolError naming what is wrong."""

from __future__ import annotations

import json
import socket
import struct

import numpy as np
import pytest

from dlc.rpc.auth import check_proof, is_loopback, proof, read_token_file
from dlc.rpc.protocol import (
    FRAME,
    HELLO,
    MAX_DIMS,
    MAX_HEADER,
    Channel,
    ConnectionClosed,
    ProtocolError,
    RpcError,
    decode_arrays,
    encode_arrays,
)
from dlc.rpc.session_files import MAX_NAME, SessionDir, check_name
from dlc.rpc.timing import check_timing_args, time_calls


def roundtrip(arrays):
    entries, buffers = encode_arrays(arrays)
    payload = b"".join(bytes(memoryview(b).cast("B")) for b in buffers)
    return decode_arrays(json.loads(json.dumps(entries)), payload)


def test_arrays_roundtrip_every_kind():
    arrays = [np.arange(6, dtype=np.float32).reshape(2, 3), np.array([True, False]), np.int64(-7),
              np.zeros((0, 4), np.float16), np.arange(5, dtype=np.uint8)[::2],  # not contiguous
              np.arange(3, dtype=">i4")]  # big-endian travels little-endian
    for got, want in zip(roundtrip(arrays), arrays):
        assert got.shape == np.shape(want) and got.dtype.name == np.asarray(want).dtype.name
        np.testing.assert_array_equal(got, want)
        assert got.flags.writeable and got.dtype.isnative


def test_unsendable_arrays_are_refused():
    with pytest.raises(RpcError, match="dtype object"):
        encode_arrays([np.array([None])])
    with pytest.raises(RpcError, match="dims"):
        encode_arrays([np.zeros((1,) * (MAX_DIMS + 1))])


@pytest.mark.parametrize("entry, payload, message", [
    ({"dtype": "object", "shape": [1], "nbytes": 8}, b"\0" * 8, "unknown dtype 'object'"),
    ({"dtype": "float32", "shape": [-1], "nbytes": 4}, b"\0" * 4, "non-negative integers"),
    ({"dtype": "float32", "shape": [1.5], "nbytes": 4}, b"\0" * 4, "non-negative integers"),
    ({"dtype": "float32", "shape": [1] * (MAX_DIMS + 1), "nbytes": 4}, b"\0" * 4, "at most 32"),
    ({"dtype": "float32", "shape": [2], "nbytes": 4}, b"\0" * 4, "does not match shape"),
    ({"dtype": "float32", "shape": [2], "nbytes": 8}, b"\0" * 4, "only 4 left"),
    ({"dtype": "float32", "shape": [1], "nbytes": 4}, b"\0" * 9, "5 bytes beyond"),
    ("float32", b"", "expected an object"),
])
def test_malformed_arrays_are_protocol_errors(entry, payload, message):
    with pytest.raises(ProtocolError, match=message):
        decode_arrays([entry], payload)


def channel_pair():
    a, b = socket.socketpair()
    a.settimeout(5)
    b.settimeout(5)
    return a, Channel(b, max_payload=1000)


def test_frames_roundtrip_and_limits():
    raw, channel = channel_pair()
    Channel(raw).send({"op": "x"}, b"abc")
    assert channel.recv() == ({"op": "x"}, b"abc")
    for prefix, body, message in [
        (FRAME.pack(MAX_HEADER + 1, 0), b"", "header of .* exceeds"),
        (FRAME.pack(2, 1001), b"{}", "payload of 1001 bytes exceeds the 1000-byte limit"),
        (FRAME.pack(4, 0), b"\xff\xfe{}", "not UTF-8 JSON"),
        (FRAME.pack(2, 0), b"[]", "JSON list, expected an object"),
    ]:
        raw, channel = channel_pair()
        raw.sendall(prefix + body)
        with pytest.raises(ProtocolError, match=message):
            channel.recv()


def test_truncated_frame_and_bad_handshake():
    raw, channel = channel_pair()
    raw.sendall(FRAME.pack(10, 0) + b'{"op"')
    raw.close()
    with pytest.raises(ConnectionClosed, match="middle of a frame header") as info:
        channel.recv()
    assert info.value.partial
    raw, channel = channel_pair()
    raw.sendall(b"GET / HTTP/1.1\r\n")
    with pytest.raises(ProtocolError, match="not a dlc RPC peer"):
        channel.expect_hello()
    raw, channel = channel_pair()
    raw.sendall(HELLO[:6] + struct.pack("<H", 99))
    with pytest.raises(ProtocolError, match="version 99"):
        channel.expect_hello()


@pytest.mark.parametrize("name, reason", [
    ("../x", "path separator"), ("/etc/passwd", "absolute"), ("a/b", "path separator"),
    ("a\\b", "path separator"), ("x\x00y", "NUL"), ("..", "not file names"), (".", "not file names"),
    (".hidden", "must not start with '.'"), ("a b", "only letters"), ("a" * (MAX_NAME + 1), "at most 128"),
    ("", "non-empty"), (7, "non-empty string"),
])
def test_bad_file_names_are_refused_with_the_reason(name, reason):
    with pytest.raises(RpcError, match=reason):
        check_name(name)


def test_good_names_and_the_session_directory(tmp_path):
    assert check_name("model-1.so") == "model-1.so"
    files = SessionDir(str(tmp_path))
    assert (tmp_path / files.path).stat().st_mode & 0o777 == 0o700

    def broken(f):
        f.write(b"half")
        raise ConnectionClosed("gone", partial=True)

    with pytest.raises(ConnectionClosed):
        files.receive("m.so", 8, broken)
    assert list((tmp_path / files.path).iterdir()) == []  # the part file went with the error
    files.receive("m.so", 2, lambda f: f.write(b"ok"))
    assert open(files.file("m.so"), "rb").read() == b"ok"
    with pytest.raises(RpcError, match="no uploaded file"):
        files.file("other.so")
    files.remove()
    assert list(tmp_path.iterdir()) == []


def test_hmac_proof_and_token_files(tmp_path):
    nonce = b"n" * 32
    assert check_proof(b"secret", nonce, proof(b"secret", nonce))
    assert not check_proof(b"secret", nonce, proof(b"other", nonce))
    assert not check_proof(b"secret", nonce, None)
    (tmp_path / "t").write_text("  secret\n")
    assert read_token_file(str(tmp_path / "t")) == b"secret"
    (tmp_path / "e").write_text("\n")
    with pytest.raises(RpcError, match="is empty"):
        read_token_file(str(tmp_path / "e"))
    with pytest.raises(RpcError, match="cannot read token file"):
        read_token_file(str(tmp_path / "missing"))


def test_loopback_detection():
    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.1.2.3")


def test_timing():
    calls = []
    result = time_calls(lambda: calls.append(1), repeat=4, number=3)
    assert len(result.samples) == 4 and result.number == 3 and len(calls) == 1 + 12
    assert result.min <= result.median <= result.max and result.spread >= 0
    grown = time_calls(lambda: None, repeat=2, number=1, min_repeat_ms=1)
    assert grown.number > 1  # a no-op needs many calls to last 1 ms
    for args, message in [((0, 1, 0), "repeat"), ((1, 0, 0), "number"), ((1, 1, -1), "min_repeat_ms"),
                          ((True, 1, 0), "repeat")]:
        with pytest.raises(ValueError, match=message):
            check_timing_args(*args)


def test_the_server_side_needs_no_xdsl_or_llvmlite():
    """The device runs python -m dlc.rpc with numpy and dlc.runtime only."""
    import subprocess
    import sys

    code = ("import sys, dlc.rpc, dlc.rpc.server, dlc.rpc.worker, dlc.rpc.cli, dlc.rpc.tracker; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('xdsl', 'llvmlite')))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"
