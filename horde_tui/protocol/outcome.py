"""How a run ended: the one outcome table, and what a finished run is, for the reports.

`OUTCOME_TABLE` decides a run's outcome at finalize, first row that holds: what the
supervisor decided while the run went (a failed canary, a stop, a solved answer) stands;
a run that ended on its own (every member's session ended) is judged by how its members
ended and what they wrote, so a run whose provider died is `failed`, never `finished`.
Each row carries its exit status (`--headless`, the app, `resume`); the outcome table on
the docs' "Running a horde" page (docs/guide/running.md) is this one
(`tests/e2e/test_outcome.py` compares them).

`RunSummary` is everything finalize knows besides the ledgers and the event log: the
outcome, the canary result, each member's end, the timing. The report, summary and graph
writers are pure functions of it plus `LedgerState` and `events.jsonl`, so a run can be
finalized later from disk (`horde-tui finalize RUN`) with the same result.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from horde_tui.protocol.context import PARENT_ACTORS
from horde_tui.store.causes import cause_kind
from horde_tui.store.members import MemberState


@dataclass(frozen=True)
class Ending:
    """What decides the outcome: the supervisor's own decision during the run (None: the
    run ended on its own), how each of its members' last session ended, the failed
    sessions' details oldest first, and who wrote the ledger."""

    decided: str | None
    ends: tuple[tuple[str, str], ...] = ()
    """(member, the cause its last session ended with), the run's own members."""
    failures: tuple[tuple[str, str], ...] = ()
    """(cause, detail) of every session that ended with a failure, oldest first."""
    writes: Mapping[str, int] = field(default_factory=dict)
    """Member -> its accepted ledger writes in this run (the tool's `ok` outcomes)."""
    provider: str = ""
    """The model and where it is served (`openai/x at http://127.0.0.1:P/v1`)."""

    @property
    def failed(self) -> list[str]:
        """Members whose last session ended with a failure (resets used up, or none due)."""
        return [name for name, cause in self.ends if cause_kind(cause) == "failed"]


WITH_FAILURES = "finished with failures"


@dataclass(frozen=True)
class OutcomeRow:
    """One way a run ends: its outcome, exit status, the docs' words, and when it holds."""

    outcome: str
    exit_code: int
    when: str
    """The rule, as the outcome table in docs/guide/running.md says it."""
    holds: Callable[[Ending], bool]


def _decided(outcome: str) -> Callable[[Ending], bool]:
    return lambda e: e.decided == outcome


OUTCOME_TABLE: tuple[OutcomeRow, ...] = (
    OutcomeRow(
        "canary failed",
        1,
        "member-1 gave no model output in two tries; no other member started",
        _decided("canary failed"),
    ),
    OutcomeRow(
        "failed",
        1,
        "the run could not go on: its gateway did not start, or the supervisor failed",
        _decided("failed"),
    ),
    OutcomeRow(
        "interrupted",
        1,
        "the supervisor died; `finalize` reported from disk",
        _decided("interrupted"),
    ),
    OutcomeRow(
        "stopped by user", 130, "a person stopped the whole run", _decided("stopped by user")
    ),
    OutcomeRow(
        "stopped at deadline", 1, "`--max-minutes` ran out", _decided("stopped at deadline")
    ),
    OutcomeRow("stopped at budget", 1, "`--max-cost-usd` was spent", _decided("stopped at budget")),
    OutcomeRow(
        "solved", 3, "an answer was proposed and another member validated it", _decided("solved")
    ),
    OutcomeRow(
        "solved-unvalidated",
        4,
        "an answer was proposed and nobody validated it before the run ended",
        _decided("solved-unvalidated"),
    ),
    OutcomeRow(
        "failed",
        1,
        "every session ended and no member wrote the ledger",
        lambda e: e.decided is None and not any(e.writes.values()),
    ),
    OutcomeRow(
        "failed",
        1,
        "every member ended with a failure (`model_error`, `exit_nonzero`, ...) after its resets",
        lambda e: e.decided is None and len(e.failed) == len(e.ends),
    ),
    OutcomeRow(
        WITH_FAILURES,
        5,
        "members wrote the ledger; some ended with a failure, the others finished",
        lambda e: e.decided is None and bool(e.failed),
    ),
    OutcomeRow(
        "finished",
        0,
        "members wrote the ledger and none ended with a failure",
        lambda e: e.decided is None,
    ),
)
"""The outcome of a run, first row that holds. A member's end is its last session's
cause, classified by `store.causes` (a failure is reset up to the cap first, so a member
that ends failed has used up its resets); a write is a `horde` call the tool accepted."""


STOPPED = frozenset({"stopped by user", "stopped at deadline", "stopped at budget", "interrupted"})
"""Outcomes of a run something stopped; every other run ended on its own (finalize gives
those the post-mortem)."""


def decide(ending: Ending) -> OutcomeRow:
    """The first row of `OUTCOME_TABLE` that holds; a decision the table does not know
    keeps its name, with status 1."""
    row = next((r for r in OUTCOME_TABLE if r.holds(ending)), None)
    if row is None:
        return OutcomeRow(str(ending.decided), 1, "", lambda e: True)
    return row


def exit_code(outcome: str) -> int:
    """The exit status of an outcome; 1 for one the table does not know."""
    return next((r.exit_code for r in OUTCOME_TABLE if r.outcome == outcome), 1)


def outcome_of(ending: Ending, decided_diagnosis: str) -> tuple[str, str]:
    """(outcome, one-line diagnosis): the supervisor's own diagnosis for an outcome it
    decided, else one naming the members' failures and what they wrote."""
    row = decide(ending)
    if ending.decided is not None:
        return row.outcome, decided_diagnosis
    return row.outcome, diagnose(ending)


def diagnose(ending: Ending) -> str:
    """`4 of 4 members ended model_error: Connection error. (openai/x at URL); no member
    wrote the ledger`: the failures first, with the first failure's own line."""
    writers = {name: n for name, n in ending.writes.items() if n}
    if writers:
        total = sum(writers.values())
        wrote = f"{total} ledger write{'s' if total != 1 else ''} by {', '.join(sorted(writers))}"
    else:
        wrote = "no member wrote the ledger"
    failed = ending.failed
    if not failed:
        return f"every member finished its work; {wrote}"
    causes = Counter(cause for name, cause in ending.ends if name in failed)
    named = ", ".join(
        cause if len(causes) == 1 else f"{cause} ({n})" for cause, n in causes.most_common()
    )
    text = f"{len(failed)} of {len(ending.ends)} members ended {named}"
    first = next(((c, d) for c, d in ending.failures if d.strip()), None)
    if first is not None:
        cause, detail = first
        text += f": {' '.join(detail.split())[:200]}"
        if cause == "model_error" and ending.provider:
            text += f" ({ending.provider})"
    return f"{text}; {wrote}"


def ledger_writes(events: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Member -> how many of its `horde` writes the tool accepted, from the run's events
    (a read leaves no event; the supervisor and a person at a shell are not members)."""
    writes: Counter[str] = Counter()
    for ev in events:
        if ev.get("type") == "outcome" and ev.get("ok") is True:
            actor = str(ev.get("actor") or "")
            if actor and actor not in PARENT_ACTORS:
                writes[actor] += 1
    return dict(writes)


def failed_sessions(events: Iterable[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """(cause, detail) of each `member-exit` that was a failure, oldest first."""
    return [
        (str(ev.get("cause")), str(ev.get("detail") or ""))
        for ev in events
        if ev.get("kind") == "member-exit" and cause_kind(ev.get("cause")) == "failed"
    ]


def ending_of(
    decided: str | None,
    members: Iterable[MemberState],
    events: list[dict[str, Any]],
    provider: str = "",
) -> Ending:
    """The `Ending` of a run from its own members (not external ones: they come and go
    by themselves) and its event log."""
    return Ending(
        decided,
        tuple((m.name, m.exit_cause or "") for m in members if not m.external),
        tuple(failed_sessions(events)),
        ledger_writes(events),
        provider,
    )


@dataclass
class RunSummary:
    run_id: str
    outcome: str
    diagnosis: str
    """One line: why the run ended the way it did."""
    canary: str
    """`ok`, `ok after a retry`, or `failed: <cause>`."""
    started: float
    ended: float
    model: str
    demo: bool = False
    members: list[MemberState] = field(default_factory=list)
    stop_clean_at: float | None = None
    """When a clean stop began: board posts after it are reported as late."""
    layers: list[str] = field(default_factory=list)
    resumed_at: list[float] = field(default_factory=list)
    """When `horde-tui resume` carried the run on after its supervisor stopped."""
    continued: list[tuple[str, float, str]] = field(default_factory=list)
    """Sessions a person had carried on from their transcripts (`horde-tui resume RUN
    --member`): the member, when, and the outcome the run had ended with before ('')."""
    sandbox_note: str = ""
    """Set when members' commands ran without a sandbox: the report says so, once."""
    baseline: str = ""
    """`--baseline` as asked (a run id or `last`): REPORT.md's Delta section."""
    forecast: dict[str, Any] | None = None
    """The `forecast` event made after the canary (`supervisor.forecast`), if any."""
    lessons: str = ""
    """REPORT.md's line on the lessons in the members' brief (`supervisor.lessons`), or ""."""

    @property
    def exit_code(self) -> int:
        """The outcome's exit status (`OUTCOME_TABLE`)."""
        return exit_code(self.outcome)
