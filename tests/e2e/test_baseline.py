"""Baseline runs: a Delta of new, persisting and resolved findings against an earlier run.

Two runs share one `.horde/` (as repeated audits of one project do), written through the
real `horde` tool; the working directory's files change between them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli import cli_argv

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
    from horde_tui.protocol.outcome import RunSummary
    from horde_tui.supervisor.finalize import write_reports

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


def _headless_run(stub, workdir, *flags: str) -> tuple[str, Path]:
    """`horde-tui run --headless 2 "Review app.py" [flags]` as a real process on the stub
    (the entry point a person uses); returns its output and its run directory."""
    import os
    import subprocess

    before = set((workdir / ".horde" / "runs").glob("*"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("HORDE_")}
    env.update(
        HORDE_MODEL=stub.model,
        HORDE_API_BASE=stub.api_base,
        HORDE_API_KEY="stub",
        HORDE_ALLOW_UNVERIFIED="1",
        HORDE_DELIVERABLE="off",
        HORDE_POSTMORTEM="off",
        HORDE_REPAIR_ROUNDS="0",
    )
    done = subprocess.run(
        cli_argv("run", "--headless", "2", "Review app.py", *flags),
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (run_dir,) = set((workdir / ".horde" / "runs").glob("*")) - before
    return done.stdout, run_dir


@pytest.mark.slow  # two whole real runs: `pytest -m slow`
@pytest.mark.e2e
def test_a_second_real_run_against_the_last_names_new_persisting_and_resolved(tmp_path) -> None:
    """Two real headless runs of two members on one project, the code fixed and changed
    between them. The second, `--baseline last`, re-reports the hard-coded password
    (persisting), finds the new DEBUG flag (new) and not the timing compare, whose line
    was rewritten (resolved, the code changed under it). Each run prints its forecast as
    one line when it lands."""
    from support.plans import APP, worker

    from horde_tui.stubmodel import StubThread
    from horde_tui.stubmodel.agent import AgentPolicy

    def filing(idea: str, concern: str, text: str, evidence: str) -> list[dict]:
        return [*worker(idea, text, concern, evidence), {"say": "Done."}]

    password = ("secrets", "app.py hard-codes the password", "app.py:1 `PASSWORD = 'hunter2'`")
    first = {
        "member-1": filing("Check app.py for a hard-coded password", *password),
        "member-2": filing(
            "Check how login() compares passwords",
            "timing",
            "login() compares the password with ==, not in constant time",
            "app.py:5 `return password == PASSWORD`",
        ),
    }
    second = {
        "member-1": filing("Recheck the credentials in the code", *password),
        "member-2": filing(
            "Look for debug switches left on",
            "debug",
            "app.py turns DEBUG on in shipped code",
            "app.py:2 `DEBUG = True`",
        ),
    }
    (tmp_path / "app.py").write_text(APP)
    (tmp_path / ".horde" / "runs").mkdir(parents=True)
    with StubThread(policy=AgentPolicy(first)) as stub:
        out1, run1 = _headless_run(stub, tmp_path)
    fixed = "PASSWORD = 'hunter2'\nDEBUG = True\n\nimport hmac\n\ndef login(user, password):\n"
    (tmp_path / "app.py").write_text(fixed + "    return hmac.compare_digest(password, PASSWORD)\n")
    with StubThread(policy=AgentPolicy(second)) as stub:
        out2, run2 = _headless_run(stub, tmp_path, "--baseline", "last")

    for out, run_dir in ((out1, run1), (out2, run2)):
        events = read_events(run_dir)
        (forecast,) = [e for e in events if e.get("kind") == "forecast"]
        lines = [line for line in out.splitlines() if "[forecast]" in line]
        assert [line.split(" ", 1)[1] for line in lines] == [f"[forecast] {forecast['text']}"]
    assert json.loads((run2 / "MANIFEST.json").read_text())["request"]["baseline"] == "last"
    report = (run2 / "REPORT.md").read_text()
    section = report.split("## Delta\n\n", 1)[1].split("\n## ", 1)[0]
    assert section.startswith(
        f"Against baseline run {run1.name}: 1 new, 1 persisting, 1 resolved."
    ), section
    assert "- new F3: app.py turns DEBUG on in shipped code" in section, section
    assert "- persisting F1 (reported again by member-1): app.py hard-codes" in section, section
    assert (
        "- resolved F2 (not reproduced; the cited code changed: app.py:5 stale): login()" in section
    ), section
    # The app reads the same: the run's baseline from its MANIFEST, the Findings column
    # from the same Delta.
    from horde_tui.view.ledgers import LedgerView
    from horde_tui.view.run import read_info

    assert read_info(run2)[0].baseline == "last"
    view = LedgerView(tmp_path / ".horde", run2.name, baseline="last")
    view.refresh()
    assert {r.id: r.extra[-1] for r in view.rows("findings")} == {
        "F3": "new",
        "F1": "persisting: reported again by member-1",
        "F2": "resolved: code changed",
    }
    assert view.finding_yield() == (1, 0)  # F3, unreviewed


BASELINE_GROUP = "baseline run r0: findings not filed again in this run"


def test_the_findings_tab_marks_new_persisting_and_resolved(two_runs) -> None:
    """The Findings tab of r1 against r0: r1's F3 is new; r0's F1 (reported again) and
    F2 (not reproduced, its line rewritten) follow under a heading of their own, as
    REPORT.md's Delta has them. Without a baseline the tab has no such column."""
    from horde_tui.view.ledgers import LedgerView

    view = LedgerView(two_runs.root, run="r1", baseline="r0")
    view.refresh()
    assert view.columns("findings")[-2:] == ("reviews", "baseline")
    rows = view.rows("findings", "oldest")
    assert [(r.id, r.extra[-1], r.group) for r in rows] == [
        ("F3", "new", ""),
        ("F1", "persisting: reported again by member-1", BASELINE_GROUP),
        ("F2", "resolved: code changed", BASELINE_GROUP),
    ]
    # Newest first inside each group; the clusters are this run's findings only.
    assert [r.id for r in view.rows("findings")] == ["F3", "F2", "F1"]
    clustered = view.rows("findings", "clusters")
    assert [(r.id, r.group.split(" · ")[0]) for r in clustered] == [
        ("F3", "F3"),
        ("F1", BASELINE_GROUP),
        ("F2", BASELINE_GROUP),
    ]
    plain = LedgerView(two_runs.root, run="r1")
    plain.refresh()
    assert plain.columns("findings")[-1] == "reviews"
    assert [r.id for r in plain.rows("findings")] == ["F3"]


def test_the_baseline_column_follows_a_review_or_says_it_is_missing(two_runs) -> None:
    """A refuting review written after the tab was shown changes F2's cell (no finding
    moved); a baseline that is not there (resolved as REPORT.md resolves it) says so in
    every row."""
    from horde_tui.view.ledgers import LedgerView

    view = LedgerView(two_runs.root, run="r1", baseline="r0")
    view.refresh()
    assert view.rows("findings")[1].extra[-1] == "resolved: code changed"
    assert two_runs(
        "member-1",
        "review",
        run="r1",
        target="F2",
        verdict="refutes",
        support="tested",
        checked="the query",
        evidenceText="db.py now binds uid as a parameter",
    ).ok
    view.refresh()
    assert view.rows("findings")[1].extra[-1] == "resolved (refuted): code changed"

    for asked in ("r7", "last"):  # r0 and r1 are manual runs of two tasks: no `last`
        missing = LedgerView(two_runs.root, run="r1", baseline=asked)
        missing.refresh()
        assert [r.extra[-1] for r in missing.rows("findings")] == [f"baseline {asked} not found"]
