"""Text measured in terminal cells, not code points.

A model's text reaches fixed columns (a member's tool summary, a refused action's name):
a CJK character or an emoji takes two cells, so widths counted with `len` let such a
value push every later column of its line to the right. Every padding and cut of a
column goes through here.
"""

from __future__ import annotations

from rich.cells import cell_len, set_cell_size

__all__ = ["cell_len", "clip", "cut", "pad"]


def cut(text: str, width: int) -> str:
    """`text` cut to at most `width` cells (a wide character split at the edge becomes a
    space, so a cut text is exactly `width` cells)."""
    return text if cell_len(text) <= width else set_cell_size(text, max(0, width))


def clip(text: str, width: int) -> str:
    """One line of at most `width` cells, with an ellipsis when cut."""
    flat = " ".join(text.split())
    if cell_len(flat) <= width:
        return flat
    return set_cell_size(flat, max(0, width - 1)) + "…"


def pad(text: str, width: int) -> str:
    """`text` followed by spaces up to `width` cells (never cut)."""
    return text + " " * max(0, width - cell_len(text))
