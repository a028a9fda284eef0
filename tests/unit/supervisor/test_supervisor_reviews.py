"""Review assignment: stable, unreviewed artifact revisions go to a running non-owner."""

from __future__ import annotations

import time
from pathlib import Path

from horde_tui.common.settings import load_settings
from horde_tui.protocol import run_action
from horde_tui.store.store import HordeStore
from horde_tui.supervisor.reviews import STABLE_S, assign_reviews, pick_reviewer
from horde_tui.supervisor.run import Supervisor, SupervisorEvent
from horde_tui.supervisor.setup import RunRequest


def test_pick_prefers_earlier_reviewers_then_the_least_loaded() -> None:
    assert pick_reviewer(["member-2", "member-3"], {"member-2": 2}, []) == "member-3"
    assert pick_reviewer(["member-2", "member-3"], {}, ["member-3"]) == "member-3"
    assert pick_reviewer(["member-2", "member-3"], {}, ["member-9"]) == "member-2"
    assert pick_reviewer([], {}, []) is None


def test_a_stable_artifact_is_assigned_once_to_a_non_owner(tmp_path: Path) -> None:
    events: list[SupervisorEvent] = []
    sup = Supervisor(
        tmp_path,
        RunRequest("Build", 3, verifier=False),
        load_settings(environ={}),
        sink=events.append,
        run_id="r1",
    )
    horde = tmp_path / ".horde"
    sup.parent = HordeStore(horde, "parent")
    sup.parent.ensure_run("r1")
    for name in ("member-1", "member-2", "member-3"):
        run_action(HordeStore(horde, name), {"action": "post", "text": f"{name} here"}, run="r1")
        sup.members[name].status = "running"
    sup.running = lambda: ["member-1", "member-2", "member-3"]  # type: ignore[method-assign]
    (tmp_path / "check.sh").write_text("echo OK\n")
    published = run_action(
        HordeStore(horde, "member-1"),
        {
            "action": "artifact",
            "path": "check.sh",
            "artifactKind": "runnable",
            "criteria": "prints OK",
        },
        run="r1",
    )
    assert published.ok, published.text
    assert assign_reviews(sup) == []  # not yet stable for a minute
    later = time.time() + STABLE_S + 1
    assert assign_reviews(sup, now=later) == [("A1", "member-2")]
    assert assign_reviews(sup, now=later) == []  # an open request already covers it
    sup.parent.refresh()
    (thread,) = sup.parent.state.threads.values()
    assert (thread.kind, thread.by, thread.to, thread.target) == (
        "review-request",
        "parent",
        "member-2",
        "A1",
    )
    assert [(e.kind, e.member) for e in events if e.kind == "review-assigned"] == [
        ("review-assigned", "member-2")
    ]
