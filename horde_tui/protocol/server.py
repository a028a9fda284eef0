"""The store server: one process that keeps a horde's fold and performs `horde` calls
for the members and `horde-tui tool` calls of a run (`store/client.py` is the other side).

Why: every writer process folds every record, so with twelve writers each record was
folded, keyed and indexed twelve times, and a cold `horde-tui tool` call paid ~200 ms of
imports and a checkpoint load to append one line. Here the fold is kept once; a call is a
line of JSON each way over a Unix socket.

What does not change: the server writes through the same `HordeStore.transact`, under the
same `.lock`, so direct writers (the supervisor, a process started before the server, any
caller when the server is gone) and the server take turns safely. Each call is judged as
its caller: the caller's pid comes from the kernel (`SO_PEERCRED`), not from the request,
and the identity rule and the `writer` stamp are computed from that process's tree, as if
it had written itself. Only processes of the same user may connect (the socket is 0600,
and the peer's uid is checked).

One server per horde directory: it holds `.store-server.lock` (`flock`, released by the
kernel however it dies) for as long as it serves; a second one exits at once. It exits on
SIGTERM or SIGINT, and when the process that started it (`--parent-pid`) is gone.

    python -m horde_tui.protocol.server --dir .horde [--parent-pid PID]
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import selectors
import signal
import socket
import stat
import struct
import sys
import traceback
from pathlib import Path
from typing import Any

from horde_tui.common.watchdog import start_watchdog
from horde_tui.protocol.dispatch import run_action
from horde_tui.store import identity
from horde_tui.store.client import MAX_LINE, PROTOCOL, SERVER_LOCK_NAME, socket_path
from horde_tui.store.paths import valid_actor_name, valid_run_id
from horde_tui.store.store import HordeStore

LISTENING = "store server listening on"
"""The line the server prints once it accepts calls (what its starter waits for)."""
ALREADY = "store server already running for"
SEND_TIMEOUT_S = 10.0
"""How long an answer may wait for a caller that stopped reading (then it is dropped)."""
_PEERCRED = struct.Struct("3i")


class _Caller:
    """One connection: its peer process (with its start time, so a pid reused after the
    caller died is not taken for it) and what it sent that is not a whole line yet."""

    def __init__(self, sock: socket.socket, proc: identity.Proc, refused: str = "") -> None:
        self.sock = sock
        self.proc = proc
        self.pid = proc.pid
        self.buffer = b""
        self.refused = refused
        """Why this caller is not served ('' if it is): its first line is answered so."""


class StoreServer:
    """Serves `horde` calls for horde directory `root` until `stop`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.store = HordeStore(root, "parent")
        self.store.serving = True
        self.selector = selectors.DefaultSelector()
        self.listener: socket.socket | None = None
        self.path = socket_path(root)
        self._lock_fd: int | None = None
        self._stopping = False

    def claim(self) -> str:
        """Become the one server of `root`, and listen; '' if so, else why not."""
        self.store.paths.ensure()
        fd = os.open(self.root / SERVER_LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return f"{ALREADY} {self.root}"
        self._lock_fd = fd
        # Whatever is at the path now is a dead server's socket: it held the lock.
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if self.path.parent != Path(os.path.realpath(self.root)):
            # Under a shared temporary directory: only a directory of this user's, closed
            # to others, keeps anyone else from putting their own socket in its place.
            st = os.lstat(self.path.parent)
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
                os.close(fd)
                self._lock_fd = None
                return (
                    f"store server not started: {self.path.parent} is not a private "
                    "directory of this user's"
                )
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_umask = os.umask(0o177)  # the socket is created 0600: this user only
        try:
            listener.bind(str(self.path))
        finally:
            os.umask(old_umask)
        listener.listen(64)
        listener.setblocking(False)
        self.selector.register(listener, selectors.EVENT_READ, None)
        self.listener = listener
        return ""

    def stop(self) -> None:
        self._stopping = True

    def serve(self) -> None:
        """Answer calls in batches: every whole line that has arrived is performed, in
        order, then the batch's writes are rendered and flushed once (`HordeStore.settle`),
        then each caller is answered. One writer's render and fsync cost the same as
        twelve's, so the more callers wait, the less each write costs."""
        try:
            while not self._stopping:
                batch = self._gather(0.5)
                if batch:
                    self._perform(batch)
        finally:
            self.close()

    def _gather(self, timeout: float) -> list[tuple[_Caller, bytes]]:
        """Accept whoever connects; the whole request lines that arrive within `timeout`."""
        batch: list[tuple[_Caller, bytes]] = []
        for key, _ in self.selector.select(timeout=timeout):
            if key.data is None:
                self._accept()
            elif key.data.refused:
                if self._read(key.data):  # its request has come: the refusal answers it
                    self._answer(key.data, {"error": key.data.refused})
                    self._drop(key.data)
            else:
                batch += self._read(key.data)
        return batch

    def _perform(self, batch: list[tuple[_Caller, bytes]]) -> None:
        answers: list[tuple[_Caller, dict[str, Any], bool]] = []
        self.store.deferring = True
        try:
            for caller, line in batch:
                before = self.store.state.seq
                try:
                    answer = self.handle(line, caller)
                except Exception:  # a bug: the caller performs the call itself, with its id
                    traceback.print_exc()
                    answer = {"error": "the store server failed on this call (store-server.log)"}
                    self._fresh_fold()
                answers.append((caller, answer, self.store.state.seq != before))
        finally:
            self.store.deferring = False
            note = self.store.settle()
        for caller, answer, wrote in answers:
            if wrote and note and isinstance(answer.get("text"), str):
                answer["text"] += note
            self._answer(caller, answer)

    def close(self) -> None:
        """Stop listening, remove the socket, save a checkpoint of the fold (for the
        processes that fold cold after this), let go of the server lock."""
        if self.listener is not None:
            with contextlib.suppress(OSError):
                self.path.unlink()
            with contextlib.suppress(OSError):
                self.store.save_checkpoint()
        for key in list(self.selector.get_map().values()):
            key.fileobj.close()  # type: ignore[union-attr]
        self.selector.close()
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def _accept(self) -> None:
        assert self.listener is not None
        try:
            sock, _ = self.listener.accept()
        except OSError:
            return  # gone before it was taken, or out of descriptors for now
        raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEERCRED.size)
        pid, uid, _gid = _PEERCRED.unpack(raw)
        sock.settimeout(SEND_TIMEOUT_S)
        if uid != os.getuid():
            sock.close()  # another user (the socket's mode already keeps them out)
            return
        refused = ""
        if pid <= 0 or not _same_pid_namespace(pid):
            # A member's command in its sandbox (its own pid namespace), where `.horde/`
            # is read-only and this socket must not be a way around that. It is told so
            # in answer to its request, not by a close: a close raced the caller's send
            # (a broken pipe if it sent later, a lost server if it sent first), so the
            # same refusal reached the caller as two different failures.
            refused = "not served: the caller runs in another pid namespace (a sandbox)"
        proc = identity.Proc(pid, None) if refused else identity.proc_of(pid)
        caller = _Caller(sock, proc, refused)
        self.selector.register(sock, selectors.EVENT_READ, caller)

    def _read(self, caller: _Caller) -> list[tuple[_Caller, bytes]]:
        """The whole request lines `caller` has sent so far."""
        try:
            chunk = caller.sock.recv(1 << 16)
        except OSError:
            chunk = b""
        if not chunk:
            self._drop(caller)
            return []
        caller.buffer += chunk
        *lines, caller.buffer = caller.buffer.split(b"\n")
        if len(caller.buffer) > MAX_LINE:
            self._answer(caller, {"error": f"a request line is over {MAX_LINE} bytes"})
            self._drop(caller)
            return []
        return [(caller, line) for line in lines]

    def _answer(self, caller: _Caller, reply: dict[str, Any]) -> bool:
        # ASCII: a lone surrogate a caller sent escaped comes back escaped, not as an error.
        data = json.dumps(reply, separators=(",", ":")).encode() + b"\n"
        try:
            caller.sock.sendall(data)
        except OSError:
            self._drop(caller)  # the caller is gone; it retries directly with its requestId
            return False
        return True

    def _drop(self, caller: _Caller) -> None:
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(caller.sock)
        caller.sock.close()

    def _fresh_fold(self) -> None:
        """After a call that raised midway: the fold may no longer match the ledger, and
        every caller is served from it; start again from the files."""
        self.store = HordeStore(self.root, "parent")
        self.store.serving = True

    def handle(self, line: bytes, caller: _Caller) -> dict[str, Any]:
        """One request line -> one answer (an `error` answer: not performed, the caller
        performs the call itself)."""
        try:
            request = json.loads(line)
        except ValueError as exc:
            return {"error": f"not JSON: {exc}"}
        problem = _malformed(request)
        if problem:
            return {"error": problem}
        if identity.proc_of(caller.pid) != caller.proc:
            return {"error": "the caller is gone"}  # its pid now names another process
        siblings = {name: Path(path) for name, path in request["siblings"].items()}
        with self.store.acting_as(request["actor"], caller.proc):
            result = run_action(
                self.store,
                request["call"],
                run=request["run"],
                role=request["role"],
                siblings=siblings,
            )
        return result.as_answer()


def _same_pid_namespace(pid: int) -> bool:
    """Whether process `pid` lives in this process's pid namespace (a member's command
    runs in bubblewrap's own; unknown counts as not)."""
    try:
        return os.readlink(f"/proc/{pid}/ns/pid") == os.readlink("/proc/self/ns/pid")
    except OSError:
        return False


def _malformed(request: Any) -> str:
    """Why `request` is not a call this server performs ('' if it is)."""
    if not isinstance(request, dict) or request.get("v") != PROTOCOL:
        return f"not a version-{PROTOCOL} request"
    actor, run, role = request.get("actor"), request.get("run"), request.get("role")
    if not (isinstance(actor, str) and valid_actor_name(actor)):
        return "bad actor"
    if not (isinstance(run, str) and valid_run_id(run)):
        return "bad run"
    if not isinstance(role, str) or not isinstance(request.get("call"), dict):
        return "bad role or call"
    siblings = request.get("siblings")
    if not isinstance(siblings, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in siblings.items()
    ):
        return "bad siblings"
    return ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", required=True, type=Path, help="the horde directory")
    parser.add_argument("--parent-pid", type=int, help="exit when this process is gone")
    args = parser.parse_args(argv)
    root = args.dir.resolve()
    # pydantic's plugin discovery reads every installed package's entry points on a
    # model's first validation, while callers wait; no plugin is used here.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    if not hasattr(socket, "SO_PEERCRED"):
        # Without the kernel's word on who calls, every call would have to be believed:
        # no server, and every caller writes itself (judged by its own process tree).
        print(f"store server not started: this system cannot name a socket's caller ({root})")
        return 0
    server = StoreServer(root)
    refused = server.claim()
    if refused:
        print(refused, flush=True)
        return 0
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: server.stop())
    start_watchdog(args.parent_pid, on_gone=server.stop)
    print(f"{LISTENING} {server.path}", flush=True)
    server.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
