"""The launch form: `n` on the runs list (or "New run" in the palette) starts a run.

The form asks what `horde-tui run`/`plan` take (count, prompt, plan layers, model,
thinking, role preset, per-member models, verifier, until-stop, deadline) and checks them with `launch.check_launch`, the
CLI's own check, so the form cannot accept what the command refuses or the reverse.
Each refusal is one line under its field; what the user typed stays. A passing launch
is hosted in this app, as `horde-tui run` does, unless "detached" is on: then the
supervisor starts as its own process (`run --detach`) and the app attaches to it, so
the run outlives the terminal. A count of `H/M` starts a swarm, hosted in this app
(`LaunchSwarm`) or detached, and opens the swarm screen; one live swarm or run
at a time.

The check reads `.horde/` and a detached start waits for the run to go live, so both
run in a thread worker; the form says "starting..." meanwhile and ignores a second enter.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Button, Checkbox, Footer, Header, Input, Label, Select, Static

from horde_tui.common.settings import THINKING_LEVELS, Settings, SettingsError, load_settings
from horde_tui.launch.launch import (
    LaunchCheck,
    RunOptions,
    check_launch,
    detached_argv,
    detached_env,
    start_detached,
)
from horde_tui.presets import NO_PRESET, preset_names
from horde_tui.screens.base import HordeScreen, LaunchRun, LaunchSwarm, OpenRun, shown_path
from horde_tui.screens.commands import ListedCommands
from horde_tui.screens.swarm import SwarmScreen
from horde_tui.store.runs import is_swarm_dir

FIELD_ERRORS = (
    "count",
    "prompt",
    "layers",
    "model",
    "thinking",
    "preset",
    "member_models",
    "max_minutes",
    "run",
)
"""Refusal fields with a line of their own; any other (a setting from the config file
or the environment) goes on the `run` line at the bottom."""


class FormCheckbox(Checkbox, inherit_bindings=False):
    """A checkbox that toggles on space only, so enter anywhere in the form starts it,
    and reads `[x]` on and `[ ]` off: Textual's box is an `X` either way, told apart
    only by colour, which 16 colours and NO_COLOR lose."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("space", "toggle_button", "Toggle", show=False, id="form-toggle")
    ]

    @property
    def _button(self) -> Content:
        mark = Content.styled("x" if self.value else " ", self.get_visual_style("toggle--button"))
        return Content.assemble("[", mark, "]")


def form_defaults(horde_dir: Path) -> tuple[Settings, str]:
    """The settings a run would get with no override, and the error if they cannot be
    read (the form then starts from the built-in defaults and shows the error)."""
    try:
        return load_settings(horde_dir / "config.toml"), ""
    except SettingsError as exc:
        return Settings(), f"refused: {exc}; fix it there"


class LaunchScreen(HordeScreen):
    """The launch form; see the module docstring."""

    AUTO_FOCUS = "#launch-prompt"
    BINDINGS: ClassVar[list[BindingType]] = [
        # Enter in a text field submits the field (`on_input_submitted`), so it is never
        # shown as this screen's key; ctrl+s says "Start" in the footer from any field.
        Binding("enter", "start", "Start", show=False, id="launch-enter"),
        Binding("ctrl+s", "start", "Start", id="launch-start", tooltip="check and start the run"),
        Binding("escape", "cancel", "Cancel", id="launch-cancel", tooltip="close the form"),
        # The app's `q` would quit from a focused option and lose what was typed.
        Binding("q", "quit_hint", "Quit", show=False, id="launch-q"),
    ]

    def __init__(self, horde_dir: Path) -> None:
        super().__init__(id="launch-screen")
        self.horde_dir = horde_dir
        self.defaults, self.defaults_error = form_defaults(horde_dir)
        self.preset_names = preset_names(horde_dir)
        """Bundled and project presets: the Preset field's choices after `none`."""
        self.busy = False
        """A check or a detached start is running: enter does nothing until it ends."""

    def compose(self) -> ComposeResult:
        d = self.defaults
        yield Header()
        yield Static(f"New run · {shown_path(self.horde_dir)}/", id="launch-title", markup=False)
        with VerticalScroll(id="launch-form"):
            yield from self.row(
                "count",
                "Members",
                Input("3", placeholder="M (1-12) or H/M", id="launch-count", compact=True),
            )
            yield from self.row(
                "prompt",
                "Prompt",
                Input(placeholder="what the members should do", id="launch-prompt", compact=True),
            )
            yield from self.row(
                "layers",
                "Plan layers",
                Input(placeholder="optional: a; b; c", id="launch-layers", compact=True),
            )
            yield from self.row(
                "model",
                "Model",
                Input(
                    d.gateway.model or "",
                    placeholder="litellm model string, e.g. openai/gpt-4o",
                    id="launch-model",
                    compact=True,
                ),
            )
            yield from self.row(
                "thinking",
                "Thinking",
                Select(
                    [(level, level) for level in THINKING_LEVELS],
                    value=d.gateway.thinking,
                    allow_blank=False,
                    id="launch-thinking",
                    compact=True,
                ),
            )
            yield from self.row(
                "preset",
                "Preset",
                Select(
                    [(name, name) for name in self.preset_choices()],
                    value=d.supervisor.preset or NO_PRESET,
                    allow_blank=False,
                    id="launch-preset",
                    compact=True,
                ),
            )
            yield from self.row(
                "member_models",
                "Member models",
                Input(
                    ", ".join(f"{k}={v}" for k, v in d.gateway.member_models.items()),
                    placeholder="optional: member-4=anthropic/claude-sonnet-4-5, ...",
                    id="launch-member-models",
                    compact=True,
                ),
            )
            yield from self.row(
                "max_minutes",
                "Deadline (min)",
                Input(
                    "" if d.supervisor.max_minutes is None else f"{d.supervisor.max_minutes:g}",
                    placeholder="optional: stop clean after this many minutes",
                    id="launch-deadline",
                    compact=True,
                ),
            )
            with Horizontal(classes="form-row form-switches"):
                yield Label("Options", classes="form-label")
                yield FormCheckbox("verifier", True, id="launch-verifier", compact=True)
                yield FormCheckbox("until stop", id="launch-until-stop", compact=True)
                yield FormCheckbox("detached", id="launch-detach", compact=True)
            yield Static(
                "detached: the run is its own process and outlives this app (as run --detach)",
                classes="form-hint",
                markup=False,
            )
            yield Static("", id="launch-run-error", classes="field-error", markup=False)
            with Horizontal(id="launch-buttons"):
                yield Button("Start", id="launch-start", variant="primary", compact=True)
                yield Button("Cancel", id="launch-cancel", compact=True)
                yield Static("", id="launch-status", markup=False)
        yield Footer(compact=True)

    def preset_choices(self) -> list[str]:
        """`none`, the presets here, and a configured name that is none of them (kept,
        so the check refuses it under the field rather than the form dropping it)."""
        configured = self.defaults.supervisor.preset
        extra = [configured] if configured and configured not in self.preset_names else []
        return list(dict.fromkeys([NO_PRESET, *self.preset_names, *extra]))

    def row(self, name: str, label: str, field: Widget) -> Iterator[Widget]:
        """A labelled field and the line under it that says why it was refused."""
        with Horizontal(classes="form-row"):
            yield Label(label, classes="form-label")
            yield field
        yield Static(
            "", id=f"launch-{name.replace('_', '-')}-error", classes="field-error", markup=False
        )

    def on_mount(self) -> None:
        self.show_error("run", self.defaults_error)

    # -- reading and checking ----------------------------------------------------------

    def text(self, ident: str) -> str:
        return self.query_one(f"#{ident}", Input).value.strip()

    def checked(self, ident: str) -> bool:
        return self.query_one(f"#{ident}", Checkbox).value

    def options(self) -> tuple[RunOptions, str | None]:
        """What the form holds, as the CLI would pass it; blank layers mean an open run."""
        thinking = self.query_one("#launch-thinking", Select).value
        preset = self.query_one("#launch-preset", Select).value
        unset = NO_PRESET if self.defaults.supervisor.preset is None else None
        pairs = self.text("launch-member-models").replace(",", " ").split()
        options = RunOptions(
            count=self.text("launch-count"),
            prompt=self.text("launch-prompt"),
            model=self.text("launch-model") or None,
            thinking=thinking if isinstance(thinking, str) else None,
            max_minutes=self.text("launch-deadline") or None,
            # `none` overrides only a configured preset (a flag the run need not carry).
            preset=preset if isinstance(preset, str) and preset != unset else None,
            member_models=pairs or None,
            no_verifier=not self.checked("launch-verifier"),
            until_stop=self.checked("launch-until-stop"),
        )
        return options, self.text("launch-layers") or None

    def show_error(self, name: str, message: str) -> None:
        line = self.query_one(f"#launch-{name.replace('_', '-')}-error", Static)
        line.update(message)
        line.set_class(bool(message), "-shown")

    def show_check(self, check: LaunchCheck) -> None:
        """One line per refused field; what does not fit a field goes on the run line."""
        for name in FIELD_ERRORS:
            self.show_error(name, "")
        lines: dict[str, list[str]] = {}
        for refusal in check.refusals:
            name = refusal.field if refusal.field in FIELD_ERRORS else "run"
            lines.setdefault(name, []).append(refusal.message)
        for name, messages in lines.items():
            self.show_error(name, "\n".join(messages))

    def set_busy(self, busy: bool, status: str = "") -> None:
        self.busy = busy
        self.query_one("#launch-start", Button).disabled = busy
        self.query_one("#launch-status", Static).update(status)
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("start", "cancel") and self.busy:
            return None  # greyed: the check or the detached start is under way
        return True

    # -- actions -----------------------------------------------------------------------

    def action_start(self) -> None:
        if self.busy:  # enter in a text field reaches here without check_action
            return
        options, layers_text = self.options()
        self.set_busy(True, "checking...")
        self.check_and_start(options, layers_text, self.checked("launch-detach"))

    @work(thread=True, exclusive=True, group="launch", exit_on_error=False)
    def check_and_start(self, options: RunOptions, layers_text: str | None, detached: bool) -> None:
        try:
            self.start_in_thread(options, layers_text, detached)
        except Exception as exc:  # an unreadable .horde/: say so rather than stay busy
            message = f"could not start: {type(exc).__name__}: {exc}"
            self.app.call_from_thread(self.start_failed, message)

    def start_in_thread(self, options: RunOptions, layers_text: str | None, detached: bool) -> None:
        check = check_launch(options, self.horde_dir, layers_text)
        if not check.ok or not detached:
            self.app.call_from_thread(self.checked_result, check)
            return
        self.app.call_from_thread(self.set_busy, True, "starting the detached run...")
        argv = detached_argv(options, layers_text)
        started = start_detached(argv, self.horde_dir, env=detached_env(options))
        if started.run_dir is None:
            failed = f"{started.error.splitlines()[0]} (log: {shown_path(started.log)})"
            self.app.call_from_thread(self.start_failed, failed)
        else:
            self.app.call_from_thread(self.opened, started.run_dir)

    def checked_result(self, check: LaunchCheck) -> None:
        self.set_busy(False)
        self.show_check(check)
        if check.ok:
            assert check.request is not None and check.settings is not None
            assert check.count is not None
            self.dismiss_form()
            if check.count.hordes > 1:
                launch: Message = LaunchSwarm(check.request, check.settings, check.count.hordes)
            else:
                launch = LaunchRun(check.request, check.settings)
            self.app.post_message(launch)  # the app hosts it (the form is gone by then)

    def start_failed(self, error: str) -> None:
        self.set_busy(False)
        self.show_error("run", f"refused: {error.splitlines()[0]}")

    def opened(self, run_dir: Path) -> None:
        """The detached start went live: a run (attach to it) or a swarm (its screen,
        which reads the swarm's files whoever hosts it)."""
        self.dismiss_form()
        if is_swarm_dir(run_dir):
            self.app.push_screen(SwarmScreen(run_dir))
        else:
            self.app.post_message(OpenRun(run_dir))

    def dismiss_form(self) -> None:
        if self.app.screen is self:
            self.app.pop_screen()

    def action_cancel(self) -> None:
        if not self.busy:
            self.dismiss_form()

    def action_quit_hint(self) -> None:
        self.notify("q does not quit from the form: escape closes it, ctrl+q quits the app")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_start()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "launch-start":
            self.action_start()
        else:
            self.action_cancel()


def open_launch_form(screen: Screen[object], horde_dir: Path) -> None:
    """Push the form unless it is already showing."""
    if not isinstance(screen.app.screen, LaunchScreen):
        screen.app.push_screen(LaunchScreen(horde_dir))


class LaunchCommands(ListedCommands):
    """The palette's "New run": the same form as `n`."""

    def commands(self) -> Iterator[tuple[str, Callable[[], None], str]]:
        horde_dir = getattr(self.screen, "horde_dir", None)
        if isinstance(horde_dir, Path):
            opener = lambda: open_launch_form(self.screen, horde_dir)  # noqa: E731
            yield "New run", opener, "the launch form (n): count, prompt, model, ..."
