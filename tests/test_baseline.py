"""Baseline runs: a Delta of new, persisting and resolved findings against an earlier run.

Two runs share one `.horde/` (as repeated audits of one project do), written through the
real `horde` tool; the working directory's files change between them.
"""

from __future__ import annotations

import json

import pytest

from horde_tui.supervisor import baseline
from horde_tui.supervisor.finalize import read_events

APP = "PASSWORD = 'hunter2'\n\ndef login(user, password):\n    return password == PASSWORD\n"
DB = "def find(uid):\n    return db.raw('SELECT * FROM users WHERE id=' + uid)\n"


def finding(horde, actor: str, run: str, text: str, evidence: str, concern: str):
    return horde(
        actor,
        "finding",
        run=run,
        text=text,
        evidence=evidence,
        concern=concern,
        concernDef=f"{concern} problems",
    )


@pytest.fixture
def two_runs(horde):
    """r0 (the baseline) filed F1 (password) and F2 (SQL); between the runs db.py was
    fixed; r1 re-found F1 and found F3 (timing)."""
    (horde.workdir / "app.py").write_text(APP)
    (horde.workdir / "db.py").write_text(DB)
    claimed = {}
    for actor, text in (("member-1", "Audit app.py for secrets"), ("member-2", "Audit db.py")):
        claimed[actor] = horde(actor, "idea", run="r0", text=text).id
        assert horde(actor, "claim", run="r0", id=claimed[actor]).ok
    assert (
        finding(
            horde,
            "member-1",
            "r0",
            "app.py hard-codes the password",
            "app.py:1 `PASSWORD = 'hunter2'`",
            "secrets",
        ).id
        == "F1"
    )
    assert (
        finding(
            horde,
            "member-2",
            "r0",
            "find() builds SQL from the uid",
            "db.py:2 `'SELECT * FROM users WHERE id=' + uid`",
            "sql-injection",
        ).id
        == "F2"
    )
    for actor, idea in claimed.items():
        assert horde(actor, "done", run="r0", id=idea, result="filed").ok
    (horde.workdir / "db.py").write_text(DB.replace("' + uid)", "%s', [uid])"))
    for actor, text in (
        ("member-1", "Recheck the credentials in the code"),
        ("member-2", "Check how login() compares passwords"),
    ):
        idea = horde(actor, "idea", run="r1", text=text).id
        assert horde(actor, "claim", run="r1", id=idea).ok, idea
    again = finding(
        horde,
        "member-1",
        "r1",
        "app.py hard-codes the password",
        "app.py:1 `PASSWORD = 'hunter2'`",
        "secrets",
    )
    assert (again.id, "duplicate of F1" in again.text) == ("F1", True), again.text
    assert (
        finding(
            horde,
            "member-2",
            "r1",
            "login() compares with ==, not in constant time",
            "app.py:4 `return password == PASSWORD`",
            "timing",
        ).id
        == "F3"
    )
    return horde


def test_the_delta_names_new_persisting_and_resolved_findings(two_runs) -> None:
    horde = two_runs
    state = horde.state()
    events = read_events(horde.root / "runs" / "r1")
    d = baseline.delta(state, "r1", "r0", horde.workdir, events)
    assert d.new == ["F3"]
    assert d.persisting == [("F1", "reported again by member-1")]
    assert d.resolved == [("F2", "not reproduced; the cited code changed: db.py:2 stale")]
    lines = baseline.delta_lines(d, state)
    assert lines[0] == "Against baseline run r0: 1 new, 1 persisting, 1 resolved."
    assert "- resolved F2 (not reproduced; the cited code changed: db.py:2 stale): " in "\n".join(
        lines
    )


def test_a_refuting_review_resolves_and_a_supporting_one_persists(two_runs) -> None:
    horde = two_runs
    # member-1 of r1 reviews the baseline's F2 (refutes: the code is fixed).
    review = horde(
        "member-1",
        "review",
        run="r1",
        target="F2",
        verdict="refutes",
        support="tested",
        checked="the query",
        evidenceText="db.py now binds uid as a parameter",
    )
    assert review.ok, review.text
    d = baseline.delta(
        horde.state(), "r1", "r0", horde.workdir, read_events(horde.root / "runs" / "r1")
    )
    (resolved,) = d.resolved
    assert resolved[0] == "F2" and resolved[1].startswith("refuted by V1; the cited code changed")


def test_last_is_the_newest_finished_run_on_the_same_task(horde) -> None:
    for run, task in (("r0", "audit"), ("r1", "audit"), ("rx", "other"), ("r2", "audit")):
        horde.store("parent").ensure_run(run, f"# Task\n\n{task}\n")
        run_dir = horde.root / "runs" / run
        (run_dir / "MANIFEST.json").write_text(json.dumps({"members": []}))
        (run_dir / "REPORT.md").write_text("# done\n")
    (horde.root / "runs" / "r1" / "REPORT.md").unlink()  # r1 never finished
    state = horde.state()
    assert baseline.resolve_baseline(horde.root, state, "r2", "last") == "r0"
    assert baseline.resolve_baseline(horde.root, state, "r2", "r1") == "r1"
    assert baseline.resolve_baseline(horde.root, state, "r2", "r9") is None
    assert baseline.resolve_baseline(horde.root, state, "r0", "last") is None


def test_report_md_has_the_delta_section_or_says_the_baseline_is_missing(two_runs) -> None:
    from horde_tui.supervisor.finalize import write_reports
    from horde_tui.supervisor.outcome import RunSummary

    horde = two_runs
    (horde.root / "runs" / "r1" / "MANIFEST.json").write_text("{}")
    for asked, expected in (
        ("r0", "Against baseline run r0: 1 new, 1 persisting, 1 resolved."),
        ("r7", "Baseline 'r7' not found: no run r7 in these ledgers."),
    ):
        summary = RunSummary("r1", "finished", "", "ok", 0.0, 60.0, "m", baseline=asked)
        write_reports(horde.root, summary, horde.state())
        report = (horde.root / "runs" / "r1" / "REPORT.md").read_text()
        section = report.split("## Delta\n\n", 1)[1].split("\n## ", 1)[0]
        assert section.startswith(expected), section
