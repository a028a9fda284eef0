"""Who is really writing: the identity rule, from the kernel's process tree.

`HORDE_MEMBER` is only a claim: any process can set it. What a member's shell cannot
change is its ancestry. The supervisor records, in `runs/<id>/.processes.json`, its own
process and each member's (pid and start time from `/proc/<pid>/stat`, so a reused pid
never matches), and every writer walks its own ppid chain once to learn whose tree it is
in (`via`):

- under a live member M of run R (M's process or anything it started): it may write only
  as M, only in R. `HORDE_MEMBER=member-2 horde-tui tool confirm-solved` in member-1's
  `bash` is refused, and so is posting as `parent` or `person`. Writing as M itself with
  `horde-tui tool` from M's shell stays allowed (the shell keeps `HORDE_MEMBER` for that,
  and the refusal list sends members there); it is the same member, its `writer` names
  the tool process, and only the member's own tool-call counters miss the call.
- the supervisor of the target run, or a process it started that is not a member (the app
  hosting it in-process is the same process): it may write as anyone.
- outside every live member and the target run's supervisor (a person at another
  terminal, a script, an external agent): it may write under any name except the ones a
  live run reserves, `parent` and the run's member names; `person`, `user` or an own
  name stay open.

A member's own tree is found from its ancestors' initial environments (`HORDE_DIR`,
`HORDE_RUN`, `HORDE_MEMBER` as the supervisor set them, which no descendant can change)
and confirmed against that run's record, so writing into another run or another horde
directory does not escape the rule.

A member process makes itself the reaper of its orphaned descendants (`adopt_orphans`),
so a command that backgrounds itself and outlives its shell (`(sleep 1; ...) &`,
`setsid`) is re-parented to the member, not to init, and stays in its tree; the member
ends such leftovers when it exits.

Limits, without the bubblewrap sandbox (which makes `.horde/` read-only to member
commands): a member command can still edit the record or append to `ledger.jsonl` by hand,
and a process started on its behalf by something outside the tree (a daemon that spawns
on request: `at`, `systemd-run`, a running tmux server) is outside. Every ledger record
therefore also carries `writer`, the writing process and its `via` as the store saw them,
so a forgery that bypassed the tool stands out.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from horde_tui.common import procfs
from horde_tui.common.watchdog import pid_alive
from horde_tui.store.paths import atomic_write_text, valid_run_id

PARENT = "parent"
"""The supervisor's actor name."""
RECORD = ".processes.json"
"""Per run: the supervisor's and the members' processes, written by the supervisor."""
SUPERVISOR = "supervisor"
OUTSIDE = "outside"


@dataclass(frozen=True)
class Proc:
    """One process as the kernel names it: a pid and its start time (clock ticks since
    boot; None where `/proc` is missing), so a pid reused by another process never matches."""

    pid: int
    start: int | None

    def as_json(self) -> dict[str, Any]:
        return {"pid": self.pid, "start": self.start}

    @classmethod
    def parse(cls, raw: Any) -> Proc | None:
        if not isinstance(raw, dict) or type(raw.get("pid")) is not int:
            return None
        start = raw.get("start")
        return cls(raw["pid"], start if type(start) is int else None)


def proc_of(pid: int) -> Proc:
    """`pid` with its start time, as the supervisor records it."""
    st = procfs.stat(pid)
    return Proc(pid, st.start if st else None)


def alive(proc: Proc) -> bool:
    """The very process `proc` names still runs (not a zombie, not a reused pid)."""
    st = procfs.stat(proc.pid)
    if st is not None:
        return st.state != "Z" and st.start == proc.start
    # No /proc entry: gone, unless this system has no /proc at all (then the pid is all).
    return not procfs.HAVE_PROC and pid_alive(proc.pid)


# -- keeping a member's descendants in its tree ---------------------------------------------

PR_SET_CHILD_SUBREAPER = 36
_SUBREAPER = False


def adopt_orphans() -> bool:
    """Make this process (a member) the parent of its orphaned descendants (Linux
    PR_SET_CHILD_SUBREAPER), so leaving its shell does not leave its tree. False where
    the kernel or libc has no such call."""
    global _SUBREAPER
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        _SUBREAPER = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        _SUBREAPER = False
    return _SUBREAPER


def reap_adopted() -> int:
    """Reap adopted orphans that exited; call only while no own child waits unreaped (a
    member between shell commands). A no-op unless `adopt_orphans` succeeded."""
    reaped = 0
    while _SUBREAPER:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
        reaped += 1
    return reaped


def _children(pid: int) -> list[int]:
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
        if (tasks[0] / "children").exists():
            return [int(c) for t in tasks for c in (t / "children").read_text().split()]
    except (OSError, IndexError, ValueError):
        return []
    # no CONFIG_PROC_CHILDREN: scan every process's parent
    return [p.pid for p in procfs.processes() if p.ppid == pid]


def end_adopted(grace_s: float = 1.0) -> int:
    """End what is left of the member's commands at its exit (every remaining child is
    one: an adopted orphan, or a command a stop interrupted): SIGTERM, then SIGKILL after
    `grace_s`; the children they leave are adopted in turn and ended too. Returns the
    most children seen at once."""
    if not _SUBREAPER:
        return 0
    seen, termed = 0, set()
    term_until = time.monotonic() + grace_s
    give_up = term_until + 2.0
    while time.monotonic() < give_up:
        reap_adopted()
        kids = _children(os.getpid())
        if not kids:
            break
        seen = max(seen, len(kids))
        killing = time.monotonic() >= term_until
        for pid in kids:
            if killing or pid not in termed:
                termed.add(pid)
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL if killing else signal.SIGTERM)
        time.sleep(0.05)
    reap_adopted()
    return seen


# -- the caller's ancestry, walked once per process ------------------------------------------


@dataclass(frozen=True)
class Ancestor:
    proc: Proc
    claim: tuple[str, str, str] | None
    """(HORDE_DIR resolved, HORDE_RUN, HORDE_MEMBER) from the process's initial
    environment, when all are set and the run id is valid."""


_ANCESTRY: dict[int, tuple[Ancestor, ...]] = {}
_OTHERS: dict[int, tuple[Ancestor, ...]] = {}


_CLAIM_KEYS = ("HORDE_DIR", "HORDE_RUN", "HORDE_MEMBER")


def _claim(pid: int) -> tuple[str, str, str] | None:
    env = procfs.environ(pid)
    root, run, name = (env.get(k, "") for k in _CLAIM_KEYS)
    if not (os.path.isabs(root) and name and valid_run_id(run)):
        return None  # a supervisor always sets an absolute HORDE_DIR
    return _resolved(root), run, name


def ancestry(of: int | None = None) -> tuple[Ancestor, ...]:
    """This process (or the process `of`) and its ancestors, nearest first. This
    process's is walked once: ancestry only ever loses members (a parent exits, the
    child is re-parented), never gains them."""
    me = os.getpid()
    if of is not None and of != me:
        return _tree_of(proc_of(of))
    cached = _ANCESTRY.get(me)
    if cached is not None:
        return cached
    result = _walk(me)
    _ANCESTRY.clear()
    _ANCESTRY[me] = result
    return result


def _tree_of(proc: Proc) -> tuple[Ancestor, ...]:
    """Another process's ancestry (one that asks the supervisor to act for a person),
    kept per process: checked
    against `proc`'s start time, so a reused pid is walked anew."""
    hit = _OTHERS.get(proc.pid)
    if not hit or hit[0].proc != proc:
        if len(_OTHERS) >= 256:
            _OTHERS.clear()
        hit = _OTHERS[proc.pid] = _walk(proc.pid)
    return hit


def _walk(first: int) -> tuple[Ancestor, ...]:
    chain: list[Ancestor] = []
    pid, seen = first, set()
    while pid > 1 and pid not in seen and len(chain) < 256:
        seen.add(pid)
        st = procfs.stat(pid)
        if st is None:
            if not chain:  # no /proc: this process is all we know
                chain.append(Ancestor(Proc(pid, None), None))
            break
        chain.append(Ancestor(Proc(pid, st.start), _claim(pid)))
        pid = st.ppid
    return tuple(chain)


# -- the supervisor's record -----------------------------------------------------------------


@dataclass(frozen=True)
class RunProcesses:
    """A run's record: the supervisor's process and each member name's latest process
    (None: not started yet). Every name listed is reserved while the supervisor lives."""

    supervisor: Proc
    members: dict[str, Proc | None]

    @property
    def live(self) -> bool:
        return alive(self.supervisor)


def record_processes(run_dir: Path, members: dict[str, Proc | None]) -> None:
    """Written by the supervisor (this process) at start and at every member spawn. Each
    member's `Proc` is taken when it is spawned (`proc_of`), before it can be reaped and
    its pid reused."""
    data = {
        "supervisor": proc_of(os.getpid()).as_json(),
        "members": {n: None if p is None else p.as_json() for n, p in members.items()},
    }
    atomic_write_text(run_dir / RECORD, json.dumps(data, sort_keys=True) + "\n")


def clear_processes(run_dir: Path) -> None:
    (run_dir / RECORD).unlink(missing_ok=True)


_RECORDS: dict[str, tuple[tuple[int, int, int], RunProcesses | None]] = {}


def read_processes(run_dir: Path | str) -> RunProcesses | None:
    """The run's record, or None (no supervisor ever recorded one, or it is unreadable).
    Cached by the file's inode, size and mtime: the supervisor replaces it atomically."""
    path = os.path.join(run_dir, RECORD)
    try:
        st = os.stat(path)
    except OSError:
        return None
    key = (st.st_ino, st.st_size, st.st_mtime_ns)
    hit = _RECORDS.get(path)
    if hit is not None and hit[0] == key:
        return hit[1]
    record: RunProcesses | None = None
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        sup = Proc.parse(data.get("supervisor"))
        members = data.get("members")
        if sup is not None and isinstance(members, dict):
            record = RunProcesses(sup, {str(n): Proc.parse(p) for n, p in members.items()})
    except (OSError, ValueError, AttributeError):
        record = None
    _RECORDS[path] = (key, record)
    return record


# -- who the caller is, and what it may write as -----------------------------------------------


@dataclass(frozen=True)
class Via:
    """Whose tree the calling process is in: a live member (`member`, of `run` in horde
    directory `root`), the target run's supervisor, or outside."""

    kind: str
    """`member`, `supervisor` or `outside`."""
    member: str = ""
    run: str = ""
    root: str = ""

    def label(self, run: str, root: str) -> str:
        if self.kind != "member":
            return self.kind
        same = self.run == run and self.root == root
        return self.member if same else f"{self.member}@{self.run}"


@functools.lru_cache(maxsize=64)
def _resolved(path: Path | str) -> str:
    """The horde directory with symlinks resolved, as a string (this runs on every write)."""
    return os.path.realpath(path)


def _run_dir(root: str, run: str) -> str:
    return f"{root}/runs/{run}"


def member_above(pid: int | None = None) -> Via | None:
    """The live member whose tree this process (or `pid`) is in, or None. A supervisor
    asks it of a process that asks it to act for a person (a confirm-mode decision)."""
    # Outermost first: a fake member process a member starts sits below the real one.
    for anc in reversed(ancestry(pid)):
        if anc.claim is None:
            continue
        claim_root, claim_run, name = anc.claim
        record = read_processes(_run_dir(claim_root, claim_run))
        if record is not None and record.members.get(name) == anc.proc and record.live:
            return Via("member", name, claim_run, claim_root)
    return None


def caller(root: Path | str, run: str) -> Via:
    """Whose tree this process is in, as seen from a write to `run` under `root`."""
    chain = ancestry()
    root = _resolved(root)
    member = member_above()
    if member is not None:
        return member
    record = read_processes(_run_dir(root, run))
    if record is not None and record.live and any(a.proc == record.supervisor for a in chain):
        return Via(SUPERVISOR)
    return Via(OUTSIDE)


def refusal(root: Path | str, run: str, actor: str) -> str | None:
    """Why this process may not write as `actor` in `run` (one line), or None."""
    root = _resolved(root)
    via = caller(root, run)
    if via.kind == "member":
        if actor != via.member:
            return (
                f"refused: this process runs under {via.member}'s shell; it cannot act as "
                f"{actor} (identity rule); members write only as themselves"
            )
        if via.run != run or via.root != root:
            return (
                f"refused: this process runs under {via.member} of run {via.run}; it cannot "
                f"write in run {run} of {root} (identity rule); members write only in their "
                "own run"
            )
        return None
    if via.kind == SUPERVISOR:
        return None
    record = read_processes(_run_dir(root, run))
    if record is None or not record.live:
        return None
    if actor == PARENT:
        return (
            f"refused: `parent` is the supervisor's name in live run {run} (identity rule); "
            "write under your own name (HORDE_MEMBER=person, or yours)"
        )
    if actor in record.members:
        return (
            f"refused: {actor} is a member of live run {run} and only its own process may "
            "act as it (identity rule); write under your own name (HORDE_MEMBER=person, "
            "or yours)"
        )
    return None


def writer(root: Path | str, run: str) -> dict[str, Any]:
    """The `writer` stamp of a ledger record: this process and whose tree it is in."""
    root = _resolved(root)
    return {"pid": os.getpid(), "via": caller(root, run).label(run, root)}
