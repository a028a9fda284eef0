"""Interrupted runs: finalize from what is on disk after the parent died.

A parent killed with SIGKILL (or an OOM kill, or a closed SSH session) leaves its run
without a report; its members exit on their own. `horde-tui finalize RUN` rebuilds the
run summary from MANIFEST.json and the lifecycle events, returns unfinished ideas to the
pool, runs the resource cleanups the parent did not get to, and writes SUMMARY.md,
REPORT.md and GRAPH.md. The deliverable and post-mortem
helpers need a live model gateway, so they are not run here; REPORT.md says so.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from horde_tui.protocol.outcome import RunSummary
from horde_tui.store import runs
from horde_tui.store.members import MemberState, external_members, fold_lifecycle
from horde_tui.store.runs import clear_live, supervisor_pid
from horde_tui.store.store import HordeStore
from horde_tui.store.timestamps import epoch
from horde_tui.supervisor import acceptance_freeze, cleanup, lessons, lifecycle
from horde_tui.supervisor.finalize import read_events, write_reports


def _parse_ts(value: object) -> float:
    """An event's `ts` as epoch seconds (UTC, see `timestamps`); 0 when unreadable."""
    return epoch(value) or 0.0


def rebuild_members(manifest: dict, events: list[dict]) -> list[MemberState]:
    """Members as the lifecycle events left them (`store.members.fold_lifecycle`, as
    every reader folds them), with the turns their exits counted. A member at work when
    the parent died was killed with it; one between sessions ended with its last one."""
    members = {
        m["name"]: MemberState(m["name"], m.get("role", "member"), tuple(m.get("layers", [])))
        for m in manifest.get("members", [])
    }
    for ev in events:
        if ev.get("type") != "lifecycle" or not fold_lifecycle(members, ev):
            continue
        if ev.get("kind") == "member-exit":
            m = members[ev["member"]]
            m.turns = max(m.turns, int(ev.get("turns") or 0))
    for m in members.values():
        if m.status in ("running", "paused"):  # still at work when the parent died
            m.exit_cause, m.status = "killed", "exited"
            m.detail = "the supervisor died while this member ran"
        elif m.status in ("starting", "waiting"):  # its next session never started
            m.status = "exited"
    return [*members.values(), *external_members(events)]


def finalize_from_disk(horde_dir: Path, run_id: str) -> RunSummary:
    run_dir = runs.run_dir(horde_dir, run_id)
    manifest = json.loads((run_dir / "MANIFEST.json").read_text())
    events = read_events(run_dir)
    pid = supervisor_pid(run_dir)
    starts = [_parse_ts(e.get("ts")) for e in events if e.get("kind") == "run-start"]
    summary = RunSummary(
        run_id=run_id,
        outcome="interrupted",
        diagnosis=(
            f"the supervisor (pid {pid}) died before the run ended; finalized from disk, "
            "without the deliverable and post-mortem helpers"
        ),
        canary="ok"
        if any(e.get("kind") == "member-spawn" and e.get("member") != "member-1" for e in events)
        else "unknown",
        started=starts[0] if starts else float(manifest.get("created", time.time())),
        ended=time.time(),
        model=str(manifest.get("model") or ""),
        demo=bool(manifest.get("demo_model")),
        members=rebuild_members(manifest, events),
        layers=list(manifest.get("request", {}).get("layers", [])),
        resumed_at=[_parse_ts(e.get("ts")) for e in events if e.get("kind") == "run-resume"],
        lessons=lessons.report_line(run_dir),
    )
    parent = HordeStore(horde_dir, "parent")
    lifecycle.release_ideas(parent, run_id)
    parent.refresh()
    acceptance_freeze.freeze(horde_dir, parent.state, run_id)
    cleanup.run_from_disk(parent, run_id, manifest.get("config") or {}, events)
    lifecycle.append(
        parent,
        run_id,
        {
            "type": "lifecycle",
            "kind": "run-end",
            "outcome": summary.outcome,
            "diagnosis": summary.diagnosis,
        },
    )
    write_reports(horde_dir, summary, parent.state)
    clear_live(run_dir)
    return summary
