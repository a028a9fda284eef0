"""Under the tests only (this folder is on PYTHONPATH): `python -m horde_tui.gateway` asks
the fork server (`server.py`) for a gateway with litellm already imported.

This process stays as the starter sees it: its pid is the one the starter holds, it
forwards the signals it gets, and it ends with the gateway's exit status. Without the
server (not set, not up yet, refused) the gateway starts here the ordinary way.
"""

from __future__ import annotations

import os
import sys

SOCKET_ENV = "TEST_GATEWAY_FORKSERVER"


def open_fds() -> list[int]:
    """This process's open descriptors (the one `listdir` itself opens is gone again)."""
    out = []
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            os.fstat(fd)
        except OSError:
            continue
        out.append(fd)
    return out


def _as_forked_gateway() -> None:
    path = os.environ.get(SOCKET_ENV)
    argv = list(getattr(sys, "orig_argv", ()))
    if not path or "-m" not in argv:
        return
    at = argv.index("-m")
    if argv[at + 1 : at + 2] != ["horde_tui.gateway"]:
        return
    import json
    import signal
    import socket

    conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        conn.connect(path)
    except OSError:
        conn.close()
        return
    fds = [fd for fd in open_fds() if fd != conn.fileno()]
    request = {
        "argv": argv[at + 2 :],
        "env": dict(os.environ),
        "cwd": os.getcwd(),
        "fds": fds,
        "ppid": os.getppid(),
    }
    try:
        socket.send_fds(conn, [json.dumps(request).encode()], fds)
        answer = conn.recv(4096)
    except OSError:
        answer = b""
    if not answer:
        conn.close()
        return  # refused before it forked: start here
    pid = json.loads(answer)["pid"]

    def forward(signum: int, _frame: object) -> None:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(sig, forward)
    try:
        ended = conn.recv(4096)
    except OSError:
        ended = b""
    code = json.loads(ended)["exit"] if ended else 1
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code & 0xFF)


_as_forked_gateway()
