"""Bounds on every field of a `horde` call: a size cap, the characters allowed, and the
syntax of member names. Checked in one place, `check_fields`, before any handler runs.

Every string field has a cap (`cap_of`: the prose and evidence caps in `params.CAPS`,
`NAME_CAP` for ids, slugs and the rest, `ACTOR_NAME_CAP` for member names) and list
fields hold at most `LIST_CAP` items. Control characters other than newline and tab
are refused: a NUL or an escape sequence in BOARD.md makes the ledger unreadable to
`read` and to people. A refused write still records its intent, but through `clipped`,
so the bytes a cap keeps out never reach `events.jsonl` either.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from horde_tui.protocol.fields import NAME_CAP
from horde_tui.protocol.params import CAPS
from horde_tui.store.paths import ACTOR_NAME_CAP, ACTOR_NAME_RULE, valid_actor_name
from horde_tui.store.store import ActionRefused

LIST_CAP = 100
"""Items in a list field (`cites`, `ideas`, `dependsOn`, `ports`)."""

ACTOR_FIELDS = frozenset({"to", "owner"})
"""Fields that name a member: checked for member-name syntax."""

_FORBIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
"""C0 controls but tab and newline, DEL, C1 controls, and unpaired surrogates (which
cannot be written as UTF-8 at all)."""

_LONG_HINT = "shorten it and put long output in a file under the working directory, cited by path"
_HINTS = {
    "id": "give the entry's id, such as #3 or F2",
    "idea": "give the idea's id, such as #3",
    "deltaOf": "give the entry's id, such as F2 or T4",
    "supersedes": "give the finding's id, such as F2",
    "target": "give the entry's id, such as F2, A1 or E7",
    "concern": "use a short slug such as sql-injection",
    "path": "use a shorter path inside the working directory",
    "cleanup": "put a longer command in a script under the working directory and run that",
    "to": "use a name such as member-2",
    "owner": "use a name such as member-2",
}


def cap_of(name: str) -> int:
    """The size cap, in characters, of field `name` (of each item, for a list field)."""
    if name in ACTOR_FIELDS:
        return ACTOR_NAME_CAP
    return CAPS.get(name, NAME_CAP)


def _hint(name: str) -> str:
    return _HINTS.get(name) or (_LONG_HINT if cap_of(name) > NAME_CAP else "shorten it")


def string_problem(label: str, value: str, cap: int, hint: str) -> str | None:
    """The refusal line for one string over `cap` or holding a forbidden character."""
    if len(value) > cap:
        return (
            f"refused: {label} is {len(value)} characters, over the cap of {cap} (size cap); {hint}"
        )
    bad = _FORBIDDEN.search(value)
    if bad is None:
        return None
    code = f"U+{ord(bad.group()):04X}"
    if 0xD800 <= ord(bad.group()) <= 0xDFFF:
        what, rule = f"unpaired surrogate {code}", "text must be valid Unicode"
    else:
        what = f"control character {code}"
        rule = "newline and tab are the only control characters allowed"
    return (
        f"refused: {label} has {what} at position {bad.start() + 1} (content rule: {rule}); "
        "remove it, and put binary or terminal output in a file under the working "
        "directory, cited by path"
    )


def field_problem(name: str, value: Any) -> str | None:
    """The refusal line for field `name`, or None when it is within bounds."""
    cap, hint = cap_of(name), _hint(name)
    if isinstance(value, str):
        problem = string_problem(f"`{name}`", value, cap, hint)
        if problem is None and name in ACTOR_FIELDS and not valid_actor_name(value):
            problem = (
                f"refused: `{name}`={value!r} is not a member name (names rule: "
                f"{ACTOR_NAME_RULE}); {hint}"
            )
        return problem
    if isinstance(value, list):
        if len(value) > LIST_CAP:
            return (
                f"refused: `{name}` has {len(value)} items, over the cap of {LIST_CAP} "
                "(size cap); list fewer"
            )
        for i, item in enumerate(value, start=1):
            if isinstance(item, str):
                problem = string_problem(f"`{name}` item {i}", item, cap, hint)
                if problem:
                    return problem
    return None


def check_fields(fields: Mapping[str, Any]) -> None:
    """Refuse (one line, `ActionRefused`) the first field out of bounds."""
    for name, value in fields.items():
        problem = field_problem(name, value)
        if problem:
            raise ActionRefused(problem)


def clipped(fields: Mapping[str, Any]) -> dict[str, Any]:
    """`fields` with every string cut to its cap and every list to `LIST_CAP` items, each
    cut saying how much went: what the intent event records of a refused call."""
    out: dict[str, Any] = {}
    for name, value in fields.items():
        cap = cap_of(name)
        if isinstance(value, str):
            value = _clip(value, cap)
        elif isinstance(value, list):
            items = [_clip(v, cap) if isinstance(v, str) else v for v in value[:LIST_CAP]]
            if len(value) > LIST_CAP:
                items.append(f"[... {len(value) - LIST_CAP} items over the cap cut]")
            value = items
        out[name] = value
    return out


def _clip(value: str, cap: int) -> str:
    """`value` cut to `cap`; an unpaired surrogate becomes '?' (UTF-8 cannot hold it)."""
    if len(value) > cap:
        value = f"{value[:cap]}[... {len(value) - cap} characters over the cap cut]"
    return value.encode("utf-8", "replace").decode("utf-8")
