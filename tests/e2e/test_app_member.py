"""Pilot tests of the member detail screen (transcript, log tail) and the `x` reset key.

The run is the scripted `FakeSupervisor`; the member's transcript and log are real files
in a temp dir, appended to while the screen shows them. Every wait is on a condition.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from support.app import (
    MEMBER_2_SESSION,
    NOW,
    FakeRemote,
    FakeSupervisor,
    deterministic_app,
    play_six,
    stop_clean,
    tool_call,
    tool_result,
    wait_for,
    write_member_files,
)
from support.plans import CLAIMING_PLANS, settings
from support.rundir import RunDir
from textual.command import CommandList
from textual.pilot import Pilot
from textual.widgets import Static

from horde_tui.app.app import AppConfig, HordeApp
from horde_tui.screens.member import MemberDetailScreen
from horde_tui.screens.modals import ChoiceScreen
from horde_tui.screens.report import ReportScreen
from horde_tui.screens.run import RunScreen
from horde_tui.stubmodel import StubThread
from horde_tui.stubmodel.agent import AgentPolicy
from horde_tui.supervisor.run import Supervisor
from horde_tui.supervisor.setup import RunRequest
from horde_tui.widgets.log_tail import LogTail
from horde_tui.widgets.member_table import MemberTable
from horde_tui.widgets.transcript_view import TranscriptView

SIZE = (100, 30)


def cell(app: HordeApp, member: str, column: str) -> str:
    table = app.query_one(MemberTable)
    return str(table.get_cell(member, column)).strip() if table.row_count else ""


async def started(pilot: Pilot[Any], fake: FakeSupervisor) -> None:
    play_six(fake)
    await wait_for(pilot, lambda: cell(pilot.app, "member-5", "resets") == "1")  # type: ignore[arg-type]


def run_screen(app: HordeApp) -> RunScreen:
    screen = app.run_screen
    assert screen is not None
    return screen


def shown(app: HordeApp, ident: str) -> str:
    return str(app.screen.query_one(ident, Static).render())


def rows(view: TranscriptView) -> list[str]:
    """The transcript as drawn: one string per screen row, blank rows below left out."""
    drawn = [view.render_line(y).text.rstrip() for y in range(view.size.height)]
    while drawn and not drawn[-1]:
        drawn.pop()
    return drawn


def append(path: Path, *messages: dict[str, Any]) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("".join(json.dumps(m) + "\n" for m in messages))


async def enter_member(pilot: Pilot[Any], member: str) -> MemberDetailScreen:
    """Select `member` in the run screen's table and press enter."""
    app = pilot.app
    table = app.query_one(MemberTable)
    table.move_cursor(row=table.get_row_index(member))
    await pilot.press("enter")
    await wait_for(
        pilot,
        lambda: isinstance(app.screen, MemberDetailScreen) and app.screen.member == member,
    )
    assert isinstance(app.screen, MemberDetailScreen)
    return app.screen


async def open_detail(
    pilot: Pilot[Any], fake: FakeSupervisor, messages: int, member: str = "member-2"
) -> MemberDetailScreen:
    """Play the six-member run, open `member`'s detail screen, and wait until its
    transcript shows `messages` messages."""
    await started(pilot, fake)
    screen = await enter_member(pilot, member)
    view = screen.query_one(TranscriptView)
    await wait_for(pilot, lambda: view.count == messages)
    return screen


# -- x: reset with confirm ---------------------------------------------------------------------


async def test_x_asks_then_resets_the_selected_member_and_escape_resets_nothing(
    tmp_path: Path,
) -> None:
    fake = FakeSupervisor(tmp_path)
    app = deterministic_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await started(pilot, fake)
        await pilot.press("down")  # member-2, running
        assert run_screen(app).check_action("reset", ()) is True
        await pilot.press("x")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        assert "Reset member-2?" in str(app.screen.query_one(".dialog-question", Static).render())
        await pilot.press("enter")  # the focused button is Cancel: enter resets nothing
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        # ... and says so: a silent dialog leaves a person wondering what happened.
        await wait_for(
            pilot,
            lambda: any("nothing was done" in n.message for n in app._notifications),
        )
        await pilot.press("x")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        assert not [c for c in fake.calls if c[0] == "reset"], "cancel and escape reset nothing"

        await pilot.press("x")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        await pilot.click("#reset")
        await wait_for(pilot, lambda: ("reset", "member-2") in fake.calls)
        await wait_for(pilot, lambda: cell(app, "member-2", "resets") == "1")
        await wait_for(
            pilot,
            lambda: any(n.message.startswith("reset member-2") for n in app._notifications),
        )
        assert fake.members["member-2"].attempt == 2


async def test_x_is_greyed_for_pending_exited_stopping_and_hidden_for_ended_runs(
    tmp_path: Path,
) -> None:
    fake = FakeSupervisor(tmp_path)
    app = deterministic_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        screen = run_screen(app)
        fake.emit("run-start", at=0, members=6)
        await wait_for(pilot, lambda: screen.table.row_count == 6)
        assert screen.table.selected_member == "member-1"
        assert screen.check_action("reset", ()) is None, "pending: no session to reset"

        play_six(fake)
        await wait_for(pilot, lambda: cell(app, "member-4", "status") == "exited")
        await pilot.press("down", "down", "down")  # member-4, exited
        assert screen.check_action("reset", ()) is None
        assert screen.active_bindings["x"].enabled is False
        await pilot.press("x")
        assert not isinstance(app.screen, ChoiceScreen)
        await pilot.press("up")  # member-3, paused: a paused session can be reset
        assert screen.check_action("reset", ()) is True

        await stop_clean(pilot)  # resets would start work the stop ends
        await wait_for(pilot, lambda: screen.has_class("-stopping"))
        assert screen.check_action("reset", ()) is None
        fake.finish()
        await wait_for(pilot, lambda: not screen.live)
        assert screen.check_action("reset", ()) is False, "hidden once the run ended"
    assert not [c for c in fake.calls if c[0] == "reset"]


async def test_pause_and_reset_are_greyed_for_an_external_member(tmp_path: Path) -> None:
    """An agent that joined through `horde-tui mcp` shows in the table (the hosted run is
    read from its files), but the run did not start it: p and x do not apply."""
    fake = FakeSupervisor(tmp_path)
    app = deterministic_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        screen = run_screen(app)
        play_six(fake)
        fake.emit("member-join", member="ext-1", at=5, pid=os.getpid())
        await wait_for(pilot, lambda: cell(app, "ext-1", "status") == "running")
        while screen.table.selected_member != "ext-1":
            await pilot.press("down")
        for action in ("pause", "resume", "reset"):
            assert screen.check_action(action, ()) is None, action
        await pilot.press("up")  # member-6, one the run started, is steered as before
        assert screen.check_action("pause", ()) is True


async def test_palette_offers_reset_for_members_with_a_session(tmp_path: Path) -> None:
    fake = FakeSupervisor(tmp_path)
    app = deterministic_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await started(pilot, fake)
        commands = [title for title, _, _ in _palette(app)]
        assert "Reset member-6" in commands and "Reset member-3" in commands
        assert "Reset member-4" not in commands, "member-4 exited"
        await pilot.press("ctrl+p")
        await pilot.press(*"reset member-6")
        await wait_for(pilot, lambda: app.screen.query_one(CommandList).option_count > 0)
        top = app.screen.query_one(CommandList).get_option_at_index(0)
        assert "Reset member-6" in str(top.prompt)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        await pilot.click("#reset")
        await wait_for(pilot, lambda: ("reset", "member-6") in fake.calls)


def _palette(app: HordeApp) -> list[tuple[str, Any, str]]:
    from horde_tui.screens.commands import MemberCommands

    provider = MemberCommands(run_screen(app))
    return list(provider.commands())


async def test_attached_reset_goes_through_control(tmp_path: Path) -> None:
    run = RunDir(tmp_path / ".horde", "20260102-120000-aaaa", members=2)
    run.event(0, "run-start", members=2, model="openai/stub")
    for i in (1, 2):
        run.event(2 + i, "member-spawn", f"member-{i}", attempt=1, pid=os.getpid())
    run.live(os.getpid())
    # One poll (on mount) is all this test needs; a poll timer firing while the app
    # tears down can hit the run screen half unmounted (a race outside this test).
    config = replace(AppConfig.deterministic(NOW), attach_poll_s=3600.0)
    app = HordeApp(attach=run.path, config=config)
    with FakeRemote(run) as remote:
        async with app.run_test(size=SIZE) as pilot:
            screen = run_screen(app)
            await wait_for(pilot, lambda: screen.table.row_count == 2)
            await pilot.press("down", "x")
            await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
            await pilot.click("#reset")
            await wait_for(pilot, lambda: remote.requests == [("reset", "member-2")])
            await wait_for(
                pilot, lambda: any(n.message == "reset member-2" for n in app._notifications)
            )


# -- the detail screen: transcript and log tail ---------------------------------------------------


async def test_t_opens_the_transcript_folded_and_enter_expands_a_tool_result(
    tmp_path: Path,
) -> None:
    fake = FakeSupervisor(tmp_path)
    write_member_files(fake)
    app = deterministic_app(fake)
    async with app.run_test(size=(100, 40)) as pilot:
        await started(pilot, fake)
        await pilot.press("down", "t")  # member-2's transcript
        await wait_for(pilot, lambda: isinstance(app.screen, MemberDetailScreen))
        view = app.screen.query_one(TranscriptView)
        await wait_for(pilot, lambda: view.count == len(MEMBER_2_SESSION))
        assert view.has_focus and view.following
        assert view.cursor == len(MEMBER_2_SESSION) - 1
        drawn = rows(view)
        assert drawn[0] == "▸ system prompt · 40 lines", "the system prompt is folded"
        assert "▸ → bash: rg -n 'execute(' src/ [2210 in / 48 out]" in drawn
        result = next(r for r in drawn if r.startswith("▸ ← bash · 3 lines"))
        assert "src/api/users.py:14" in result, "a folded result still shows its gist"
        assert "    src/api/orders.py:30:    cur.execute(sql, args)" not in drawn
        assert "  Claimed #3: the users query builder. Reading it next." in drawn
        assert "message 8 of 8 · following" in shown(app, "#transcript-status")

        await pilot.press("up", "up", "up", "up")  # the bash result (message 4)
        assert view.cursor == 3 and not view.following
        await pilot.press("enter")
        await wait_for(
            pilot, lambda: "  src/api/orders.py:30:    cur.execute(sql, args)" in rows(view)
        )
        assert any(r.startswith("▾ ← bash · 3 lines") for r in rows(view))
        await pilot.press("space")
        await wait_for(pilot, lambda: any(r.startswith("▸ ← bash") for r in rows(view)))

        await pilot.press("e")  # everything open, the system prompt too
        await wait_for(pilot, lambda: "  You are one member of a horde." in rows(view))
        assert view.expanded_all
        await pilot.press("e")
        await wait_for(pilot, lambda: "  You are one member of a horde." not in rows(view))


async def test_transcript_follows_appended_messages_and_counts_them_when_scrolled_up(
    tmp_path: Path,
) -> None:
    fake = FakeSupervisor(tmp_path)
    path = write_member_files(fake)
    app = deterministic_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_detail(pilot, fake, messages=8)
        view = screen.query_one(TranscriptView)

        append(path, tool_result("c3", "read", "def build_query(name):\n    return f'...{name}'"))
        fake.tool("member-2", 150, "bash", "bash: pytest -q")  # any event wakes the screen
        await wait_for(pilot, lambda: view.count == 9)
        assert view.following and view.cursor == 8
        assert rows(view)[-1].startswith("▸ ← read · 2 lines: def build_query(name):")

        await pilot.press("home")
        assert not view.following and view.cursor == 0
        append(
            path,
            tool_call("c4", "horde", action="finding", idea="#3"),
            *[{"role": "assistant", "content": f"note {i}"} for i in range(3)],
        )
        fake.tool("member-2", 151, "horde", "horde finding #3")
        await wait_for(pilot, lambda: view.count == 13)
        assert view.new_messages == 4 and view.cursor == 0
        assert rows(view)[0] == "▸ system prompt · 40 lines", "the view stays where it was read"
        assert "4 new · end to follow" in shown(app, "#transcript-status")
        assert screen.query_one("#transcript-status").has_class("-new")

        await pilot.press("end")
        assert view.following and view.new_messages == 0 and view.cursor == 12
        assert "  note 2" in rows(view)


async def test_log_tail_shows_the_end_of_the_log_and_follows_appends(tmp_path: Path) -> None:
    fake = FakeSupervisor(tmp_path)
    log_text = "".join(f"member-2: line {i}\n" for i in range(200))
    write_member_files(fake, log="--- spawn member-2 attempt 1 at 12:00:12\n" + log_text)
    app = deterministic_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_detail(pilot, fake, messages=len(MEMBER_2_SESSION))
        tail = screen.query_one(LogTail)
        await wait_for(pilot, lambda: tail.count == 201)
        await wait_for(pilot, lambda: tail.scroll_y == tail.max_scroll_y > 0)
        bottom = tail.render_line(tail.scrollable_content_region.height - 1).text
        assert bottom.startswith("member-2: line 199")
        with open(tail.source.path, "a") as fh:  # type: ignore[union-attr]
            fh.write("member-2: exit completed after 4 turns.\nhalf a line")
        fake.tool("member-2", 150, "bash", "bash: pytest -q")
        await wait_for(pilot, lambda: tail.count == 202)
        await wait_for(pilot, lambda: tail.scroll_y == tail.max_scroll_y)
        bottom = tail.render_line(tail.scrollable_content_region.height - 1).text
        assert bottom.startswith("member-2: exit completed"), "an unfinished line waits"
        assert "Log · member-2.log" in shown(app, "#log-heading")


async def test_a_reset_moves_the_detail_screen_to_the_new_session(tmp_path: Path) -> None:
    fake = FakeSupervisor(tmp_path)
    write_member_files(fake)
    app = deterministic_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_detail(pilot, fake, messages=8)
        view = screen.query_one(TranscriptView)
        await pilot.press("x")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        await pilot.click("#reset")
        await wait_for(pilot, lambda: ("reset", "member-2") in fake.calls)
        await wait_for(pilot, lambda: app.screen is screen)
        # The new attempt writes its own session file.
        folder = fake.run_dir / "sessions" / "member-2"
        append(folder / "20250101T120315-bbbbbb.jsonl", {"role": "system", "content": "again"})
        fake.tool("member-2", 196, "bash", "bash: ls")
        await wait_for(pilot, lambda: view.count == 1)
        assert "session 2 of 2 (the newest)" in shown(app, "#transcript-status")
        assert "20250101T120315-bbbbbb.jsonl" in shown(app, "#transcript-heading")
        assert "attempt 2 (resets 1)" in shown(app, "#detail-facts")
        assert screen.check_action("newer_session", ()) is None, "already the newest"

        await pilot.press("left_square_bracket")  # back to the attempt that was reset
        await wait_for(pilot, lambda: view.count == 8)
        assert "session 1 of 2 · [ ] sessions" in shown(app, "#transcript-status")
        assert "20250101T120012-aaaaaa.jsonl" in shown(app, "#transcript-heading")
        assert screen.check_action("older_session", ()) is None, "there is none older"
        append(folder / "20250101T120315-bbbbbb.jsonl", {"role": "user", "content": "task"})
        fake.tool("member-2", 197, "bash", "bash: ls")
        await wait_for(pilot, lambda: screen.reader is not None and len(screen.reader) == 8)
        assert view.count == 8, "an older session stays put while the newest grows"

        await pilot.press("right_square_bracket")
        await wait_for(pilot, lambda: view.count == 2)
        assert "session 2 of 2 (the newest)" in shown(app, "#transcript-status")


async def test_a_long_transcript_reads_only_the_messages_it_shows(tmp_path: Path) -> None:
    fake = FakeSupervisor(tmp_path)
    messages: list[dict[str, Any]] = []
    for i in range(2500):
        messages.append(tool_call(f"c{i}", "bash", command=f"sed -n {i},+40p src/db.py"))
        messages.append(tool_result(f"c{i}", "bash", "\n".join(f"row {j}" for j in range(40))))
    write_member_files(fake, messages=messages)
    app = deterministic_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_detail(pilot, fake, messages=5000)
        view = screen.query_one(TranscriptView)
        await pilot.pause()
        assert rows(view)[-1].startswith("▸ ← bash · 40 lines: row 0")
        reader = screen.reader
        assert reader is not None
        described = len(reader._cache)
        assert described <= 2 * view.size.height, f"{described} messages parsed for one screen"
        await pilot.press("home")
        assert rows(view)[0].startswith("▸ → bash: sed -n 0,+40p")
        await pilot.press("pagedown", "pagedown")
        assert view.cursor > 0
        assert len(reader._cache) <= 4 * view.size.height


async def test_a_transcript_that_appears_later_is_picked_up(tmp_path: Path) -> None:
    fake = FakeSupervisor(tmp_path)
    app = deterministic_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        fake.emit("run-start", at=0, members=6, model=fake.settings.gateway.model)
        await wait_for(pilot, lambda: app.query_one(MemberTable).row_count == 6)
        screen = await enter_member(pilot, "member-2")  # not spawned yet: no session
        await wait_for(pilot, lambda: "no messages yet" in shown(app, "#transcript-status"))
        assert "sessions/member-2/ (none yet)" in shown(app, "#transcript-heading")
        await pilot.press("t")
        await wait_for(
            pilot, lambda: any("has no transcript yet" in n.message for n in app._notifications)
        )
        write_member_files(fake)  # its session begins (the fake leaves it to this file)
        fake.spawn("member-2", at=12)
        view = screen.query_one(TranscriptView)
        await wait_for(pilot, lambda: view.count == len(MEMBER_2_SESSION))
        assert view.following and "20250101T120012-aaaaaa.jsonl" in shown(
            app, "#transcript-heading"
        )
        await wait_for(pilot, lambda: screen.query_one(LogTail).count == 4)


async def test_x_on_the_detail_screen_is_greyed_for_an_exited_member(tmp_path: Path) -> None:
    fake = FakeSupervisor(tmp_path)
    app = deterministic_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        # Seven answers, six of them answered by a result (`play_six`).
        screen = await open_detail(pilot, fake, messages=13, member="member-4")
        assert "exited: completed" in shown(app, "#detail-now")
        assert screen.check_action("reset", ()) is None
        await pilot.press("x")
        assert app.screen is screen, "no confirmation for a member with no session"
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        other = await enter_member(pilot, "member-3")
        assert other.check_action("reset", ()) is True, "a paused session can be reset"


@pytest.mark.slow  # a real run in the app (6-16 s): `pytest -m slow`
@pytest.mark.e2e
async def test_end_to_end_x_resets_a_real_member_and_its_detail_follows_the_new_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real supervisor, gateway and members on the scripted stub model, hosted by the
    app: the detail screen reads the member's real transcript and log, and `x` resets it."""
    monkeypatch.setenv("HORDE_GATEWAY_BACKOFF_MS", "20")
    with StubThread(policy=AgentPolicy(CLAIMING_PLANS)) as stub:
        cfg = settings(stub, deliverable=False, postmortem=False)
        sup = Supervisor(tmp_path, RunRequest("Review app.py", 2, verifier=False), cfg)
        app = HordeApp(sup, config=AppConfig.deterministic(NOW))
        async with app.run_test(size=SIZE) as pilot:
            member = sup.members["member-2"]
            await wait_for(pilot, lambda: member.status == "running" and member.turns >= 2, 90)
            screen = await enter_member(pilot, "member-2")
            view = screen.query_one(TranscriptView)
            await wait_for(pilot, lambda: view.count >= 4, 30)  # system, task, call, result
            assert screen.reader is not None and screen.reader.message(0).kind == "system"
            assert any(r.startswith("▸ → horde ") for r in rows(view)), rows(view)
            await wait_for(pilot, lambda: screen.query_one(LogTail).count >= 1, 30)
            first_session = screen.reader.path if screen.reader else None

            await pilot.press("x")
            # The modal's buttons mount a refresh after it (a loaded machine shows it).
            await wait_for(
                pilot,
                lambda: isinstance(app.screen, ChoiceScreen) and bool(app.screen.query("#reset")),
            )
            await pilot.click("#reset")
            await wait_for(pilot, lambda: member.resets == 1 and member.attempt == 2, 30)
            await wait_for(
                pilot, lambda: screen.reader is not None and screen.reader.path != first_session, 30
            )
            assert "session 2 of 2 (the newest)" in shown(app, "#transcript-status")
            assert "attempt 2 (resets 1)" in shown(app, "#detail-facts")
            await wait_for(
                pilot,
                lambda: "--- spawn member-2 attempt 2" in _log_text(screen.query_one(LogTail)),
                30,
            )
            await sup.stop_hard()
            await wait_for(pilot, lambda: isinstance(app.screen, ReportScreen), 120)
            await pilot.pause()
    kinds = [
        json.loads(x).get("kind") for x in (sup.run_dir / "events.jsonl").read_text().splitlines()
    ]
    assert "reset-requested" in kinds and "member-reset" in kinds


def _log_text(tail: LogTail) -> str:
    assert tail.source is not None
    return "\n".join(tail.source.line(i) for i in range(tail.count))


async def test_with_the_file_watcher_on_appends_show_without_any_event(tmp_path: Path) -> None:
    """The app's watchfiles watcher wakes the detail screen: no supervisor event needed."""
    fake = FakeSupervisor(tmp_path)
    path = write_member_files(fake)
    app = HordeApp(fake, config=replace(AppConfig.deterministic(NOW), watch_files=True))
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_detail(pilot, fake, messages=len(MEMBER_2_SESSION))
        view = screen.query_one(TranscriptView)
        tail = screen.query_one(LogTail)
        append(path, tool_result("c3", "read", "def build_query(name): ..."))
        with open(fake.run_dir / "member-2.log", "a") as fh:
            fh.write("member-2: tool read src/api/users.py ok\n")
        await wait_for(pilot, lambda: view.count == len(MEMBER_2_SESSION) + 1)
        await wait_for(pilot, lambda: tail.count == 5)
        assert view.following


async def test_a_rewritten_transcript_or_log_is_shown_afresh(tmp_path: Path) -> None:
    fake = FakeSupervisor(tmp_path)
    write_member_files(fake)
    app = deterministic_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_detail(pilot, fake, messages=len(MEMBER_2_SESSION))
        view, tail = screen.query_one(TranscriptView), screen.query_one(LogTail)
        await wait_for(pilot, lambda: tail.count == 4)
        write_member_files(
            fake, messages=[{"role": "user", "content": "rewritten"}], log="one line\n"
        )
        fake.tool("member-2", 150, "bash", "bash: ls")
        await wait_for(pilot, lambda: view.count == 1 and tail.count == 1)
        assert rows(view) == ["  user", "  rewritten"]
        assert tail.render_line(0).text.startswith("one line")
