"""Table rows with versions, so a table repaints only the rows (and cells) that changed.

STYLE: "change only cells that differ; never rebuild a DataTable per event". A view
hands out rows with a stable `key` and a `version` that moves whenever the row's content
changes; `diff_rows` tells the app which keys to add, remove and update, and
`changed_cells` which columns of an updated row differ.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class LedgerRow:
    """One ledger entry as a table row."""

    key: str
    """Stable across refreshes: the entry id (`#3`, `F12`, `P40` for a board post)."""
    id: str
    status: str
    owner: str
    text: str
    """The entry's first line, whitespace collapsed."""
    extra: tuple[str, ...] = ()
    """Further cells, named by `LedgerView.columns(kind)`."""
    group: str = ""
    """Heading of the group the row belongs to in the `owner` and `clusters` views (and
    this run / carried facts); `""` in plain views."""
    version: int = 0

    def cells(self) -> tuple[str, ...]:
        return (self.id, self.status, self.owner, self.text, *self.extra)


class Versions:
    """A version counter per row key that moves only when the row's content changes."""

    def __init__(self) -> None:
        self._seen: dict[Hashable, tuple[Any, int]] = {}

    def stamp(self, key: Hashable, content: Any) -> int:
        """The version for `key` with this content: the last one if unchanged, else +1."""
        seen = self._seen.get(key)
        if seen is not None and seen[0] == content:
            return seen[1]
        version = 1 if seen is None else seen[1] + 1
        self._seen[key] = (content, version)
        return version


@dataclass(frozen=True)
class RowDiff:
    """What a table must do to go from one row list to the next."""

    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: tuple[str, ...]
    """Keys present in both whose version moved."""
    reordered: bool
    """The surviving keys are in another order (re-sort or rebuild the table)."""

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed or self.reordered)


def diff_rows(old: Sequence[LedgerRow], new: Sequence[LedgerRow]) -> RowDiff:
    """Compare two row lists by key and version (no cell is compared)."""
    before = {r.key: r.version for r in old}
    after = {r.key: r.version for r in new}
    kept_old = [r.key for r in old if r.key in after]
    kept_new = [r.key for r in new if r.key in before]
    return RowDiff(
        added=tuple(k for k in after if k not in before),
        removed=tuple(k for k in before if k not in after),
        changed=tuple(k for k in kept_new if before[k] != after[k]),
        reordered=kept_old != kept_new,
    )


def changed_cells(old: LedgerRow, new: LedgerRow) -> list[int]:
    """Column positions (in `cells()` order) whose text differs."""
    a, b = old.cells(), new.cells()
    width = max(len(a), len(b))
    return [
        i for i in range(width) if (a[i] if i < len(a) else None) != (b[i] if i < len(b) else None)
    ]
