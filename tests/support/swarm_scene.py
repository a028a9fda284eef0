"""Fixture swarms on disk, laid out as the swarm contract says, and a fake swarm supervisor.

`write_swarm` writes `.horde/swarms/<id>/SWARM.json` (and SWARM.md); `swarm_scene` adds
three hordes in three states: h1 active (three members, a finding and an accepted
artifact written through the real `horde` tool, one member's transcript with a cost),
h2 finished with its report, h3 not started yet. Each horde's run directory is written
with `support.rundir.RunDir`, the same helper the runs-list tests use, so it is exactly a
run's format.

`RecordingHorde` stands in for a horde's supervisor inside a real `SwarmSupervisor`.
`FakeSwarm` has the `SwarmSupervisor` API of the contract (`horde_tui/supervisor/swarm.py`
is built elsewhere): it records every control call, writes SWARM.json when built, and
its `run()` returns when a test calls `finish()` (or stops the whole swarm clean). (This module holds no tests.)
"""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from horde_tui.protocol import run_action
from horde_tui.store.paths import HordePaths
from horde_tui.store.store import HordeStore
from support.rundir import EPOCH_0, RunDir, answer

SWARM_ID = "20260102-121000-5a5a"
LAUNCHED_ID = "20260102-140000-f00d"
"""The id a `FakeSwarm` takes when the app builds one (a new swarm)."""
STARTED = EPOCH_0 + 600
"""2026-01-02 12:10 UTC: after every fixture run, so the swarm lists first."""
PROMPT = "Audit the web app for injection and auth bugs"
WORKSTREAMS = (
    ("SQL and shell injection in app/db and app/tools", "every query builder checked"),
    ("Authentication and session handling in app/auth", "login, logout and reset flows"),
    ("Template injection in app/web", "every template render site"),
)


def write_swarm(
    horde: Path,
    swarm_id: str = SWARM_ID,
    *,
    state: str = "active",
    parent_pid: int | None = None,
    hordes: int = 3,
    members: int = 3,
    runs: tuple[str, ...] = ("h1", "h2"),
    merge: str = "pending",
    outcome: str | None = None,
    started: float = STARTED,
    prompt: str = PROMPT,
) -> Path:
    """SWARM.json (all keys, as the contract has them) and SWARM.md; returns the swarm dir."""
    swarm_dir = horde / "swarms" / swarm_id
    swarm_dir.mkdir(parents=True, exist_ok=True)
    data = {
        "id": swarm_id,
        "prompt": prompt,
        "hordes": hordes,
        "members": members,
        "model": "openai/stub",
        "demo": False,
        "layers": [],
        "state": state,
        "parent_pid": os.getpid() if parent_pid is None else parent_pid,
        "started": started,
        "ended": None if state in ("pending", "active", "finalizing") else started + 900,
        "outcome": outcome,
        "diagnosis": "",
        "partition": [
            {"horde": f"h{n}", "workstream": work, "criterion": crit, "layers": []}
            for n, (work, crit) in enumerate(WORKSTREAMS[:hordes], start=1)
        ],
        "runs": {h: f"{h}/runs/{swarm_id}-{h}" for h in runs},
        "merge": merge,
        "timeline": [
            {"ts": started, "kind": "planner-start", "horde": None},
            {"ts": started + 40, "kind": "planner-end", "horde": None},
            *(
                {"ts": started + 45 + 5 * i, "kind": "horde-start", "horde": h}
                for i, h in enumerate(runs)
            ),
        ],
    }
    (swarm_dir / "SWARM.json").write_text(json.dumps(data))
    partition = "\n".join(f"- h{n}: {w} ({c})" for n, (w, c) in enumerate(WORKSTREAMS, start=1))
    (swarm_dir / "SWARM.md").write_text(
        f"# Swarm {swarm_id}\n\n{prompt}\n\n{partition[: hordes * 200]}\n"
    )
    return swarm_dir


def horde_run(swarm_dir: Path, horde: str) -> RunDir:
    """The horde's one run, `hN/runs/<swarm-id>-hN`, written as a run is."""
    return RunDir(swarm_dir / horde, f"{swarm_dir.name}-{horde}")


def tool(root: Path, run: str, actor: str, action: str, **fields: Any) -> str:
    """One `horde` tool call in the horde at `root`; returns the id it made."""
    store = HordeStore(root, actor)
    result = run_action(store, {"action": action, **fields}, run=run, role="member")
    assert result.ok, result.text
    return str(result.id)


@dataclass(frozen=True)
class Scene:
    swarm_dir: Path
    runs: dict[str, RunDir]
    """The started hordes' runs (h1, h2), to append events to or serve `control/` for."""


def swarm_scene(horde: Path) -> Scene:
    """A live 3/3 swarm: h1 active, h2 finished, h3 pending (see the module doc)."""
    swarm_dir = write_swarm(horde)
    h1 = horde_run(swarm_dir, "h1")
    h1.event(0, "run-start", members=3, model="openai/stub")
    h1.event(1, "phase-start", phase="discovery")
    for i in (1, 2, 3):
        h1.event(2 + i, "member-spawn", f"member-{i}", attempt=1, pid=os.getpid())
    h1.message("member-1", "20260102T120003-aaaaaa", **answer((1000, 200)))
    h1.live(os.getpid())
    root, run = swarm_dir / "h1", h1.path.name
    idea = tool(root, run, "member-1", "idea", text="Audit app/db/query.py")
    tool(root, run, "member-1", "claim", id=idea)
    tool(
        root,
        run,
        "member-1",
        "finding",
        text="SQL injection in build_query() via the name parameter",
        evidence="app/db/query.py:42",
        concern="sql-injection",
        concernDef="SQL built from untrusted input",
    )
    (HordePaths(root).workdir / "poc.py").write_text("print('poc')\n")  # where members work
    artifact = tool(root, run, "member-1", "artifact", path="poc.py", criteria="prints poc")
    tool(
        root,
        run,
        "member-2",
        "review",
        target=artifact,
        verdict="supports",
        support="tested",
        checked="the whole claim",
        evidence="ran it: output matches",
    )
    h2 = horde_run(swarm_dir, "h2")
    h2.event(0, "run-start", members=3, model="openai/stub")
    h2.event(50, "run-end", outcome="completed", diagnosis="every member finished")
    (h2.path / "REPORT.md").write_text("# Report\n\nh2's report.\n")
    return Scene(swarm_dir, {"h1": h1, "h2": h2})


class RecordingHorde:
    """Stands in for a horde's `Supervisor` inside a real `SwarmSupervisor`: records
    what the swarm forwarded to it and answers `<action> <target>`."""

    def __init__(self, name: str, refusing: frozenset[str] = frozenset()) -> None:
        self.name = name
        self.calls: list[tuple[str, str]] = []
        self.refusing = refusing
        """Targets it refuses, as a supervisor refuses a reset before discovery."""

    def _did(self, action: str, target: str) -> str:
        self.calls.append((action, target))
        return f"refused: {action} {target}" if target in self.refusing else f"{action} {target}"

    def status(self, target: str) -> str:
        return self._did("status", target)

    def pause(self, target: str) -> str:
        return self._did("pause", target)

    def resume(self, target: str) -> str:
        return self._did("resume", target)

    def stop_clean(self, target: str, *args: object) -> str:
        return self._did("stop-clean", target)

    async def stop_hard(self, target: str) -> str:
        return self._did("stop-hard", target)

    async def reset(self, target: str, session: bool = False) -> str:
        return self._did("reset", target)


class FakeSwarm:
    """The contract's `SwarmSupervisor`, scripted; see the module docstring."""

    def __init__(
        self,
        workdir: Path,
        request: Any,
        settings: Any,
        hordes: int,
        sink: Any = None,
        swarm_id: str | None = None,
    ) -> None:
        self.swarm_id = swarm_id or LAUNCHED_ID
        self.swarm_dir = workdir / ".horde" / "swarms" / self.swarm_id
        self.request, self.settings, self.count = request, settings, hordes
        self.sink = sink
        self.hordes: dict[str, Any] = {}
        self.calls: list[tuple[str, str]] = []
        self._done = asyncio.Event()
        if (self.swarm_dir / "SWARM.json").is_file():  # a fixture swarm, hosted as it is
            return
        write_swarm(
            workdir / ".horde",
            self.swarm_id,
            state="pending",
            hordes=hordes,
            members=request.count,
            runs=(),
            prompt=request.prompt,
        )

    def finish(self) -> None:
        self._done.set()

    def pause(self, target: str = "all") -> str:
        self.calls.append(("pause", target))
        return f"paused {target}"

    def resume(self, target: str = "all") -> str:
        self.calls.append(("resume", target))
        return f"resumed {target}"

    def stop_clean(
        self,
        target: str = "all",
        grace_s: float | None = None,
        postmortem: bool = False,
        reason: str = "stopped by user",
    ) -> str:
        self.calls.append(("stop_clean", target))
        if target == "all":
            self.finish()
        return f"clean stop requested for {target} ({reason})"

    async def stop_hard(self, target: str = "all") -> str:
        self.calls.append(("stop_hard", target))
        return f"stopped {target}"

    async def reset(self, target: str, session: bool = False) -> str:
        self.calls.append(("reset", target))
        return f"reset {target}"

    async def run(self) -> SimpleNamespace:
        await self._done.wait()
        return SimpleNamespace(swarm_id=self.swarm_id, outcome="stopped by user", exit_code=130)
