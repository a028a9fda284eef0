"""Stall reasons in whole runs: a real supervisor, gateway and member processes, with the
stub model playing the members (`AgentPolicy` plans).

`looping` past the guard's limit and no ledger write for the stall time lead to a reset,
each recorded with its cause; a member the gateway is backing off is `rate-limited`, and
its stall clock waits, however long the back-off; a reset member's fresh session starts from its own ledger state. A
sampler beside the supervisor reads each member's state the way the `status` control
does (`watch.observe`, then `store.activity.activity`).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.plans import APP, horde, settings, worker

from horde_tui.store import activity as act
from horde_tui.store.activity import LOOP_EXIT, activity
from horde_tui.store.store import HordeStore
from horde_tui.store.timestamps import epoch
from horde_tui.stubmodel import StubThread
from horde_tui.stubmodel.agent import AgentPolicy
from horde_tui.stubmodel.script import Step
from horde_tui.supervisor import watch
from horde_tui.supervisor.run import Supervisor
from horde_tui.supervisor.setup import RunRequest

pytestmark = [pytest.mark.slow, pytest.mark.e2e]  # whole real runs: `pytest -m slow`

LOOPING_MARK = "reset for looping"
"""In the brief of a session reset for looping (`prompts.LOOPING_BRIEF`)."""
RESET_MARK = "was reset"
"""In the brief of any reset session (`prompts.RESET_BRIEF`, `LOOPING_BRIEF`)."""


@pytest.fixture(autouse=True)
def fast_gateway(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HORDE_GATEWAY_BACKOFF_MS", "20")


Sample = tuple[float, str, str | None]
"""(when, member, its activity state or None when not running)."""


def run_sampled(
    workdir: Path,
    request: RunRequest,
    cfg: Any,
    on_tick: Callable[[Supervisor], None] | None = None,
) -> tuple[Any, Supervisor, list[Sample]]:
    """Run the supervisor to its end, sampling every member's activity every 50 ms."""
    sup = Supervisor(workdir, request, cfg)
    samples: list[Sample] = []

    async def main() -> Any:
        task = asyncio.create_task(sup.run())
        while not task.done():
            now = time.time()
            for state in list(sup.members.values()):
                if state.name in sup.procs:
                    watch.observe(sup, state)
                found = activity(state, now)
                samples.append((now, state.name, found.state if found else None))
            if on_tick is not None:
                on_tick(sup)
            await asyncio.sleep(0.05)
        return await task

    summary = asyncio.run(asyncio.wait_for(main(), 240))
    return summary, sup, samples


def lifecycle_events(run_dir: Path, kind: str) -> list[dict[str, Any]]:
    events = map(json.loads, (run_dir / "events.jsonl").read_text().splitlines())
    return [e for e in events if e.get("type") == "lifecycle" and e.get("kind") == kind]


def first_user_message(body: dict[str, Any]) -> str:
    return next(str(m["content"]) for m in body["messages"] if m.get("role") == "user")


def test_a_looping_member_is_reset_for_looping_and_starts_from_its_ledger_state(
    tmp_path: Path,
) -> None:
    (tmp_path / "app.py").write_text(APP)
    idea, claim, finding, _done = worker(
        "Check app.py for a hard-coded password", "app.py hard-codes the password", "secrets"
    )
    first = {"unless": LOOPING_MARK}
    question = "Which line holds the password?"
    plans = {
        "member-1": [
            {**idea, **first},
            {**claim, **first},
            {**finding, **first},
            # Wait (reads never count as a loop) until member-2's question arrived ...
            {**horde("inbox"), "match": [r"Q\d+"], "wait_ms": 100, "tries": 200, **first},
            # ... then read the same file again and again, with the same result.
            *[{"tool": "read", "args": {"path": "app.py"}, **first}] * (LOOP_EXIT + 3),
            {"say": "carried on from my ledger state", "when": LOOPING_MARK},
        ],
        "member-2": [
            {**horde("list"), "match": [r"#1"], "wait_ms": 100, "tries": 200},
            horde("message", to="member-1", kind="question", text=question),
            {"say": "asked"},
        ],
    }
    with StubThread(policy=AgentPolicy(plans)) as stub:
        cfg = settings(stub, reset_cap=1, deliverable=False, postmortem=False)
        summary, sup, samples = run_sampled(tmp_path, RunRequest("Review app.py", 2), cfg)
        requests = stub.stub.requests_for("member-1")

    exits = [e for e in lifecycle_events(sup.run_dir, "member-exit") if e["member"] == "member-1"]
    assert [e["cause"] for e in exits] == ["looping", "completed"], exits
    assert exits[0]["detail"] == (
        f"sent the same call {LOOP_EXIT} times in a row, same result: read app.py"
    )
    resets = lifecycle_events(sup.run_dir, "member-reset")
    assert [(r["member"], r["cause"], r["released"]) for r in resets] == [
        ("member-1", "looping", ["#1"])
    ]
    assert any(m == "member-1" and s == act.LOOPING for _, m, s in samples)

    # The fresh session's brief: why, and its claimed idea, its finding and its thread.
    fresh = [first_user_message(r.body) for r in requests]
    brief = next(text for text in fresh if LOOPING_MARK in text)
    assert "#1: Check app.py for a hard-coded password" in brief
    assert "F1 r1" in brief and "app.py hard-codes the password" in brief
    assert "[review: open" in brief
    assert f"Q1 question from member-2: {question}" in brief
    assert "respond id=Q1" in brief
    assert summary.members[0].resets == 1


class Throttled:
    """`AgentPolicy`, except that member-1's third and fourth requests get a 429 with a
    two-second retry-after: the gateway backs that call off twice, four seconds in all."""

    def __init__(self, plans: dict[str, list[dict[str, Any]]]) -> None:
        self.agent = AgentPolicy(plans)
        self.seen = 0

    def __call__(self, member: str, body: dict[str, Any]) -> Step | None:
        if member == "member-1":
            self.seen += 1
            if self.seen in (3, 4):
                return Step(status=429, retry_after="2")
        return self.agent(member, body)


def test_a_rate_limited_member_is_not_reset_past_the_stall_time(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(APP)
    plans = {
        "member-1": [
            *worker(
                "Check app.py for a hard-coded password",
                "app.py hard-codes the password",
                "secrets",
            ),
            {"say": "Filed."},
        ]
    }
    stall_s = 1.5
    answers: list[str] = []

    def ask_status(sup: Supervisor) -> None:
        """The `status` control's answer while the member is held back."""
        state = sup.members["member-1"]
        found = activity(state, time.time())
        if found is not None and found.state == act.RATE_LIMITED and not answers:
            answers.append(sup.status("member-1"))

    with StubThread(policy=Throttled(plans)) as stub:
        cfg = settings(
            stub, stall_ms=int(stall_s * 1000), reset_cap=1, deliverable=False, postmortem=False
        )
        summary, sup, samples = run_sampled(
            tmp_path, RunRequest("Review app.py", 1), cfg, ask_status
        )

    limited = [t for t, m, s in samples if m == "member-1" and s == act.RATE_LIMITED]
    assert limited, sorted({s for _, _, s in samples}, key=str)
    assert limited[-1] - limited[0] >= stall_s  # held back longer than the stall time ...
    assert not lifecycle_events(sup.run_dir, "member-reset")  # ... and not reset
    assert [e["cause"] for e in lifecycle_events(sup.run_dir, "member-exit")] == ["completed"]
    assert summary.members[0].resets == 0
    assert answers and "· rate-limited " in answers[0] and "(429, retry in " in answers[0]
    assert "· last ledger write " in answers[0]  # its claim, before the 429s


def test_a_busy_member_that_writes_no_ledger_is_reset_and_its_ideas_released(
    tmp_path: Path,
) -> None:
    """Issue 28, the reference's stall rule: member-1 claims an idea, then keeps calling
    the model and running commands (each a new one, so its loop guard stays quiet) and
    never writes the ledger again. Busy is not progress: it is reset as
    `no-ledger-progress` once the stall time passed, with its ledger state in the brief."""
    (tmp_path / "app.py").write_text(APP)
    busy = [{"tool": "bash", "args": {"command": f"echo {n}"}, "hold_ms": 100} for n in range(60)]
    plans = {
        "member-1": [
            {**horde("idea", text="Check app.py for a hard-coded password"), "unless": RESET_MARK},
            {**horde("claim", id="$id"), "unless": RESET_MARK},
            *({**item, "unless": RESET_MARK} for item in busy),
            {"say": "done"},
        ],
    }
    stall_s = 3.0
    with StubThread(policy=AgentPolicy(plans)) as stub:
        cfg = settings(
            stub, stall_ms=int(stall_s * 1000), reset_cap=1, deliverable=False, postmortem=False
        )
        summary, sup, samples = run_sampled(tmp_path, RunRequest("Review", 1), cfg)
        requests = stub.stub.requests_for("member-1")

    resets = lifecycle_events(sup.run_dir, "member-reset")
    assert [(r["cause"], r["released"]) for r in resets] == [("no-ledger-progress", ["#1"])]
    exits = lifecycle_events(sup.run_dir, "member-exit")
    assert exits[0]["cause"] == "no-ledger-progress", exits[0]
    assert exits[0]["detail"].startswith("no ledger write for "), exits[0]
    # It was at work all along: running commands and waiting on the model, never idle.
    reset_at = epoch(resets[0]["ts"]) or 0.0
    before_reset = [s for t, m, s in samples if m == "member-1" and t < reset_at]
    assert act.TOOL in before_reset and act.WAITING in before_reset
    fresh = [first_user_message(r.body) for r in requests]
    brief = next(text for text in fresh if RESET_MARK in text)
    assert "(no-ledger-progress): no ledger write for " in brief
    assert "#1: Check app.py for a hard-coded password" in brief
    assert summary.members[0].resets == 1
    assert exits[-1]["cause"] == "completed"
    store = HordeStore(tmp_path / ".horde", "reader")
    store.refresh()
    assert [n.what for n in store.state.ideas["#1"].history][:2] == ["claimed", "released"]
