"""Reading Linux `/proc`: one parser of `/proc/PID/stat` and `environ` for the reaper,
the identity rule and the shell's group check.

Stdlib only (members use it). Elsewhere than Linux nothing is found: `HAVE_PROC` tells
the callers that must then fall back to other checks.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass

HAVE_PROC = os.path.exists("/proc/self/stat")


@dataclass(frozen=True)
class Stat:
    """One process as `/proc/PID/stat` shows it."""

    pid: int
    state: str
    """`R`, `S`, `D`..., `T` stopped, `Z` zombie, `X` dead."""
    ppid: int
    group: int
    """Its process group (a member's command leads one of its own)."""
    session: int
    start: int
    """Start time in clock ticks since boot: with the pid, it names one process for good."""


def stat(pid: int) -> Stat | None:
    """`pid`'s stat line, or None when it is gone (or unreadable)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may contain spaces or ')'.
    fields = raw[raw.rfind(b")") + 2 :].split()
    try:
        return Stat(
            pid,
            fields[0].decode(),
            int(fields[1]),
            int(fields[2]),
            int(fields[3]),
            int(fields[19]),
        )
    except (IndexError, ValueError):
        return None


def processes() -> list[Stat]:
    """Every process on the machine, zombies excepted (empty without /proc)."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    found = []
    for entry in entries:
        if entry.isdigit() and (st := stat(int(entry))) is not None:
            if st.state not in ("Z", "X"):
                found.append(st)
    return found


def environ(pid: int) -> dict[str, str]:
    """The environment `pid` started with (its later changes do not show), or {}."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            raw = fh.read()
    except OSError:
        return {}
    pairs = (item.partition(b"=") for item in raw.split(b"\0") if item)
    return {k.decode(errors="replace"): v.decode(errors="replace") for k, _, v in pairs}


def flock_holders(path: str) -> list[int]:
    """The pids holding an `flock` on `path` now (`/proc/locks`), waiters excepted; [] when
    none or unknown. A holder note says who took a lock last; this says who has it."""
    try:
        st = os.stat(path)
        with open("/proc/locks", encoding="ascii", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return []
    inode = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    found = []
    for line in lines:
        fields = line.split()  # "1: FLOCK  ADVISORY  WRITE 1234 00:2f:5678 0 EOF"
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == inode:
            with contextlib.suppress(ValueError):
                found.append(int(fields[4]))
    return found


def command_name(pid: int) -> str:
    """`pid`'s command name (`/proc/PID/comm`), or "" when gone."""
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as fh:
            return fh.read().strip()
    except OSError:
        return ""
