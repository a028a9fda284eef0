"""Member detail: what one member is doing now, its transcript paged inline, its log tail.

Live: the activity lines repaint whenever the app applies a batch of supervisor events
(the app's `revision` counter) and on the clock tick, from the same `MemberState` the
table shows; the files are looked at then too, and when the app's watcher says they
changed (`files_revision`). The transcript (the member's newest session, `runs/<id>/sessions/<member>/`)
and the log (`runs/<id>/<member>.log`) are files that only grow: a thread worker indexes
what was appended since the last look (`TranscriptReader`, `LineIndex`) and the widgets
read only the rows on screen. A reset starts a new session; the view moves to it.
Escape goes back to the run screen.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Footer, Header, Static

from horde_tui.screens.base import HordeScreen, shown_path
from horde_tui.screens.describe import STOPPABLE_STATUSES
from horde_tui.store.activity import Activity, activity, last_write, next_step
from horde_tui.store.causes import STATUS_CLASSES, status_class
from horde_tui.store.display import MemberRow, format_elapsed, format_tokens
from horde_tui.store.linefile import LineIndex
from horde_tui.store.members import MemberState
from horde_tui.store.transcript import sessions
from horde_tui.view.members import stall_rule
from horde_tui.view.transcript import TranscriptReader
from horde_tui.widgets.log_tail import LogTail
from horde_tui.widgets.transcript_view import TranscriptView

if TYPE_CHECKING:
    from horde_tui.view.source import RunSource


def reset_applies(live: bool, source: RunSource, state: MemberState | None) -> bool:
    """A reset needs a live run that is not stopping and a member with a session to end
    (the supervisor refuses the rest too; the keys and the palette do not offer them)."""
    return (
        live
        and source.stop_reason is None
        and state is not None
        and state.status in STOPPABLE_STATUSES
    )


@dataclass
class MemberFiles:
    """What the file worker found: the session it indexed, whether it is a new one, its
    number (from 1) and how many sessions the member has had."""

    reader: TranscriptReader | None
    new_session: bool
    number: int
    sessions: int


class MemberDetailScreen(HordeScreen):
    """One member, live."""

    AUTO_FOCUS = "#transcript"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back", id="detail-back"),
        Binding(
            "t",
            "transcript",
            "Transcript",
            id="detail-transcript",
            tooltip="focus the transcript and follow its newest message",
        ),
        Binding("x", "reset", "Reset", id="detail-reset", tooltip="reset this member (asks first)"),
        Binding("l", "log", "Log", id="detail-log", tooltip="focus the log tail"),
        Binding(
            "left_square_bracket",
            "older_session",
            "Older session",
            show=False,
            key_display="[",
            id="detail-older-session",
            tooltip="the transcript of the session before this one (an earlier attempt)",
        ),
        Binding(
            "right_square_bracket",
            "newer_session",
            "Newer session",
            show=False,
            key_display="]",
            id="detail-newer-session",
            tooltip="the next session's transcript; from the newest on, follow the newest",
        ),
    ]

    def __init__(self, source: RunSource, name: str) -> None:
        super().__init__(classes="member-detail")
        self.source = source
        self.member = name
        self.reader: TranscriptReader | None = None
        self.session_pick: int | None = None
        """The session shown (index, oldest first), or None: the newest, whichever it is."""
        self.session_number = 0
        self.session_count = 0
        self.log_index = LineIndex(source.run_dir / f"{name}.log", transactions=False)
        self._indexing = False
        """A file worker is running: indexes are not safe to grow from two threads."""
        self._again = False
        """Files changed while the worker ran: index once more when it is done."""

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("", id="detail-title", markup=False)
        yield Static("", id="detail-facts", markup=False)
        yield Static("", id="detail-now", markup=False)
        yield Static("", id="detail-next", markup=False)
        yield Static("", id="detail-message", markup=False)
        # Paths from the run folder: the title names the run, and 80 columns hold them.
        yield Static(
            f"Transcript · sessions/{self.member}/ (none yet)",
            id="transcript-heading",
            classes="detail-heading",
            markup=False,
        )
        yield TranscriptView(id="transcript")
        yield Static("", id="transcript-status", markup=False)
        yield Static(
            f"Log · {self.log_index.path.name}",
            id="log-heading",
            classes="detail-heading",
            markup=False,
        )
        yield LogTail(id="log-tail")
        # No palette key on the right (ctrl+p still opens it): at 80 columns it was
        # drawn over `q Quit`.
        yield Footer(compact=True, show_command_palette=False)

    @property
    def transcript(self) -> TranscriptView:
        return self.query_one(TranscriptView)

    @property
    def log_tail(self) -> LogTail:
        return self.query_one(LogTail)

    def on_mount(self) -> None:
        self.log_tail.show(self.log_index)
        self.watch(self.app, "revision", self.repaint, init=False)
        self.watch(self.app, "files_revision", self.files_moved, init=False)
        config = self.horde_app.config
        if config.tick_s > 0:
            self.set_interval(config.tick_s, self.repaint)
        self.repaint()

    def on_unmount(self) -> None:
        self.workers.cancel_group(self, "detail-files")
        if self.reader is not None:
            self.reader.close()
        self.log_index.close()

    # -- the files ---------------------------------------------------------------------------

    def files_moved(self) -> None:
        """The app's watcher saw files change: look again if they may be ours (the
        member's log or anything in its session folder; None means it cannot tell)."""
        paths = self.horde_app.changed_paths
        folder = self.source.run_dir / "sessions" / self.member
        if paths is None or any(
            p == self.log_index.path or p.parent == folder or p == folder for p in paths
        ):
            self.reload_files()

    def reload_files(self) -> None:
        """Index what the transcript and the log gained, off the UI thread; one worker at
        a time, and one more run if asked meanwhile (never two threads on one index)."""
        if self._indexing:
            self._again = True
            return
        self._indexing, self._again = True, False
        self.run_worker(self._index_files, thread=True, group="detail-files", exit_on_error=False)

    def _index_files(self) -> None:
        found = sessions(self.source.run_dir, self.member)
        pick = self.session_pick
        index = pick if pick is not None and pick < len(found) else len(found) - 1
        reader = self.reader
        new_session = bool(found) and (reader is None or reader.path != found[index])
        try:
            if new_session:
                reader = TranscriptReader(found[index])
            if reader is not None:
                reader.refresh()
            self.log_index.refresh()
        except OSError as exc:  # say it once on screen; the next look tries again
            self.app.call_from_thread(self._files_failed, exc)
            return
        files = MemberFiles(reader, new_session, index + 1, len(found))
        self.app.call_from_thread(self._files_indexed, files)

    def _files_failed(self, exc: OSError) -> None:
        self._indexing = False
        self.query_one("#transcript-status", Static).update(f"cannot read the files: {exc}")

    def _files_indexed(self, files: MemberFiles) -> None:
        self._indexing = False
        if not self.is_mounted:
            if files.new_session and files.reader is not None:
                files.reader.close()
            return
        if files.new_session and files.reader is not None:
            if self.reader is not None:
                self.reader.close()
            self.reader = files.reader
            self.transcript.show(files.reader)
            self.query_one("#transcript-heading", Static).update(
                f"Transcript · {files.reader.path.relative_to(self.source.run_dir)}"
            )
        else:
            self.transcript.grew()
        self.session_number, self.session_count = files.number, files.sessions
        self.refresh_bindings()
        self.log_tail.grew()
        self.show_transcript_status()
        if self._again:
            self.reload_files()

    def on_transcript_view_moved(self, event: TranscriptView.Moved) -> None:
        self.show_transcript_status()

    def show_transcript_status(self) -> None:
        view = self.transcript
        if not view.count:
            text = "no messages yet: they appear here as the member works"
        else:
            where = f"message {view.cursor + 1} of {view.count}"
            if view.following:
                state = "following"
            elif view.new_messages:
                state = f"{view.new_messages} new · end to follow"
            else:
                state = "end to follow"
            session = ""
            if self.session_count:
                session = f"session {self.session_number} of {self.session_count}"
                if self.session_pick is None:
                    session += " (the newest)"
                if self.session_count > 1:
                    session += " · [ ] sessions"
            text = " · ".join(p for p in (where, state, session) if p)
        status = self.query_one("#transcript-status", Static)
        status.update(text)  # the footer shows the fold keys
        status.set_class(bool(view.new_messages), "-new")

    # -- the activity ------------------------------------------------------------------------

    def repaint(self) -> None:
        self.reload_files()
        state = self.source.members.get(self.member)
        title = self.query_one("#detail-title", Static)
        if state is None:
            title.update(f"{self.member}: not a member of this run")
            return
        for cls in STATUS_CLASSES:
            title.set_class(False, f"-{cls}")
        title.set_class(True, f"-{status_class(state.status, state.exit_cause)}")
        title.update(f"{state.name} · {state.role} · {state.status}")

        now = self.horde_app.config.clock()
        row = MemberRow.of(state, now)
        facts = [
            f"attempt {state.attempt} (resets {state.resets})",
            f"elapsed {format_elapsed(row.elapsed_s)}",
            f"turns {state.turns}",
            f"tokens {format_tokens(row.tokens)} ({state.prompt_tokens} in, "
            f"{state.completion_tokens} out)",
            f"cost {row.cost}",
            f"pid {state.pid or '-'}",
        ]
        if state.layers:
            facts.append(f"layers {'; '.join(state.layers)}")
        self.query_one("#detail-facts", Static).update(" · ".join(facts))

        doing = activity(state, now)
        if doing is not None:
            now_text = doing.text(now)
        elif state.current_tool:
            now_text = state.tool_summary or state.current_tool
        elif state.exit_cause:
            now_text = f"exited: {state.exit_cause}"
            if state.detail.strip():
                now_text += f": {state.detail.strip()}"
        elif state.status == "running":
            now_text = "thinking (no tool running)"
        else:
            now_text = "not started" if state.status == "pending" else state.status
        self.query_one("#detail-now", Static).update(f"Now: {now_text}")
        self.query_one("#detail-next", Static).update(self._next_step(state, doing, now))
        said = " ".join(state.final_message.split()) or "(nothing yet)"
        self.query_one("#detail-message", Static).update(f"Said: {said}")
        self.refresh_bindings()

    def _next_step(self, state: MemberState, doing: Activity | None, now: float) -> str:
        """What the supervisor will do about the member next, under the run's own stall
        time and call timeout; "" for a member not running."""
        if doing is None:
            return ""
        run_dir = self.source.run_dir
        rule = stall_rule(run_dir)
        wrote = last_write(run_dir, state.name)
        step = next_step(state, doing, now, rule.stall_s, wrote)
        return f"Supervisor: {step}"

    # -- keys --------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "older_session":
            return True if self.session_number > 1 else None
        if action == "newer_session":
            return True if self.session_pick is not None else None
        if action == "reset":
            run = self.horde_app.run_screen
            state = self.source.members.get(self.member)
            return True if run is not None and reset_applies(run.live, self.source, state) else None
        return True

    def action_transcript(self) -> None:
        view = self.transcript
        view.focus()
        view.follow()
        if not view.count:
            folder = shown_path(self.source.run_dir / "sessions" / self.member)
            self.notify(f"{self.member} has no transcript yet; it will appear in {folder}")

    def action_older_session(self) -> None:
        self.session_pick = max(0, self.session_number - 2)
        self.reload_files()

    def action_newer_session(self) -> None:
        following = self.session_number + 1 >= self.session_count
        self.session_pick = None if following else self.session_number
        self.reload_files()

    def action_log(self) -> None:
        self.log_tail.focus()

    def action_reset(self) -> None:
        run = self.horde_app.run_screen
        if run is not None:
            run.confirm_reset(self.member)
