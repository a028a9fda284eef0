"""Reusable Textual widgets for horde-tui (render data only; no I/O, no run logic)."""
