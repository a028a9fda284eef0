"""Rendering helpers shared by the ledger modules."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from horde_tui.store.model import Entity


def one_line(text: str, limit: int = 0) -> str:
    """Collapse whitespace so an entry stays on one markdown line."""
    flat = " ".join(text.split())
    if limit and len(flat) > limit:
        return flat[: limit - 1] + "…"
    return flat


def indented(text: str, prefix: str = "  ") -> str:
    """Continuation lines of a list item, indented so markdown keeps them in the item."""
    lines = text.strip().splitlines()
    return "\n".join(prefix + line if line.strip() else "" for line in lines)


def stamp(ts: str) -> str:
    """`2026-11-29T22:10:03.123Z` -> `2026-11-29 22:10:03` for people."""
    return ts[:19].replace("T", " ")


class RenderCache:
    """Rendered text per entity, reused until the entity's `version` changes.

    For reads that render a filtered subset of a ledger (`list` by owner); the projection
    files keep their own incremental pieces (`horde_tui.store.projection`).
    """

    def __init__(self) -> None:
        self._cache: dict[str, tuple[int, str]] = {}

    def get(self, entity: Entity, render: Callable[[Entity], str]) -> str:
        """Cached text of `entity`, rendered again only after the fold touched it."""
        hit = self._cache.get(entity.id)
        if hit is not None and hit[0] == entity.version:
            return hit[1]
        text = render(entity)
        self._cache[entity.id] = (entity.version, text)
        return text
