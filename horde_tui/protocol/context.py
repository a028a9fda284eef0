"""What a handler knows about the call: who acts, in which run, with which role."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from horde_tui.common.inputs import whole_number
from horde_tui.store.state import LedgerState, normalize_id
from horde_tui.store.store import ActionRefused, HordeStore

PARENT_ACTORS = frozenset({"parent", "user"})
"""Actors that are not members: people at a shell and the supervisor."""


@dataclass
class ActionContext:
    store: HordeStore
    run: str
    role: str = "member"
    siblings: Mapping[str, Path] = field(default_factory=dict)
    """A swarm's other hordes (`h2` -> directory): reads append their entries, tagged."""

    @property
    def actor(self) -> str:
        return self.store.actor

    @property
    def workdir(self) -> Path:
        return self.store.paths.workdir

    @property
    def is_member(self) -> bool:
        return self.actor not in PARENT_ACTORS

    @property
    def winding_down(self) -> bool:
        return self.store.stop_clean_requested(self.run)

    def next_event_id(self) -> str:
        """The E# this call's intent event will get.

        Only meaningful inside `HordeStore.transact`'s decision, which runs under the lock
        after the run's event log caught up and before the intent is appended: evidence
        takes the id of the event that stores its full submission.
        """
        return self.store.events(self.run).next_id()

    def event_exists(self, event_id: str) -> bool:
        """True when `event_id` (E#) is an event of this run."""
        number = whole_number(event_id[1:])
        return number is not None and 1 <= number <= self.store.events(self.run).count


def resolve(state: LedgerState, raw: str | None, kind: str, field: str = "id") -> str:
    """Turn a user-supplied id into an existing entry id, or refuse in one line."""
    from horde_tui.store.state import PREFIXES

    prefix = PREFIXES[kind]
    if raw is None or not str(raw).strip():
        raise ActionRefused(f"refused: `{field}` is required; give the {prefix}N to act on")
    ident = normalize_id(str(raw), prefix)
    table = getattr(state, kind)
    if ident is None:
        raise ActionRefused(
            f"refused: `{field}`={raw!r} is not a {prefix}N id; use `{prefix}3` or the bare number"
        )
    if ident not in table:
        # The highest id, not the count: a skipped ledger line leaves a gap in the numbers.
        numbers = [n for k in table if (n := whole_number(k[len(prefix) :])) is not None]
        last = f"{prefix}{max(numbers)}" if numbers else "none yet"
        raise ActionRefused(
            f"refused: {ident} does not exist (highest is {last}); check `horde "
            f"{'list' if kind == 'ideas' else kind}`"
        )
    return ident
