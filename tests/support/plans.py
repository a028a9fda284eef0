"""The scripted model's plans for whole runs, and how the tests start such a run: the
settings pointing at the stub, `run_supervisor` in-process, the lifecycle it logged."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

from horde_tui.common import prompts
from horde_tui.common.settings import load_settings
from horde_tui.stubmodel import StubThread
from horde_tui.stubmodel.agent import AgentPolicy
from horde_tui.stubmodel.script import Step
from horde_tui.supervisor.run import Supervisor, SupervisorEvent
from horde_tui.supervisor.setup import RunRequest

APP = "PASSWORD = 'hunter2'\n\n\ndef login(user, password):\n    return password == PASSWORD\n"


def horde(action: str, **args: Any) -> dict[str, Any]:
    return {"tool": "horde", "args": {"action": action, **args}}


def worker(
    idea: str, finding: str, concern: str, evidence: str = "app.py:1"
) -> list[dict[str, Any]]:
    return [
        horde("idea", text=idea),
        horde("claim", id="$id"),
        horde(
            "finding",
            concern=concern,
            concernDef=f"{concern} problems",
            text=finding,
            evidence=evidence,
            support="tested",
            importance="high",
            confidence="high",
        ),
        horde("done", id="$I", result="filed $F"),
    ]


HELPERS = {
    "synthesis": [{"say": "# Deliverable\n\nThe password is hard-coded (F1)."}],
    "postmortem": [{"say": "# Post-mortem\n\nThe members did not duplicate work."}],
}


def settings(stub: StubThread, **extra: Any) -> Any:
    env = {"HORDE_MODEL": stub.model, "HORDE_API_BASE": stub.api_base, "HORDE_API_KEY": "stub"}
    return load_settings(environ=env, overrides=extra)


def run_supervisor(
    workdir: Path, request: RunRequest, cfg: Any
) -> tuple[Any, Supervisor, list[SupervisorEvent]]:
    events: list[SupervisorEvent] = []
    sup = Supervisor(workdir, request, cfg, sink=events.append)
    summary = asyncio.run(asyncio.wait_for(sup.run(), 240))
    return summary, sup, events


def lifecycle(run_dir: Path) -> list[tuple[str, str | None]]:
    out = []
    for line in (run_dir / "events.jsonl").read_text().splitlines():
        ev = json.loads(line)
        if ev.get("type") == "lifecycle":
            out.append((ev["kind"], ev.get("member")))
    return out


def claimer(idea: str) -> list[dict[str, Any]]:
    """Add an idea, claim it, then keep listing (a member busy with its claim)."""
    return [
        horde("idea", text=idea),
        horde("claim", id="$id"),
        *[{**horde("list"), "hold_ms": 200}] * 400,
    ]


CLAIMING_PLANS = {
    "member-1": claimer("Check app.py for a hard-coded password"),
    "member-2": claimer("Check login() in app.py for timing attacks"),
    **HELPERS,
}


def slow_worker(idea_text: str, finding: str, concern: str) -> list[dict[str, Any]]:
    """A member's plan: an idea and its claim, a look around (held until the test has
    killed the supervisor, see `HeldUntilReleased`), then the finding and the close."""
    idea, claim, filed, done = worker(idea_text, finding, concern)
    return [idea, claim, horde("list"), filed, done, {"say": "Filed."}]


HELD_PLANS = {
    "member-1": slow_worker(
        "Check app.py for a hard-coded password", "app.py hard-codes the password", "secrets"
    ),
    "member-2": slow_worker(
        "Check login() in app.py for timing attacks", "login() compares with ==", "timing"
    ),
    **HELPERS,
}


class HeldUntilReleased:
    """The agent policy of `HELD_PLANS`, whose `list` replies are held until `released` is
    set: the test knows both members are mid-session (`holding`) when it interrupts
    their supervisor, and the sessions carried on afterwards are not held."""

    HOLD_MS = 120_000

    def __init__(self) -> None:
        self.agent = AgentPolicy(HELD_PLANS)
        self.released = threading.Event()
        self.holding: set[str] = set()

    def __call__(self, member: str, body: dict[str, Any]) -> Step | None:
        step = self.agent(member, body)
        if step is None or self.released.is_set() or not step.tool_calls:
            return step
        if json.loads(step.tool_calls[0].arguments_json()).get("action") != "list":
            return step
        self.holding.add(member)
        return step.model_copy(update={"delay_ms": self.HOLD_MS})


CARRIED_ON = [horde("post", text="Carried on from my transcript."), {"say": "Carried on."}]
"""What a session carried on from its transcript plays (`CarriedOn`)."""


class CarriedOn:
    """The agent policy of `plans` until a session is carried on from its transcript
    (its conversation holds the resumed notice, `resume RUN --member`); from the notice
    on it plays `CARRIED_ON`: one board post (a ledger write of the carried-on session),
    then a final answer."""

    def __init__(self, plans: dict[str, list[dict[str, Any]]]) -> None:
        self.agent = AgentPolicy(plans)
        self.after = AgentPolicy({"*": CARRIED_ON})

    def __call__(self, member: str, body: dict[str, Any]) -> Step | None:
        messages = body.get("messages") or []
        notices = [i for i, m in enumerate(messages) if m.get("content") == prompts.RESUMED_NOTICE]
        if not notices:
            return self.agent(member, body)
        return self.after(member, {**body, "messages": messages[notices[0] + 1 :]})
