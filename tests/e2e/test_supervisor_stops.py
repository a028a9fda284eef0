"""A stop stops, whenever it comes (issue 28): during the canary, the fan-out, repair and
finalize, no member or helper is spawned after the stop and no model call reaches the
model. Real supervisor, gateway and member processes; the model is the stub (or the
fake AI Horde), whose request log is the evidence.

A member waiting on a reply the model holds for `HOLD_MS`, or running a command as
long, was stopped, not answered: a test takes far less."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.cli import cli, headless, wait_for_line
from support.plans import APP, HELPERS, horde, lifecycle, settings
from support.processes import wait_until

from horde_tui.stubmodel import StubThread
from horde_tui.stubmodel.agent import AgentPolicy
from horde_tui.supervisor.run import Supervisor, SupervisorEvent
from horde_tui.supervisor.setup import RunRequest

pytestmark = [pytest.mark.slow, pytest.mark.e2e]  # whole real runs: `pytest -m slow`

HOLD_MS = 120_000
BUSY = [{"tool": "bash", "args": {"command": "sleep 120", "timeout": 300}}, {"say": "slept"}]
"""A member's plan: one quick answer (the canary passes), then a long command: no call
of its own can race the stop."""


@pytest.fixture(autouse=True)
def fast_gateway(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HORDE_GATEWAY_BACKOFF_MS", "20")


def spawns_after_stop(run_dir: Path) -> list[str | None]:
    """Who was spawned after the run's first stop event (its members and helpers)."""
    kinds = lifecycle(run_dir)
    first = next(i for i, (kind, _) in enumerate(kinds) if kind in ("stop-clean", "stop-hard"))
    return [member for kind, member in kinds[first:] if kind == "member-spawn"]


def stopped_run(
    tmp_path: Path,
    plans: dict[str, list[dict[str, Any]]],
    members: int,
    when: Callable[[SupervisorEvent, list[SupervisorEvent]], bool],
    clean: bool = False,
    **overrides: Any,
) -> tuple[Any, Supervisor, int, int]:
    """Run in this process on `plans`; stop the run (hard, or clean) the moment an event
    satisfies `when`. Returns the summary, the supervisor and the model's request count
    at the stop and at the end."""
    (tmp_path / "app.py").write_text(APP)
    with StubThread(policy=AgentPolicy(plans)) as stub:
        cfg = settings(stub, **overrides)
        seen: list[SupervisorEvent] = []
        at_stop: list[int] = []
        pending: set[asyncio.Task[str]] = set()

        def sink(event: SupervisorEvent) -> None:
            seen.append(event)
            if at_stop or not when(event, seen):
                return
            at_stop.append(len(stub.stub.requests))
            if clean:
                sup.stop_clean()
            else:
                pending.add(asyncio.ensure_future(sup.stop_hard()))

        sup = Supervisor(tmp_path, RunRequest("Review app.py", members), cfg, sink=sink)
        summary = asyncio.run(asyncio.wait_for(sup.run(), 240))
        assert at_stop, [(e.kind, e.member) for e in seen]
        return summary, sup, at_stop[0], len(stub.stub.requests)


def spawned(name: str) -> Callable[[SupervisorEvent, list[SupervisorEvent]], bool]:
    return lambda e, seen: e.kind == "member-spawn" and e.member == name


# -- during the canary: Ctrl-C, or stop-clean from another shell ----------------------------------


@pytest.mark.parametrize("how", ["ctrl-c", "stop-clean"])
def test_a_clean_stop_during_the_canary_stops_hard_and_starts_no_second_attempt(
    tmp_path: Path, how: str
) -> None:
    """The model has not answered member-1 yet: a clean stop has nothing to wrap up, so
    member-1 is stopped at once; no second canary attempt, no other member, no second
    model call, and the run ends stopped by the user, not minutes later as a failed
    canary."""
    (tmp_path / "app.py").write_text(APP)
    plans = {"*": [{**horde("list"), "hold_ms": HOLD_MS}], **HELPERS}
    with StubThread(policy=AgentPolicy(plans)) as stub:
        proc = headless(tmp_path, stub, ("HORDE_CANARY_MS", "30000"), members=3)
        try:
            wait_for_line(proc, "[member-spawn] member-1")
            assert wait_until(lambda: stub.stub.requests_for("member-1"), 60)
            stopped = time.monotonic()
            if how == "ctrl-c":
                proc.send_signal(signal.SIGINT)
            else:
                answer = cli(tmp_path, "stop-clean")
                assert answer.returncode == 0, answer.stdout + answer.stderr
                assert "nothing to wrap up" in answer.stdout, answer.stdout
            out, err = proc.communicate(timeout=120)
            took = time.monotonic() - stopped
        finally:
            if proc.poll() is None:
                proc.kill()
        requests = [r.member for r in stub.stub.requests]
    run_dir = next((tmp_path / ".horde" / "runs").iterdir())
    assert requests == ["member-1"], requests
    spawns = [member for kind, member in lifecycle(run_dir) if kind == "member-spawn"]
    assert spawns == ["member-1"]
    assert "outcome: stopped by user" in out, out[-2000:] + err[-2000:]
    assert took < 25, f"the run ended {took:.0f}s after the stop (canary window 30 s)"


# -- during the fan-out, repair and finalize: a hard stop -------------------------------------


def test_a_hard_stop_during_the_fan_out_spawns_no_further_member(tmp_path: Path) -> None:
    plans = {"*": BUSY, **HELPERS}
    summary, sup, at_stop, at_end = stopped_run(tmp_path, plans, 4, spawned("member-2"))
    assert spawns_after_stop(sup.run_dir) == []
    assert at_end == at_stop
    assert summary.outcome == "stopped by user"
    assert sup.members["member-4"].attempt == 0


def test_a_hard_stop_during_repair_starts_no_further_attempt(tmp_path: Path) -> None:
    """member-1 leaves member-2 a blocker; repair would serve member-2, then member-1.
    The stop comes as member-2's repair session starts."""
    plans = {
        "member-1": [
            {**horde("message", to="member-2", kind="blocker", text="Is app.py all?")},
            {"say": "asked", "unless": "REPAIR"},
            {**horde("resolve", id="Q1", text="thanks"), "when": "REPAIR"},
        ],
        "member-2": [
            {**horde("list"), "hold_ms": 1500, "unless": "REPAIR"},
            {"say": "done", "unless": "REPAIR"},
            {**horde("respond", id="Q1", text="yes"), "when": "REPAIR", "hold_ms": HOLD_MS},
        ],
        **HELPERS,
    }

    def repair_session(event: SupervisorEvent, seen: list[SupervisorEvent]) -> bool:
        return event.kind == "member-spawn" and any(e.kind == "repair-start" for e in seen)

    summary, sup, at_stop, at_end = stopped_run(tmp_path, plans, 2, repair_session)
    assert spawns_after_stop(sup.run_dir) == []
    assert at_end == at_stop
    kinds = lifecycle(sup.run_dir)
    assert [m for k, m in kinds if k == "repair-start"] == ["member-2"], kinds
    assert summary.outcome == "stopped by user"


@pytest.mark.parametrize("clean", [False, True], ids=["hard", "clean"])
def test_a_stop_during_finalize_ends_the_helper_and_starts_no_other(
    tmp_path: Path, clean: bool
) -> None:
    """The members are done; the stop comes as the deliverable's helper starts: it is
    stopped (a clean stop has nothing left to wrap up either), and the post-mortem is
    not started."""
    plans = {
        "*": [{"say": "Nothing to report."}],
        "synthesis": [{"say": "# Deliverable", "hold_ms": HOLD_MS}],
        "postmortem": HELPERS["postmortem"],
    }
    started = time.monotonic()
    _, sup, at_stop, at_end = stopped_run(
        tmp_path, plans, 2, spawned("synthesis"), clean=clean, repair_rounds=0
    )
    assert spawns_after_stop(sup.run_dir) == []
    assert at_end == at_stop
    assert "Not written" in (sup.run_dir / "DELIVERABLE.md").read_text()
    assert not (sup.run_dir / "POSTMORTEM.md").exists()
    assert time.monotonic() - started < HOLD_MS / 1000 / 2
