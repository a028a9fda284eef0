"""A person's reset of a member: hosted (`Supervisor.reset`) and from another shell.

A real supervisor, gateway and member processes; the model is the scripted stub. The
tests wait on conditions (the supervisor's own events, files), never on fixed sleeps.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.cli import cli
from support.plans import CARRIED_ON, CLAIMING_PLANS, CarriedOn, lifecycle, settings
from support.processes import alive

from horde_tui.common.prompts import RESUMED_NOTICE as RESUMED
from horde_tui.store.causes import USER_RESET
from horde_tui.store.store import HordeStore
from horde_tui.stubmodel import StubThread
from horde_tui.stubmodel.agent import AgentPolicy
from horde_tui.supervisor.run import Supervisor, SupervisorEvent
from horde_tui.supervisor.setup import RunRequest


async def until(predicate: Callable[[], bool], what: str, timeout_s: float = 60.0) -> None:
    """Let the supervisor run until `predicate()` holds."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
        await asyncio.sleep(0.05)


def claims_of(horde_dir: Path, member: str) -> list[str]:
    store = HordeStore(horde_dir, "reader")
    store.refresh()
    return [i.id for i in store.state.ideas.values() if i.owner == member and i.status == "claimed"]


def spawns(events: list[SupervisorEvent], member: str) -> list[SupervisorEvent]:
    return [e for e in events if e.kind == "member-spawn" and e.member == member]


@pytest.fixture(autouse=True)
def fast_gateway(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HORDE_GATEWAY_BACKOFF_MS", "20")


@pytest.mark.e2e
@pytest.mark.slow  # a whole run, reset or resumed mid-way
def test_reset_kills_the_session_releases_claims_and_starts_a_fresh_attempt(
    tmp_path: Path,
) -> None:
    """Hosted reset, then `horde-tui reset` from another shell, then the refusals."""
    events: list[SupervisorEvent] = []
    answers: dict[str, Any] = {}

    async def scenario(sup: Supervisor) -> None:
        run = asyncio.create_task(sup.run())
        horde_dir = tmp_path / ".horde"
        await until(lambda: claims_of(horde_dir, "member-2") != [], "member-2 to claim")
        first = sup.members["member-2"]
        old_pid, claimed = first.pid, claims_of(horde_dir, "member-2")
        assert first.attempt == 1 and first.resets == 0

        answers["hosted"] = await sup.reset("member-2")
        await until(lambda: len(spawns(events, "member-2")) == 2, "member-2's second spawn")
        assert old_pid is not None and not alive(old_pid)
        answers["old_pid"], answers["claimed"] = old_pid, claimed
        answers["new_pid"] = sup.members["member-2"].pid
        answers["released_at_reset"] = claims_of(horde_dir, "member-2")

        # From another shell: the CLI writes control/, this supervisor answers.
        answers["cli"] = await asyncio.to_thread(cli, tmp_path, "reset", "member-1")
        await until(lambda: len(spawns(events, "member-1")) == 2, "member-1's second spawn")
        answers["cli_all"] = await asyncio.to_thread(cli, tmp_path, "reset")

        sup.stop_clean(grace_s=30)
        answers["while_stopping"] = await sup.reset("member-2")
        await sup.stop_hard()
        answers["summary"] = await run

    with StubThread(policy=AgentPolicy(CLAIMING_PLANS)) as stub:
        cfg = settings(stub, deliverable=False, postmortem=False, reset_cap=0)
        sup = Supervisor(
            tmp_path, RunRequest("Review app.py", 2, verifier=False), cfg, events.append
        )
        asyncio.run(asyncio.wait_for(scenario(sup), 240))

    assert answers["hosted"] == "reset member-2: session stopped, a fresh attempt starts"
    assert answers["new_pid"] != answers["old_pid"]
    # The released idea is no longer member-2's until its new attempt claims again.
    assert not set(answers["claimed"]) & set(answers["released_at_reset"])

    kinds = lifecycle(sup.run_dir)
    records = [json.loads(x) for x in (sup.run_dir / "events.jsonl").read_text().splitlines()]
    exits = [r for r in records if r.get("kind") == "member-exit" and r.get("member") == "member-2"]
    assert exits[0]["cause"] == USER_RESET
    resets = [r for r in records if r.get("kind") == "member-reset"]
    assert [(r["member"], r["cause"], r["resets"]) for r in resets] == [
        ("member-2", "user", 1),
        ("member-1", "user", 1),
    ]
    assert resets[0]["released"] == answers["claimed"]
    assert ("reset-requested", None) in kinds
    attempts = [e.data["attempt"] for e in spawns(events, "member-2")]
    assert attempts == [1, 2]  # reset_cap=0: a person's reset is not capped

    store = HordeStore(tmp_path / ".horde", "reader")
    store.refresh()
    history = [n.what for n in store.state.ideas[answers["claimed"][0]].history]
    assert history[:2] == ["claimed", "released"]

    cli_answer = answers["cli"]
    assert cli_answer.returncode == 0, cli_answer.stderr
    assert cli_answer.stdout.strip() == "reset member-1: session stopped, a fresh attempt starts"
    refused = answers["cli_all"]
    assert refused.returncode == 1
    assert refused.stdout.startswith("refused: reset needs members")
    assert answers["while_stopping"].startswith("refused: the run is stopping")
    summary = answers["summary"]
    by_name = {m.name: m for m in summary.members}
    assert by_name["member-1"].resets == 1 and by_name["member-2"].resets == 1
    assert not list((sup.run_dir / "control").glob("req-*.json"))


def test_reset_control_request_is_refused_when_no_run_is_live(tmp_path: Path) -> None:
    """`horde-tui reset` with no live run says so and exits 1 (nothing to reset)."""
    result = cli(tmp_path, "reset", "member-1")
    assert result.returncode == 1
    assert "nothing to reset" in result.stderr


@pytest.mark.e2e
@pytest.mark.slow  # a whole run, reset or resumed mid-way
def test_resume_member_of_a_live_run_carries_its_session_on(tmp_path: Path) -> None:
    """`horde-tui resume RUN --member member-2` from another shell while the run is live:
    its supervisor stops member-2's session and carries the same session on from its
    transcript (no new attempt, no reset), and REPORT.md records it."""
    events: list[SupervisorEvent] = []
    answers: dict[str, Any] = {}

    async def scenario(sup: Supervisor) -> None:
        run = asyncio.create_task(sup.run())
        await until(lambda: claims_of(tmp_path / ".horde", "member-2") != [], "member-2 to claim")
        answers["pid"] = sup.members["member-2"].pid
        claimed = claims_of(tmp_path / ".horde", "member-2")
        argv = ("resume", sup.run_id, "--member", "member-2")
        answers["cli"] = await asyncio.to_thread(cli, tmp_path, *argv)
        state = sup.members["member-2"]

        def ended() -> bool:  # the exit handled, not only its status line read
            return state.status == "exited" and state.exit_cause == "completed"

        await until(ended, "the carried-on session's end")
        answers["held"] = claims_of(tmp_path / ".horde", "member-2") == claimed
        answers["detached"] = await asyncio.to_thread(cli, tmp_path, *argv, "--detach")
        # Its session ended: carried on again at once (nothing to stop first).
        answers["again"] = await asyncio.to_thread(cli, tmp_path, *argv)
        await until(lambda: len(spawns(events, "member-2")) == 3, "member-2's third session")
        await until(ended, "that session's end")
        answers["gone"] = await asyncio.to_thread(cli, tmp_path, *argv[:-1], "member-3")
        await sup.stop_hard()
        answers["summary"] = await run

    with StubThread(policy=CarriedOn(CLAIMING_PLANS)) as stub:
        cfg = settings(stub, deliverable=False, postmortem=False)
        sup = Supervisor(
            tmp_path, RunRequest("Review app.py", 2, verifier=False), cfg, events.append
        )
        asyncio.run(asyncio.wait_for(scenario(sup), 240))
        carried = [r for r in stub.stub.requests if r.member == "member-2"]

    done = answers["cli"]
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == "carrying on member-2: the same session, from its transcript"
    notice = [i for i, r in enumerate(carried) if r.body["messages"][-1]["content"] == RESUMED]
    assert len(notice) == 2, "member-2's session was carried on twice"
    before = carried[notice[0] - 1].body["messages"]
    again = carried[notice[0]].body["messages"]
    assert [m.get("content") for m in again[: len(before)]] == [m.get("content") for m in before]
    assert answers["again"].returncode == 0, answers["again"].stderr
    assert [e.data["attempt"] for e in spawns(events, "member-2")] == [1, 1, 1]
    assert not alive(answers["pid"])
    assert len(list((sup.run_dir / "sessions" / "member-2").glob("*.jsonl"))) == 1
    records = [json.loads(x) for x in (sup.run_dir / "events.jsonl").read_text().splitlines()]
    assert not [r for r in records if r.get("kind") == "member-reset"], "not a reset"
    resumed = [r["member"] for r in records if r.get("kind") == "session-resume"]
    assert resumed == ["member-2", "member-2"]
    store = HordeStore(tmp_path / ".horde", "reader")
    store.refresh()
    assert [p.text for p in store.state.posts if p.by == "member-2"][-1] == CARRIED_ON[0]["args"][
        "text"
    ]
    assert answers["held"], "a carried-on session keeps its claims (not a reset)"
    detached = answers["detached"]
    assert detached.returncode == 2 and detached.stderr.strip() == (
        f"horde-tui: refused: run {sup.run_id} is live, so its own supervisor carries "
        "member-2 on; --detach and --headless go with a run whose supervisor is gone"
    )
    gone = answers["gone"]
    assert gone.returncode == 2 and gone.stderr.strip() == (
        f"horde-tui: refused: run {sup.run_id} has no member named 'member-3' (its members: "
        "member-1, member-2); name one of them"
    )
    assert "- Continued: member-2's session at " in (sup.run_dir / "REPORT.md").read_text()
