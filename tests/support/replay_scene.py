"""A finished run to replay: the ledger scene (`support.ledger_scene`, written through
the real `horde` tool with the frozen clock) plus one refused call, a last post and the
run's end, and what the replay tests read of it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from horde_tui.app.replay import ReplayApp, open_replay
from horde_tui.screens.base import AppConfig
from horde_tui.store.jsonl import JsonlTail
from support.app import NOW, RUN_ID
from support.ledger_scene import fill_run, freeze_ledger_clock, lifecycle


def ended_scene(workdir: Path) -> Path:
    """Write the scene into `workdir/.horde`; return that `.horde`."""
    with pytest.MonkeyPatch.context() as mp:
        freeze_ledger_clock(mp)  # a second per record from T0: stable snapshots
        horde = fill_run(workdir)
        assert not horde("member-3", "claim", run=RUN_ID, id="#1").ok  # member-1 holds it
        horde("member-1", "post", run=RUN_ID, text="wrapping up")
        lifecycle(horde, "run-end", outcome="finished")
    members = [{"name": f"member-{n}", "role": "member", "layers": []} for n in (1, 2, 3)]
    manifest = {"run": RUN_ID, "model": "stub/demo-model", "members": members}
    (horde.root / "runs" / RUN_ID / "MANIFEST.json").write_text(json.dumps(manifest))
    return horde.root


def events_of(horde_dir: Path) -> list[dict[str, Any]]:
    return JsonlTail(horde_dir / "runs" / RUN_ID / "events.jsonl").read_new()


def first(events: list[dict[str, Any]], **match: Any) -> int:
    """The E# number of the first event with these fields."""
    for ev in events:
        if all(ev.get(k) == v for k, v in match.items()):
            return int(str(ev["id"])[1:])
    raise AssertionError(f"no event with {match}")


def app_on(horde_dir: Path, at: str | None = None) -> ReplayApp:
    """The replay app on the scene's run (after E# `at`), deterministic."""
    return ReplayApp(open_replay(horde_dir, RUN_ID, at), config=AppConfig.deterministic(NOW))
