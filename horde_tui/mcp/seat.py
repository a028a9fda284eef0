"""Who the MCP server acts as (its seat): the run, the member name, and its registration.

The identity rule (`store.identity`) decides as it does for `horde-tui tool`: a live
run's `parent` and member names belong to their owners, so the server refuses to start
as one of them. `--member auto` takes the next external name (`ext-1`, `ext-2`, ...) no
one has joined the run as, under a small lock so two agents joining at once never share
one. A seat in an existing run is registered there (`member-join` in its events.jsonl,
`member-leave` when the server ends): the screens and the report show it as external.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from horde_tui.store import identity
from horde_tui.store.paths import (
    ACTOR_NAME_RULE,
    MANUAL_RUN,
    unwritable,
    valid_actor_name,
    valid_run_id,
)
from horde_tui.store.runs import find_run, resolve_run, run_state
from horde_tui.store.store import HordeStore

AUTO = "auto"
EXTERNAL_PREFIX = "ext-"
_EXTERNAL = re.compile(r"ext-(\d+)")


class SeatRefused(Exception):
    """The server cannot act as asked; the message is the one line to print."""


@dataclass(frozen=True)
class Seat:
    horde_dir: Path
    run: str
    name: str
    registered: bool
    """A `member-join` was written, so a `member-leave` is owed at the end."""

    @property
    def workdir(self) -> Path:
        return HordeStore(self.horde_dir, self.name).paths.workdir


def pick_run(horde_dir: Path, run: str | None) -> tuple[Path, str]:
    """The horde directory and run the server acts in: the named one (a swarm's horde run
    lives in its horde's own directory), else the newest live run, else `manual`."""
    named = run or os.environ.get("HORDE_RUN") or ""
    if named and not valid_run_id(named):
        raise SeatRefused(
            f"{named!r} is not a run id; use letters, digits, '.', '_' or '-' (max 80)"
        )
    if run and run != MANUAL_RUN:
        found: Path | None = resolve_run(horde_dir, run)  # a typo makes no run (UnknownRun)
    else:
        found = find_run(horde_dir, named or None)
    if found is not None:
        return found.parent.parent, found.name
    return horde_dir, named or MANUAL_RUN


def finished_refusal(horde_dir: Path, run: str) -> str | None:
    """One line when `run` is finished (its report written, no supervisor): it takes no
    more members and no more writes; reading it still works."""
    run_dir = HordeStore(horde_dir, "reader").paths.run_dir(run)
    if run_state(run_dir) != "finished":
        return None
    return (
        f"refused: run {run} is finished (its REPORT.md is written) and takes no more "
        f"members or writes (run rule); read it, or continue it with `horde-tui fork {run}`"
    )


def take_seat(horde_dir: Path, run: str | None, member: str) -> Seat:
    """Resolve the run and the name, refuse a name the identity rule keeps for its
    owner, and register the seat with an existing run."""
    place = unwritable(horde_dir)
    if place is not None:
        raise SeatRefused(f"refused: {place[0]}; {place[1]}")
    root, run_id = pick_run(horde_dir, run)
    finished = finished_refusal(root, run_id)
    if finished:
        raise SeatRefused(finished)
    if member == AUTO:
        return _auto_seat(root, run_id)
    if not valid_actor_name(member):
        raise SeatRefused(
            f"--member {member!r} is not a member name (names rule: {ACTOR_NAME_RULE}); "
            "use a name such as ext-1, or auto"
        )
    refused = identity.refusal(root, run_id, member)
    if refused:
        raise SeatRefused(refused)
    store = HordeStore(root, member)
    if not store.run_exists(run_id) or member in planned_names(store.paths.run_dir(run_id)):
        # A planned member of a finished run writing on (the rule allows it) stays what
        # the run's events say it was, not an external member.
        return Seat(root, run_id, member, registered=False)
    _register(store, run_id)
    return Seat(root, run_id, member, registered=True)


def planned_names(run_dir: Path) -> set[str]:
    """The supervisor's own names for the run: `parent` and its manifest's members."""
    names = {identity.PARENT}
    try:
        manifest = json.loads((run_dir / "MANIFEST.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return names
    listed = manifest.get("members") if isinstance(manifest, dict) else None
    for m in listed if isinstance(listed, list) else []:
        if isinstance(m, dict) and isinstance(m.get("name"), str):
            names.add(m["name"])
    return names


def _auto_seat(root: Path, run: str) -> Seat:
    store = HordeStore(root, "user")  # as `horde-tui tool` creates a run it writes in first
    store.ensure_run(run)
    with _join_lock(store.paths.run_dir(run)):
        taken = joined_names(store.paths.events(run))
        record = identity.read_processes(store.paths.run_dir(run))
        if record is not None:
            taken |= set(record.members)
        numbers = [int(m.group(1)) for n in taken if (m := _EXTERNAL.fullmatch(n))]
        name = f"{EXTERNAL_PREFIX}{max(numbers, default=0) + 1}"
        _register(HordeStore(root, name), run)
    return Seat(root, run, name, registered=True)


def joined_names(events: Path) -> set[str]:
    """Every name a `member-join` in the run's events named (left or not: a name is
    never handed to a second agent, whose entries would read as the first's)."""
    names: set[str] = set()
    try:
        with open(events, "rb") as fh:
            for line in fh:
                if b'"member-join"' not in line:
                    continue
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue
                if isinstance(ev, dict) and ev.get("kind") == "member-join":
                    names.add(str(ev.get("member")))
    except FileNotFoundError:
        pass
    return names


@contextmanager
def _join_lock(run_dir: Path) -> Iterator[None]:
    """Serializes choosing an `ext-N` name and writing its `member-join`."""
    run_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(run_dir / ".mcp-join.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _register(store: HordeStore, run: str) -> None:
    store.append_event(
        run,
        {
            "type": "lifecycle",
            "kind": "member-join",
            "member": store.actor,
            "role": "external",
            "pid": os.getpid(),
            "via": "mcp",
        },
    )


def leave(seat: Seat, cause: str = "left") -> None:
    """The seat's `member-leave`, when it was registered; never raises (the server is
    ending: a full disk must not turn a clean exit into a traceback)."""
    if not seat.registered:
        return
    try:
        HordeStore(seat.horde_dir, seat.name).append_event(
            seat.run,
            {"type": "lifecycle", "kind": "member-leave", "member": seat.name, "cause": cause},
        )
    except OSError:
        pass
