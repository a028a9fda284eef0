"""Control targets: `all`, `member-N`, `N`, `hN`, `hN:member-M`, `hN:M`, and lists.

The reference's syntax: a bare member names that member in every horde of a swarm; a
list is comma or space separated. Parsing is pure so the CLI can refuse a bad target
before it reaches a running supervisor.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_MEMBER = re.compile(r"^(?:member-)?([0-9]{1,2})$")
_HORDE = re.compile(r"^h([0-9])$")
_HORDE_MEMBER = re.compile(r"^h([0-9]):(?:member-)?([0-9]{1,2})$")


FORMS = (
    ("all", "every member (the default)"),
    ("member-N", "member N; in a swarm, member N of every horde"),
    ("N", "the same as member-N"),
    ("hN", "every member of horde N of a swarm"),
    ("hN:member-M", "member M of horde N"),
    ("hN:M", "the same as hN:member-M"),
)
"""Every target form this module parses, with what it names: the controls' help and
`horde-tui help` print these (a list of them, comma or space separated, is one too)."""


class TargetError(ValueError):
    """A target that does not parse; the message says what is accepted."""


@dataclass(frozen=True)
class Target:
    """One selector: a horde (None = every horde) and a member (None = every member)."""

    horde: int | None = None
    member: int | None = None

    def matches(self, horde: int, member: int) -> bool:
        return (self.horde is None or self.horde == horde) and (
            self.member is None or self.member == member
        )


ALL = (Target(),)


def parse_targets(text: str | None) -> tuple[Target, ...]:
    """Parse a target expression; empty or `all` means every member."""
    if text is None or not text.strip() or text.strip() == "all":
        return ALL
    out: list[Target] = []
    for part in re.split(r"[,\s]+", text.strip()):
        if not part:
            continue
        if part == "all":
            return ALL
        if m := _MEMBER.match(part):
            out.append(Target(None, _member(m.group(1))))
        elif m := _HORDE.match(part):
            out.append(Target(_horde(m.group(1)), None))
        elif m := _HORDE_MEMBER.match(part):
            out.append(Target(_horde(m.group(1)), _member(m.group(2))))
        else:
            raise TargetError(
                f"unknown target {part!r}; use {', '.join(form for form, _ in FORMS)} or a "
                "comma-separated list"
            )
    return tuple(dict.fromkeys(out))


def _member(raw: str) -> int:
    n = int(raw)
    if not 1 <= n <= 12:
        raise TargetError(f"member {n} is out of range; members are numbered 1 to 12")
    return n


def _horde(raw: str) -> int:
    n = int(raw)
    if not 1 <= n <= 4:
        raise TargetError(f"horde h{n} is out of range; a swarm has h1 to h4")
    return n


def member_number(name: str) -> int:
    """`member-3` -> 3."""
    m = _MEMBER.match(name)
    if not m:
        raise TargetError(f"not a member name: {name!r}")
    return int(m.group(1))


def selects(targets: tuple[Target, ...], horde: int, member_name: str) -> bool:
    number = member_number(member_name)
    return any(t.matches(horde, number) for t in targets)


@dataclass(frozen=True)
class Count:
    """`M` (a horde of M) or `H/M` (a swarm of H hordes of M)."""

    hordes: int
    members: int


def parse_count(text: str) -> Count:
    """Parse the member count with the reference's limits (1-12 members, at most 4 hordes)."""
    m = re.fullmatch(r"\s*(?:([0-9]{1,6})\s*/\s*)?([0-9]{1,6})\s*", text)
    if not m:
        raise TargetError(f"count {text!r} is not M or H/M (e.g. 6 or 2/4)")
    hordes = int(m.group(1)) if m.group(1) else 1
    members = int(m.group(2))
    if not 1 <= members <= 12:
        raise TargetError(f"a horde has 1 to 12 members, not {members}")
    if not 1 <= hordes <= 4:
        raise TargetError(f"a swarm has 1 to 4 hordes, not {hordes}")
    return Count(hordes, members)


def per_horde(targets: tuple[Target, ...], hordes: int) -> dict[int, str]:
    """Split a swarm target into one target per horde, in the syntax a horde's own
    supervisor takes: `all` for a whole horde, else its members (`member-3,member-5`).

    `h2` -> {2: "all"}; `member-3` -> every horde's member-3; `h2:3` -> {2: "member-3"}.
    A horde the swarm does not have is refused rather than silently matching nothing.
    """
    picked: dict[int, list[str] | None] = {}
    for t in targets:
        if t.horde is not None and t.horde > hordes:
            raise TargetError(f"h{t.horde} is not in this swarm; it has h1 to h{hordes}")
        for h in [t.horde] if t.horde is not None else range(1, hordes + 1):
            if t.member is None:
                picked[h] = None
            elif (members := picked.setdefault(h, [])) is not None:
                members.append(f"member-{t.member}")
    return {
        h: "all" if members is None else ",".join(dict.fromkeys(members))
        for h, members in sorted(picked.items())
    }
