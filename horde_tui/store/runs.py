"""Runs and swarms on disk: where they live, what state they are in, which exist.

The one home of the on-disk contract every reader shares (the CLI, the app, a resume,
the launcher): a run is `<horde>/runs/<id>/`, a swarm `<horde>/swarms/<id>/` with its
hordes' runs in `hN/runs/<id>-hN/`. A run is *live* while `runs/<id>/.live` names a
supervisor pid that exists; a `.live` whose pid is gone marks an interrupted run. A
swarm's state is its SWARM.json (rewritten whole by the swarm supervisor), read the same
way: still going by the file but its `parent_pid` gone means interrupted. Plain file
reads, no supervisor imports.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from horde_tui.inputs import whole_number
from horde_tui.store.identity import clear_processes
from horde_tui.store.paths import HordePaths, atomic_write_text, valid_run_id
from horde_tui.watchdog import pid_alive

RUN_STATES = ("active", "interrupted", "finished", "manual", "not started")
"""What `run_state` says of a run directory."""

INPUT_DOCUMENTS = ("TASK.md", "PLAN.md", "SYSTEM.md")
"""What a run is asked (setup writes them): the task, the plan, the members' protocol."""
RESULT_DOCUMENTS = (
    "REPORT.md",
    "DELIVERABLE.md",
    "POSTMORTEM.md",
    "SUMMARY.md",
    "ANSWER.md",
    "ACCEPTANCE.md",
    "ACCEPTANCE.json",
    "GRAPH.md",
)
"""What a run produced, most useful first."""
RUN_DOCUMENTS = INPUT_DOCUMENTS + RESULT_DOCUMENTS
"""Every document of a run, in the order the run writes them."""
READING_ORDER = RESULT_DOCUMENTS + INPUT_DOCUMENTS
"""The documents as the files pane offers them: what the run produced first."""
LISTED_DOCUMENTS = tuple(name for name in RUN_DOCUMENTS if name != "SYSTEM.md")
"""The documents the runs list names (SYSTEM.md is the same protocol in every run)."""

SWARM_LIVE_STATES = frozenset({"pending", "active", "finalizing"})
"""States in which the hosting process is still responsible for the swarm."""
SWARM_STATES = ("pending", "active", "finalizing", "finished", "not started")


def run_dir(horde_dir: Path, run_id: str) -> Path:
    """`<horde>/runs/<id>`; ValueError for an id that is not a plain directory name."""
    return HordePaths(Path(horde_dir)).run_dir(run_id)


def swarm_dir(horde_dir: Path, swarm_id: str) -> Path:
    """`<horde>/swarms/<id>`; ValueError for an id that is not a plain directory name."""
    if not valid_run_id(swarm_id):
        raise ValueError(f"invalid swarm id {swarm_id!r}: use letters, digits, '.', '_' or '-'")
    return HordePaths(Path(horde_dir)).swarms / swarm_id


def subfolders(folder: Path) -> list[str]:
    """Names of the folders in `folder`, sorted; none when it does not exist (yet)."""
    try:
        return sorted(e.name for e in os.scandir(folder) if e.is_dir())
    except OSError:
        return []


def run_ids(horde_dir: Path) -> list[str]:
    """Every run directory's name, oldest first (run ids start with a timestamp)."""
    return subfolders(HordePaths(Path(horde_dir)).runs)


def swarm_ids(horde_dir: Path) -> list[str]:
    """Every swarm directory's name, oldest first."""
    return subfolders(HordePaths(Path(horde_dir)).swarms)


def sessions_dir(run_dir: Path, member: str | None = None) -> Path:
    """Where a run's members keep their transcripts, `<run>/sessions/`, or one member's
    folder in it, `<run>/sessions/<member>/` (a `.jsonl` file a session, named by its
    start: `transcript.sessions` lists them)."""
    folder = run_dir / "sessions"
    return folder / member if member else folder


# -- the live marker ---------------------------------------------------------------------------


def live_file(run_dir: Path) -> Path:
    return run_dir / ".live"


def mark_live(run_dir: Path) -> None:
    """This process supervises the run now."""
    atomic_write_text(live_file(run_dir), f"{os.getpid()}\n")


def clear_live(run_dir: Path) -> None:
    live_file(run_dir).unlink(missing_ok=True)
    clear_processes(run_dir)  # the run's names are no longer reserved (store.identity)


def supervisor_pid(run_dir: Path) -> int | None:
    try:
        raw = live_file(run_dir).read_text().strip()
    except OSError:
        return None
    return whole_number(raw)


def run_state(run_dir: Path) -> str:
    """`active`, `interrupted`, `finished`, `manual` (entries written with `horde-tui
    tool`, no supervisor) or `not started` (no TASK.md)."""
    if not (run_dir / "TASK.md").exists():
        return "not started"
    if not (run_dir / "MANIFEST.json").exists():
        return "manual"
    pid = supervisor_pid(run_dir)
    if pid is not None:
        return "active" if pid_alive(pid) else "interrupted"
    return "finished" if (run_dir / "REPORT.md").exists() else "interrupted"


def runs_by_state(horde_dir: Path) -> dict[str, list[str]]:
    """Run ids of `horde_dir/runs/` by state, oldest first."""
    out: dict[str, list[str]] = {}
    runs = HordePaths(Path(horde_dir)).runs
    for name in run_ids(horde_dir):
        out.setdefault(run_state(runs / name), []).append(name)
    return out


def existing_run(horde_dir: Path, run_id: str) -> Path | None:
    """The single run named `run_id`, or None when there is none (or no run could have
    that name: a lookup by a person's word never leaves `runs/`)."""
    path = run_dir(horde_dir, run_id) if valid_run_id(run_id) else None
    return path if path is not None and path.is_dir() else None


def existing_swarm(horde_dir: Path, swarm_id: str) -> Path | None:
    """The swarm named `swarm_id`, or None when there is none (or no swarm could have
    that name)."""
    path = swarm_dir(horde_dir, swarm_id) if valid_run_id(swarm_id) else None
    return path if path is not None and path.is_dir() else None


def find_run(
    horde_dir: Path, run: str | None, states: tuple[str, ...] = ("active",)
) -> Path | None:
    """The run named `run` (a single run, or a swarm's horde run `<swarm>-hN`), or the
    newest run in one of `states` when none is named; None when there is no such run."""
    horde_dir = Path(horde_dir)
    if run:
        if not valid_run_id(run):
            return None  # no run directory can have that name
        path = existing_run(horde_dir, run)
        if path is not None:
            return path
        # A swarm's horde run (`<swarm>-h2`) lives in its horde's own directory.
        return next(iter(sorted(horde_dir.glob(f"swarms/*/h[1-4]/runs/{run}"))), None)
    by_state = runs_by_state(horde_dir)
    candidates = [r for s in states for r in by_state.get(s, [])]
    return HordePaths(horde_dir).runs / candidates[-1] if candidates else None


def run_files(run_dir: Path) -> tuple[Path, ...]:
    """The documents the runs list names that are present, in `RUN_DOCUMENTS` order."""
    return tuple(p for p in (run_dir / name for name in LISTED_DOCUMENTS) if p.is_file())


# -- swarms: SWARM.json ------------------------------------------------------------------------


@dataclass(frozen=True)
class Workstream:
    """One horde's share of the task: an entry of SWARM.json's `partition`."""

    horde: str
    workstream: str
    criterion: str
    layers: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {
            "horde": self.horde,
            "workstream": self.workstream,
            "criterion": self.criterion,
            "layers": list(self.layers),
        }


def swarm_json_path(swarm_dir: Path) -> Path:
    return swarm_dir / "SWARM.json"


def write_swarm_json(swarm_dir: Path, data: dict[str, Any]) -> None:
    """Replace SWARM.json whole (tmp + fsync + rename): a reader never sees half of it."""
    atomic_write_text(swarm_json_path(swarm_dir), json.dumps(data, indent=2) + "\n")


def read_swarm_json(swarm_dir: Path) -> dict[str, Any] | None:
    """SWARM.json, or None when it is missing or unreadable (a swarm being created)."""
    try:
        data = json.loads(swarm_json_path(swarm_dir).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def swarm_state(data: dict[str, Any]) -> str:
    """The state to show: SWARM.json's, or `interrupted` when it says the swarm is still
    going but the process hosting it is gone."""
    state = str(data.get("state") or "pending")
    pid = data.get("parent_pid")
    if state in SWARM_LIVE_STATES and not (isinstance(pid, int) and pid_alive(pid)):
        return "interrupted"
    return state


def swarms_by_state(horde_dir: Path) -> dict[str, list[str]]:
    """Swarm ids of `horde_dir/swarms/` by shown state, oldest first."""
    out: dict[str, list[str]] = {}
    root = HordePaths(Path(horde_dir)).swarms
    for name in swarm_ids(horde_dir):
        data = read_swarm_json(root / name)
        if data is not None:
            out.setdefault(swarm_state(data), []).append(name)
    return out


def live_swarm(horde_dir: Path) -> Path | None:
    """The newest swarm whose host is alive and still responsible for it, if any."""
    by_state = swarms_by_state(horde_dir)
    live = [s for state in SWARM_LIVE_STATES for s in by_state.get(state, [])]
    return HordePaths(Path(horde_dir)).swarms / sorted(live)[-1] if live else None


def horde_run_dirs(swarm_dir: Path, data: dict[str, Any]) -> dict[str, Path]:
    """`h1` -> its run directory, for every horde SWARM.json lists as started."""
    runs = data.get("runs") or {}
    return {name: swarm_dir / rel for name, rel in sorted(runs.items()) if isinstance(rel, str)}
