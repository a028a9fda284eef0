"""The project scope's data: the project ledgers (`.horde/*.md`, what single runs share)
across every run, each entry with the run that wrote it, the concerns as rows, and who
cited each resource in a live run (a swarm's hordes keep ledgers of their own, so they
are not in this scope).

A resource is cited where an entry's text names its R#: the ideas, board posts,
findings (with their evidence), facts and claims of a run that is still live, each
credited to the member who wrote it."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

from horde_tui.store.state import LedgerState

PROJECT_PAGES = ("ideas", "board", "findings", "facts", "claims", "resources", "concerns")
"""The project scope's pages (the project has the ledgers only)."""
_CITE = re.compile(r"\bR([0-9]+)\b")


def _tables(state: LedgerState) -> dict[str, dict[str, Any]]:
    return {
        "ideas": state.ideas,
        "findings": state.findings,
        "facts": state.facts,
        "claims": state.claims,
        "resources": state.resources,
        "concerns": state.concerns,
    }


def entry_runs(state: LedgerState, kind: str) -> dict[str, str]:
    """Each entry of `kind` -> the run that wrote it."""
    if kind == "board":
        return {p.id: p.run for p in state.posts}
    return {key: entry.run for key, entry in _tables(state).get(kind, {}).items()}


def concern_rows(state: LedgerState) -> list[tuple[str, str, str, str]]:
    """(slug, by, run, definition) of every concern, newest first."""
    found = sorted(state.concerns.values(), key=lambda c: c.seq, reverse=True)
    return [(c.id, c.by, c.run, c.definition) for c in found]


def _writings(state: LedgerState) -> Iterator[tuple[str, str, str]]:
    """(run, author, text) of every entry a member wrote."""
    for idea in state.ideas.values():
        yield idea.run, idea.by, idea.text
    for post in state.posts:
        yield post.run, post.by, post.text
    for finding in state.findings.values():
        yield finding.run, finding.by, f"{finding.text}\n{finding.evidence}"
    for fact in state.facts.values():
        yield fact.run, fact.by, fact.text
    for claim in state.claims.values():
        yield claim.run, claim.by, claim.text


def citers(state: LedgerState, live_runs: Iterable[str]) -> dict[str, dict[str, list[str]]]:
    """R# -> {live run -> the members who cited it there, in first-citation order}."""
    live = set(live_runs)
    out: dict[str, dict[str, list[str]]] = {}
    for run, author, text in _writings(state):
        if run not in live:
            continue
        for number in dict.fromkeys(_CITE.findall(text or "")):
            ident = f"R{int(number)}"
            if ident in state.resources:
                names = out.setdefault(ident, {}).setdefault(run, [])
                if author not in names:
                    names.append(author)
    return out
