"""Snapshot tests of the run screen's ledger, Threads and Graph tabs.

The same conventions as `test_app_snapshots.py` (whose fixture keeps the SVGs under
`tests/app/snapshots/<module>/`): the scripted `FakeSupervisor` with six members and
`AppConfig.deterministic`, here over a `.horde/` written through the real tool
(`ledger_scene.fill_run`) with a clock ticking one second per record from 12:00:00.
Update with `pytest tests/app/test_app_snapshots_tabs.py --snapshot-update` and review the
SVGs before committing them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import Horde
from support.app import RUN_ID, FakeSupervisor, deterministic_app, wait_for
from support.ledger_scene import fake_run_with_ledgers, freeze_ledger_clock
from support.snapshots import six_members, snapshots_under_tests  # noqa: F401 (fixture)
from textual.pilot import Pilot
from textual.widgets import Markdown

from horde_tui.screens.entry import EntryScreen
from horde_tui.screens.panes import LedgerPane
from horde_tui.widgets.swimlane import Swimlane

WIDE = (120, 36)
SMALL = (80, 24)


@pytest.fixture
def scene(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeSupervisor:
    return fake_run_with_ledgers(tmp_path, monkeypatch)


def ledger_tab(fake: FakeSupervisor, digit: str, tab: str, rows: int):  # type: ignore[no-untyped-def]
    """A `run_before` that plays the six members, opens the tab and waits for its rows."""

    async def before(pilot: Pilot[Any]) -> None:
        await six_members(pilot, fake)
        await pilot.press(digit)
        table = pilot.app.screen.query_one(f"#{tab} LedgerPane", LedgerPane).table
        await wait_for(pilot, lambda: table.row_count == rows)

    return before


def test_board_tab(snap_compare: Any, scene: FakeSupervisor) -> None:
    """The Board tab. A reviewer should see a table with id / status / owner / text /
    time / run columns: P2 (member-2, "F3 is challenged; checking the throttle") above
    P1 (member-1, "started on query.py"), times 12:00:22 and 12:01:01, the line "2
    entries · view: newest (v: next) · enter: open · escape: members" above it, the
    table focused (P2 under the cursor) and "⏎ v open/view" first in the footer."""
    before = ledger_tab(scene, "1", "board", 2)
    assert snap_compare(deterministic_app(scene), terminal_size=WIDE, run_before=before)


def test_ideas_tab(snap_compare: Any, scene: FakeSupervisor) -> None:
    """The Ideas tab, newest first. A reviewer should see #3 (open, blue, no owner,
    "Audit src/api/search.py for path traversal"), #2 and #1 (claimed, amber, owned by
    member-2 and member-1), with by / run / also raised by / result columns."""
    before = ledger_tab(scene, "2", "ideas", 3)
    assert snap_compare(deterministic_app(scene), terminal_size=WIDE, run_before=before)


@pytest.mark.parametrize("size", [WIDE, SMALL], ids=["120x36", "80x24"])
def test_findings_tab(snap_compare: Any, scene: FakeSupervisor, size: tuple[int, int]) -> None:
    """The Findings tab, newest first. A reviewer should see F3 "disputed" (red, bold),
    F2 "limited" (amber) and F1 "full" (green) with their owners, claim lines cut with
    an ellipsis, labels such as "high/?/speculative", concern, idea, revision r1 and one
    review each; the cost line above the members "spent unknown, 31.9k tok · per
    accepted (1): unknown, 31.9k tok · per finding (3): unknown, 10.6k tok"; at 80x24 the table scrolls sideways and the footer still fits (it
    ends with "q Quit")."""
    before = ledger_tab(scene, "3", "findings", 3)
    assert snap_compare(deterministic_app(scene), terminal_size=size, run_before=before)


def test_findings_clusters_view(snap_compare: Any, scene: FakeSupervisor) -> None:
    """The Findings tab after `v` three times (clusters view). A reviewer should see a
    bold blue heading "F1 · full · sql-injection · 2 findings · 2 members" over F1 and
    F2, then "F3 · disputed · rate-limit · 1 finding · 1 member" over F3, and the status
    line "view: clusters"."""

    async def before(pilot: Pilot[Any]) -> None:
        await ledger_tab(scene, "3", "findings", 3)(pilot)
        pane = pilot.app.screen.query_one("#findings LedgerPane", LedgerPane)
        pane.table.focus()
        await pilot.press("v", "v", "v")
        await wait_for(pilot, lambda: pane.view_name == "clusters" and pane.table.row_count == 5)

    assert snap_compare(deterministic_app(scene), terminal_size=WIDE, run_before=before)


@pytest.mark.parametrize("size", [WIDE, SMALL], ids=["120x36", "80x24"])
def test_finding_entry_page(
    snap_compare: Any, scene: FakeSupervisor, size: tuple[int, int]
) -> None:
    """Enter on F2. A reviewer should see a dialog titled "findings: F2" with the
    finding as FINDINGS.md renders it (labels, idea #1, "delta of F1", evidence
    src/db/query.py:57), "Nothing attached to F2 and no thread about it yet.", then the
    review scope: V2 partially-supports r1 by member-3 with what it checked and left
    unchecked, the Acceptance heading at the bottom edge at 120x36 (the page scrolls),
    and "escape closes"."""

    async def before(pilot: Pilot[Any]) -> None:
        await ledger_tab(scene, "3", "findings", 3)(pilot)
        pilot.app.screen.query_one("#findings LedgerPane", LedgerPane).table.focus()
        await pilot.press("down", "enter")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, EntryScreen))
        markdown = pilot.app.screen.query_one(Markdown)
        await wait_for(pilot, lambda: "Acceptance" in markdown.source)

    assert snap_compare(deterministic_app(scene), terminal_size=size, run_before=before)


def test_facts_tab(snap_compare: Any, scene: FakeSupervisor) -> None:
    """The Facts tab. A reviewer should see a bold blue "this run" heading over T1
    (member-1, "Python 3.11 is the runtime", run 20250101-120000-beef)."""
    before = ledger_tab(scene, "4", "facts", 2)
    assert snap_compare(deterministic_app(scene), terminal_size=WIDE, run_before=before)


def test_claims_tab(snap_compare: Any, scene: FakeSupervisor) -> None:
    """The Claims tab. A reviewer should see C1 "asserted" by member-2, "login.py is
    the only entry point", with empty confirmed-by / contested-by / supersession cells."""
    before = ledger_tab(scene, "5", "claims", 1)
    assert snap_compare(deterministic_app(scene), terminal_size=WIDE, run_before=before)


def test_resources_tab(snap_compare: Any, scene: FakeSupervisor) -> None:
    """The Resources tab. A reviewer should see R1 by member-1, "lab-db: a seeded
    postgres", and its cleanup "docker rm -f lab-db"."""
    before = ledger_tab(scene, "6", "resources", 1)
    assert snap_compare(deterministic_app(scene), terminal_size=WIDE, run_before=before)


def test_threads_tab(snap_compare: Any, scene: FakeSupervisor) -> None:
    """The Threads tab with Q1 selected. A reviewer should see on the left Q2
    (resolved, green) and Q1 (open, blue; challenge member-1 -> member-2 about F3 r1),
    and on the right Q1's page: "Opened by review V3.", "No reply yet", the review
    scope of F3 (V3 refutes r1 by member-1 · tested, what it checked) and the
    acceptance "blocked by Q1"."""

    async def before(pilot: Pilot[Any]) -> None:
        await ledger_tab(scene, "8", "threads", 2)(pilot)
        pane = pilot.app.screen.query_one("#threads LedgerPane", LedgerPane)
        pane.table.focus()
        await pilot.press("down")
        page = pilot.app.screen.query_one("#thread-page Markdown", Markdown)
        await wait_for(pilot, lambda: page.source.startswith("## Q1"))

    assert snap_compare(deterministic_app(scene), terminal_size=WIDE, run_before=before)


@pytest.mark.parametrize("size", [WIDE, SMALL], ids=["120x36", "80x24"])
def test_graph_tab(snap_compare: Any, scene: FakeSupervisor, size: tuple[int, int]) -> None:
    """The Graph tab. A reviewer should see the legend line, then one lane per line with
    its label fixed on the left: parent (run-start, "[discovery", "discovery]",
    "[verify" in bold blue), member-1..6 with their roles; member-1's lane with spawn,
    #1, claim #1, post, F1 (green), T1, R1, V3✗F3 (red), member-3's with V1✓F1 and
    V2~F2; member-4..6 lanes empty (the member table above, read from the same files,
    shows member-1..3 running and member-4..6 pending, the status line "verify").
    Marks of different lanes never share a column. At 80x24 the view follows the newest
    marks: the labels stay on the left and the lanes show their right end ("[verify" in
    the parent's lane, member-2's "resolve Q2─post"); the swimlane has the focus."""

    async def before(pilot: Pilot[Any]) -> None:
        # No scripted members here: their events would follow the scene's in the file.
        await pilot.press("9")
        lane = pilot.app.screen.query_one(Swimlane)
        await wait_for(pilot, lambda: len(lane.layout_shown.lanes) == 7)

    assert snap_compare(deterministic_app(scene), terminal_size=size, run_before=before)


def baseline_scene(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> FakeSupervisor:
    """The fake's run started with `--baseline r0`: r0 filed F1 (password) and F2 (SQL),
    then db.py was fixed; the run re-reported F1 (refused as a duplicate) and filed F3."""
    freeze_ledger_clock(monkeypatch)
    fake = FakeSupervisor(workdir)
    fake.request.baseline = "r0"
    horde = Horde(workdir)
    (workdir / "app.py").write_text(
        "PASSWORD = 'hunter2'\n\ndef login(p):\n    return p == PASSWORD\n"
    )
    (workdir / "db.py").write_text(
        "def find(uid):\n    return db.raw('SELECT * WHERE id=' + uid)\n"
    )

    def filed(run: str, actor: str, idea: str, text: str, evidence: str, concern: str) -> str:
        ident = horde(actor, "idea", run=run, text=idea).id
        assert horde(actor, "claim", run=run, id=ident).ok
        result = horde(
            actor, "finding", run=run, text=text, evidence=evidence, concern=concern,
            concernDef=f"{concern} problems",
        )  # fmt: skip
        assert horde(actor, "done", run=run, id=ident, result="reported").ok
        return str(result.id or result.text)

    password = ("app.py hard-codes the password", "app.py:1 `PASSWORD = 'hunter2'`", "secrets")
    assert filed("r0", "member-1", "Audit app.py for secrets", *password) == "F1"
    sql = ("find() builds SQL from the uid", "db.py:2 `'SELECT * WHERE id=' + uid`", "sql")
    assert filed("r0", "member-2", "Audit db.py", *sql) == "F2"
    (workdir / "db.py").write_text(
        "def find(uid):\n    return db.raw('SELECT * WHERE id=%s', [uid])\n"
    )
    assert filed(RUN_ID, "member-1", "Recheck the credentials in the code", *password) == "F1"
    timing = ("login() compares with ==", "app.py:4 `return p == PASSWORD`", "timing")
    assert filed(RUN_ID, "member-2", "Check how login() compares passwords", *timing) == "F3"
    return fake


def test_findings_tab_against_a_baseline(
    snap_compare: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Findings tab of a run started with `--baseline r0`. A reviewer should see a
    last column "baseline": F3 "new" on top, then a bold blue heading "baseline run r0:
    findings not filed again in this run" over F2 "resolved: code changed" (db.py was
    fixed) and F1 "persisting: reported again by member-1"; the cost line counts F3 only
    ("per finding (1)")."""
    fake = baseline_scene(tmp_path, monkeypatch)

    async def before(pilot: Pilot[Any]) -> None:
        await pilot.press("3")
        pane = pilot.app.screen.query_one("#findings LedgerPane", LedgerPane)
        await wait_for(pilot, lambda: pane.table.row_count == 4)
        cells = [pane.table.get_row_at(i)[-1].plain for i in range(4)]
        assert cells == [
            "new",
            "",
            "resolved: code changed",
            "persisting: reported again by member-1",
        ]

    assert snap_compare(deterministic_app(fake), terminal_size=(200, 30), run_before=before)
