"""A run directory written the way the supervisor writes one, for the tests that read runs
from disk (the runs list, attach, resume, the swarm views) without starting a run."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from support.processes import dead_pid

TASK = (
    "# Task\n\nFind the SQL injections in app/\nand rank them.\n\n"
    "## Configuration\n\n- members: 3\n"
)


def ts(second: int) -> str:
    return f"2026-01-02T12:00:{second:02d}.000000Z"


EPOCH_0 = 1767355200.0
"""`ts(0)` as epoch seconds."""


class RunDir:
    """A run directory written the way the supervisor writes one."""

    def __init__(self, horde: Path, run_id: str, members: int = 3) -> None:
        self.path = horde / "runs" / run_id
        (self.path / "sessions").mkdir(parents=True)
        self.n = 0
        (self.path / "TASK.md").write_text(TASK)
        manifest = {
            "run": run_id,
            "created": EPOCH_0 - 5,
            "model": "openai/stub",
            "demo_model": False,
            "members": [
                {"name": f"member-{i}", "role": "verifier" if i == 3 else "member", "layers": []}
                for i in range(1, members + 1)
            ],
            "request": {"count": members, "layers": [], "until_stop": False},
        }
        (self.path / "MANIFEST.json").write_text(json.dumps(manifest))

    def event(self, second: int, kind: str, member: str | None = None, **data: Any) -> None:
        self.n += 1
        ev = {"ts": ts(second), "actor": "parent", "type": "lifecycle", "kind": kind}
        if member:
            ev["member"] = member
        ev.update(data, id=f"E{self.n}")
        with open(self.path / "events.jsonl", "a") as fh:
            fh.write(json.dumps(ev, separators=(",", ":")) + "\n")

    def message(self, member: str, session: str, **msg: Any) -> None:
        folder = self.path / "sessions" / member
        folder.mkdir(exist_ok=True)
        with open(folder / f"{session}.jsonl", "a") as fh:
            fh.write(json.dumps({"ts": EPOCH_0 + 1, **msg}) + "\n")

    def live(self, pid: int) -> None:
        (self.path / ".live").write_text(f"{pid}\n")


def answer(tokens: tuple[int, int], tools: tuple[str, ...] = (), text: str = "") -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "assistant", "content": text or None}
    msg["usage"] = {"prompt_tokens": tokens[0], "completion_tokens": tokens[1], "cost_usd": 0.5}
    if tools:
        msg["tool_calls"] = [
            {"id": f"c{i}", "type": "function", "function": {"name": t, "arguments": "{}"}}
            for i, t in enumerate(tools)
        ]
    return msg


FINISHED = "20260102-120000-aaaa"


def finished_run(horde: Path) -> None:
    """One finished run in `horde`, so the app opens on the runs list."""
    done = RunDir(horde, FINISHED)
    done.event(0, "run-start", members=3, model="openai/stub")
    done.event(9, "run-end", outcome="solved", diagnosis="F1 verified")
    (done.path / "REPORT.md").write_text("# Report\n")


def ready_to_launch(tmp_path: Path) -> Path:
    """A `.horde/` with one finished run and a model in its config."""
    horde = tmp_path / ".horde"
    finished_run(horde)
    (horde / "config.toml").write_text('model = "openai/stub"\n')
    return horde


def several_runs(horde: Path) -> dict[str, str]:
    """One run in each state the list shows; returns run id -> expected state."""
    done = RunDir(horde, "20260102-120000-aaaa")
    done.event(0, "run-start", members=3, model="openai/gpt-4o")
    done.event(50, "run-end", outcome="solved", diagnosis="F1 verified")
    (done.path / "REPORT.md").write_text("# Report\n")
    broken = RunDir(horde, "20260102-120100-bbbb", members=2)
    broken.event(10, "run-start", members=2, model="anthropic/claude-sonnet-4")
    broken.live(dead_pid())
    final = RunDir(horde, "20260102-120200-cccc", members=6)
    final.event(20, "run-start", members=6, model="openai/gpt-4o")
    final.event(40, "phase-start", phase="finalize")
    final.live(os.getpid())
    live = RunDir(horde, "20260102-120300-dddd", members=4)
    live.event(30, "run-start", members=4, model="ollama/qwen3:8b")
    live.live(os.getpid())
    (horde / "runs" / "20260102-120400-eeee").mkdir()
    return {
        "20260102-120000-aaaa": "finished",
        "20260102-120100-bbbb": "interrupted",
        "20260102-120200-cccc": "finalizing",
        "20260102-120300-dddd": "active",
        "20260102-120400-eeee": "not started",
    }
