"""Where one member stands in the ledger: the brief a reset member's fresh session starts
from, so it carries on its own work instead of starting from nothing.

Its claimed ideas (read before the reset releases them), its findings of this run with
where their review stands (`store.acceptance`), and the threads it is part of that are
still open. Plain text for a model, each line naming the action that goes on from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from horde_tui.store.acceptance import acceptance
from horde_tui.store.ledgers.common import one_line
from horde_tui.store.state import LedgerState

TEXT_CHARS = 160
"""Characters of an idea's, finding's or message's text in the brief."""


@dataclass
class Standing:
    """A member's own ledger state, one line per item."""

    ideas: list[str] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)
    threads: list[str] = field(default_factory=list)

    def render(self) -> str:
        """The brief's sections; "" when the member holds nothing."""
        parts = []
        if self.ideas:
            parts.append(
                "Ideas you held (released for this reset; `claim` one again to "
                "carry it on if it is still open):\n" + "\n".join(self.ideas)
            )
        if self.findings:
            parts.append(
                "Your findings in this run (amend or add evidence; do not re-file "
                "them):\n" + "\n".join(self.findings)
            )
        if self.threads:
            parts.append("Your open threads:\n" + "\n".join(self.threads))
        return "\n\n".join(parts)


def standing(state: LedgerState, member: str, run: str) -> Standing:
    """`member`'s claimed ideas, its findings of `run` and its open threads."""
    out = Standing()
    for idea in state.ideas.values():
        if idea.status == "claimed" and idea.owner == member:
            out.ideas.append(f"- {idea.id}: {one_line(idea.text, TEXT_CHARS)}")
    for f in state.findings.values():
        if f.by != member or f.run != run or f.superseded_by:
            continue
        settled = acceptance(state, f.id)
        reviews = f"{settled.state}: {settled.reason}" if settled.reason else settled.state
        out.findings.append(
            f"- {f.id} r{f.revision} (idea {f.idea}, {f.importance or 'no importance'}): "
            f"{one_line(f.text, TEXT_CHARS)} [review: {reviews}]"
        )
    for t in state.threads.values():
        if t.closed or member not in (t.by, t.to):
            continue
        about = f" about {t.target}" if t.target else ""
        text = one_line(t.text, TEXT_CHARS)
        if t.to == member:
            out.threads.append(
                f"- {t.id} {t.kind}{about} from {t.by}: {text} (answer: `respond id={t.id}`)"
            )
        else:
            out.threads.append(
                f"- {t.id} {t.kind}{about} you sent {t.to}: {text} (awaiting their answer)"
            )
    return out
