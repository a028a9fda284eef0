"""What a live member is doing now, and what the supervisor will do about it.

One derivation for every reader. The supervisor fills a `MemberState` from its members'
status lines, the screens fill the same fields from transcripts (`view.members`), and
both hand it to `activity`, which names one of seven states with when it began:

- `waiting on model`: a call is in flight; `rate-limited` when the gateway is backing
  it off (the gateway writes `.backoff-<member>` in the run folder while it waits);
- `running a tool`, with the call and since when; `blocked` when that tool waits for
  a person's approval (confirm mode) or a `horde` call waits on the ledger lock;
- `looping`: the member's own guard (`RepeatGuard`) saw the same refused call, the
  same call with the same result in a row, or the same two- or three-call cycle;
- `working` between steps, `idle` once no call and no tool ran for `IDLE_AFTER_S`.

The stall rule is the reference's: a member with no ledger write for the stall time is
reset as `no-ledger-progress`, however busy it keeps the model and its shell; time the
outside world holds it back (`held_back`: the provider rate-limits its call, or a person
has yet to approve its command) is not counted (`StallClock`). `next_step` says what
the supervisor will do.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from horde_tui.store.causes import NO_LEDGER_PROGRESS

WORKING = "working"
WAITING = "waiting on model"
RATE_LIMITED = "rate-limited"
TOOL = "running a tool"
IDLE = "idle"
LOOPING = "looping"
BLOCKED = "blocked"
STATES = (WORKING, WAITING, RATE_LIMITED, TOOL, IDLE, LOOPING, BLOCKED)

IDLE_AFTER_S = 5.0
"""No call and no tool for this long: `idle`, not `working` between two steps."""
LOCK_WAIT_S = 3.0
"""A `horde` call takes milliseconds; one running this long waits on the ledger lock."""

LOOP_WARN = 5
"""From this many repeats of one call in a session, each result tells the model to stop."""
LOOP_EXIT = LOOP_WARN + 3
"""At this many the session ends as `looping`, and the supervisor resets the member."""
CYCLE_WARN = 3
"""A cycle of two or three calls repeated this many times in a row: told to stop."""
CYCLE_EXIT = CYCLE_WARN + 2
"""... and at this many the session ends as `looping`."""
_HISTORY = 3 * LOOP_EXIT


@dataclass(frozen=True)
class Repeat:
    """How often the member's latest call repeated: `refused` (the same refused call, in
    the session), `same` (the same call with the same result, in a row) or `cycle` (the
    same cycle of `period` calls, in a row)."""

    kind: str
    count: int
    what: str
    period: int = 1

    @property
    def warn(self) -> int:
        return CYCLE_WARN if self.kind == "cycle" else LOOP_WARN

    @property
    def limit(self) -> int:
        return CYCLE_EXIT if self.kind == "cycle" else LOOP_EXIT

    def describe(self) -> str:
        """`sent the same refused call 8 times: horde claim #3` (the exit's detail)."""
        if self.kind == "refused":
            return f"sent the same refused call {self.count} times: {self.what}"
        if self.kind == "same":
            return f"sent the same call {self.count} times in a row, same result: {self.what}"
        return f"repeated the same {self.period}-call cycle {self.count} times: {self.what}"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Any) -> Repeat | None:
        if not isinstance(data, dict):
            return None
        try:
            return cls(
                str(data["kind"]), int(data["count"]), str(data["what"]), int(data["period"])
            )
        except (KeyError, TypeError, ValueError):
            return None


@dataclass
class RepeatGuard:
    """Counts repeats of a session's calls (the member loop feeds it every result).

    A refused call counts however far apart its repeats are (the rule still refuses
    it); any other call counts only in a row and with the same result, since a result
    that changed is news, and a ledger read repeated (`wait`) is how a member waits for
    another's work, so it never counts."""

    refused: dict[str, int] = field(default_factory=dict)
    tail: list[str] = field(default_factory=list)
    """Keys of the latest calls, oldest first (a wait's key is unique: it breaks runs)."""
    names: list[str] = field(default_factory=list)
    """Their summaries, for the detail."""
    wait_count: int = 0

    def see(self, call: str, summary: str, result: str, refused: bool, wait: bool) -> Repeat:
        """Record one call (`call`: tool and canonical arguments) and its result."""
        if refused:
            count = self.refused.get(call, 0) + 1
            self.refused[call] = count
            self._push(f"!{call}", summary)
            return Repeat("refused", count, summary)
        if wait:
            self._push(f"~{self._waits()}", summary)
            return Repeat("same", 1, summary)
        digest = hashlib.sha256(result.encode("utf-8", "replace")).hexdigest()[:16]
        self._push(f"{call}\0{digest}", summary)
        best = Repeat("same", _run(self.tail, 1), summary)
        for period in (2, 3):
            block = self.tail[-period:]
            if len(block) < period or len(set(block)) < period:
                continue
            count = _run(self.tail, period)
            cycle = Repeat("cycle", count, ", ".join(self.names[-period:]), period)
            if count >= 2 and count * best.warn > best.count * cycle.warn:
                best = cycle
        return best

    def _waits(self) -> int:
        self.wait_count += 1
        return self.wait_count

    def _push(self, key: str, summary: str) -> None:
        self.tail.append(key)
        self.names.append(summary)
        del self.tail[:-_HISTORY], self.names[:-_HISTORY]


def warned_since(
    before: Repeat | None, since: float | None, after: Repeat | None, now: float | None
) -> float | None:
    """When the repeats reached the guard's warning, after the count went `before` ->
    `after` at `now` (`since`: the answer before): the `looping` state's start."""
    if after is None or after.count < after.warn:
        return None
    if before is not None and before.count >= before.warn:
        return since
    return now


def _run(keys: list[str], period: int) -> int:
    """How many times the last `period` keys repeat, back to back, at the end of `keys`."""
    block = keys[-period:]
    count, end = 0, len(keys)
    while end - period >= 0 and keys[end - period : end] == block:
        count += 1
        end -= period
    return count


@dataclass(frozen=True)
class Backoff:
    """The gateway is backing off a member's call: since when, until when, and why."""

    since: float
    until: float
    status: int = 429
    queued: int = 0
    """Not a retry: the call waits for a slot under the provider's adaptive limit of
    this many calls (cut after 429s), so `until` is not known."""

    def note(self, now: float) -> str:
        if self.queued:
            return f"queued under the provider's limit of {self.queued} calls"
        left = max(0.0, self.until - now)
        return f"{self.status}, retry in {duration(left)}"


def backoff_path(run_dir: Path, member: str) -> Path:
    """Where the gateway says it backs off `member`'s call (gone when the call ends)."""
    return run_dir / f".backoff-{member}"


def write_backoff(run_dir: Path, member: str, backoff: Backoff) -> None:
    """The gateway's side: replace the note in one rename, so a reader sees a whole one."""
    path = backoff_path(run_dir, member)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(asdict(backoff)), encoding="utf-8")
    os.replace(tmp, path)


def clear_backoff(run_dir: Path, member: str) -> None:
    backoff_path(run_dir, member).unlink(missing_ok=True)


def read_backoff(run_dir: Path, member: str) -> Backoff | None:
    """The gateway's note for `member`, or None (no back-off, or an unreadable note)."""
    try:
        data = json.loads(backoff_path(run_dir, member).read_text(encoding="utf-8"))
        since, until, status = float(data["since"]), float(data["until"]), int(data["status"])
        return Backoff(since, until, status, int(data.get("queued") or 0))
    except (OSError, ValueError, KeyError, TypeError):
        return None


class MemberSignals(Protocol):
    """What `activity` reads of a member: the fields of `store.members.MemberState`
    (a protocol, so that module can use this one's types without a cycle)."""

    status: str
    started: float | None
    last_output: float | None
    first_output: float | None
    current_tool: str
    tool_summary: str
    call_since: float | None
    tool_since: float | None
    repeat: Repeat | None
    repeat_since: float | None
    backoff: Backoff | None
    approval: str


def heartbeat_path(run_dir: Path, member: str) -> Path:
    """The file a member touches at each ledger write (`MemberConfig.heartbeat`)."""
    return run_dir / f".hb-{member}"


def last_write(run_dir: Path, member: str) -> float:
    """When `member` last wrote the ledger (0.0: not yet, or not known)."""
    try:
        return heartbeat_path(run_dir, member).stat().st_mtime
    except OSError:
        return 0.0


@dataclass(frozen=True)
class Activity:
    """One live member's state, since when (epoch seconds), and what it is about."""

    state: str
    since: float | None
    detail: str = ""

    def text(self, now: float, short: bool = False) -> str:
        """`rate-limited 12s (429, retry in 3s)`, `running a tool 40s: pytest -q`; `short`
        for a narrow cell: `tool 40s: pytest -q`, `model 3s`."""
        name = SHORT[self.state] if short else self.state
        head = name if self.since is None else f"{name} {duration(now - self.since)}"
        if not self.detail:
            return head
        if self.state in (TOOL, LOOPING):
            return f"{head}: {self.detail}"
        return f"{head} ({self.detail})"


SHORT = {
    WORKING: "working",
    WAITING: "model",
    RATE_LIMITED: "limited",
    TOOL: "tool",
    IDLE: "idle",
    LOOPING: "looping",
    BLOCKED: "blocked",
}
"""Each state's word where the column is narrow (80 columns leave it 17 cells)."""


def duration(seconds: float) -> str:
    """`12s`, `4m05s`, `1h05m`: short enough for a table cell."""
    total = max(0, int(seconds))
    if total < 60:
        return f"{total}s"
    if total < 3600:
        return f"{total // 60}m{total % 60:02d}s"
    return f"{total // 3600}h{total % 3600 // 60:02d}m"


def activity(state: MemberSignals, now: float) -> Activity | None:
    """What a running member is doing (None for one not running: its status says it)."""
    if state.status != "running":
        return None
    repeat = state.repeat
    if repeat is not None and repeat.count >= repeat.warn:
        return Activity(LOOPING, state.repeat_since, repeat.describe())
    if state.current_tool:
        what = state.tool_summary or state.current_tool
        if state.approval:
            return Activity(BLOCKED, state.tool_since, f"waiting for approval: {what}")
        started = state.tool_since
        if state.current_tool == "horde" and started is not None and now - started >= LOCK_WAIT_S:
            return Activity(BLOCKED, started, f"on the ledger lock: {what}")
        # A command is its own name: `running a tool 40s: pytest -q`.
        return Activity(TOOL, started, what.removeprefix("bash: "))
    if state.call_since is not None:
        backoff = state.backoff
        if backoff is not None and backoff.since >= state.call_since - 1:
            return Activity(RATE_LIMITED, backoff.since, backoff.note(now))
        return Activity(WAITING, state.call_since)
    last = state.last_output or state.started
    if last is not None and now - last >= IDLE_AFTER_S:
        return Activity(IDLE, last)
    return Activity(WORKING, last)


def held_back(state: MemberSignals, act: Activity | None) -> bool:
    """Whether the outside world holds the member back: the provider rate-limits its call
    (the gateway's back-off), or its command waits for a person's approval. Its stall
    clock does not run meanwhile; a wait on the ledger lock or the model is no excuse."""
    if act is None:
        return False
    return act.state == RATE_LIMITED or (act.state == BLOCKED and bool(state.approval))


def progress_since(state: MemberSignals, last_write: float = 0.0) -> float | None:
    """The member's last ledger progress as the stall rule counts it: its last ledger
    write, or its session's first model answer when that came later (a fresh session,
    and the gateway's litellm import before that answer, are not held against it);
    None before that first answer."""
    if state.first_output is None:
        return None
    return max(state.first_output, last_write)


@dataclass
class StallClock:
    """One session's time without ledger progress, leaving out the time the member was
    `held_back`: that time pauses the clock rather than restarting it, so a member held
    back now and then still has to write the ledger within the stall time of its own."""

    since: float | None = None
    """The progress the clock counts from (`progress_since`)."""
    held_s: float = 0.0
    """Time held back since then."""
    held_at: float | None = None
    """The last check that found the member held back (None: it was not)."""

    def quiet_s(self, since: float | None, held: bool, now: float) -> float:
        """Seconds without ledger progress at `now`, the held-back time left out."""
        if since != self.since:  # the member wrote: the clock starts again
            self.since, self.held_s = since, 0.0
        if held:
            if self.held_at is not None and since is not None:
                self.held_s += now - max(self.held_at, since)
            self.held_at = now
        else:
            self.held_at = None
        return 0.0 if since is None else max(0.0, now - since - self.held_s)


def next_step(
    state: MemberSignals, act: Activity | None, now: float, stall_s: float, last_write: float = 0.0
) -> str:
    """What the supervisor does next about this member, in one line for its detail."""
    if act is None:
        return ""
    if act.state == LOOPING and state.repeat is not None:
        more = max(0, state.repeat.limit - state.repeat.count)
        return f"reset for looping if it repeats {more} more time{'s' if more != 1 else ''}"
    if act.state == RATE_LIMITED:
        return "nothing: waiting on the gateway's back-off (not counted as a stall)"
    if held_back(state, act):
        return "nothing: a person decides (not counted as a stall)"
    since = progress_since(state, last_write)
    if not stall_s or since is None:
        return "nothing: the member is at work"
    left = max(0.0, since + stall_s - now)
    return f"reset as {NO_LEDGER_PROGRESS} in {duration(left)} unless it writes the ledger"
