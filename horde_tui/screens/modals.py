"""Small modal screens: quit a live run, confirm a hard stop or a reset, the F1 key help.

Every modal answers with `dismiss(choice)` and escape always means "do nothing", so a
stray key never stops a run; a dialog left without acting says that nothing was done.
"""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, Static


class ChoiceScreen(ModalScreen[str | None]):
    """A question with a few buttons; dismisses with the pressed button's id, or None."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="modal-cancel")
    ]
    AUTO_FOCUS = ".-safe-choice"
    """Enter on a fresh dialog must not stop anything: the safe choice has the focus."""

    def __init__(
        self,
        question: str,
        detail: str,
        choices: list[tuple[str, str, str, bool]],
        safe_choice: str = "cancel",
        untouched: str = "Cancelled: nothing was done.",
    ):
        """`choices` are (id, label, button variant, enabled), in display order;
        `safe_choice` is focused first (it must stop nothing); `untouched` is said when
        the dialog is left with Cancel or escape, so a person knows nothing happened."""
        super().__init__(classes="choice-screen")
        self.question = question
        self.detail = detail
        self.choices = choices
        self.safe_choice = safe_choice
        self.untouched = untouched

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static(self.question, classes="dialog-question", markup=False)
            yield Static(self.detail, classes="dialog-detail", markup=False)
            with Horizontal(classes="dialog-buttons"):
                for ident, label, variant, enabled in self.choices:
                    yield Button(
                        label,
                        id=ident,
                        variant=variant,  # type: ignore[arg-type]
                        disabled=not enabled,
                        classes="-safe-choice" if ident == self.safe_choice else None,
                    )

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "cancel":
            self.action_cancel()
        else:
            self.dismiss(event.button.id)

    def action_cancel(self) -> None:
        self.notify(self.untouched)
        self.dismiss(None)


def quit_screen(run_id: str, hosted: bool, demo: bool = False) -> ChoiceScreen:
    """Asked when quitting with a live run on screen: stop it clean, stop it hard, or
    detach (quit and leave it going).

    A hosted run's members are this process's children, so detaching it is a handoff:
    they stop where they are, and a detached `horde-tui resume` carries their sessions
    on in a process of its own (the run's report is written there, not here). The
    demo cannot be detached: its model runs inside this app."""
    stops = (
        "Stop clean: members wrap up and the report is written, then the app quits. "
        "Stop hard: members are terminated now, the report is written from what is on disk."
    )
    if hosted:
        detach = (
            "Detach: not for the demo: its model runs inside this app and ends with it."
            if demo
            else "Detach: members pause their sessions, a background supervisor carries "
            f"them on, the app quits (horde-tui attach {run_id} comes back to it)."
        )
        return ChoiceScreen(
            f"Run {run_id} is hosted in this app.",
            f"{stops}\n{detach}",
            [
                ("stop-clean", "Stop clean", "primary", True),
                ("stop-hard", "Stop hard", "error", True),
                ("detach", "Detach", "warning", not demo),
                ("cancel", "Cancel", "default", True),
            ],
        )
    return ChoiceScreen(
        f"Run {run_id} runs in another process.",
        f"Detach: quit and leave the run going (horde-tui attach {run_id} comes back to it). "
        "Stop clean or stop hard: asked of its supervisor through control/; the app quits "
        "once it answers.",
        [
            ("detach", "Detach", "primary", True),
            ("stop-clean", "Stop clean", "warning", True),
            ("stop-hard", "Stop hard", "error", True),
            ("cancel", "Cancel", "default", True),
        ],
        safe_choice="detach",
    )


def stop_hard_screen(member: str | None, member_running: bool) -> ChoiceScreen:
    """Confirm a hard stop (SIGTERM, SIGKILL after 5 s) of one member or the whole run."""
    label = member or "the member"
    return ChoiceScreen(
        "Stop hard?",
        f"Terminates at once (SIGTERM, SIGKILL after 5 s). {label} loses unsaved work; "
        "stopping the whole run writes the report from what is on disk.",
        [
            ("member", f"Stop {label}", "warning", member is not None and member_running),
            ("all", "Stop the run", "error", True),
            ("cancel", "Cancel", "default", True),
        ],
    )


def stop_clean_screen(run_id: str) -> ChoiceScreen:
    """Confirm a clean stop of the whole run: a stopped run cannot be resumed."""
    return ChoiceScreen(
        "Stop the run clean?",
        f"Members wrap up (90 s grace), then run {run_id}'s report is written. A stopped "
        "run cannot be resumed.",
        [
            ("stop-clean", "Stop clean", "warning", True),
            ("cancel", "Cancel", "default", True),
        ],
        untouched=f"Cancelled: nothing was done, run {run_id} goes on.",
    )


def reset_screen(member: str) -> ChoiceScreen:
    """Confirm a reset: the member's session is killed and a fresh one started."""
    return ChoiceScreen(
        f"Reset {member}?",
        f"Ends {member}'s current session now (it loses unsaved work), returns its claimed "
        "ideas to the pool and starts a fresh attempt. The reset counts in its resets.",
        [
            ("reset", f"Reset {member}", "warning", True),
            ("cancel", "Cancel", "default", True),
        ],
        untouched=f"Cancelled: nothing was done, {member} was not reset.",
    )


class HelpScreen(ModalScreen[None]):
    """F1: every key of the screen underneath, with what it does and whether it applies."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss_help", "Close", id="help-close"),
        Binding("f1", "dismiss_help", "Close", show=False, id="help-toggle"),
    ]

    def __init__(self, under: Screen[object]) -> None:
        super().__init__(classes="help-screen")
        self.under = under

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog help-dialog"):
            yield Static("Keys", classes="dialog-question")
            with VerticalScroll():
                yield Static(self.key_table(), id="help-keys")
            yield Static(
                "escape closes · greyed keys do not apply right now", classes="dialog-detail"
            )

    def key_table(self) -> Table:
        """The keys in four sections: this screen, its tabs, everywhere, the focused widget."""
        order = ["this screen", "tabs", "everywhere"]
        rows: dict[str, list[tuple[str, Text]]] = {}
        seen: set[tuple[str, str]] = set()
        for node, binding, enabled, _tooltip in self.under.active_bindings.values():
            key = self.app.get_key_display(binding)
            # Only the app's own keys (they all carry an id), not Textual's navigation.
            if binding.id is None or (key, binding.action) in seen:
                continue
            seen.add((key, binding.action))
            if binding.group:
                section = binding.group.description
            elif node is self.app:
                section = "everywhere"
            elif node is self.under:
                section = "this screen"
            else:
                section = "focused widget"
            text = binding.tooltip or binding.description
            does = Text(text[:1].upper() + text[1:], style="" if enabled else "dim")
            rows.setdefault(section, []).append((key, does))
        table = Table(box=None, show_header=False, padding=(0, 1), expand=True)
        table.add_column("key", no_wrap=True, style="bold", min_width=8)
        table.add_column("does", ratio=1)
        for section in sorted(rows, key=lambda s: order.index(s) if s in order else len(order)):
            table.add_row(Text(section, style="bold underline"), "")
            for key, does in rows[section]:
                table.add_row(key, does)
            table.add_row("", "")
        return table

    def action_dismiss_help(self) -> None:
        self.dismiss(None)
