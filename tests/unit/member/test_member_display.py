"""One member reads alike in the app's member table, the browser view and REPORT.md
(issue 31 item 7): the same row model and the same formatters behind all three, so an
unpriced cost is `unknown` everywhere and a member that made no call yet costs `-`."""

from __future__ import annotations

import json
import re
from pathlib import Path

from support.web_scene import RUN_ID, web_scene

from horde_tui.protocol.outcome import RunSummary
from horde_tui.store.display import MemberRow, format_tokens
from horde_tui.supervisor.report import render_report
from horde_tui.view.ledgers import LedgerView
from horde_tui.view.run import RunView
from horde_tui.web.pages import Site
from horde_tui.widgets.member_table import MemberTable


def _unpriced_call(run: Path, member: str) -> None:
    """One model call of `member` that the provider did not price (`cost_usd: null`)."""
    folder = run / "sessions" / member
    folder.mkdir(parents=True)
    lines = [
        {"role": "system", "content": f"You are {member}."},
        {
            "role": "assistant",
            "content": "looked",
            "usage": {"prompt_tokens": 1200, "completion_tokens": 345, "cost_usd": None},
        },
    ]
    text = "".join(json.dumps(line) + "\n" for line in lines)
    (folder / "20250101T120002-bbbbbb.jsonl").write_text(text)


def _web_rows(body: str) -> dict[str, list[str]]:
    """The run overview's member table: member -> its cells as text."""
    table = body.split('<table class="members">', 1)[1].split("</table>", 1)[0]
    rows = {}
    for row in re.findall(r"<tr>(.*?)</tr>", table, re.S)[1:]:
        cells = [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td>(.*?)</td>", row, re.S)]
        rows[cells[0]] = cells
    return rows


def _report_rows(report: str) -> dict[str, list[str]]:
    """REPORT.md's member table: member -> its cells."""
    rows = {}
    for line in report.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| member-"):
            rows[cells[0]] = cells
    return rows


def test_one_member_reads_alike_in_the_app_the_pages_and_the_report(tmp_path: Path) -> None:
    horde = web_scene(tmp_path / "project")
    run = horde / "runs" / RUN_ID
    _unpriced_call(run, "member-2")  # member-1: 60 priced calls; member-3: no call
    view = RunView(run)
    view.refresh()
    members = view.members()
    table = MemberTable()
    table.show([MemberRow.of(m, now=0.0) for m in members])
    web = _web_rows(Site(horde).render(f"runs/{RUN_ID}/index.html").body)
    state = LedgerView(horde, RUN_ID).state
    summary = RunSummary(RUN_ID, "completed", "done", "ok", 0.0, 1.0, "m", members=members)
    report = _report_rows(render_report(state, summary, tmp_path / "project"))
    # web: member, role, status, end, turns, tokens in / out, cost, last call
    # report: member, role, end, turns, tokens in, tokens out, cost, resets
    costs = {}
    for m in members:
        app_cost, w, r = table.get_cell(m.name, "cost"), web[m.name], report[m.name]
        assert app_cost == w[6] == r[6], (m.name, app_cost, w[6], r[6])
        assert table.get_cell(m.name, "turns") == w[4] == r[3], m.name
        assert w[5] == f"{r[4]} / {r[5]}", (m.name, w[5], r[4], r[5])
        both = int(r[4].replace(",", "")) + int(r[5].replace(",", ""))
        assert table.get_cell(m.name, "tokens") == format_tokens(both), m.name
        assert w[3] == r[2], (m.name, w[3], r[2])  # how it ended: one state word
        costs[m.name] = app_cost
    assert costs == {"member-1": "$0.0600", "member-2": "unknown", "member-3": "-"}
    assert report["member-2"][4:6] == ["1,200", "345"]
