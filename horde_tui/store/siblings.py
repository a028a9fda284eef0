"""A swarm's sibling hordes, read but never written ("shared read, local write").

Each horde of a swarm keeps its own ledgers under its own lock; its members see what
the other hordes established (facts, resources, closed ideas) so it is not re-derived.
Reading a sibling takes no lock: `HordeStore.refresh` reads complete lines only and
leaves a torn tail (a sibling writer mid-append) for the next look, and nothing here
creates a file in the sibling's directory.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from horde_tui.common.inputs import loads
from horde_tui.store.state import LedgerState
from horde_tui.store.store import HordeStore

SIBLING_ACTOR = "sibling-reader"
"""The actor of the read-only stores; it never writes, so it never appears in a ledger."""

_readers: dict[Path, HordeStore] = {}
"""One store per sibling directory per process, so each read folds only what is new."""


def parse_siblings(text: str) -> dict[str, Path]:
    """`HORDE_SIBLINGS` (a JSON object `{"h2": "/abs/.horde/swarms/<id>/h2"}`) -> paths."""
    if not text.strip():
        return {}
    try:
        value = loads(text)
    except ValueError as exc:
        raise ValueError(f"not a JSON object of horde name -> directory ({exc})") from None
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ValueError('expected a JSON object of horde name -> directory, e.g. {"h2": "/p"}')
    return {name: Path(path) for name, path in sorted(value.items())}


def siblings_json(siblings: Mapping[str, Path]) -> str:
    """The `HORDE_SIBLINGS` value for `siblings` (absolute paths)."""
    return json.dumps({name: str(Path(path).resolve()) for name, path in siblings.items()})


def sibling_states(siblings: Mapping[str, Path]) -> list[tuple[str, LedgerState]]:
    """Each sibling's current ledger state, in horde order; a sibling whose ledger does
    not exist yet (it has not started) reads as empty."""
    out: list[tuple[str, LedgerState]] = []
    for name, root in siblings.items():
        store = _readers.get(root)
        if store is None:
            store = _readers[root] = HordeStore(root, SIBLING_ACTOR)
        store.refresh()
        out.append((name, store.state))
    return out


def tagged(horde: str, entries: Sequence[str]) -> list[str]:
    """Rendered entries with `[hN]` in front, so an entry is never taken for this horde's
    (ids such as T3 or R1 repeat in every horde)."""
    return [f"[{horde}] {entry}" for entry in entries]
