"""Token authentication: an HMAC-SHA256 challenge, and which binds need a token.

The server sends a fresh random nonce; the client answers
``HMAC-SHA256(token, nonce)``; the server compares with ``hmac.compare_digest``
(constant time). The token itself never crosses the network, and a recorded
answer is useless for another connection (another nonce). The channel is not
encrypted: the token keeps strangers from running code on the device, it does
not hide the models or the tensors from someone watching the network.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets
import socket

from dlc.rpc.protocol import RpcError

NONCE_BYTES = 32
MAX_TOKEN_BYTES = 4096


def read_token_file(path: str) -> bytes:
    """The token in ``path`` (surrounding whitespace stripped); RpcError when the
    file is missing, empty or too large."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_TOKEN_BYTES + 1)
    except OSError as err:
        raise RpcError(f"cannot read token file '{path}': {err.strerror or err}") from None
    if len(data) > MAX_TOKEN_BYTES:
        raise RpcError(f"token file '{path}' holds more than {MAX_TOKEN_BYTES} bytes (is it a token?)")
    token = data.strip()
    if not token:
        raise RpcError(f"token file '{path}' is empty")
    return token


def new_nonce() -> bytes:
    return secrets.token_bytes(NONCE_BYTES)


def proof(token: bytes, nonce: bytes) -> str:
    """The client's answer to ``nonce`` (hex)."""
    return hmac.new(token, nonce, hashlib.sha256).hexdigest()


def check_proof(token: bytes, nonce: bytes, answer) -> bool:
    if not isinstance(answer, str):
        return False
    return hmac.compare_digest(proof(token, nonce).encode(), answer.encode("utf-8", "replace"))


def is_loopback(host: str) -> bool:
    """True when every address ``host`` resolves to is a loopback address."""
    try:
        infos = socket.getaddrinfo(host, None)
    except socket.gaierror as err:
        raise RpcError(f"cannot resolve host '{host}': {err.strerror}") from None
    return bool(infos) and all(ipaddress.ip_address(info[4][0].split("%")[0]).is_loopback for info in infos)


def token_from(token: bytes | str | None, token_file: str | None) -> bytes | None:
    """A token given directly or by file (not both), as bytes."""
    if token is not None and token_file is not None:
        raise RpcError("give a token or a token file, not both")
    if token_file is not None:
        return read_token_file(token_file)
    if isinstance(token, str):
        token = token.encode()
    if token is not None and not token.strip():
        raise RpcError("the token is empty")
    return token

