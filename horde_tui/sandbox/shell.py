"""Running a member's shell commands, which are untrusted.

A model can be prompt-injected by what it reads, so every command passes a refusal list
for destructive forms, runs in the sandbox where it can, without secrets in its
environment, in its own process group (which a timeout kills whole) inside the member's
session, with stdin closed, and comes back as one bounded text the model can read. Stdlib
only: members are small processes.

The refusal list is a guard rail against the obvious; the boundary is the sandbox
(`policy.py`: bubblewrap, when it can run), without which anything the user can do, a
determined command can still do. The list parses the command the way a shell splits it
(separators, quotes, `sudo`/`env` prefixes, `bash -c "..."`, `$(...)`), so ordinary
commands that merely mention a dangerous word (`grep -r shutdown`, `echo "rm -rf /"`)
still run. The environment is built from an allow-list, with or without the sandbox.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import re
import selectors
import shutil
import signal
import subprocess
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from horde_tui.common import procfs
from horde_tui.common.refusal import refusal_reason
from horde_tui.sandbox import netns
from horde_tui.sandbox.policy import (
    NEVER_PASSED,
    SandboxPolicy,
    bwrap_argv,
    bwrap_problem,
    namespace_argv,
    private_network,
    process_cap,
    release_limit,
    resolve,
)
from horde_tui.store.secretfiles import secret_variable

# --- environment ----------------------------------------------------------------------

_KEEP = frozenset({"HORDE_MEMBER", "HORDE_DIR", "HORDE_RUN", "HORDE_ROLE"})
_NON_INTERACTIVE = {
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "TERM": "dumb",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_EDITOR": "true",
}
"""No pager, prompt or editor may wait on the closed stdin until the timeout."""


_ALLOWED = frozenset(
    "PATH HOME LANG LANGUAGE TERM TZ USER LOGNAME SHELL TMPDIR HORDE_MEMBER HORDE_NAME "
    "HORDE_DIR HORDE_RUN HORDE_ROLE HORDE_HORDE HORDE_SIBLINGS".split()
)
"""What a command's environment is built from (plus `LC_*`): locale, paths, and the
member's identity so `horde-tui tool` reads as this member. Nothing else, whatever its
name: a deny-list by name let `DATABASE_URL` and `GITHUB_PAT` through."""


def command_env(
    environ: Mapping[str, str], extra: tuple[str, ...] = (), cwd: Path | None = None
) -> dict[str, str]:
    """A command's environment: the allow-list, the names the user added (`sandbox_env`),
    and the settings that keep pagers, prompts and editors from waiting on stdin."""
    allowed = _ALLOWED | set(extra)
    env = {
        name: value
        for name, value in environ.items()
        if (name in allowed or name.startswith("LC_")) and name not in NEVER_PASSED
    }
    if cwd is not None:
        env["PWD"] = str(cwd)
    env.update(_NON_INTERACTIVE)
    return env


def scrubbed_env(environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` without provider keys and secrets, for a member process (its commands
    get the stricter `command_env`).

    `HORDE_MEMBER`, `HORDE_DIR`, `HORDE_RUN` and `HORDE_ROLE` stay. The gateway URL and
    token go: the supervisor gives the member its own.
    """
    env = {}
    for name, value in environ.items():
        if name in _KEEP or not secret_variable(name):
            env[name] = value
    env.update(_NON_INTERACTIVE)
    return env


# --- output ---------------------------------------------------------------------------

_MARKER_ROOM = 100


def truncate_output(text: str, limit: int = 30_000) -> str:
    """`text` if it fits in `limit` characters, else its head and tail around a marker.

    Both ends matter: a build's first error is at the head, its summary at the tail.
    """
    if len(text) <= limit:
        return text
    middle = len(text) // 2
    return _elide(text[:middle], text[middle:], 0, 0, limit)


def _elide(head: str, tail: str, gap_chars: int, gap_lines: int, limit: int) -> str:
    """Keep a prefix of `head` and a suffix of `tail`; `gap_*` counts what lay between."""
    budget = max(limit - _MARKER_ROOM, 0)
    head_room, tail_room = budget // 2, budget - budget // 2
    kept_head = head[:head_room]
    newline = kept_head.rfind("\n")
    if newline >= head_room * 3 // 4:
        kept_head = kept_head[: newline + 1]  # end on a whole line when that costs little
    kept_tail = tail[len(tail) - tail_room :] if tail_room else ""
    newline = kept_tail.find("\n")
    if 0 <= newline < tail_room // 4:
        kept_tail = kept_tail[newline + 1 :]
    cut_head, cut_tail = head[len(kept_head) :], tail[: len(tail) - len(kept_tail)]
    chars = gap_chars + len(cut_head) + len(cut_tail)
    lines = gap_lines + cut_head.count("\n") + cut_tail.count("\n")
    lead = "" if kept_head.endswith("\n") or not kept_head else "\n"
    return f"{kept_head}{lead}[... {chars} characters ({lines} lines) cut ...]\n{kept_tail}"


class _OutputSink:
    """Keeps the head and the tail of a stream and only counts the middle.

    Memory stays bounded however much a command prints, and the marker can still say
    exactly how much was cut.
    """

    def __init__(self, keep: int) -> None:
        self._keep = keep
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._head: list[str] = []
        self._head_len = 0
        self._tail: deque[str] = deque()
        self._tail_len = 0
        self._gap_chars = 0
        self._gap_lines = 0

    def feed(self, data: bytes, final: bool = False) -> None:
        text = self._decoder.decode(data, final)
        room = self._keep - self._head_len
        if room > 0:
            self._head.append(text[:room])
            self._head_len += len(text[:room])
            text = text[room:]
        if not text:
            return
        self._tail.append(text)
        self._tail_len += len(text)
        while self._tail_len - len(self._tail[0]) >= self._keep:
            dropped = self._tail.popleft()
            self._tail_len -= len(dropped)
            self._gap_chars += len(dropped)
            self._gap_lines += dropped.count("\n")

    def text(self, limit: int) -> str:
        self.feed(b"", final=True)
        head, tail = "".join(self._head), "".join(self._tail)
        if not self._gap_chars:
            return truncate_output(head + tail, limit)
        return _elide(head, tail, self._gap_chars, self._gap_lines, limit)


# --- running --------------------------------------------------------------------------

_KILL_GRACE_S = 2.0
"""Between SIGTERM and SIGKILL of a timed-out command's process group."""
_BACKGROUND_GRACE_S = 1.0
"""How long to wait for EOF after the shell exits while background children hold the pipe."""
_POLL_S = 0.05
_CHUNK = 65_536

_GROUPS: set[int] = set()
"""Process groups of commands that may still have live processes.

No lock: `signal_command_groups` runs in signal handlers, which a held lock would
deadlock; set add/discard and `list()` are atomic under the GIL.
"""


@dataclass(frozen=True)
class ShellResult:
    """What one command did. `output` ends with a status line such as `[exit 0 in 0.3s]`."""

    exit_code: int | None
    """The exit status (128+N when killed by signal N); None when refused or timed out."""
    output: str
    timed_out: bool
    refused: str | None
    duration_s: float


def signal_command_groups(sig: int) -> int:
    """Send `sig` to every process group a command started; return how many got it.

    Commands run in their own process groups (so a timeout can kill one whole), so a
    signal to the member's own process group does not reach them: the member forwards
    stop, continue and terminate through this, including to background processes a
    command left running.
    """
    sent = 0
    for pgid in list(_GROUPS):
        try:
            os.killpg(pgid, sig)
            sent += 1
        except ProcessLookupError:
            _GROUPS.discard(pgid)
        except PermissionError:
            pass
    return sent


def run_command(
    command: str,
    cwd: Path,
    timeout_s: float = 120,
    limit: int = 30_000,
    env: Mapping[str, str] | None = None,
    sandbox: SandboxPolicy | None = None,
) -> ShellResult:
    """Run `command` with `bash -c` (or `/bin/sh`) in `cwd`, unless the refusal list forbids it.

    Under a `bwrap` policy (or `auto` where bwrap runs) the command runs inside the
    sandbox (`policy.py`); a `bwrap` policy where bwrap cannot run refuses the command
    rather than run it bare. Either way its environment is `command_env`.

    stdout and stderr share one pipe so the model sees them interleaved as a terminal
    would; the pipe is read continuously (no deadlock on large outputs) while memory
    stays bounded to about 4x `limit`. On timeout the whole process group gets SIGTERM,
    then SIGKILL after 2 s. Background processes the command leaves running are not
    waited for.
    """
    reason = refusal_reason(command)
    if reason:
        return ShellResult(None, reason, False, reason, 0.0)
    policy = sandbox or SandboxPolicy()
    mode = resolve(policy.mode, policy.network)[0]
    problem = bwrap_problem() if mode == "bwrap" else None
    if problem:
        text = (
            f"refused: the run asks for the bwrap sandbox and {problem}; "
            "ask the user (or run with --sandbox auto)"
        )
        return ShellResult(None, text, False, text, 0.0)
    _forget_dead_groups()
    source = os.environ if env is None else env
    outer, inner, group = process_cap(policy, mode)
    argv = [*inner, shutil.which("bash") or "/bin/sh", "-c", command]
    command_environ = command_env(source, policy.env_names, cwd)
    network = netns.Network() if private_network(policy, mode) else None
    if network:
        argv = network.inside(argv)
    if mode == "bwrap":
        argv = bwrap_argv(argv, cwd, policy, source.get("HOME"), network)
        command_environ["TMPDIR"] = "/tmp"
        command_environ["GIT_OPTIONAL_LOCKS"] = "0"  # `git status` need not write a read-only .git/
    elif mode == "namespace":
        argv = namespace_argv(argv)
    argv = [*outer, *argv]
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=command_environ,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            process_group=0,  # its own group, in the member's session: see horde_tui/common/reaper.py
            pass_fds=network.pass_fds if network else (),
        )
    except OSError as exc:
        if network:
            network.close()
        release_limit(group)
        text = f"could not start the command: {exc}"
        return ShellResult(None, text, False, None, time.monotonic() - start)
    _GROUPS.add(proc.pid)
    try:
        return _finish(proc, network, start, timeout_s, limit, group)
    finally:
        if network:
            network.close()


def _finish(
    proc: subprocess.Popen[bytes],
    network: netns.Network | None,
    start: float,
    timeout_s: float,
    limit: int,
    group: Path | None,
) -> ShellResult:
    """Give a started command its network (if it has one of its own), read its output until
    it ends or times out, and say how it went."""
    assert proc.stdout is not None
    if network and (problem := network.attach(start + min(timeout_s, 30))):
        _kill_group(proc)
        proc.stdout.close()
        release_limit(group)
        text = (
            f"could not start the command: {problem}; tell the user "
            "(sandbox_network = off runs commands without a network)"
        )
        return ShellResult(None, text, False, None, time.monotonic() - start)
    sink = _OutputSink(2 * limit)
    with proc.stdout:
        ending = _pump(proc, sink, start + timeout_s)
        if ending == "eof":
            try:
                proc.wait(max(start + timeout_s - time.monotonic(), 0))
            except subprocess.TimeoutExpired:
                ending = "timeout"
        if ending == "timeout":
            _kill_group(proc)
            _pump(proc, sink, time.monotonic() + 0.5)
    duration = time.monotonic() - start
    _forget_dead_groups()
    release_limit(group)
    return _result(proc, sink.text(limit), ending, duration, timeout_s)


def _pump(proc: subprocess.Popen[bytes], sink: _OutputSink, deadline: float) -> str:
    """Read output until EOF ("eof"), the deadline ("timeout") or a grace after the shell
    exited while background children still hold the pipe ("background")."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    exited_at: float | None = None
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            now = time.monotonic()
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            if exited_at is not None and now - exited_at >= _BACKGROUND_GRACE_S:
                return "background"
            if now >= deadline:
                return "timeout"
            if selector.select(min(deadline - now, _POLL_S)):
                data = os.read(fd, _CHUNK)
                if not data:
                    return "eof"
                sink.feed(data)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the command's process group, then SIGKILL whatever is left after a grace."""
    for sig in (signal.SIGTERM, signal.SIGCONT):  # a paused group acts on SIGTERM once resumed
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
    deadline = time.monotonic() + _KILL_GRACE_S
    while time.monotonic() < deadline:
        proc.poll()
        if not _group_alive(proc.pid):
            break
        time.sleep(_POLL_S)
    else:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _forget_dead_groups() -> None:
    """Drop groups with no process left, so a reused pid is never signalled by mistake."""
    for pgid in list(_GROUPS):
        if not _group_alive(pgid):
            _GROUPS.discard(pgid)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return _has_running_member(pgid)


def _has_running_member(pgid: int) -> bool:
    """Whether a process of the group is more than a zombie.

    `killpg(pgid, 0)` also finds zombies, and an init that reaps orphans late (containers)
    would make every timeout wait out the whole kill grace. /proc tells them apart on
    Linux; elsewhere the group counts as alive.
    """
    if not procfs.HAVE_PROC:
        return True
    return any(p.group == pgid for p in procfs.processes())


_TOOK = re.compile(r" in [0-9]+(?:\.[0-9]+)?s\]$")


def comparable(output: str) -> str:
    """`output` without how long the command ran (`[exit 0 in 0.3s]` -> `[exit 0]`): the
    loop guard compares results, and the same command's time varies with the load."""
    return _TOOK.sub("]", output)


def _result(
    proc: subprocess.Popen[bytes], output: str, ending: str, duration: float, timeout_s: float
) -> ShellResult:
    if ending == "timeout":
        status = f"[timed out after {timeout_s:g}s; process group killed]"
        exit_code = None
    else:
        code = proc.returncode
        exit_code = 128 - code if code < 0 else code
        verb = f"killed by {_signal_name(-code)}" if code < 0 else f"exit {code}"
        status = f"[{verb} in {duration:.1f}s]"
        if ending == "background":
            status = (
                "[background processes are still running and their later output is not read;"
                " redirect it to a file (cmd > log 2>&1 &) so a closed pipe cannot kill them]\n"
                + status
            )
    if output and not output.endswith("\n"):
        output += "\n"
    return ShellResult(exit_code, output + status, ending == "timeout", None, duration)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
