"""Checks shared by several actions: paths, wind-down, negative results, concern slugs
and cleanup commands (size and content bounds of every field are in `bounds`). Each raises `ActionRefused` with one line that
names what was refused, the rule, and what to do instead.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

from horde_tui.store.state import LedgerState
from horde_tui.store.store import ActionRefused
from horde_tui.store.textmatch import jaccard, tokens

WIND_DOWN_REFUSED = frozenset({"idea", "claim", "assert", "resource"})

_NEGATIVE = re.compile(
    r"\b(no (?:bugs?|issues?|vulnerabilit(?:y|ies)|problems?|evidence|findings?|defects?)"
    r"(?: (?:were |was )?(?:found|exist|present))?"
    r"|nothing (?:found|to report|exploitable|wrong)"
    r"|not (?:vulnerable|exploitable|reproducible|affected|applicable|an issue|a bug)"
    r"|(?:is|are|was) safe|false positive|ruled out|confirmed negative|does not (?:apply|exist|occur)"
    r"|cannot be (?:exploited|reproduced)|could not (?:reproduce|find))\b",
    re.I,
)
_POSITIVE_HINT = re.compile(
    r"\b(F\d+|found (?:a|an|the|\d+)|filed|confirmed (?!negative|not\b))\b", re.I
)
"""A result that names a finding or a confirmed bug is positive even if it also says "no ..."
("confirmed not exploitable" is still a negative, hence the look-ahead)."""


def check_wind_down(action: str, winding_down: bool) -> None:
    if winding_down and action in WIND_DOWN_REFUSED:
        raise ActionRefused(
            f"refused: `{action}` during wind-down (a clean stop was requested); finish "
            "what you hold: file findings, mark ideas done or rule-out, and post a summary"
        )


def is_confirmed_negative(result: str) -> bool:
    """True when a `done` result reads as "looked, and it is not there"."""
    return bool(_NEGATIVE.search(result)) and not _POSITIVE_HINT.search(result)


def inside_workdir(workdir: Path, raw: str) -> Path:
    """Resolve `raw` against the working directory; refuse anything outside it or in .horde/."""
    candidate = Path(os.path.expanduser(raw))
    if not candidate.is_absolute():
        candidate = workdir / candidate
    resolved = Path(os.path.realpath(candidate))
    root = Path(os.path.realpath(workdir))
    if resolved != root and root not in resolved.parents:
        raise ActionRefused(
            f"refused: path {raw!r} is outside the working directory {root} (path "
            "containment); use a path inside it"
        )
    return resolved


_SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


def slug_words(slug: str) -> frozenset[str]:
    return frozenset(w for w in re.split(r"[-_\s]+", slug.lower()) if w)


def normalize_slug(raw: str) -> str:
    return "-".join(re.split(r"[-_\s]+", raw.strip().lower())).strip("-")


def check_new_concern(state: LedgerState, slug: str, definition: str, allow_new: bool) -> None:
    """Refuse a malformed slug, a missing definition, or a look-alike of an existing slug."""
    if not _SLUG.match(slug) or len(slug) > 60:
        raise ActionRefused(
            f"refused: concern {slug!r} is not a slug (concerns rule); use lower-case words "
            "joined by '-', e.g. 'sql-injection'"
        )
    if not definition.strip():
        known = ", ".join(sorted(state.concerns)) or "none yet"
        raise ActionRefused(
            f"refused: concern `{slug}` is new and needs `concernDef` (concerns rule); define "
            f"it, or use an existing slug: {known}"
        )
    if allow_new:
        return
    words = slug_words(slug)
    def_words = tokens(definition)
    for other, concern in state.concerns.items():
        other_words = slug_words(other)
        reordered = words == other_words
        added_or_dropped = (words < other_words or other_words < words) and min(
            len(words), len(other_words)
        ) >= 1
        same_definition = jaccard(def_words, tokens(concern.definition)) >= 0.8
        if reordered or added_or_dropped or same_definition:
            why = (
                "reordered words"
                if reordered
                else "added or dropped words"
                if added_or_dropped
                else "a near-identical definition"
            )
            raise ActionRefused(
                f"refused: concern `{slug}` looks like existing `{other}` ({why}); file under "
                f"`{other}`, or pass concernNew: true if it is really a different concern"
            )


def check_cleanup(command: str, paths_to_protect: list[Path]) -> None:
    """`cleanup` tears down external runtime objects (containers, servers), never files.

    The command is parsed by the member shell's refusal list (`cleanup_refusal`), so a
    wrapper (`env`, `nohup`, `timeout 5`), a nested `bash -c` or a writer such as
    `sed -i` or `tee FILE` is seen for what it runs."""
    if not command.strip():
        return
    # Imported here: its pattern tables cost a fresh `horde-tui tool` process tens of ms,
    # and only a resource with a cleanup command needs them.
    from horde_tui.common.refusal import cleanup_refusal

    reason = cleanup_refusal(command)
    if reason:
        raise ActionRefused(reason)
    try:
        words = shlex.split(command)
    except ValueError:
        raise ActionRefused(
            "refused: cleanup command does not parse as a shell command (unbalanced quotes); "
            "fix the quoting"
        ) from None
    for word in words:
        for protected in paths_to_protect:
            if str(protected) in word or ".horde" in word:
                raise ActionRefused(
                    "refused: cleanup commands may not touch this run's tree (resources rule); "
                    "clean up only the external object the resource names"
                )
