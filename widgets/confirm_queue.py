"""`ConfirmQueue`: confirm mode's commands waiting for a person, on the run screen.

Hidden while nothing waits. Otherwise a badge line ("2 commands wait for approval")
and one line per command (member, command, working directory), the first one
highlighted: `y` allows it, `n` refuses it (the member is told "refused by the user"),
`a` allows that member's commands for the rest of the run. The queue is read from the
run's `control/` folder on an interval (`view.confirms`), so a hosted and an attached
run look the same, and decisions go back as control requests from a worker thread.
`Changed` tells the screen which members wait, for their rows' badge. The swarm screen
gives it a reader of every live horde's queue and its own `control/` folder: a line
then names the horde (`h2:member-1`), and so does the decision.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from textual.app import ComposeResult
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Static

from horde_tui.view.confirms import WaitingCommand, send_decision, waiting_commands
from horde_tui.widgets.member_table import MemberRow

BADGE_STATUS = "approve?"
"""What a waiting member's status cell says (the status column is 8 wide)."""
POLL_S = 0.25


class ConfirmQueue(Widget):
    """The queue of commands waiting for a decision (see the module doc)."""

    DEFAULT_CSS = """
    ConfirmQueue {
        height: auto;
        max-height: 7;
        display: none;
        border-top: solid $warning;
    }
    ConfirmQueue.-waiting {
        display: block;
    }
    ConfirmQueue #confirm-badge {
        color: $text-warning;
        text-style: bold;
    }
    ConfirmQueue .confirm-next {
        background: $warning 20%;
    }
    """

    class Changed(Message):
        """The set of members waiting for a decision changed."""

        def __init__(self, members: frozenset[str]) -> None:
            super().__init__()
            self.members = members

    def __init__(
        self,
        folder: Path,
        *,
        read: Callable[[], list[WaitingCommand]] | None = None,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.folder = folder
        """Where decisions are sent: the run's directory, or the swarm's."""
        self.read = read or (lambda: waiting_commands(folder))
        """The commands waiting now (default: the run's in `folder`)."""
        self.waiting: list[WaitingCommand] = []
        self.deciding: set[str] = set()
        """Request ids sent for a decision and not yet gone from `control/`."""

    @property
    def members(self) -> frozenset[str]:
        return frozenset(w.member for w in self.waiting)

    def compose(self) -> ComposeResult:
        yield Static(id="confirm-badge", markup=False)
        yield Static(id="confirm-lines", markup=False)

    def on_mount(self) -> None:
        self.poll()
        self.set_interval(POLL_S, self.poll)

    def poll(self) -> None:
        """Read the queue; repaint and tell the screen only when it changed."""
        try:
            on_disk = self.read()
        except OSError:
            return
        self.deciding &= {w.id for w in on_disk}
        waiting = [w for w in on_disk if w.id not in self.deciding]
        if waiting == self.waiting:
            return
        before = {w.target for w in self.waiting}  # a swarm's names its horde too
        self.waiting = waiting
        self.show()
        if {w.target for w in waiting} != before:
            self.post_message(self.Changed(self.members))

    def show(self) -> None:
        self.set_class(bool(self.waiting), "-waiting")
        if not self.waiting:
            return
        count = len(self.waiting)
        noun = "command waits" if count == 1 else "commands wait"
        self.query_one("#confirm-badge", Static).update(
            f"{count} {noun} for approval · y allow · n refuse · a allow all from this member"
        )
        lines = [f"{w.target}: {_first_line(w.command)}  (in {w.cwd})" for w in self.waiting]
        self.query_one("#confirm-lines", Static).update("\n".join(lines))

    def decide(self, decision: str) -> bool:
        """Send `decision` (`allow`, `refuse`, `allow-all`) for the first waiting
        command; False when nothing waits."""
        if not self.waiting:
            return False
        first = self.waiting[0]
        self.deciding.add(first.id)
        self.waiting = self.waiting[1:]
        self.show()
        self.post_message(self.Changed(self.members))

        def work() -> None:
            text = send_decision(self.folder, decision, first.target)
            self.app.call_from_thread(self.notify, text)

        self.run_worker(work, thread=True, group="confirm", exit_on_error=False)
        return True

    def badge(self, rows: Sequence[MemberRow]) -> list[MemberRow]:
        """`rows` with the status of each member whose command waits set to the badge."""
        members = self.members
        return [replace(r, status=BADGE_STATUS) if r.name in members else r for r in rows]


def _first_line(command: str, width: int = 100) -> str:
    first = command.strip().splitlines()[0] if command.strip() else ""
    more = " ..." if "\n" in command.strip() else ""
    return (first if len(first) <= width else first[: width - 3] + "...") + more
