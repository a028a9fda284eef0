"""An external agent joins a live run through `horde-tui mcp` and works next to a member.

A real headless run on the scripted stub model (its supervisor, gateway and member-1 are
real processes); the external member is a real `horde-tui mcp --member auto` server
reached with the `mcp` SDK's own client, which finds the live run by itself. It files a
finding, member-1 (waiting on `findings` for it) reviews it, and the run's member table
(the app's fold of the events) and REPORT.md show the agent as external.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from support.cli import headless, wait_for_line
from support.mcpclient import call, stdio_session
from support.plans import APP, HELPERS, horde

from horde_tui.store.store import HordeStore
from horde_tui.stubmodel import StubThread
from horde_tui.stubmodel.agent import AgentPolicy
from horde_tui.view.members import MemberFold

pytestmark = [pytest.mark.slow, pytest.mark.e2e]  # a whole real run: `pytest -m slow`

MARK = "EXTERNAL-MARK"
PLANS = {
    "member-1": [
        horde("idea", text="Check app.py for a hard-coded password"),
        horde("claim", id="$id"),
        {
            **horde("findings"),
            "match": [rf"^- (F\d+) .*{MARK}"],
            "bind": ["$<ext>"],
            "wait_ms": 300,
            "hold_ms": 50,
        },
        horde(
            "review",
            target="$<ext>",
            verdict="supports",
            support="tested",
            checked="app.py line 1",
            evidence="app.py:1 PASSWORD = 'hunter2'",
        ),
        horde("rule-out", id="$I", reason="the external member's finding covers it"),
        {"say": "Reviewed the external member's finding."},
    ],
    **HELPERS,
}


async def external_member(workdir: Path) -> tuple[str, str, str]:
    """Join as `auto`, file the finding, close the idea, wait for member-1's review, leave."""
    async with stdio_session(workdir, "--member", "auto") as session:
        added = await call(session, "idea", text="Check app.py for secrets")
        assert not added[0], added
        idea = added[1].split()[1]
        claimed = await call(session, "claim", id=idea)
        assert not claimed[0], claimed
        filed = await call(
            session,
            "finding",
            idea=idea,
            concern="secrets",
            concernDef="secrets kept in source code",
            text=f"{MARK}: app.py hard-codes the password",
            evidence="app.py:1",
            support="tested",
            importance="high",
            confidence="high",
        )
        assert not filed[0], filed
        finding = filed[1].split()[1]
        # Close the idea before waiting: once member-1 has reviewed and said its last
        # word the run finalizes, and finalize releases every idea still claimed.
        closed = await call(session, "done", id=idea, result=f"filed {finding}")
        assert not closed[0], closed
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            shown = await call(session, "inspect", target=finding)
            if "V1" in shown[1]:
                break
            await asyncio.sleep(0.3)
        return idea, finding, shown[1]


def test_an_external_agent_joins_files_a_finding_a_member_reviews_and_is_reported(
    tmp_path: Path,
) -> None:
    (tmp_path / "app.py").write_text(APP)
    with StubThread(policy=AgentPolicy(PLANS)) as stub:
        proc = headless(tmp_path, stub, members=1)
        try:
            wait_for_line(proc, "[member-spawn] member-1")
            _idea, finding, inspected = asyncio.run(external_member(tmp_path))
            out, err = proc.communicate(timeout=180)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)

    assert proc.returncode == 0, out[-3000:] + err[-3000:]
    run_dir = next((tmp_path / ".horde" / "runs").iterdir())
    reader = HordeStore(tmp_path / ".horde", "reader")
    reader.refresh()
    state = reader.state
    assert state.findings[finding].by == "ext-1"
    reviews = [v for v in state.reviews.values() if v.target == finding]
    assert [(v.by, v.verdict) for v in reviews] == [("member-1", "supports")]
    assert "V1" in inspected

    manifest = json.loads((run_dir / "MANIFEST.json").read_text())
    fold = MemberFold(run_dir, manifest)
    for line in (run_dir / "events.jsonl").read_text().splitlines():
        ev = json.loads(line)
        if ev.get("type") == "lifecycle":
            fold.apply(ev)
    table = {m.name: m for m in fold.members(run_live=False)}
    assert set(table) >= {"member-1", "ext-1"}
    assert (table["ext-1"].external, table["ext-1"].role) == (True, "external")
    assert (table["ext-1"].status, table["ext-1"].exit_cause) == ("exited", "left")

    report = (run_dir / "REPORT.md").read_text()
    row = next(line for line in report.splitlines() if line.startswith("| ext-1 |"))
    assert "| external |" in row and "| left |" in row
