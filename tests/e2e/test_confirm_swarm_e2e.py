"""Confirm mode in a swarm end to end: a real swarm supervisor with two hordes (gateway
and member processes on the stub model) whose members wait for decisions a person makes
from another shell with `horde-tui approve` and `horde-tui refuse`, by horde target."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from support.cli import cli
from support.processes import wait_until

from horde_tui.common.settings import load_settings
from horde_tui.stubmodel import StubThread
from horde_tui.stubmodel.agent import AgentPolicy
from horde_tui.supervisor.setup import RunRequest
from horde_tui.supervisor.swarm import SwarmSupervisor

pytestmark = [pytest.mark.slow, pytest.mark.e2e]  # whole real runs: `pytest -m slow`

PARTITION = (
    "h1: Audit app.py for hard-coded secrets\n"
    "acceptance: every secret in app.py is filed with its line\n"
    "h2: Audit login() for timing attacks\n"
    "acceptance: the comparison in login() is classified with evidence\n"
)


def bash(command: str) -> dict[str, Any]:
    return {"tool": "bash", "args": {"command": command}}


PLANS = {
    "planner": [{"say": PARTITION}],
    "member-1": [bash("echo first-command-ran"), bash("touch refused.txt"), {"say": "Done."}],
    "synthesis": [{"say": "# Deliverable\n\nNothing found."}],
    "postmortem": [{"say": "# Post-mortem\n\nFine."}],
    "merge": [{"say": "# Swarm deliverable\n\n- [h1: open] nothing\n- [h2: open] nothing\n"}],
}


def waiting(swarm_dir: Path) -> dict[str, str]:
    """Each horde's command waiting in its run's `control/` (horde -> command)."""
    out = {}
    for path in swarm_dir.glob("h*/runs/*/control/req-*.json"):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if data.get("action") == "confirm":
            out[path.relative_to(swarm_dir).parts[0]] = str(data["command"])
    return out


def test_approve_and_refuse_reach_each_horde_of_a_swarm_from_another_shell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HORDE_GATEWAY_BACKOFF_MS", "20")
    out: list[Any] = []
    with StubThread(policy=AgentPolicy(PLANS)) as stub:
        env = {"HORDE_MODEL": stub.model, "HORDE_API_BASE": stub.api_base, "HORDE_API_KEY": "s"}
        cfg = load_settings(
            environ=env,
            overrides={
                "swarm_stagger_ms": 100,
                "confirm": True,
                "stall_ms": 1500,
                "postmortem": False,
                "repair_rounds": 0,
                "sandbox": "off",
            },
        )
        swarm = SwarmSupervisor(tmp_path, RunRequest("Review app.py", 1), cfg, 2)
        runner = threading.Thread(
            target=lambda: out.append(asyncio.run(asyncio.wait_for(swarm.run(), 240))),
            daemon=True,
        )
        runner.start()
        first = "echo first-command-ran"
        assert wait_until(lambda: waiting(swarm.swarm_dir) == {"h1": first, "h2": first}, 120)

        approved = cli(tmp_path, "approve", "h1:member-1")
        assert approved.returncode == 0, approved.stdout + approved.stderr
        assert approved.stdout == f"h1: allowed member-1: {first}\n"
        assert wait_until(lambda: waiting(swarm.swarm_dir).get("h1") == "touch refused.txt", 60)
        assert waiting(swarm.swarm_dir)["h2"] == first, "h2 still waits: h1 was named"

        refused = cli(tmp_path, "refuse", "h2")
        assert refused.returncode == 0, refused.stdout + refused.stderr
        assert refused.stdout == f"h2: refused member-1: {first}\n"
        both = {"h1": "touch refused.txt", "h2": "touch refused.txt"}
        assert wait_until(lambda: waiting(swarm.swarm_dir) == both, 60)

        rest = cli(tmp_path, "refuse")  # every horde
        assert rest.returncode == 0, rest.stdout + rest.stderr
        assert rest.stdout.splitlines() == [
            "h1: refused member-1: touch refused.txt",
            "h2: refused member-1: touch refused.txt",
        ]
        runner.join(240)
    assert out, "the swarm ended"
    assert not (tmp_path / "refused.txt").exists()
    data = json.loads((swarm.swarm_dir / "SWARM.json").read_text())
    transcripts = {
        name: next(
            (swarm.swarm_dir / data["runs"][name] / "sessions" / "member-1").glob("*.jsonl")
        ).read_text()
        for name in ("h1", "h2")
    }
    assert "first-command-ran\\n" in transcripts["h1"]
    assert f"refused by the user: {first}" in transcripts["h2"]
    for text in transcripts.values():
        assert "refused by the user: touch refused.txt" in text
    decisions = []
    for name in ("h1", "h2"):
        for line in (
            (swarm.swarm_dir / data["runs"][name] / "events.jsonl").read_text().splitlines()
        ):
            ev = json.loads(line)
            if ev.get("kind") == "confirm-decision":
                decisions.append((name, ev["decision"], ev["command"]))
    assert sorted(decisions) == [
        ("h1", "allow", first),
        ("h1", "refuse", "touch refused.txt"),
        ("h2", "refuse", first),
        ("h2", "refuse", "touch refused.txt"),
    ]
