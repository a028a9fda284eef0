"""SWARM.json on disk: written atomically by the swarm supervisor, read by anyone.

Readers (the CLI's `status`, the launch check, the app) see a swarm's state the way the
runs list sees a run's: a swarm whose SWARM.json says it is still going but whose
`parent_pid` is gone was interrupted. Plain file reads, no supervisor imports.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from horde_tui.store.paths import atomic_write_text
from horde_tui.watchdog import pid_alive

LIVE_STATES = frozenset({"pending", "active", "finalizing"})
"""States in which the hosting process is still responsible for the swarm."""
STATES = ("pending", "active", "finalizing", "finished", "not started")


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
    if state in LIVE_STATES and not (isinstance(pid, int) and pid_alive(pid)):
        return "interrupted"
    return state


def swarms_by_state(horde_dir: Path) -> dict[str, list[str]]:
    """Swarm ids of `horde_dir/swarms/` by shown state, oldest first."""
    out: dict[str, list[str]] = {}
    root = horde_dir / "swarms"
    if not root.is_dir():
        return out
    for swarm_dir in sorted(root.iterdir()):
        data = read_swarm_json(swarm_dir) if swarm_dir.is_dir() else None
        if data is not None:
            out.setdefault(swarm_state(data), []).append(swarm_dir.name)
    return out


def live_swarm(horde_dir: Path) -> Path | None:
    """The newest swarm whose host is alive and still responsible for it, if any."""
    live = [s for state in LIVE_STATES for s in swarms_by_state(horde_dir).get(state, [])]
    return horde_dir / "swarms" / sorted(live)[-1] if live else None


def horde_run_dirs(swarm_dir: Path, data: dict[str, Any]) -> dict[str, Path]:
    """`h1` -> its run directory, for every horde SWARM.json lists as started."""
    runs = data.get("runs") or {}
    return {name: swarm_dir / rel for name, rel in sorted(runs.items()) if isinstance(rel, str)}
