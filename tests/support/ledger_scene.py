"""A `.horde/` with something in every ledger, written through the real `horde` tool.

The run screen's ledger, Threads and Graph tabs are tested against it: ideas claimed
and open, findings with a delta and a review of each verdict, a refuting review's
challenge, a question answered and resolved, facts, a claim, a resource, board posts,
and the parent's lifecycle marks in `events.jsonl`. Every timestamp comes from a clock
that ticks one second per record from `T0`, so snapshots of it are stable.
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import Horde

import horde_tui.store.store
from support.app import RUN_ID, T0, FakeSupervisor


def freeze_ledger_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ledger and event timestamps from a clock that ticks 1 s per call from T0."""
    ticks = itertools.count()

    def tick() -> str:
        moment = datetime.fromtimestamp(T0 + next(ticks), UTC)
        return moment.strftime("%Y-%m-%dT%H:%M:%S.000Z")

    monkeypatch.setattr(horde_tui.store.store, "utc_now", tick)


def lifecycle(horde: Horde, kind: str, **data: str) -> None:
    horde.store("parent").append_event(RUN_ID, {"type": "lifecycle", "kind": kind, **data})


def fill_run(workdir: Path) -> Horde:
    """Write the scene into `workdir/.horde` as run `RUN_ID`; see the module docstring."""
    horde = Horde(workdir)
    (horde.root / "runs" / RUN_ID).mkdir(parents=True, exist_ok=True)

    def call(actor: str, action: str, **fields: str) -> str:
        result = horde(actor, action, run=RUN_ID, **fields)
        assert result.ok, result.text
        return str(result.id or "")

    lifecycle(horde, "run-start")
    lifecycle(horde, "phase-start", phase="discovery")
    for n in (1, 2, 3):
        lifecycle(horde, "member-spawn", member=f"member-{n}")
    call("member-1", "claim", id=call("member-1", "idea", text="Audit src/db/query.py"))
    call("member-2", "claim", id=call("member-2", "idea", text="Audit src/web/login.py"))
    call("member-3", "idea", text="Audit src/api/search.py for path traversal")
    call("member-1", "post", text="started on query.py")
    call(
        "member-1",
        "finding",
        text="SQL injection in build_query() via the name parameter\n\n"
        "build_query() formats `name` into the WHERE clause with an f-string.",
        evidence="src/db/query.py:42",
        concern="sql-injection",
        concernDef="SQL built from request input",
        importance="high",
    )
    call(
        "member-2",
        "finding",
        text="The same injection is reachable via the sort parameter",
        evidence="src/db/query.py:57",
        deltaOf="F1",
    )
    call(
        "member-2",
        "finding",
        text="Login form lacks rate limiting",
        evidence="src/web/login.py:10",
        concern="rate-limit",
        concernDef="no throttling of repeated attempts",
    )
    call("member-1", "fact", text="Python 3.11 is the runtime")
    call("member-2", "assert", text="login.py is the only entry point")
    call(
        "member-1",
        "resource",
        name="lab-db",
        text="a seeded postgres",
        cleanup="docker rm -f lab-db",
    )
    call(
        "member-3",
        "review",
        target="F1",
        verdict="supports",
        support="tested",
        checked="ran build_query('x\\' OR 1=1 --'): it returns every row",
        evidence="src/db/query.py:42",
    )
    call(
        "member-3",
        "review",
        target="F2",
        verdict="partially-supports",
        support="derived",
        checked="the sort value reaches the ORDER BY clause",
        unchecked="whether the web layer whitelists sort values",
        evidence="src/db/query.py:57",
    )
    call(
        "member-1",
        "review",
        target="F3",
        verdict="refutes",
        support="tested",
        checked="six wrong passwords in a row: the seventh waits 30 s",
        evidence="src/web/login.py:31",
    )
    question = call(
        "member-2",
        "message",
        to="member-1",
        kind="question",
        target="F1",
        text="Does the fix in build_query also cover the sort parameter?",
    )
    call("member-1", "respond", id=question, text="No: sort goes through order_by(), see F2.")
    call("member-2", "resolve", id=question, text="Thanks, tracked in F2.")
    call("member-2", "post", text="F3 is challenged; checking the throttle")
    lifecycle(horde, "phase-end", phase="discovery")
    lifecycle(horde, "phase-start", phase="verify")
    return horde


def fake_run_with_ledgers(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> FakeSupervisor:
    """The fake supervisor's run with the scene written into it (clock frozen). The
    fake writes through the parent's store, which catches up with the scene's events,
    so the lifecycle events it appends later are numbered after them."""
    freeze_ledger_clock(monkeypatch)
    fake = FakeSupervisor(workdir)
    fill_run(workdir)
    return fake
