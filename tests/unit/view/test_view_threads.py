"""Threads as rows and the thread page (messages, review scope, acceptance), no Textual."""

from __future__ import annotations

from support.app import RUN_ID
from support.ledger_scene import fill_run

from horde_tui.view.ledgers import LedgerView


def test_threads_are_rows_with_state_sender_recipient_and_target(tmp_path):
    fill_run(tmp_path)
    view = LedgerView(tmp_path / ".horde", run=RUN_ID)
    view.refresh()
    rows = view.rows("threads", "oldest")
    assert [(r.id, r.status, r.owner, r.text) for r in rows] == [
        ("Q1", "open", "member-1", "challenge -> member-2 about F3 r1"),
        ("Q2", "resolved", "member-2", "question -> member-1 about F1 r1"),
    ]
    assert rows[1].extra == ("Does the fix in build_query also cover the sort parameter?", "2")
    assert view.columns("threads") == ("id", "state", "from", "thread", "message", "replies")


def test_a_thread_change_is_seen_even_though_the_fold_reports_no_kind(tmp_path):
    horde = fill_run(tmp_path)
    view = LedgerView(tmp_path / ".horde", run=RUN_ID)
    view.refresh()
    before = view.rows("threads")
    horde("member-1", "post", run=RUN_ID, text="a post changes no thread")
    assert view.refresh() == {"board"}
    assert horde("member-2", "respond", run=RUN_ID, id="Q1", text="The throttle is in nginx").ok
    assert view.refresh() == {"threads"}
    after = view.rows("threads")
    assert [(r.id, r.status, r.version) for r in after] == [
        ("Q2", "resolved", 1),
        ("Q1", "responded", 2),
    ]
    assert before[1].key == "Q1" and before[1].version == 1


def test_a_thread_page_shows_messages_review_scope_and_acceptance(tmp_path):
    fill_run(tmp_path)
    view = LedgerView(tmp_path / ".horde", run=RUN_ID)
    view.refresh()
    page = view.detail("threads", "Q2")
    assert page.startswith("## Q2 question: member-2 -> member-1 about F1 r1 · resolved")
    assert "- **respond** by member-1" in page and "see F2." in page
    assert "- **resolve** by member-2" in page
    assert "### Review scope of F1 (current revision r1)" in page
    assert "- **V1** supports r1 by member-3 · tested" in page
    assert "unchecked: nothing (full scope)" in page
    assert "**accepted** (r1): r1 reviewed full-scope" in page

    challenge = view.detail("threads", "Q1")
    assert "Opened by review V3." in challenge
    assert "_No reply yet: member-2 answers" in challenge
    assert "**blocked by Q1**" in challenge
    assert view.detail("threads", "Q9") == ""


def test_a_finding_detail_has_its_full_text_reviews_threads_and_acceptance(tmp_path):
    fill_run(tmp_path)
    view = LedgerView(tmp_path / ".horde", run=RUN_ID)
    view.refresh()
    page = view.detail("findings", "F2")
    assert "The same injection is reachable via the sort parameter" in page
    assert "src/db/query.py:57" in page
    assert "- **V2** partially-supports r1 by member-3 · derived" in page
    assert "  - unchecked: whether the web layer whitelists sort values" in page
    assert "**open** (r1): V2 left unchecked: whether the web layer whitelists" in page
    assert "_Nothing attached to F2 and no thread about it yet._" in page
    assert "- Q2 question member-2 -> member-1 about F1 r1" in view.detail("findings", "F1")
    assert "formats `name` into the WHERE clause" in view.detail("findings", "F1")
    assert "started on query.py" in view.detail("board", "P1")
    assert view.detail("ideas", "#9") == ""


def test_a_review_request_about_an_artifact_shows_its_scope_limits_and_acceptance(horde):
    for n in (1, 2, 3):
        horde(f"member-{n}", "idea", text=f"Audit module {n} of app/")
    (horde.workdir / "poc.py").write_text("print('poc')\n")
    assert horde("member-1", "artifact", path="poc.py", criteria="prints poc").id == "A1"
    ask = horde(
        "member-1", "message", to="member-2", kind="review-request", target="A1", text="Run it?"
    )
    assert ask.ok, ask.text
    review = horde(
        "member-2",
        "review",
        target="A1",
        verdict="supports",
        support="tested",
        checked="ran poc.py, it prints poc",
        limits="only on Linux",
        evidence="output: poc",
    )
    assert review.ok, review.text
    view = LedgerView(horde.root)
    view.refresh()
    thread = view.rows("threads")[0]
    assert (thread.id, thread.text) == ("Q1", "review-request -> member-2 about A1 r1")
    page = view.detail("threads", "Q1")
    assert "### Review scope of A1 (current revision r1)" in page
    assert "- **V1** supports r1 by member-2 · tested" in page
    assert "  - limits: only on Linux" in page
    assert "**accepted with limits** (r1)" in page and "- V1 limits: only on Linux" in page
