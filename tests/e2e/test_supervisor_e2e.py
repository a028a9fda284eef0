"""Whole runs: a real supervisor, real gateway and member processes, a scripted model.

The model is the stub with an `AgentPolicy` (plans of tool calls that adapt to the ids
the run hands out); everything else is the real thing.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from support.cli import (
    HEADLESS_PLAN,
    STOPPED_CLEAN_LESSONS,
    StoppedClean,
    cli,
    headless,
    wait_for_line,
)
from support.plans import APP, HELPERS, horde, lifecycle, run_supervisor, settings, worker
from support.processes import alive

from horde_tui.common.settings import load_settings
from horde_tui.store.store import HordeStore
from horde_tui.stubmodel import StubThread
from horde_tui.stubmodel.agent import AgentPolicy
from horde_tui.supervisor.run import Supervisor, SupervisorEvent
from horde_tui.supervisor.setup import RunRequest

pytestmark = [pytest.mark.slow, pytest.mark.e2e]  # whole real runs: `pytest -m slow`


@pytest.fixture(autouse=True)
def fast_gateway(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HORDE_GATEWAY_BACKOFF_MS", "20")


def test_four_members_find_verify_solve_and_report(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(APP)
    plans = {
        "member-1": [
            *worker(
                "Check app.py for a hard-coded password",
                "app.py hard-codes the password",
                "secrets",
            ),
            # Wait for every finding before proposing: a validated answer winds the run
            # down, and a slow member-3 must not be cut off before it files (a loaded CI
            # machine did exactly that).
            {**horde("inspect", target="F3"), "until_ok": 150, "delay_ms": 300},
            horde("solved", text="The login password is hard-coded in app.py", cites="F1"),
            {"say": "I proposed the answer."},
        ],
        "member-2": [
            *worker(
                "Check login() in app.py for timing attacks",
                "login() compares with ==, not constant time",
                "timing",
            ),
            {**horde("confirm-solved", text="checked app.py:1"), "until_ok": 60, "delay_ms": 100},
            {"say": "Validated."},
        ],
        "member-3": [
            *worker(
                "Check app.py for missing input validation on user",
                "login() never validates the user argument",
                "validation",
            ),
            {"say": "Done."},
        ],
        "member-4": [
            # The verifier reviews (a `verify` label would leave it owing these findings).
            *(
                {
                    **horde(
                        "review",
                        target=f"F{n}",
                        verdict="supports",
                        support="reproduced",
                        checked="ran it",
                        evidenceText="it reproduces",
                    ),
                    "until_ok": 60,
                    "delay_ms": 100,
                }
                for n in (1, 2, 3)
            ),
            {"say": "All verified."},
        ],
        **HELPERS,
    }
    with StubThread(policy=AgentPolicy(plans)) as stub:
        summary, sup, events = run_supervisor(
            tmp_path, RunRequest("Review app.py", 4), settings(stub)
        )
    run_dir = sup.run_dir
    assert summary.outcome in ("solved", "finished"), summary.diagnosis
    assert summary.exit_code == {"solved": 3, "finished": 0}[summary.outcome]
    assert summary.canary == "ok"
    assert [m.role for m in summary.members] == ["member", "member", "member", "verifier"]
    assert all(m.exit_cause == "completed" for m in summary.members), [
        (m.name, m.exit_cause, m.detail) for m in summary.members
    ]
    store = HordeStore(tmp_path / ".horde", "reader")
    store.refresh()
    assert sorted(store.state.findings) == ["F1", "F2", "F3"]
    assert all(i.status == "done" for i in store.state.ideas.values())
    reviewed = {r.target for r in store.state.reviews.values() if r.by == "member-4"}
    assert reviewed == {"F1", "F2", "F3"}
    assert not any(e == "member-reset" for e, _ in lifecycle(run_dir))
    answer = (run_dir / "ANSWER.md").read_text()
    assert "validated by member-2" in answer
    assert (
        run_dir / "DELIVERABLE.md"
    ).read_text() == "# Deliverable\n\nThe password is hard-coded (F1).\n"
    assert (run_dir / "POSTMORTEM.md").read_text().startswith("# Post-mortem")
    report = (run_dir / "REPORT.md").read_text()
    assert summary.outcome in report and "F1" in report
    assert "```mermaid" in (run_dir / "GRAPH.md").read_text()
    kinds = lifecycle(run_dir)
    assert kinds[0] == ("run-start", None)
    assert kinds[1] == ("phase-start", None)
    assert kinds[2] == ("member-spawn", "member-1")
    spawns = [m for k, m in kinds if k == "member-spawn"]
    assert spawns[:4] == ["member-1", "member-2", "member-3", "member-4"]
    assert ("solved-proposed", "member-1") in kinds and ("solved-validated", "member-1") in kinds, (
        kinds
    )
    assert kinds[-1] == ("run-end", None)
    assert kinds.index(("phase-end", None)) < kinds.index(("run-end", None))
    assert not (run_dir / ".live").exists()
    assert any(e.kind == "member-status" for e in events)


def test_dead_provider_canary_retried_once_then_the_run_stops(tmp_path: Path) -> None:
    with StubThread(
        {"*": [{"status": 500, "error_message": "provider down", "repeat": 1000}]}
    ) as stub:
        summary, sup, _ = run_supervisor(tmp_path, RunRequest("Review", 3), settings(stub))
    assert summary.outcome == "canary failed"
    assert "provider down" in summary.canary
    kinds = lifecycle(sup.run_dir)
    spawns = [m for k, m in kinds if k == "member-spawn"]
    assert spawns[:2] == ["member-1", "member-1"]
    assert "member-2" not in spawns and "member-3" not in spawns
    assert ("canary", "member-1") in kinds  # the run screen's canary line reads it
    assert summary.exit_code == 1
    assert "canary" in (sup.run_dir / "REPORT.md").read_text().lower()


def test_stop_clean_from_another_shell(stopped_clean: StoppedClean) -> None:
    run = stopped_clean
    assert run.status.returncode == 0 and "member-2" in run.status.stdout, (
        run.status.stdout + run.status.stderr
    )
    assert run.paused.stdout.strip() == "paused member-2"
    assert run.resumed.stdout.strip() == "resumed member-2"
    assert "clean stop requested" in run.stopped.stdout, run.stopped.stdout + run.stopped.stderr
    assert run.returncode == 130, run.out[-3000:] + run.err[-3000:]
    assert "outcome: stopped by user" in run.out
    assert (run.run_dir / "REPORT.md").exists() and (run.run_dir / "DELIVERABLE.md").exists()
    assert (run.run_dir / ".stop-clean").exists()
    assert "WRAP UP" in (run.workdir / ".horde" / "BOARD.md").read_text()
    assert run.stop_hard_after.returncode == 1  # nothing live any more


def test_a_run_with_lessons_gives_every_member_them_and_says_so(
    stopped_clean: StoppedClean,
) -> None:
    run_dir = stopped_clean.run_dir
    manifest = json.loads((run_dir / "MANIFEST.json").read_text())
    given = hashlib.sha256(STOPPED_CLEAN_LESSONS.encode()).hexdigest()
    assert manifest["hashes"]["LESSONS.md"] == given and manifest["lessons"] == 2
    assert (
        f"- Lessons: the members' brief held the top 2 lessons of .horde/LESSONS.md (sha256 `{given}`)"
        in (run_dir / "REPORT.md").read_text()
    )
    # Every member's session opened with them in its system prompt.
    for member in ("member-1", "member-2", "member-3"):
        first = next((run_dir / "sessions" / member).glob("*.jsonl")).read_text().splitlines()[0]
        system = json.loads(first)
        assert system["role"] == "system", member
        assert "1. Claim an idea before working it. (raised in 2 of 3 runs)" in system["content"]
        assert "2. Ask the verifier for each review. (raised in 1 of 3 runs)" in system["content"]


def test_parent_sigkill_then_finalize_from_disk(tmp_path: Path) -> None:
    with StubThread(policy=AgentPolicy(HEADLESS_PLAN)) as stub:
        proc = headless(tmp_path, stub)
        try:
            wait_for_line(proc, "[member-spawn] member-3")
            run_dir = next((tmp_path / ".horde" / "runs").iterdir())
            pids = [
                json.loads(x)["pid"]
                for x in (run_dir / "events.jsonl").read_text().splitlines()
                if '"member-spawn"' in x
            ]
            gateway_pid = json.loads((run_dir / "gateway.json").read_text())["pid"]
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
        finally:
            if proc.poll() is None:
                proc.kill()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(alive(p) for p in [*pids, gateway_pid]):
            time.sleep(0.1)
        assert [p for p in [*pids, gateway_pid] if alive(p)] == []
    status = cli(tmp_path, "status")
    assert "interrupted" in status.stdout
    done = cli(tmp_path, "finalize")
    assert done.returncode == 0, done.stderr
    report = (run_dir / "REPORT.md").read_text()
    assert "interrupted" in report
    assert not (run_dir / ".live").exists()
    assert lifecycle(run_dir)[-1] == ("run-end", None)


def test_until_stop_continues_members_and_a_later_round_leaves_the_banked_answer_shown(
    tmp_path: Path,
) -> None:
    plans = {
        "member-1": [
            horde("solved", text="first answer"),
            {**horde("inspect", target="answer"), "until_ok": 0},
            {"say": "proposed"},
        ],
        "member-2": [
            {**horde("confirm-solved", text="ok"), "until_ok": 80, "delay_ms": 50},
            {**horde("solved", text="a better answer"), "until_ok": 80, "delay_ms": 50},
            {"say": "proposed again"},
        ],
        **HELPERS,
    }
    events: list[SupervisorEvent] = []
    with StubThread(policy=AgentPolicy(plans)) as stub:
        cfg = settings(stub, continue_cooldown_ms=300, deliverable=False, postmortem=False)
        sup = Supervisor(
            tmp_path, RunRequest("Answer", 2, until_stop=True), cfg, sink=events.append
        )

        async def drive() -> Any:
            task = asyncio.create_task(sup.run())
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                spawned = [e.member for e in events if e.kind == "member-spawn"]
                both_continued = spawned.count("member-1") >= 2 and spawned.count("member-2") >= 2
                if both_continued and (sup.run_dir / "answers" / "round-2-pending.md").exists():
                    break
                await asyncio.sleep(0.1)
            sup.stop_clean(grace_s=1)
            return await asyncio.wait_for(task, 120)

        summary = asyncio.run(drive())
    assert summary.outcome == "stopped by user"
    assert (sup.run_dir / "answers" / "round-1-validated.md").exists()
    answer = (sup.run_dir / "ANSWER.md").read_text()
    assert "a better answer" in answer
    # The later round is still pending: the banked round 1 stands and stays shown.
    assert "round 1's validated answer stays banked (below)" in answer
    banked = answer.split("## Banked answer (round 1, validated by member-2)\n", 1)[1]
    assert "first answer" in banked
    report = (sup.run_dir / "REPORT.md").read_text()
    assert (
        "Banked answer (round 1, by member-1): validated by member-2; it stands. Cites "
        "nothing. first answer\nLater answer (round 2, by member-2): proposed, never validated"
    ) in report
    spawns = [m for k, m in lifecycle(sup.run_dir) if k == "member-spawn"]
    assert spawns.count("member-1") >= 2 and spawns.count("member-2") >= 2
    assert all(m.resets == 0 for m in summary.members)


def test_a_contested_answer_reopens_when_its_named_idea_closes_and_is_validated(
    tmp_path: Path,
) -> None:
    """member-2 contests member-1's answer naming the idea it still audits; closing that
    idea reopens the answer (`solved-reopened`), member-2 validates it, the run is solved."""
    plans = {
        "member-1": [horde("solved", text="The password is hard-coded"), {"say": "proposed"}],
        "member-2": [
            horde("idea", text="Check the session handling in app.py"),
            horde("claim", id="$id"),
            {
                **horde("contest-solved", text="sessions are unchecked", ideas="$I"),
                "until_ok": 80,
                "delay_ms": 50,
            },
            horde("done", id="$I", result="sessions are fine"),
            horde("confirm-solved", text="checked with the sessions"),
            {"say": "validated"},
        ],
        **HELPERS,
    }
    with StubThread(policy=AgentPolicy(plans)) as stub:
        cfg = settings(stub, deliverable=False, postmortem=False)
        summary, sup, _ = run_supervisor(tmp_path, RunRequest("Answer", 2), cfg)
    assert summary.outcome == "solved", summary.diagnosis
    kinds = [k for k, _ in lifecycle(sup.run_dir) if k.startswith("solved-")]
    assert kinds.index("solved-reopened") < kinds.index("solved-validated")
    reopened = [
        ev
        for line in (sup.run_dir / "events.jsonl").read_text().splitlines()
        if (ev := json.loads(line)).get("kind") == "solved-reopened"
    ]
    assert [(ev["member"], ev["round"], ev["reopened_from"]) for ev in reopened] == [
        ("member-1", 2, 1)
    ]
    assert "Status: validated by member-2" in (sup.run_dir / "ANSWER.md").read_text()
    assert (sup.run_dir / "answers" / "round-1-contested.md").exists()
    assert (
        "Answer (round 2, by member-1): validated by member-2; reopened from round 1 "
        "(contested by member-2; #1 closed). Cites nothing. The password is hard-coded"
    ) in (sup.run_dir / "REPORT.md").read_text()


def test_budget_reached_stops_the_run_clean(tmp_path: Path) -> None:
    """A priced model (litellm knows gpt-4o-mini's price) spends a tiny budget at once."""
    plans = {"*": [{**horde("list"), "hold_ms": 100}] * 50, **HELPERS}
    with StubThread(policy=AgentPolicy(plans)) as stub:
        env = {
            "HORDE_MODEL": "openai/gpt-4o-mini",
            "HORDE_API_BASE": stub.api_base,
            "HORDE_API_KEY": "stub",
        }
        cfg = load_settings(environ=env, overrides={"max_cost_usd": 0.0001, "postmortem": False})
        events: list[SupervisorEvent] = []
        sup = Supervisor(tmp_path, RunRequest("Review", 2), cfg, sink=events.append)
        summary = asyncio.run(asyncio.wait_for(sup.run(), 240))
    assert summary.outcome == "stopped at budget", summary.diagnosis
    assert (sup.run_dir / ".budget-reached").exists()
    assert all(m.resets == 0 for m in summary.members)
    usage = [json.loads(x) for x in (sup.run_dir / "usage.jsonl").read_text().splitlines()]
    assert usage and all(u["cost_usd"] is not None for u in usage)
    assert "stopped at budget" in (sup.run_dir / "REPORT.md").read_text()


def test_a_budget_the_gateway_cannot_price_fails_the_run_before_any_member(
    tmp_path: Path,
) -> None:
    """The stub's model has no price: a budget on it could never trip, so nothing starts."""
    with StubThread() as stub:
        cfg = settings(stub, max_cost_usd=1.5, postmortem=False, deliverable=False)
        summary, sup, _ = run_supervisor(tmp_path, RunRequest("Review", 2), cfg)
        assert stub.stub.requests_for("member-1") == []
    assert summary.outcome == "failed"
    assert summary.diagnosis == (
        "the model gateway did not start: horde-tui gateway: refused --max-cost-usd 1.5 "
        "(HORDE_MAX_COST_USD): litellm has no price for openai/stub, so the cost of its "
        "calls is unknown and the budget could never be reached; unset the budget, or use "
        "a model litellm prices"
    )
    assert [m for k, m in lifecycle(sup.run_dir) if k == "member-spawn"] == []
    assert summary.exit_code == 1


def test_artifact_refuted_republished_and_accepted_at_the_new_revision_only(tmp_path: Path) -> None:
    """Acceptance is frozen at finalize, pinned to the revision a non-owner checked."""
    plans = {
        "member-1": [
            {"tool": "write", "args": {"path": "tools/check.sh", "content": "echo BROKEN\n"}},
            horde("artifact", path="tools/check.sh", artifactKind="runnable", criteria="prints OK"),
            {"tool": "bash", "args": {"command": "sleep 3"}},
            {"tool": "write", "args": {"path": "tools/check.sh", "content": "echo OK\n"}},
            {
                **horde("artifact", path="tools/check.sh", text="prints OK now"),
                "until_ok": 40,
                "delay_ms": 100,
            },
            {"say": "republished"},
        ],
        "member-2": [
            {
                **horde(
                    "review",
                    target="A1",
                    revision=1,
                    verdict="refutes",
                    support="tested",
                    checked="ran it",
                    evidenceText="it printed BROKEN",
                ),
                "until_ok": 60,
                "delay_ms": 100,
            },
            {
                **horde(
                    "review",
                    target="A1",
                    revision=2,
                    verdict="supports",
                    support="tested",
                    checked="ran it",
                    evidenceText="it printed OK",
                ),
                "until_ok": 80,
                "delay_ms": 100,
            },
            {
                **horde("resolve", id="Q1", text="fixed in r2", evidenceText="it printed OK"),
                "until_ok": 5,
                "delay_ms": 100,
            },
            {"say": "reviewed"},
        ],
        **HELPERS,
    }
    with StubThread(policy=AgentPolicy(plans)) as stub:
        cfg = settings(stub, deliverable=False, postmortem=False)
        _, sup, _ = run_supervisor(tmp_path, RunRequest("Build a checker", 2), cfg)
    frozen = json.loads((sup.run_dir / "ACCEPTANCE.json").read_text())
    a1 = next(a for a in frozen if a["target"] == "A1")
    assert (a1["revision"], a1["label"]) == (2, "accepted"), a1
    text = (sup.run_dir / "ACCEPTANCE.md").read_text()
    assert "- A1 r2 accepted" in text and "r1 accepted" not in text
    assert (sup.run_dir / "snapshot" / "ACCEPTANCE.md").read_text() == text
    assert "refutes" in (sup.run_dir / "COLLABORATION.md").read_text()
    assert ("acceptance", None) in lifecycle(sup.run_dir)
    report = (sup.run_dir / "REPORT.md").read_text()
    assert "### Accepted\n\n- A1 r2 accepted (V2)\n" in report
    assert "A1 r1" not in report


def test_a_verifier_that_stops_owing_high_findings_is_reset_once_to_review_them(
    tmp_path: Path,
) -> None:
    plans = {
        "member-1": [
            *worker(
                "Check app.py for a hard-coded password",
                "app.py hard-codes the password",
                "secrets",
            ),
            {"say": "filed"},
        ],
        "member-2": [{"say": "nothing for me"}],
        "member-3": [
            {**horde("findings"), "hold_ms": 3000, "unless": "previous session"},
            {"say": "nothing to review", "unless": "previous session"},
            {
                **horde(
                    "review",
                    target="F1",
                    verdict="supports",
                    support="tested",
                    checked="ran it",
                    evidenceText="it reproduces",
                ),
                "when": "previous session",
            },
            {"say": "done reviewing", "when": "previous session"},
        ],
        **HELPERS,
    }
    (tmp_path / "app.py").write_text(APP)
    with StubThread(policy=AgentPolicy(plans)) as stub:
        cfg = settings(stub, deliverable=False, postmortem=False)
        summary, sup, _ = run_supervisor(tmp_path, RunRequest("Review", 3), cfg)
    verifier = summary.members[2]
    assert verifier.role == "verifier"
    resets = [
        json.loads(x)
        for x in (sup.run_dir / "events.jsonl").read_text().splitlines()
        if '"member-reset"' in x
    ]
    assert [(r["cause"], r["owed"]) for r in resets] == [("unreviewed", ["F1"])]
    assert verifier.resets == 1
    store = HordeStore(tmp_path / ".horde", "reader")
    store.refresh()
    assert any(r.by == "member-3" and r.target == "F1" for r in store.state.reviews.values())


def blocker_answered_in_repair() -> dict[str, list[dict[str, Any]]]:
    """member-1 sends member-2 a blocker in discovery; member-2 ends discovery without
    answering it, answers it in repair, and member-1 resolves it in its repair attempt."""
    return {
        "member-1": [
            {
                **horde(
                    "message", to="member-2", kind="blocker", text="Is app.py the only entry point?"
                ),
                "until_ok": 20,
                "delay_ms": 100,
                "unless": "REPAIR",
            },
            {"say": "asked", "unless": "REPAIR"},
            {**horde("resolve", id="Q1", text="thanks, answered"), "when": "REPAIR"},
            {"say": "resolved", "when": "REPAIR"},
        ],
        "member-2": [
            {**horde("list"), "hold_ms": 1500, "unless": "REPAIR"},
            {"say": "done", "unless": "REPAIR"},
            {**horde("respond", id="Q1", text="yes, the only one"), "when": "REPAIR"},
            {"say": "answered", "when": "REPAIR"},
        ],
        **HELPERS,
    }


def tool_results(stub: StubThread, member: str) -> list[str]:
    """Every tool result `member`'s process sent back to the model, as the model read it."""
    seen: list[str] = []
    for request in stub.stub.requests_for(member):
        for message in request.body.get("messages") or []:
            text = str(message.get("content") or "")
            if message.get("role") == "tool" and text not in seen:
                seen.append(text)
    return seen


def test_members_closing_work_are_nudged_to_validate_the_answer_and_to_get_reviews(
    tmp_path: Path,
) -> None:
    """member-1 proposes an answer citing its critical F1; closing its idea, it is told F1
    has no review. member-2, closing its own idea while the answer waits, is told to
    validate it, and does."""
    plans = {
        "member-1": [
            horde("idea", text="Check app.py for a hard-coded password"),
            horde("claim", id="$id"),
            horde(
                "finding",
                concern="secrets",
                concernDef="secrets in code",
                text="app.py hard-codes the login password",
                evidence="app.py:1",
                support="tested",
                importance="critical",
                confidence="high",
            ),
            horde("solved", text="The login password is hard-coded in app.py", cites="F1"),
            horde("fact", text="An answer citing F1 was proposed for the login review"),
            horde("done", id="$I", result="filed F1"),
            {"say": "Proposed."},
        ],
        "member-2": [
            horde("idea", text="Check login() in app.py for timing attacks"),
            horde("claim", id="$id"),
            {**horde("inspect", target="T1"), "until_ok": 150, "delay_ms": 100},
            horde("done", id="$I", result="nothing beyond F1"),
            horde("confirm-solved", text="app.py:1 holds the password"),
            {"say": "Validated."},
        ],
        **HELPERS,
    }
    (tmp_path / "app.py").write_text(APP)
    with StubThread(policy=AgentPolicy(plans)) as stub:
        cfg = settings(stub, deliverable=False, postmortem=False)
        summary, sup, _ = run_supervisor(tmp_path, RunRequest("Review app.py", 2), cfg)
        first, second = tool_results(stub, "member-1"), tool_results(stub, "member-2")
    solved_nudge = "member-1's answer (round 1) awaits validation by a second member"
    review_nudge = "Your critical finding F1 has no review at its current revision"
    closed_first = next(t for t in first if "ok #1 done." in t)
    closed_second = next(t for t in second if "ok #2 done." in t)
    assert review_nudge in closed_first and solved_nudge not in closed_first
    assert solved_nudge in closed_second and review_nudge not in closed_second
    assert not any(solved_nudge in t for t in second if "ok answer validated" in t)
    assert summary.outcome == "solved", summary.diagnosis
    assert "validated by member-2" in (sup.run_dir / "ANSWER.md").read_text()


def test_a_blocker_left_open_after_discovery_is_answered_in_repair(tmp_path: Path) -> None:
    plans = blocker_answered_in_repair()
    with StubThread(policy=AgentPolicy(plans)) as stub:
        cfg = settings(stub, deliverable=False, postmortem=False)
        summary, sup, _ = run_supervisor(tmp_path, RunRequest("Review", 2), cfg)
    kinds = lifecycle(sup.run_dir)
    starts = [m for k, m in kinds if k == "repair-start"]
    assert starts == ["member-2", "member-1"], kinds
    assert kinds.index(("phase-start", None)) < kinds.index(("repair-start", "member-2"))
    store = HordeStore(tmp_path / ".horde", "reader")
    store.refresh()
    assert store.state.threads["Q1"].state == "resolved"
    assert summary.outcome == "finished"


def _first_usage(session: Path) -> tuple[int, float | None]:
    """Tokens and USD of the first model reply in a transcript."""
    for line in session.read_text().splitlines():
        record = json.loads(line)
        if record.get("role") == "assistant":
            usage = record["usage"]
            return usage["prompt_tokens"] + usage["completion_tokens"], usage["cost_usd"]
    raise AssertionError(f"no model reply in {session}")


def test_repair_attempts_at_the_turn_cap_end_with_turns_and_report_their_first_turn(
    tmp_path: Path,
) -> None:
    """HORDE_REPAIR_TURNS=1: each attempt makes its one tool call and is stopped at the cap
    while it still wants a turn; the thread still gets answered and resolved."""
    plans = blocker_answered_in_repair()
    with StubThread(policy=AgentPolicy(plans)) as stub:
        cfg = settings(stub, deliverable=False, postmortem=False, repair_turns=1)
        summary, sup, _ = run_supervisor(tmp_path, RunRequest("Review", 2), cfg)
    events = [json.loads(x) for x in (sup.run_dir / "events.jsonl").read_text().splitlines()]
    ends = [e for e in events if e.get("kind") == "repair-end"]
    assert [(e["member"], e["cause"], e["turns"], e["unchanged"]) for e in ends] == [
        ("member-2", "turns", 1, []),
        ("member-1", "turns", 1, []),
    ]
    for end in ends:
        sessions = sorted((sup.run_dir / "sessions" / end["member"]).glob("*.jsonl"))
        tokens, cost = _first_usage(sessions[-1])  # the repair session is the newest
        assert tokens > 0
        assert (end["first_turn_tokens"], end["first_turn_cost_usd"]) == (tokens, cost)
    exits = [e for e in events if e.get("kind") == "member-exit" and e.get("cause") == "turns"]
    assert [e["detail"] for e in exits] == [
        "turn cap of 1 reached; the model was still calling tools"
    ] * 2
    store = HordeStore(tmp_path / ".horde", "reader")
    store.refresh()
    assert store.state.threads["Q1"].state == "resolved"
    assert [m.exit_cause for m in summary.members] == ["turns", "turns"]
    assert "| member-2 | member | turns |" in (sup.run_dir / "REPORT.md").read_text()


def test_repair_after_an_unvalidated_answer_serves_the_request_about_it(tmp_path: Path) -> None:
    """member-2 finishes first; member-1's answer is committed solved-unvalidated (a clean
    stop), and only then does member-1 ask member-2 to validate it. Repair still runs
    after that stop, serves member-2 the request about the answer, member-2 validates it
    there, and the run ends solved."""
    discovery = [
        *worker(
            "Check app.py for a hard-coded password", "app.py hard-codes the password", "secrets"
        ),
        horde("solved", text="The password is hard-coded (F1)", cites="F1"),
        {
            "tool": "bash",
            "args": {
                "command": "ls .horde/runs/*/.stop-clean >/dev/null 2>&1 && echo winding down"
                " || echo 'refused: no clean stop yet'"
            },
            "until_ok": 150,
            "delay_ms": 100,
        },
        horde(
            "message",
            to="member-2",
            kind="review-request",
            target="answer",
            text="Please validate the answer against app.py",
        ),
        {"say": "proposed"},
    ]
    plans = {
        "member-1": [
            *({**item, "unless": "REPAIR"} for item in discovery),
            {**horde("resolve", id="Q1", text="validated, thanks"), "when": "REPAIR"},
            {"say": "resolved", "when": "REPAIR"},
        ],
        "member-2": [
            {"say": "nothing for me", "unless": "REPAIR"},
            {**horde("confirm-solved", text="app.py:1 holds the password"), "when": "REPAIR"},
            {**horde("respond", id="Q1", text="validated"), "when": "REPAIR"},
            {"say": "validated", "when": "REPAIR"},
        ],
        **HELPERS,
    }
    (tmp_path / "app.py").write_text(APP)
    with StubThread(policy=AgentPolicy(plans)) as stub:
        cfg = settings(stub, deliverable=False, postmortem=False)
        summary, sup, _ = run_supervisor(tmp_path, RunRequest("Review", 2), cfg)
    events = [json.loads(x) for x in (sup.run_dir / "events.jsonl").read_text().splitlines()]
    life = [e for e in events if e.get("type") == "lifecycle"]
    kinds = [(e["kind"], e.get("member")) for e in life]
    stop = next(e for e in life if e["kind"] == "stop-clean")
    assert stop["reason"] == "solved-unvalidated"
    assert ("repair-skipped", None) not in kinds
    starts = [e for e in life if e["kind"] == "repair-start"]
    assert [(e["member"], e["threads"], e["demand"]) for e in starts] == [
        ("member-2", ["Q1"], 1),
        ("member-1", ["Q1"], 1),
    ]
    assert kinds.index(("stop-clean", None)) < kinds.index(("repair-start", "member-2"))
    assert kinds.index(("repair-end", "member-2")) < kinds.index(("solved-validated", "member-1"))
    store = HordeStore(tmp_path / ".horde", "reader")
    store.refresh()
    prop = store.state.proposals[sup.run_id][-1]
    assert (prop.status, prop.validated_by) == ("validated", "member-2")
    assert store.state.threads["Q1"].state == "resolved"
    assert (summary.outcome, summary.diagnosis) == (
        "solved",
        "answer by member-1 validated by member-2",
    )


def _repair_events(run_dir: Path, kind: str) -> list[dict[str, Any]]:
    events = [json.loads(x) for x in (run_dir / "events.jsonl").read_text().splitlines()]
    return [e for e in events if e.get("kind") == kind]


def test_a_repair_attempt_is_stopped_at_its_token_share(tmp_path: Path) -> None:
    """member-2 spends its repair session reading and reading: its attempt gets one demand
    unit's share of the token budget (a third of it: one unit plus two recheck shares) and
    is stopped there, instead of spending the whole total and starving member-1."""
    plans = blocker_answered_in_repair()
    plans["member-2"] = [
        *plans["member-2"][:2],
        *[{**horde("list"), "when": "REPAIR"}] * 30,
        {**horde("respond", id="Q1", text="yes, the only one"), "when": "REPAIR"},
        {"say": "answered", "when": "REPAIR"},
    ]
    with StubThread(policy=AgentPolicy(plans)) as stub:
        cfg = settings(stub, deliverable=False, postmortem=False, repair_min_tokens=4000)
        summary, sup, _ = run_supervisor(tmp_path, RunRequest("Review", 2), cfg)
    first_end = _repair_events(sup.run_dir, "repair-end")[0]
    assert (first_end["member"], first_end["cause"]) == ("member-2", "killed")
    (phase,) = [e for e in _repair_events(sup.run_dir, "phase-start") if e["phase"] == "repair"]
    assert (phase["demand"], phase["budget_tokens"], phase["unit_tokens"]) == (1, 12000, 4000)
    first_start = _repair_events(sup.run_dir, "repair-start")[0]
    assert (first_start["member"], first_start["share_tokens"]) == ("member-2", 4000)
    assert first_end["turns"] < 30 and first_end["tokens"] >= 4000, first_end
    # The member keeps the share before each call: at most one call (~1,300 tokens of this
    # conversation) past it, however fast the model answers (it was 6,830 and 16,764 when
    # only the supervisor's 0.1 s poll kept it).
    assert first_end["tokens"] < 4000 + 2000, first_end
    exits = [e for e in _repair_events(sup.run_dir, "member-exit") if e["cause"] == "killed"]
    assert exits[0]["detail"] == "its token share of 4000 tokens was spent"
    (phase_end,) = [e for e in _repair_events(sup.run_dir, "phase-end") if e["phase"] == "repair"]
    assert phase_end["spent_tokens"] < 12000 + first_end["tokens"]
    # Its last session ended `killed` (a failure in store/causes.py, red in the member
    # table), so the run says it finished with failures, as its report's table shows.
    assert summary.outcome == "finished with failures", summary.diagnosis
    assert summary.diagnosis.startswith(
        "1 of 2 members ended killed: its token share of 4000 tokens was spent"
    ), summary.diagnosis


def test_a_held_back_thread_is_released_when_another_member_changes_it(tmp_path: Path) -> None:
    """member-2 answered member-1's blocker Q1 in discovery; member-1's first two repair
    attempts complete without resolving it, so Q1 is held back from member-1. member-2
    then answers Q1 again (while serving Q2): that change releases Q1, and member-1's next
    attempt resolves it."""
    # Listed together only in member-1's last attempt, and only once Q1 is released.
    convinced = "the only entry point?\n- Q2 review-request"
    plans = {
        "member-1": [
            {
                **horde(
                    "message", to="member-2", kind="blocker", text="Is app.py the only entry point?"
                ),
                "unless": "REPAIR",
            },
            {
                **horde("message", to="member-2", kind="review-request", text="Check app.py:5"),
                "unless": "REPAIR",
            },
            {"say": "asked", "unless": "REPAIR"},
            {"say": "not convinced yet", "when": "REPAIR", "unless": convinced},
            {**horde("resolve", id="Q1", text="convinced now"), "when": convinced},
            {**horde("resolve", id="Q2", text="thanks"), "when": convinced},
            {"say": "resolved", "when": convinced},
        ],
        "member-2": [
            {
                **horde("respond", id="Q1", text="yes"),
                "until_ok": 40,
                "delay_ms": 100,
                "unless": "REPAIR",
            },
            {"say": "done", "unless": "REPAIR"},
            {**horde("respond", id="Q2", text="app.py:5 compares in plain text"), "when": "REPAIR"},
            {
                **horde("respond", id="Q1", text="yes: wsgi.py only imports app.py"),
                "when": "REPAIR",
            },
            {"say": "answered", "when": "REPAIR"},
        ],
        **HELPERS,
    }
    (tmp_path / "app.py").write_text(APP)
    with StubThread(policy=AgentPolicy(plans)) as stub:
        cfg = settings(stub, deliverable=False, postmortem=False)
        summary, sup, _ = run_supervisor(tmp_path, RunRequest("Review", 2), cfg)
    starts = [(e["member"], e["round"]) for e in _repair_events(sup.run_dir, "repair-start")]
    assert starts == [("member-1", 1), ("member-1", 2), ("member-2", 3), ("member-1", 4)]
    skipped = _repair_events(sup.run_dir, "repair-skipped")
    assert [(e["member"], e["round"], e["reason"]) for e in skipped] == [
        ("member-1", 3, "no-progress")
    ]
    store = HordeStore(tmp_path / ".horde", "reader")
    store.refresh()
    assert store.state.threads["Q1"].state == "resolved"
    (released,) = _repair_events(sup.run_dir, "repair-released")
    assert (released["member"], released["round"], released["thread"]) == ("member-1", 4, "Q1")
    assert summary.outcome == "finished"
