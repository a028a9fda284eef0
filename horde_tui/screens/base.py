"""The one thing every horde screen needs from its app: the typed `HordeApp`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from textual.screen import Screen

if TYPE_CHECKING:
    from horde_tui.app import HordeApp


class HordeScreen(Screen[None]):
    """A screen of `HordeApp`; `horde_app` gives its typed app (imported lazily: the app
    module imports the screens)."""

    @property
    def horde_app(self) -> HordeApp:
        from horde_tui.app import HordeApp

        assert isinstance(self.app, HordeApp)
        return self.app


def shown_path(path: Path) -> str:
    """A path as a screen shows it: relative to the working directory when inside it
    (`horde-tui` runs where its `.horde/` is), else with `~` for the home directory."""
    cwd, home = Path.cwd(), Path.home()
    if path.is_relative_to(cwd):
        return str(path.relative_to(cwd))
    if path.is_relative_to(home):
        return f"~/{path.relative_to(home)}"
    return str(path)
