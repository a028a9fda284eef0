"""The one thing every horde screen needs from its app: the typed `HordeApp`."""

from __future__ import annotations

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
