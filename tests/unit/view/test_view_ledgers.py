"""`LedgerView`: the ledgers as table rows in the reference's views, and row versions."""

from __future__ import annotations

import pytest

from horde_tui.view.ledgers import LedgerView
from horde_tui.view.rows import LedgerRow, changed_cells, diff_rows


@pytest.fixture
def filled(horde):
    """Ideas #1-#3, findings F1 (sqli) + F2 (delta of F1) + F3 (rate limit), facts of r1
    and r2, board posts of r1 and r2, one claim, one resource."""
    horde.claimed("member-1", "Audit app/db/query.py")
    horde.claimed("member-2", "Audit app/web/login.py")
    horde("member-1", "idea", text="Audit app/api/search.py")
    horde(
        "member-1",
        "finding",
        text="SQL injection in build_query() via name",
        evidence="app/db/query.py:42",
        concern="sql-injection",
        concernDef="SQL built from input",
        importance="high",
    )
    horde(
        "member-2",
        "finding",
        text="The same injection is reachable via the sort parameter",
        evidence="app/db/query.py:57",
        deltaOf="F1",
    )
    horde(
        "member-2",
        "finding",
        text="Login form lacks rate limiting",
        evidence="app/web/login.py:10",
        concern="rate-limit",
        concernDef="no throttling",
    )
    horde("member-1", "fact", text="Python 3.11 is the runtime")
    horde("member-3", "fact", text="The DB is sqlite", run="r2")
    horde("member-1", "post", text="started on query.py")
    horde("member-2", "post", text="a post of another run", run="r2")
    horde("member-2", "assert", text="login.py is the only entry point")
    assert horde(
        "member-1", "resource", name="lab-db", text="a seeded db", cleanup="docker rm -f lab-db"
    ).ok
    return horde


def ids(rows: list[LedgerRow]) -> list[str]:
    return [r.id for r in rows]


def test_rows_newest_first_by_default_and_oldest_on_request(filled):
    view = LedgerView(filled.root, run="r1")
    assert view.refresh() == {
        "ideas", "board", "findings", "facts", "claims", "resources", "threads"
    }  # fmt: skip

    assert ids(view.rows("ideas")) == ["#3", "#2", "#1"]
    assert ids(view.rows("ideas", "oldest")) == ["#1", "#2", "#3"]
    first = view.rows("ideas", "oldest")[0]
    assert (first.status, first.owner, first.text, first.extra) == (
        "claimed",
        "member-1",
        "Audit app/db/query.py",
        ("member-1", "r1", "", ""),
    )
    assert view.columns("ideas") == (
        "id", "status", "owner", "text", "by", "run", "also raised by", "result"
    )  # fmt: skip


def test_a_run_scope_narrows_board_and_findings_and_splits_facts(filled):
    view = LedgerView(filled.root, run="r1")
    view.refresh()
    assert [r.text for r in view.rows("board")] == ["started on query.py"]
    assert ids(view.rows("findings")) == ["F3", "F2", "F1"]
    facts = view.rows("facts")
    assert [(r.id, r.status, r.group) for r in facts] == [
        ("T1", "", "this run"),
        ("T2", "carried", "carried"),
    ]

    project = LedgerView(filled.root)
    project.refresh()
    assert len(project.rows("board")) == 2
    assert [r.group for r in project.rows("facts")] == ["", ""]
    assert project.counts() == {
        "ideas": 3, "board": 2, "findings": 3, "facts": 2, "claims": 1, "resources": 1,
        "threads": 0,
    }  # fmt: skip


def test_owner_view_groups_by_member_and_owner_filters(filled):
    view = LedgerView(filled.root, run="r1")
    view.refresh()
    assert [(r.id, r.group) for r in view.rows("ideas", "owner")] == [
        ("#1", "member-1"),
        ("#2", "member-2"),
        ("#3", "(unclaimed)"),
    ]
    assert [(r.id, r.group) for r in view.rows("findings", "owner")] == [
        ("F1", "member-1"),
        ("F3", "member-2"),
        ("F2", "member-2"),
    ]
    assert ids(view.rows("findings", owner="member-2")) == ["F3", "F2"]
    assert view.owners("findings") == ["member-1", "member-2"]


def test_clusters_group_findings_like_the_report(filled):
    view = LedgerView(filled.root, run="r1")
    view.refresh()
    rows = view.rows("findings", "clusters")
    assert [(r.id, r.group) for r in rows] == [
        ("F1", "F1 · unreviewed · sql-injection · 2 findings · 2 members"),
        ("F2", "F1 · unreviewed · sql-injection · 2 findings · 2 members"),
        ("F3", "F3 · unreviewed · rate-limit · 1 finding · 1 member"),
    ]
    assert rows[0].extra == ("high/?/speculative", "sql-injection", "#1", "r1", "")
    with pytest.raises(ValueError, match="ideas has no 'clusters' view"):
        view.rows("ideas", "clusters")


def test_superseded_findings_come_last_in_the_clusters_view(filled):
    filled(
        "member-1",
        "finding",
        text="SQL injection in build_query() via name and via sort, corrected",
        evidence="app/db/query.py:42",
        supersedes="F1",
    )
    view = LedgerView(filled.root, run="r1")
    view.refresh()
    rows = view.rows("findings", "clusters")
    assert (rows[-1].id, rows[-1].status, rows[-1].group) == ("F1", "superseded", "superseded")
    assert "F4" in ids(rows[:-1])


def test_only_changed_ledgers_rebuild_and_only_changed_rows_move_their_version(filled):
    view = LedgerView(filled.root, run="r1")
    view.refresh()
    before = view.rows("ideas")
    assert view.refresh() == set()
    assert view.rows("ideas") is before  # cached until the ledger changes

    filled("member-1", "claim", id="#3")
    assert view.refresh() == {"ideas"}
    after = view.rows("ideas")
    assert [(r.id, r.version) for r in after] == [("#3", 2), ("#2", 1), ("#1", 1)]
    diff = diff_rows(before, after)
    assert (diff.added, diff.removed, diff.changed, diff.reordered) == ((), (), ("#3",), False)
    assert changed_cells(before[0], after[0]) == [1, 2]  # status and owner

    filled("member-2", "idea", text="Audit app/api/admin.py")
    view.refresh()
    diff = diff_rows(after, view.rows("ideas"))
    assert (diff.added, diff.changed, diff.empty) == (("#4",), (), False)
    assert diff_rows(after, after).empty


def test_unknown_ledgers_are_refused(filled):
    view = LedgerView(filled.root)
    view.refresh()
    with pytest.raises(ValueError, match="unknown ledger 'concerns'"):
        view.rows("concerns")


def test_an_empty_horde_has_empty_ledgers(tmp_path):
    view = LedgerView(tmp_path / ".horde")
    view.refresh()
    assert view.rows("findings", "clusters") == []
    assert not (tmp_path / ".horde").exists()  # a viewer writes nothing
