"""End to end in the app: a real supervisor, real members, gateway and ledgers, the
scripted demo model on 127.0.0.1, hosted by `HordeApp` under the pilot.

The run is the demo's (four members review the bundled sample at full speed). The test
watches the app as a person would: members appear in the table and run, the Events tab
follows `events.jsonl` as members write, a key filters it, and when the run ends the
report screen opens on REPORT.md. It waits on conditions, never on time.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.app import wait_for
from textual.widgets import Markdown

from horde_tui.app.app import AppConfig, HordeApp
from horde_tui.demo.run import prepare_demo
from horde_tui.screens.report import ReportScreen
from horde_tui.supervisor.run import Supervisor
from horde_tui.widgets.event_log import EventTail
from horde_tui.widgets.member_table import MemberTable

RUN_TIMEOUT_S = 240.0
"""The demo takes ~30 s alone; the gateway's litellm import and a loaded CI box add more."""


def rows(log: EventTail) -> list[str]:
    return [log.row_text(r) for r in range(log.row_count)]


@pytest.mark.slow  # a real run in the app (6-16 s): `pytest -m slow`
@pytest.mark.e2e
async def test_the_app_hosts_a_real_run_from_first_spawn_to_its_report(
    tmp_path: Path, no_horde_env: None
) -> None:
    demo = prepare_demo(speed=0.0, parent=tmp_path)
    try:
        sup = Supervisor(demo.workdir, demo.request, demo.settings)
        app = HordeApp(sup, config=AppConfig(tick_s=0.5))
        async with app.run_test(size=(120, 36)) as pilot:
            table = app.query_one(MemberTable)
            log = app.query_one(EventTail)
            await wait_for(pilot, lambda: table.row_count == 4, RUN_TIMEOUT_S)
            await wait_for(
                pilot,
                lambda: any(line.startswith("member-1 member-spawn") for line in rows(log)),
                RUN_TIMEOUT_S,
            )
            # Members' own writes reach the tab through the file watcher.
            await wait_for(
                pilot,
                lambda: any(" finding ok " in f" {line} " for line in rows(log)),
                RUN_TIMEOUT_S,
            )
            await pilot.press("slash", *"finding")
            await wait_for(pilot, lambda: log.filter_text == "finding")
            assert rows(log) and all(line.split()[1] == "finding" for line in rows(log))
            await pilot.press("escape")
            await wait_for(pilot, lambda: log.filter_text == "")

            await wait_for(pilot, lambda: isinstance(app.screen, ReportScreen), RUN_TIMEOUT_S)
            assert app.summary is not None and app.summary.outcome == "solved"
            assert app.exit_code == 3  # solved's status (supervisor.outcome.OUTCOME_TABLE)
            report = (sup.run_dir / "REPORT.md").read_text()
            assert "Outcome: **solved**" in report
            shown = app.screen.query_one(Markdown)
            await wait_for(pilot, lambda: "Outcome: **solved**" in shown.source)
            statuses = {str(table.get_cell(f"member-{i}", "status")).strip() for i in range(1, 5)}
            assert statuses == {"exited"}
            assert any(line.startswith("parent run-end outcome solved") for line in rows(log)), (
                rows(log)[-5:]
            )
    finally:
        demo.stub.close()
