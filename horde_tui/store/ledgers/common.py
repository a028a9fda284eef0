"""Rendering helpers shared by the ledger modules."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from horde_tui.store.model import Entity
    from horde_tui.store.state import LedgerState

Fold = Callable[["LedgerState", dict[str, Any]], None]


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

    Without it, regenerating FINDINGS.md after each write would re-render every finding,
    and a write at 10,000 entries would cost a hundred times one at 100.
    """

    def __init__(self) -> None:
        self._cache: dict[str, tuple[tuple[int, object], str]] = {}

    def get(self, entity: Entity, render: Callable[[Entity], str], extra: object = None) -> str:
        """Cached text of `entity`; `extra` is any outside state the rendering depends on."""
        stamp = (entity.version, extra)
        hit = self._cache.get(entity.id)
        if hit is not None and hit[0] == stamp:
            return hit[1]
        text = render(entity)
        self._cache[entity.id] = (stamp, text)
        return text

    def join(self, entities: Iterable[Entity], render: Callable[[Entity], str]) -> list[str]:
        return [self.get(e, render) for e in entities]
