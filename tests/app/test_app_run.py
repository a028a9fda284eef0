"""Pilot tests of the run screen: the member table, member keys, tabs, the event log.

Each test hosts a `FakeSupervisor` in `HordeApp` with the deterministic config, scripts
events, and waits (`wait_for`) for the screen to show them; no test sleeps.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from support.app import FakeSupervisor, deterministic_app, play_six, stop_clean, wait_for
from textual.app import App, ComposeResult
from textual.command import CommandList
from textual.widgets import Input, Static, TabbedContent
from textual.widgets._footer import FooterKey

from horde_tui.app.app import HordeApp
from horde_tui.screens.member import MemberDetailScreen
from horde_tui.screens.modals import ChoiceScreen, HelpScreen
from horde_tui.screens.run import RunScreen
from horde_tui.view.events import EventView
from horde_tui.widgets.event_log import EventTail
from horde_tui.widgets.member_table import MemberTable

SIZE = (100, 30)


def run_screen(app: HordeApp) -> RunScreen:
    screen = app.run_screen
    assert screen is not None
    return screen


def cell(app: HordeApp, member: str, column: str) -> str:
    return str(app.query_one(MemberTable).get_cell(member, column)).strip()


async def started(pilot, fake: FakeSupervisor) -> None:  # type: ignore[no-untyped-def]
    play_six(fake)
    table = pilot.app.query_one(MemberTable)
    await wait_for(
        pilot, lambda: table.row_count == 6 and cell(pilot.app, "member-5", "resets") == "1"
    )


async def test_table_shows_six_members_updating_from_events(tmp_path: Path) -> None:
    fake = FakeSupervisor(tmp_path)
    app = deterministic_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await started(pilot, fake)
        table = app.query_one(MemberTable)
        assert table.row_count == 6
        assert [cell(app, f"member-{i}", "status") for i in range(1, 7)] == [
            "running",
            "running",
            "paused",
            "exited",
            "starting",  # reset: its next session is being spawned
            "running",
        ]
        # The activity column: the state, for how long (to the injected clock), the call;
        # in fewer words where the full ones would cut the call.
        assert cell(app, "member-1", "tool") == "tool 2m58s: rg -n 'execute(' src/"
        assert cell(app, "member-4", "tool") == "(completed)"
        assert cell(app, "member-4", "elapsed") == "1:46"  # frozen at its exit
        assert cell(app, "member-1", "elapsed") == "3:18"  # the injected clock
        assert cell(app, "member-5", "cost") == "unknown"
        assert cell(app, "member-4", "tokens") == "12.8k"
        assert cell(app, "member-6", "role") == "verifier"
        # A burst of events is coalesced into a few UI updates.
        assert app.bridge.flushes <= 3

        # The tool column's fit to the laid-out screen may still be pending: let it land.
        await wait_for(pilot, lambda: not table._fit())
        await pilot.pause()
        before, rendered = table.cells_updated, table.lines_rendered.copy()
        fake.tool("member-2", 150, "bash", "bash: pytest -q")
        await wait_for(
            pilot, lambda: cell(app, "member-2", "tool") == "running a tool 50s: pytest -q"
        )
        # A new answer calling the tool: its tool and its turns change, nothing else.
        assert table.cells_updated - before == 2, "a repaint rewrites only changed cells"
        await wait_for(pilot, lambda: table.lines_rendered["member-2"] > rendered["member-2"])
        await pilot.pause()
        assert table.lines_rendered - rendered == Counter({"member-2": 1}), "and one line"


async def test_member_keys_call_controls_with_the_selected_member(tmp_path: Path) -> None:
    fake = FakeSupervisor(tmp_path)
    app = deterministic_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await started(pilot, fake)
        await pilot.press("down")  # member-2
        await pilot.press("p")
        assert fake.calls[-1] == ("pause", "member-2")
        await wait_for(pilot, lambda: cell(app, "member-2", "status") == "paused")
        await pilot.press("r")
        assert fake.calls[-1] == ("resume", "member-2")
        await stop_clean(pilot)
        assert fake.calls[-1] == ("stop_clean", "all")
        assert run_screen(app).check_action("stop_clean", ()) is None, "one clean stop at a time"
        assert run_screen(app).has_class("-stopping")

        await pilot.press("S")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        assert fake.calls[-1] == ("stop_clean", "all"), "escape stops nothing"

        await pilot.press("S")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        await pilot.click("#member")
        await wait_for(pilot, lambda: fake.calls[-1] == ("stop_hard", "member-2"))


async def test_s_asks_first_and_enter_or_escape_stops_nothing(tmp_path: Path) -> None:
    """A stopped run cannot be resumed: one stray `s` (or `s` then Enter) must not end
    it, and the dialog says that nothing was done."""
    fake = FakeSupervisor(tmp_path)
    app = deterministic_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await started(pilot, fake)
        for key in ("enter", "escape"):
            await pilot.press("s")
            await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
            question = str(app.screen.query_one(".dialog-question", Static).render())
            assert "Stop" in question and "clean" in question
            assert app.screen.focused is not None and app.screen.focused.id == "cancel"
            await pilot.press(key)
            await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
            assert not [c for c in fake.calls if c[0] == "stop_clean"], f"{key} stops nothing"
            said = [n.message for n in app._notifications]
            assert said and "nothing was done" in said[-1], said
        assert run_screen(app).check_action("stop_clean", ()) is True
        await stop_clean(pilot)
        assert fake.calls[-1] == ("stop_clean", "all")


async def test_pause_is_greyed_out_for_an_exited_member(tmp_path: Path) -> None:
    fake = FakeSupervisor(tmp_path)
    app = deterministic_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await started(pilot, fake)
        await pilot.press("down", "down", "down")  # member-4, exited
        screen = run_screen(app)
        assert screen.table.selected_member == "member-4"
        assert screen.check_action("pause", ()) is None
        assert screen.check_action("resume", ()) is None
        assert screen.active_bindings["p"].enabled is False
        await pilot.press("p")
        assert fake.calls == []
        await pilot.press("up")  # member-3, paused: resume applies, pause does not
        assert screen.check_action("pause", ()) is None
        assert screen.check_action("resume", ()) is True


async def test_digit_keys_jump_to_tabs_in_the_order_shown(tmp_path: Path) -> None:
    app = deterministic_app(FakeSupervisor(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        tabs = app.query_one(TabbedContent)
        assert tabs.active == "events"
        expected = {
            "1": "board",
            "2": "ideas",
            "3": "findings",
            "4": "facts",
            "5": "claims",
            "6": "resources",
            "7": "events",
            "8": "threads",
            "9": "graph",
            "0": "files",
        }
        for key, tab in expected.items():
            await pilot.press(key)
            assert tabs.active == tab
        labels = [str(tab.label) for tab in tabs.query("ContentTabs Tab")]
        assert labels == [
            "Board",
            "Ideas",
            "Findings",
            "Facts",
            "Claims",
            "Resources",
            "Events",
            "Threads",
            "Graph",
            "Files",
        ]


async def test_event_log_follows_until_scrolled_up_and_counts_new_lines(tmp_path: Path) -> None:
    fake = FakeSupervisor(tmp_path)
    app = deterministic_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        log = app.query_one(EventTail)
        # The member rows first: their arrival shrinks the log, and a resize while
        # following jumps back to the tail, which would race the pageup below.
        await wait_for(pilot, lambda: app.query_one(MemberTable).row_count == 6)
        for i in range(60):
            fake.write("member-1", 10 + i, "idea", f"#{i + 1}", f"ok #{i + 1} idea {i}")
        fake.emit("phase-start", at=71, phase="discovery")  # the batch that wakes the screen
        await wait_for(pilot, lambda: log.row_count == 121)
        assert log.following and log.scroll_y == log.max_scroll_y > 0
        assert log.row_text(120) == "parent phase-start phase discovery"

        log.focus()
        await wait_for(pilot, lambda: log.has_focus and log.scroll_y == log.max_scroll_y)
        await pilot.press("pageup")
        await wait_for(pilot, lambda: not log.following)
        for i in range(2):
            fake.write("member-2", 200 + i, "claim", f"#{i + 1}", "ok claimed")
        fake.emit("member-reset", "member-2", at=203, cause="model_error", resets=1)
        await wait_for(pilot, lambda: log.new_lines == 5)
        status = app.query_one("#event-status", Static)
        await wait_for(pilot, lambda: "5 new lines" in str(status.render()))
        assert log.scroll_y < log.max_scroll_y

        await pilot.press("f")
        await wait_for(pilot, lambda: log.following and log.scroll_y == log.max_scroll_y)
        assert log.new_lines == 0
        await wait_for(pilot, lambda: "following" in str(status.render()))


async def test_slash_filters_events_by_member_or_kind(tmp_path: Path) -> None:
    fake = FakeSupervisor(tmp_path)
    app = deterministic_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await started(pilot, fake)
        log = app.query_one(EventTail)
        await pilot.press("slash")
        box = app.query_one("#event-filter", Input)
        assert box.has_focus
        await pilot.press(*"member-2")
        await wait_for(pilot, lambda: log.filter_text == "member-2")
        rows = [log.row_text(r) for r in range(log.row_count)]
        assert rows == [
            "member-2 member-spawn attempt 1",
            "member-2 claim intent action=claim",
            "member-2 claim ok #3 claimed",
        ], "its own writes and the lifecycle events about it, nobody else's"
        await pilot.press("enter")
        assert log.has_focus and log.filter_text == "member-2", "enter keeps the filter"

        await pilot.press("slash")
        box.value = "reset"
        await wait_for(
            pilot,
            lambda: (
                [log.row_text(r) for r in range(log.row_count)]
                == ["member-5 member-reset cause model_error resets 1 released 5"]
            ),
        )
        await pilot.press("escape")
        assert log.filter_text == "" and not box.has_focus, "escape clears the filter"


async def test_enter_opens_member_detail_live_and_escape_returns(tmp_path: Path) -> None:
    fake = FakeSupervisor(tmp_path)
    app = deterministic_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await started(pilot, fake)
        await pilot.press("down", "enter")  # member-2
        await wait_for(pilot, lambda: isinstance(app.screen, MemberDetailScreen))

        def shown(ident: str) -> str:
            return str(app.screen.query_one(ident, Static).render())

        assert "member-2 · member · running" in shown("#detail-title")
        assert "read src/api/users.py" in shown("#detail-now")
        assert "Claimed #3" in shown("#detail-message")
        fake.answer("member-2", 160, text="Posted F2 on the upload path.")
        await wait_for(pilot, lambda: "Posted F2" in shown("#detail-message"))
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))


async def test_f1_lists_the_keys_and_what_applies(tmp_path: Path) -> None:
    fake = FakeSupervisor(tmp_path)
    app = deterministic_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await started(pilot, fake)
        await pilot.press("f1")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        assert isinstance(app.screen, HelpScreen)
        keys = app.screen.key_table()
        cells = [str(c) for column in keys.columns for c in column.cells]
        assert "Pause the selected member" in cells
        assert "Stop the run clean (asks)" in cells
        assert "Help" in cells and "Quit" in cells
        assert "Board tab" in cells
        assert "Next member" in cells and "member table" in cells, "the table's own keys"
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))


async def test_ctrl_p_palette_reaches_any_member(tmp_path: Path) -> None:
    fake = FakeSupervisor(tmp_path)
    app = deterministic_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await started(pilot, fake)
        await pilot.press("ctrl+p")
        await pilot.press(*"pause member-6")
        await wait_for(pilot, lambda: app.screen.query_one(CommandList).option_count > 0)
        top = app.screen.query_one(CommandList).get_option_at_index(0)
        assert "Pause member-6" in str(top.prompt)
        await pilot.press("enter")
        await wait_for(pilot, lambda: ("pause", "member-6") in fake.calls)


def write_events(path: Path, start: int, count: int) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        for n in range(start, start + count):
            fh.write(
                f'{{"ts":"2025-01-01T12:00:00.000000Z","actor":"member-1","action":"post",'
                f'"type":"outcome","ok":true,"text":"line {n}","id":"E{n + 1}"}}\n'
            )


async def test_event_log_reads_only_appended_bytes_and_renders_only_the_viewport(
    tmp_path: Path,
) -> None:
    path = tmp_path / "events.jsonl"
    write_events(path, 0, 3000)
    view = EventView(path)

    class LogApp(App[None]):
        def compose(self) -> ComposeResult:
            yield EventTail(view, clock_text=lambda ts: "00:00:00")

    app = LogApp()
    async with app.run_test(size=(80, 12)) as pilot:
        log = app.query_one(EventTail)
        log.catch_up()
        await wait_for(pilot, lambda: log.row_count == 3000)
        assert log.scroll_y == log.max_scroll_y
        rendered = [log.render_line(y).text for y in range(log.size.height)]
        assert any("line 2999" in row for row in rendered[-2:])
        assert len(log._cache) <= log.size.height, "only rows in view were rendered"

        indexed = view.index.size
        write_events(path, 3000, 10)
        log.catch_up()
        assert log.row_count == 3010
        assert view.index.size > indexed and view.index.size == path.stat().st_size
        await pilot.pause()
        assert any("line 3009" in log.render_line(y).text for y in range(log.size.height))


async def test_a_large_backlog_is_indexed_in_a_worker_while_the_log_says_so(
    tmp_path: Path,
) -> None:
    path = tmp_path / "events.jsonl"
    write_events(path, 0, 20_000)  # ~2.4 MB: past the backlog threshold
    view = EventView(path)

    class LogApp(App[None]):
        def compose(self) -> ComposeResult:
            yield EventTail(view, clock_text=lambda ts: "00:00:00")

    app = LogApp()
    async with app.run_test(size=(80, 12)) as pilot:
        log = app.query_one(EventTail)
        log.catch_up()
        assert log.loading, "the backlog went to a worker, the UI loop is free"
        log.set_filter("post")  # asked while loading: applied when the worker is done
        await wait_for(pilot, lambda: not log.loading and log.row_count == 20_000)
        assert log.view.filter.kinds == frozenset({"post"})


def static_text(app: HordeApp, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


def footer_keys(app: HordeApp) -> dict[str, bool]:
    """The footer's keys as shown: description -> enabled (greyed out when False)."""
    return {k.description: not k.disabled for k in app.screen.query(FooterKey)}


async def test_activity_column_says_the_state_for_how_long_and_cost_has_one_notation(
    tmp_path: Path,
) -> None:
    """The activity column says what a running member does and since when: a tool and
    its call, then the model call its result went into; a member silent for a while is
    `idle`, dimmed. A member that has not called the model shows `-` for cost, not
    `$0.0000` beside `unknown` (costs read as on the pages and in REPORT.md)."""
    fake = FakeSupervisor(tmp_path, count=4)
    app = deterministic_app(fake)
    async with app.run_test(size=(120, 36)) as pilot:
        fake.emit("run-start", at=0, members=4, model=fake.settings.gateway.model)
        for name in fake.members:
            fake.spawn(name, at=1)
        fake.answer("member-1", 3, (900, 40), 0.0012, "horde", {"action": "review", "id": "F1"})
        fake.answer("member-2", 3, (800, 30), None)
        table = app.query_one(MemberTable)
        await wait_for(pilot, lambda: table.row_count == 4)
        # A horde call running this long waits on the ledger lock: blocked, as a warning.
        blocked = "blocked 3m17s (on the ledger lock: horde review F1)"
        await wait_for(pilot, lambda: cell(app, "member-1", "tool") == blocked)
        assert table._shown["member-1"]["tool"][1] == "member-table--note"
        fake.result("member-1", 195, "horde")
        await wait_for(pilot, lambda: cell(app, "member-1", "tool") == "waiting on model 5s")
        assert table._shown["member-1"]["tool"][1] == ""
        assert cell(app, "member-1", "cost") == "$0.0012"
        assert cell(app, "member-2", "cost") == "unknown"
        assert cell(app, "member-3", "cost") == "-"
        assert cell(app, "member-3", "tool") == "idle 3m19s"  # spawned, silent since
        assert table._shown["member-3"]["tool"][1] == "member-table--last"


async def test_header_counts_members_and_names_helpers_apart(tmp_path: Path) -> None:
    fake = FakeSupervisor(tmp_path, count=4)
    app = deterministic_app(fake)
    async with app.run_test(size=(120, 36)) as pilot:
        fake.emit("run-start", at=0, members=4, model=fake.settings.gateway.model)
        for name in list(fake.members):
            fake.spawn(name, at=1)
            fake.exit(name, 20, "completed")
        for helper in ("synthesis", "postmortem"):  # as `finalize.run_helper` records them
            fake.emit("member-spawn", helper, 21, attempt=1, pid=4100, role=helper)
            fake.emit("member-exit", helper, 25, cause="completed")
        fake.emit("phase-start", at=30, phase="deliverable")
        await wait_for(pilot, lambda: "helpers" in static_text(app, "#run-status"))
        status = static_text(app, "#run-status")
        assert "4 members: 4 exited · helpers: synthesis exited, postmortem exited" in status
        assert "6 members" not in status


async def test_an_ended_runs_footer_offers_only_keys_that_apply(tmp_path: Path) -> None:
    fake = FakeSupervisor(tmp_path)
    app = deterministic_app(fake)
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, fake)
        await wait_for(pilot, lambda: "Pause" in footer_keys(app))
        live = footer_keys(app)
        assert {"Pause", "Stop", "Hard stop", "Reset"} <= set(live)
        fake.finish()
        await wait_for(pilot, lambda: not run_screen(app).live)
        if not isinstance(app.screen, RunScreen):
            await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        await wait_for(pilot, lambda: "Pause" not in footer_keys(app))
        shown = footer_keys(app)
        for control in ("Pause", "Resume", "Reset", "Stop", "Hard stop"):
            assert control not in shown, shown
        assert shown.get("Detail") and shown.get("Transcript"), shown
