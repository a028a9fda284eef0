"""Snapshot tests (pytest-textual-snapshot) of the app at 120x36 and 80x24.

Every scene hosts the scripted `FakeSupervisor` with `AppConfig.deterministic`: a frozen
clock (3:20 into the run), times shown in UTC, no file polling, no ticks, no animation,
no cursor blink. Update with `pytest tests/app/test_app_snapshots.py --snapshot-update` and
review the SVGs under `tests/app/snapshots/test_app_snapshots/` before committing them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from support.app import (
    NOW,
    FakeSupervisor,
    deterministic_app,
    wait_for,
    write_member_files,
)
from support.rundir import several_runs
from support.snapshots import (  # noqa: F401 (fixtures)
    SIZES,
    OnThisTerminal,
    six_members,
    snapshots_under_tests,
    xterm,
)
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, Static

from horde_tui.app.app import AppConfig, HordeApp
from horde_tui.screens.launch import LaunchScreen
from horde_tui.screens.member import MemberDetailScreen
from horde_tui.screens.modals import ChoiceScreen, HelpScreen
from horde_tui.screens.report import ReportScreen
from horde_tui.store.asks import AskRecord, Citation, append_ask
from horde_tui.supervisor.forecast import Forecast
from horde_tui.widgets.event_log import EventTail
from horde_tui.widgets.log_tail import LogTail
from horde_tui.widgets.transcript_view import TranscriptView


@SIZES
def test_live_run_with_six_members(
    snap_compare: Any, tmp_path: Path, size: tuple[int, int]
) -> None:
    """The run screen mid-run. A reviewer should see: the title with the run id and
    "DEMO MODEL"; a status line "discovery · 6 members: 3 running, 1 paused, 1 exited,
    1 starting"; under it, muted, the cost line "spent unknown, 31.9k tok · no findings
    yet" (member-5's cost is unknown, so the total is); six rows with member-1..6
    (member-6 a verifier), statuses coloured (running green, paused amber, exited muted,
    starting blue); under "activity" each running member's state and for how long
    ("running a tool 2m58s: rg -n 'execute(' src/" for member-1; member-6's horde call,
    running for minutes, "blocked 2m23s (on the ledger lock: horde verify F1)" in amber;
    at 80x24 the narrow column says it in fewer words, "tool 2m58s: rg -…"), the paused
    member's tool summary, member-4's "(completed)", elapsed 3:18 for member-1 and a
    frozen 1:46 for member-4; member-5 reset (resets 1, its next session starting, its
    last tool dimmed) with cost "unknown" (amber); the tabs Board..Files with Events
    active showing the run's lifecycle and tool lines; a footer of member keys."""
    fake = FakeSupervisor(tmp_path)

    async def before(pilot: Pilot[Any]) -> None:
        await six_members(pilot, fake)

    assert snap_compare(deterministic_app(fake), terminal_size=size, run_before=before)


@SIZES
def test_events_tab_not_following(snap_compare: Any, tmp_path: Path, size: tuple[int, int]) -> None:
    """The Events tab (events.jsonl) after the user scrolled up. A reviewer should see
    the log scrolled away from its tail (earlier lines in view; time / member / kind /
    text columns; accepted writes in green, intents muted, the reset amber) and the
    status line below it reading "3 new lines · f to follow" in amber. The table above
    agrees with the log: member-3, reset as stalled, is starting again (resets 1)."""
    fake = FakeSupervisor(tmp_path)

    async def before(pilot: Pilot[Any]) -> None:
        await six_members(pilot, fake)
        for i in range(20):
            who = ("member-1", "member-2", "member-5")[i % 3]
            fake.write(who, 140 + i, "idea", f"#{i + 4}", f"ok #{i + 4} idea: check src/db.py:{i}")
        fake.emit("phase-start", at=161, phase="discovery")
        log = pilot.app.query_one(EventTail)
        await wait_for(pilot, lambda: log.row_text(log.row_count - 1).endswith("discovery"))
        log.focus()
        await pilot.press("pageup")
        await wait_for(pilot, lambda: not log.following)
        fake.write("member-6", 185, "verify", "F1", "ok F1 verified · reproduced")
        fake.emit("member-reset", "member-3", at=186, cause="stalled", resets=1)
        await wait_for(pilot, lambda: log.new_lines == 3)

    assert snap_compare(deterministic_app(fake), terminal_size=size, run_before=before)


@SIZES
def test_member_detail(snap_compare: Any, tmp_path: Path, size: tuple[int, int]) -> None:
    """member-2's detail screen with its transcript and log. A reviewer should see
    "member-2 · member · running" in green; one line of facts as its transcript tells
    them (attempt 1, resets 0, elapsed 3:08, turns 4, tokens 10.3k with the in/out
    split, cost $0.0163, pid 4002); "Now: running a tool: read src/api/users.py" (the
    transcript carries no times, so no duration), "Supervisor: nothing: the member is at
    work" and "Said: Claimed #3:
    the users query builder. Reading it next."; the "Transcript" heading
    with the session's path, then the messages in order: the folded system prompt
    (▸, muted), the user's task, the tool calls folded to one line each ("→ bash: rg -n
    ...", "→ horde claim #3", each with its tokens) and their results ("← bash: ... · 3 lines") with the
    first result expanded (▾) to its three lines, the assistant's words with their
    tokens, and the newest call highlighted under the cursor (at 80x24 the transcript
    follows its end, so the oldest messages are above the view); a status line "message
    8 of 8 · following · session 1 of 1 (the newest)"; the "Log" heading with the log's file
    and its four lines, the spawn line in bold; and a footer with Fold/expand, Expand
    all, Back, Transcript, Reset and Log."""
    fake = FakeSupervisor(tmp_path)

    async def before(pilot: Pilot[Any]) -> None:
        write_member_files(fake)
        await six_members(pilot, fake)
        await pilot.press("down", "enter")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, MemberDetailScreen))
        view = pilot.app.screen.query_one(TranscriptView)
        await wait_for(pilot, lambda: view.count == 8)
        view.cursor = 3
        view.toggle(3)
        view.follow()
        await wait_for(pilot, lambda: pilot.app.screen.query_one(LogTail).count == 4)

    assert snap_compare(deterministic_app(fake), terminal_size=size, run_before=before)


@SIZES
def test_report_screen(snap_compare: Any, tmp_path: Path, size: tuple[int, int]) -> None:
    """The report screen that opens when the run ends. A reviewer should see the title
    line "<run id> · REPORT.md", the report rendered as Markdown (a "Report" heading and
    one sentence), and a footer where r (already shown) and m (no POSTMORTEM.md) are
    greyed out while d Deliverable is available."""
    fake = FakeSupervisor(tmp_path)

    async def before(pilot: Pilot[Any]) -> None:
        await six_members(pilot, fake)
        fake.finish(documents=("DELIVERABLE.md",))
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, ReportScreen))
        await wait_for(
            pilot, lambda: "REPORT.md" in str(pilot.app.screen.query_one("#report-title").render())
        )

    assert snap_compare(deterministic_app(fake), terminal_size=size, run_before=before)


def test_ask_pane(snap_compare: Any, tmp_path: Path) -> None:
    """`a` on the report screen of a run asked twice before. A reviewer should see the
    dialog "Ask run 20250101-120000-beef" over the report; "2 earlier asks, newest
    last"; each ask's question in bold after "›", its answer, and a muted line of
    tokens, cost, citations and model; in the second answer "[check: no such finding
    in the ledgers]" after F42, in red reversed; the question input with its
    placeholder, and a footer with esc Close."""
    fake = FakeSupervisor(tmp_path)
    asked = (
        ("Which findings are still unreviewed?", "F2: nobody has reviewed it yet.", ()),
        (
            "Is the admin token still hard-coded?",
            "F1 holds: app.py hard-codes it. F42 [check: no such finding in the ledgers] "
            "says it was rotated.",
            (Citation("F1"), Citation("F42", "no such finding in the ledgers")),
        ),
    )
    for question, answer, cites in asked:
        record = AskRecord(question, answer, cites, 1200, 80, 0.0002, "openai/gpt-4o-mini")
        append_ask(fake.run_dir, record)

    async def before(pilot: Pilot[Any]) -> None:
        await six_members(pilot, fake)
        fake.finish()
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, ReportScreen))
        await pilot.press("a")
        await wait_for(pilot, lambda: len(pilot.app.screen.query(".ask-answer")) == 2)

    assert snap_compare(deterministic_app(fake), terminal_size=(120, 36), run_before=before)


def write_prompt(run: Path, prompt: str) -> None:
    (run / "TASK.md").write_text(f"# Task\n\n{prompt}\n\n## Configuration\n\n- members: 3\n")


@SIZES
def test_runs_list_in_every_state(
    snap_compare: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: tuple[int, int]
) -> None:
    """Bare `horde-tui` on a `.horde/` with five runs, newest first. A reviewer should see
    the status line "5 runs in .horde · 2 live", a table with the columns run, state,
    started (UTC), members, model, outcome, files (letters P R D M A for the documents
    present, "-" for absent ones), prompt, and one run in each state: not started
    (no start, no members: "-"), active (4 members, ollama/qwen3:8b), finalizing (6
    members), interrupted (2 members, anthropic/claude-sonnet-4) and finished (3 members,
    outcome "solved", files "-RDM-": report, deliverable, post-mortem); each with its own
    prompt; a footer with enter Open and n New run."""
    monkeypatch.chdir(tmp_path)
    horde = tmp_path / ".horde"
    states = several_runs(horde)
    prompts = (
        "Find the SQL injections in app/",
        "Why does the cache test flake?",
        "Review the parser; the type checker; the code generator",
        "Port the CLI to click",
    )
    for run, prompt in zip(states, prompts, strict=False):
        write_prompt(horde / "runs" / run, prompt)
    for name in ("DELIVERABLE.md", "POSTMORTEM.md"):  # the finished run's files: -RDM-
        (horde / "runs" / "20260102-120000-aaaa" / name).write_text(f"# {name}\n")
    app = HordeApp(horde_dir=Path(".horde"), config=AppConfig.deterministic(NOW))

    async def before(pilot: Pilot[Any]) -> None:
        table = pilot.app.screen.query_one("#runs", DataTable)
        await wait_for(pilot, lambda: table.row_count == len(states))

    assert snap_compare(app, terminal_size=size, run_before=before)


@SIZES
def test_launch_form_with_validation_errors(
    snap_compare: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: tuple[int, int]
) -> None:
    """The launch form after enter with a count of 13 and no prompt. A reviewer should see
    the title "New run · .horde/", the fields Members (13 kept as typed), Prompt (empty,
    placeholder), Plan layers, Model (openai/gpt-4o from the config file), Thinking
    (off), Preset (none), Member models (placeholder), Deadline, the options verifier (on), until stop and detached (off) with the
    detached hint; under Members the red line "refused: a horde has 1 to 12 members, not
    13", under Prompt "refused: the prompt is empty; ..."; the Start and Cancel buttons,
    and a footer with ^s Start and esc Cancel."""
    monkeypatch.chdir(tmp_path)
    for name in [n for n in os.environ if n.startswith("HORDE_")]:
        monkeypatch.delenv(name)
    horde = tmp_path / ".horde"
    horde.mkdir()
    (horde / "config.toml").write_text('model = "openai/gpt-4o"\n')
    app = HordeApp(horde_dir=Path(".horde"), config=AppConfig.deterministic(NOW))

    async def before(pilot: Pilot[Any]) -> None:
        await pilot.press("n")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, LaunchScreen))
        count = pilot.app.screen.query_one("#launch-count", Input)
        count.focus()
        await wait_for(pilot, lambda: count.has_focus)
        count.value = ""
        await pilot.press("1", "3", "enter")
        error = pilot.app.screen.query_one("#launch-prompt-error", Static)
        await wait_for(pilot, lambda: error.has_class("-shown"))

    assert snap_compare(app, terminal_size=size, run_before=before)


@SIZES
@pytest.mark.usefixtures("xterm")
def test_run_screen_on_a_16_colour_terminal(
    snap_compare: Any, tmp_path: Path, size: tuple[int, int]
) -> None:
    """The live run with `TERM=xterm` (16 colours, common over SSH), drawn as that
    terminal shows it. A reviewer should see no red anywhere: the footer keys yellow,
    member-5's "unknown" cost and member-3's "paused" yellow, running members green;
    the cost line ending with the forecast ("forecast: unknown, 360.0k tok per 10
    min", cut short of its horizon at 80 columns)."""
    fake = FakeSupervisor(tmp_path)

    async def before(pilot: Pilot[Any]) -> None:
        await six_members(pilot, fake)
        fake.emit("forecast", at=200, **Forecast(6, 0.5, 3000, None, deadline_min=60).as_event())
        line = pilot.app.screen.query_one("#run-cost", Static)
        await wait_for(pilot, lambda: "forecast" in str(line.render()))

    assert snap_compare(OnThisTerminal(fake), terminal_size=size, run_before=before)


@SIZES
def test_reset_dialog(snap_compare: Any, tmp_path: Path, size: tuple[int, int]) -> None:
    """`x` on member-2. A reviewer should see the dialog "Reset member-2?" over the run
    screen, what a reset does, and its two buttons with Cancel focused (Enter resets
    nothing)."""
    fake = FakeSupervisor(tmp_path)

    async def before(pilot: Pilot[Any]) -> None:
        await six_members(pilot, fake)
        await pilot.press("down", "x")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, ChoiceScreen))
        await pilot.pause()

    assert snap_compare(deterministic_app(fake), terminal_size=size, run_before=before)


@SIZES
def test_home_screen_with_no_runs(
    snap_compare: Any, tmp_path: Path, size: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bare `horde-tui` where no run exists yet. A reviewer should see the page that
    says "No runs in .horde/ yet." and how to start one, and a footer with n New run,
    F1 Help and q Quit."""
    monkeypatch.chdir(tmp_path)  # the page names the folder relative to here
    app = HordeApp(horde_dir=tmp_path / ".horde", config=AppConfig.deterministic(NOW))
    assert snap_compare(app, terminal_size=size)


@SIZES
def test_help_screen(
    snap_compare: Any, tmp_path: Path, size: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """F1 on the home page. A reviewer should see the help dialog over the page: the
    keys of the screen beneath it and how to leave (escape), readable at both sizes."""
    monkeypatch.chdir(tmp_path)
    app = HordeApp(horde_dir=tmp_path / ".horde", config=AppConfig.deterministic(NOW))

    async def before(pilot: Pilot[Any]) -> None:
        await pilot.press("f1")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, HelpScreen))

    assert snap_compare(app, terminal_size=size, run_before=before)
