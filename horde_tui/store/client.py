"""The calling side of the store server (`store/server.py`): one `horde` call sent to the
process that keeps the horde's fold, instead of folding and writing here.

Twelve writers that each fold every record pay for every write twelve times (the fold,
the match keys, the event log), and a cold `horde-tui tool` call pays for the imports and
the checkpoint before it writes one line. With a server running, a call is a line of JSON
each way over a Unix socket; without one (none started, or it died) the caller writes
directly under the lock as before: the server is a shortcut, never the only way in.

Standard library only: the fast path of `horde-tui tool` imports this and nothing else of
the store.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import socket
import struct
import tempfile
import threading
from pathlib import Path
from typing import Any

SOCKET_NAME = ".store.sock"
SERVER_LOCK_NAME = ".store-server.lock"
"""Held (`flock`) by the one server of a horde directory for as long as it serves."""
MAX_LINE = 8 << 20
"""Bytes of one request or reply line (the largest field cap is 20,000 characters; a
`list` of a large horde is the longest reply)."""
REPLY_TIMEOUT_S = 120.0
"""How long a caller waits for its answer: the server's own lock waits time out long
before (10 s by default), so only a stopped or stuck server reaches this."""
_UNIX_PATH_MAX = 100
"""`sun_path` holds 108 bytes on Linux and 104 on macOS, with the terminating NUL."""


_CRED = struct.Struct("3i")
"""`struct ucred`: pid, uid, gid (`SO_PEERCRED`)."""


class ServerLost(ConnectionError):
    """The server took the request and the connection broke before the answer came."""


def socket_path(root: Path | str) -> Path:
    """Where the server of horde directory `root` listens: in the directory itself, or,
    when that path is too long for a Unix socket, in a private directory under the
    system's temporary directory, named by a hash of the resolved horde path."""
    resolved = os.path.realpath(root)
    inside = os.path.join(resolved, SOCKET_NAME)
    if len(os.fsencode(inside)) < _UNIX_PATH_MAX:
        return Path(inside)
    digest = hashlib.sha256(os.fsencode(resolved)).hexdigest()[:24]
    return Path(tempfile.gettempdir()) / f"horde-{os.getuid()}" / f"{digest}.sock"


def new_request_id() -> str:
    """A request id for a write sent without one: if the server dies before it answers,
    the caller writes directly with the same id, which is answered from the ledger if the
    server had recorded it (never recorded twice)."""
    return f"auto-{os.getpid()}-{secrets.token_hex(8)}"


class _Connection:
    """One caller process's connection to one server, kept for its next call."""

    def __init__(self, path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.sock.settimeout(REPLY_TIMEOUT_S)
            self.sock.connect(str(path))
            # Only a server of this user is believed (a socket under a shared temporary
            # directory could be anyone's).
            raw = self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _CRED.size)
            if _CRED.unpack(raw)[1] != os.getuid():
                raise PermissionError(f"{path} is another user's")
        except BaseException:
            self.sock.close()
            raise
        self.pid = os.getpid()
        self.buffer = b""
        self.guard = threading.Lock()

    def call(self, line: bytes) -> dict[str, Any]:
        """Send one request line; its answer."""
        with self.guard:
            try:
                self.sock.sendall(line)
            except OSError as exc:
                raise ConnectionError(str(exc)) from exc  # not taken: safe to go direct
            try:
                while b"\n" not in self.buffer:
                    chunk = self.sock.recv(1 << 16)
                    if not chunk:
                        raise ServerLost("the store server closed the connection")
                    self.buffer += chunk
                    if len(self.buffer) > MAX_LINE:
                        raise ServerLost("the store server's answer is over the size cap")
            except OSError as exc:
                raise ServerLost(str(exc)) from exc
            reply, _, self.buffer = self.buffer.partition(b"\n")
        value = json.loads(reply)
        if not isinstance(value, dict):
            raise ServerLost("the store server's answer is not a JSON object")
        return value

    def close(self) -> None:
        self.sock.close()


_connections: dict[Path, _Connection] = {}
_guard = threading.Lock()


def _connection(path: Path) -> _Connection | None:
    """This process's connection to the server at `path` (made on first use), or None
    when no server listens there."""
    with _guard:
        conn = _connections.get(path)
        if conn is not None and conn.pid == os.getpid():
            return conn
        try:
            conn = _Connection(path)
        except OSError:
            return None  # no socket, nobody listening, or no permission: write directly
        _connections[path] = conn
        return conn


def _drop(path: Path, conn: _Connection) -> None:
    with _guard:
        if _connections.get(path) is conn:
            del _connections[path]
    conn.close()


def exchange(root: Path | str, line: bytes) -> dict[str, Any] | None:
    """Send one `horde` call to the server of `root`; its answer, or None when no server
    took it (the caller then performs it directly). Raises `ServerLost` when the server
    took it and died before answering: the caller then retries directly with the same
    `requestId`."""
    if not hasattr(socket, "SO_PEERCRED"):
        return None  # no server runs where the kernel cannot name a socket's peer
    path = socket_path(root)
    for _ in range(2):  # a stale connection (its server restarted) is made anew once
        conn = _connection(path)
        if conn is None:
            return None
        try:
            return conn.call(line)
        except ServerLost:
            _drop(path, conn)
            raise
        except (ConnectionError, ValueError):
            # Not taken (the send failed), or an answer that is not JSON.
            _drop(path, conn)
    return None


PROTOCOL = 1


def send(
    root: Path | str,
    actor: str,
    run: str,
    role: str,
    siblings: dict[str, str],
    raw: dict[str, Any],
) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """One `horde` call through the server of `root`: (its answer or None, the call as
    it must be performed directly when there is no answer).

    A call without a `requestId` is sent with a new one (`new_request_id`); when the
    server took it and died, the direct call carries that id, so a write the server had
    recorded is answered from the ledger instead of being written again.
    """
    given = raw.get("requestId")
    # Null or blank counts as none (the tool ignores it), so it gets an id too.
    absent = given is None or (isinstance(given, str) and not given.strip())
    call = {**raw, "requestId": new_request_id()} if absent else raw
    request = {
        "v": PROTOCOL,
        "actor": actor,
        "run": run,
        "role": role,
        "siblings": siblings,
        "call": call,
    }
    try:
        line = json.dumps(request, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
    except (TypeError, ValueError):
        return None, raw  # not JSON text (never sent): performed directly as given
    try:
        reply = exchange(root, line)
    except ServerLost:
        return None, call
    if reply is None:
        return None, raw  # no server: nothing was sent
    # An answer this caller cannot read (a server of another version) is treated as no
    # answer; the direct call keeps the id it was sent with, in case it was performed.
    return (reply if _well_formed(reply) else None), call


def _well_formed(reply: dict[str, Any]) -> bool:
    """An answer this caller understands (a server of another version may say `error`)."""
    return (
        isinstance(reply.get("ok"), bool)
        and isinstance(reply.get("text"), str)
        and isinstance(reply.get("usage_error", False), bool)
        and (reply.get("id") is None or isinstance(reply.get("id"), str))
        and (reply.get("event") is None or isinstance(reply.get("event"), str))
    )
