"""The ask pane (issue 33): `a` on a finished run's report and run screens asks the run a
question; the answer streams in, then the answer as kept, with its `[check: ...]` marks;
earlier asks are listed; escape mid-answer stops the analyst and keeps nothing.

The runs are copies of the demo's kept project (`demo_copy`): asked as it is, the demo
model plays a scripted analyst; with its manifest pointed at the stub model, a test
scripts the analyst.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.app import NOW, FakeSupervisor, deterministic_app, wait_for
from support.processes import children
from textual.pilot import Pilot
from textual.widgets import Input, Static

from horde_tui.app.app import AppConfig, HordeApp
from horde_tui.screens.ask import AskScreen
from horde_tui.screens.report import ReportScreen
from horde_tui.screens.run import RunScreen
from horde_tui.store.asks import read_asks
from horde_tui.store.display import format_cost
from horde_tui.store.runs import run_ids
from horde_tui.stubmodel import StubThread

SIZE = (120, 36)
THINKING = "Looking at the findings first."
ANSWER = "F1 holds: the token is hard-coded. F42 says it was rotated."
KEPT = "F1 holds: the token is hard-coded. F42 [check: no such finding in the ledgers] says"
PRICED = "openai/gpt-4o-mini"
"""The stub model under a priced name: an ask has a cost."""
PROCESSES = ("horde_tui.member", "horde_tui.gateway")


def run_dir_of(project: Path) -> Path:
    (run,) = run_ids(project / ".horde")
    return project / ".horde" / "runs" / run


def texts(app: HordeApp, selector: str) -> list[str]:
    return [str(w.render()) for w in app.screen.query(selector).results(Static)]


def on_the_stub(project: Path, stub: StubThread, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The demo's run as if the stub model had played it: an ask goes to the stub."""
    run_dir = run_dir_of(project)
    manifest_path = run_dir / "MANIFEST.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["demo_model"] = False
    manifest["config"].update(model=PRICED, api_base=stub.api_base)
    manifest_path.write_text(json.dumps(manifest))
    monkeypatch.setenv("HORDE_API_KEY", "x")
    return run_dir


async def open_report(pilot: Pilot[Any]) -> None:
    """From the runs list (the app's first screen on a finished run): `o`."""
    await pilot.press("o")
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, ReportScreen))


async def ask(pilot: Pilot[Any], question: str) -> None:
    await pilot.press("a")
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, AskScreen))
    pilot.app.screen.query_one(Input).value = question
    await pilot.press("enter")


def app_for(project: Path) -> HordeApp:
    return HordeApp(horde_dir=project / ".horde", config=AppConfig.deterministic(NOW))


async def test_a_on_the_demo_report_asks_the_demo_analyst_and_lists_the_ask_after(
    demo_copy: Path, no_horde_env: None
) -> None:
    """The demo model answers; reopened, the pane lists the ask as an earlier one."""
    app = app_for(demo_copy)
    async with app.run_test(size=SIZE) as pilot:
        await open_report(pilot)
        await ask(pilot, "What did the horde find?")
        await wait_for(pilot, lambda: texts(app, ".ask-meta")[1:], timeout=120)
        answer = texts(app, ".ask-answer")
        assert len(answer) == 1 and "The run filed 5 findings" in answer[0]
        assert texts(app, ".ask-step")  # the analyst's reads, one dim line each
        assert not app.screen.query(".ask-stream")  # the answer as kept replaced it
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, ReportScreen))
        await pilot.press("a")
        await wait_for(pilot, lambda: texts(app, ".ask-question") == ["› What did the horde find?"])
        assert texts(app, "#ask-earlier") == ["1 earlier ask, newest last"]
    (record,) = read_asks(run_dir_of(demo_copy))
    assert record.question == "What did the horde find?"


async def test_a_scripted_analyst_streams_then_its_made_up_id_is_marked(
    demo_copy: Path, stub_model: StubThread, no_horde_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the run screen: the analyst's text streams in and its tool call is a step line
    while the model thinks; then the answer as kept marks the made-up F42, and the cost
    line counts the ask apart from the members' spend."""
    run_dir = on_the_stub(demo_copy, stub_model, monkeypatch)
    stub_model.stub.set_scripts(
        {
            "ask": [
                {
                    "content": THINKING,
                    "tool_calls": [{"name": "horde", "arguments": {"action": "list"}}],
                    "prompt_tokens": 1000,
                },
                {"content": ANSWER, "delay_ms": 1500, "prompt_tokens": 1000},
            ]
        }
    )
    app = app_for(demo_copy)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        await ask(pilot, "Is the admin token still hard-coded?")
        await wait_for(pilot, lambda: texts(app, ".ask-step") == ["· horde list"], timeout=60)
        assert texts(app, ".ask-stream") == [THINKING]  # while the model holds its answer
        app.screen.query_one(Input).value = "And F2?"
        await pilot.press("enter")  # one ask at a time: this one stays in the input
        assert app.screen.query_one(Input).value == "And F2?"
        assert len(texts(app, ".ask-question")) == 1
        await wait_for(pilot, lambda: bool(texts(app, ".ask-answer")), timeout=60)
        (answer,) = app.screen.query(".ask-answer").results(Static)
        shown = answer.render()
        assert str(shown).startswith(KEPT)
        marked = [str(shown)[s.start : s.end] for s in shown.spans]  # type: ignore[union-attr]
        assert marked == ["[check: no such finding in the ledgers]"]
        assert "2 citations, 1 marked" in texts(app, ".ask-meta")[-1]
        (record,) = read_asks(run_dir)
        assert [(c.token, c.ok) for c in record.citations] == [("F1", True), ("F42", False)]
        assert record.cost_usd and record.prompt_tokens >= 2000
        await pilot.press("escape")
        asks = f"asks {format_cost(record.cost_usd)} (1)"
        await wait_for(pilot, lambda: asks in texts(app, "#run-cost")[0])


async def test_escape_mid_answer_stops_the_analyst_and_keeps_nothing(
    demo_copy: Path, stub_model: StubThread, no_horde_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = on_the_stub(demo_copy, stub_model, monkeypatch)
    stub_model.stub.set_scripts(
        {
            "ask": [
                {"tool_calls": [{"name": "horde", "arguments": {"action": "list"}}]},
                {"content": ANSWER, "delay_ms": 60_000},
            ]
        }
    )
    app = app_for(demo_copy)
    async with app.run_test(size=SIZE) as pilot:
        await open_report(pilot)
        await ask(pilot, "Which findings are unreviewed?")
        await wait_for(pilot, lambda: texts(app, ".ask-step") == ["· horde list"], timeout=60)
        assert children(*PROCESSES)  # the analyst and the ask's gateway are up
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, ReportScreen))
        await wait_for(pilot, lambda: not children(*PROCESSES), timeout=30)
    assert not (run_dir / "asks.jsonl").exists()


async def test_a_refused_ask_is_its_one_line_and_nothing_is_kept(tmp_path: Path) -> None:
    """The scripted run has no MANIFEST.json: the engine refuses before any process starts."""
    fake = FakeSupervisor(tmp_path)
    app = deterministic_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        fake.finish()
        await wait_for(pilot, lambda: isinstance(app.screen, ReportScreen))
        await ask(pilot, "Why?")
        await wait_for(pilot, lambda: bool(texts(app, ".ask-refused")))
        (line,) = texts(app, ".ask-refused")
        assert line.startswith("refused: ") and "is not a run started by horde-tui" in line
        assert not app.screen.query(".ask-stream")
    assert not (fake.run_dir / "asks.jsonl").exists()
