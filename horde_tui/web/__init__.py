"""The run in a browser: one page renderer (`pages`), a static export (`export`) and a
live read-only server (`serve`). Textual-free: it reads runs through `horde_tui.view`
the way the app does, so a page and a screen never disagree."""
