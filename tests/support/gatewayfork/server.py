"""The tests' gateway fork server: litellm imported once, each gateway forked from here.

Every real gateway process imports litellm (about 4.6 CPU-seconds on the CI machine), and
the suites start about 260 of them: more than a third of all the CPU they used. Under
the tests, `sitecustomize.py` beside this file turns `python -m horde_tui.gateway ARGS`
(however it is started: by a supervisor, an eval, `start_gateway`) into a request here:
its argv, environment, working directory and open descriptors go over a unix socket,
this server forks, and the child runs the gateway's own `__main__` with litellm
already imported. The gateway's code is the same; only the import is shared.

What differs from a spawned gateway, and why tests still hold: the child's parent is
this server, not the starter (the starter waits for it and forwards its signals; the
child ends at once when the starter dies); `/proc/PID/cmdline` and `environ` of the
child are this server's, and its `os.getppid()` answers the starter's parent (the
supervisor, or the test), which a spawned gateway's parent is, for its watchdog. Tests
about those facts opt out (`spawned_gateway` marker).

`python server.py SOCKET PARENT_PID`: listens once litellm is imported; ends with its
parent.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import runpy
import selectors
import signal
import socket
import sys
import threading
from dataclasses import dataclass

# The one beside this file: conftest puts this folder first on the PYTHONPATH the server
# starts with, so `site` has already imported it (ahead of any system sitecustomize).
from sitecustomize import open_fds

_HIGH_FD = 200
"""Received descriptors are moved above this before being put at their numbers."""
_WATCH_FD = 400
"""The child's end of the starter's connection (EOF: the starter is gone) lives here."""


@dataclass(frozen=True)
class Request:
    """What the starter sends (sitecustomize.py): its descriptors arrive beside it."""

    argv: list[str]
    env: dict[str, str]
    cwd: str
    fds: list[int]
    """The numbers the received descriptors had in the starter, in order."""
    ppid: int
    """The starter's parent: the supervisor (or the test) that ran the gateway."""

    @classmethod
    def parse(cls, data: bytes) -> Request:
        raw = json.loads(data)
        return cls(
            [str(a) for a in raw["argv"]],
            {str(k): str(v) for k, v in raw["env"].items()},
            str(raw["cwd"]),
            [int(n) for n in raw["fds"]],
            int(raw["ppid"]),
        )


def _child(conn: socket.socket, request: Request, fds: list[int]) -> None:
    """In the forked child: become the process the starter would have run."""
    os.setsid()  # as `start_new_session=True` would
    signal.set_wakeup_fd(-1)
    for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    targets = request.fds
    # Everything this child keeps moves above the numbers the starter's descriptors take,
    # which may be any (the accepted connection's number among them).
    watch = _dup_high(conn.fileno(), _WATCH_FD)
    conn.close()
    high = [_dup_high(fd, _HIGH_FD) for fd in fds]
    for fd in open_fds():
        if fd != watch and fd not in high:
            os.close(fd)
    for src, dst in zip(high, targets, strict=True):
        os.dup2(src, dst)
        os.close(src)
    os.chdir(request.cwd)
    os.environ.clear()
    os.environ.update(request.env)
    starter_parent = request.ppid
    # The gateway's watchdog asks whether its parent (the run's supervisor) is still
    # its parent: for a spawned gateway it is; here the parent is this server.
    os.getppid = lambda: starter_parent

    def starter_gone() -> None:
        """The starter died (a SIGKILL): end as it would have taken us along."""
        try:
            os.read(watch, 1)
        finally:
            os._exit(137)

    threading.Thread(target=starter_gone, name="starter-watch", daemon=True).start()
    sys.argv = ["horde_tui.gateway", *request.argv]
    code = 1
    try:
        runpy.run_module("horde_tui.gateway", run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # printed as the process would print it, then ended
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _dup_high(fd: int, floor: int) -> int:
    import fcntl

    return fcntl.fcntl(fd, fcntl.F_DUPFD, floor)


def serve(path: str, parent: int) -> None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LITELLM_LOG", "ERROR")
    gc.disable()
    import aiohttp.web  # noqa: F401
    import litellm  # noqa: F401 - the seconds this server exists to pay once

    gc.enable()
    gc.collect()
    gc.freeze()
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    partial = f"{path}.{os.getpid()}"
    listener.bind(partial)
    listener.listen(64)
    os.rename(partial, path)  # appears only when it can serve
    children: dict[int, socket.socket] = {}
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    selector.register(wake_r, selectors.EVENT_READ)
    while os.getppid() == parent:
        for key, _ in selector.select(timeout=1.0):
            if key.fileobj is listener:
                conn, _ = listener.accept()
                _start(conn, children, listener, (wake_r, wake_w))
            else:
                os.read(wake_r, 4096)
        _reap(children)
    listener.close()
    os.unlink(path)
    with contextlib.suppress(OSError):
        os.rmdir(os.path.dirname(path))  # the folder conftest made for it, when empty


def _start(
    conn: socket.socket,
    children: dict[int, socket.socket],
    listener: socket.socket,
    wake: tuple[int, int],
) -> None:
    try:
        data, fds, _, _ = socket.recv_fds(conn, 1 << 20, 64)
        request = Request.parse(data)
    except (OSError, ValueError, KeyError, TypeError):
        conn.close()
        return
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        # Closed through their objects, so no later close of theirs hits a reused number.
        for sock in (listener, *children.values()):
            sock.close()
        for fd in wake:
            os.close(fd)
        _child(conn, request, fds)
    for fd in fds:
        os.close(fd)
    children[pid] = conn
    try:
        conn.send(json.dumps({"pid": pid}).encode())
    except OSError:
        pass


def _reap(children: dict[int, socket.socket]) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = children.pop(pid, None)
        if conn is None:
            continue
        try:
            conn.send(json.dumps({"exit": os.waitstatus_to_exitcode(status)}).encode())
        except OSError:
            pass
        conn.close()


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]))
