"""Inbox delivery: targeted thread traffic handed to a member at a turn boundary.

What a member has not seen yet is everything on a thread it takes part in, written by
someone else, after its delivery watermark: new threads addressed to it, and acks,
responses, deferrals and resolutions on threads it sent or received. Delivering writes
one small `inbox.deliver` receipt (the highest ledger seq handed over), so a fresh
session of the same member does not get the same messages twice.

Delivery is a context insertion, not comprehension: the text is fenced as data with the
session's nonce (`horde_tui.common.fence`), so a message body cannot end the fence and speak as
the run, and message bodies are other members' words, never instructions to follow.
"""

from __future__ import annotations

from dataclasses import dataclass

from horde_tui.common.fence import Fence
from horde_tui.store.ledgers.common import indented
from horde_tui.store.state import LedgerState
from horde_tui.store.store import Decision, HordeStore, Receipt

ITEM_CHARS = 1500
"""Characters of one message body shown inline; `inspect target=Q#` has the rest."""
DELIVERY_CHARS = 8000
"""Characters of one delivery; what does not fit stays pending for the next turn."""
LABEL = "messages from other members"
FOOTER = (
    "Answer a thread addressed to you with `horde respond id=Q#` (`ack` first is optional, "
    "`defer` says not now); the sender resolves it with `horde resolve id=Q#`. "
    "`horde inbox` lists every thread still open."
)

VERBS = {
    "message": "{kind} from {by}",
    "ack": "acknowledged by {by}",
    "respond": "response from {by}",
    "defer": "deferred by {by}",
    "resolve": "resolved by {by}",
}


@dataclass(frozen=True)
class InboxItem:
    """One undelivered step of a thread, as the recipient will read it."""

    seq: int
    thread: str
    what: str
    by: str
    kind: str
    target: str | None
    text: str

    def render(self) -> str:
        head = f"- {self.thread} " + VERBS[self.what].format(kind=self.kind, by=self.by)
        if self.what == "message" and self.target:
            head += f" about {self.target}"
        elif self.what != "message":
            head += f" ({self.kind}{f' about {self.target}' if self.target else ''})"
        body = self.text.strip()
        if len(body) > ITEM_CHARS:
            body = body[:ITEM_CHARS] + f"… (cut; `inspect target={self.thread}` shows it all)"
        return head + (":\n" + indented(body, "    ") if body else "")


def pending(state: LedgerState, member: str) -> list[InboxItem]:
    """Undelivered thread traffic for `member`, oldest first."""
    mark = state.delivered.get(member, 0)
    items: list[InboxItem] = []
    for t in state.threads.values():
        if member not in (t.by, t.to):
            continue
        if t.to == member and t.by != member and t.seq > mark:
            items.append(InboxItem(t.seq, t.id, "message", t.by, t.kind, t.target, t.text))
        for note in t.notes:
            if note.seq > mark and note.by != member:
                text = note.text or (f"(settled automatically by {note.auto})" if note.auto else "")
                items.append(InboxItem(note.seq, t.id, note.what, note.by, t.kind, t.target, text))
    items.sort(key=lambda item: item.seq)
    return items


def render_delivery(
    items: list[InboxItem], fence: Fence, budget: int = DELIVERY_CHARS
) -> tuple[str, int]:
    """The one user message for `items`, inside `fence`, and the highest seq it covers
    (0: nothing).

    Items past the budget are left for the next delivery; the first always goes.
    """
    parts: list[str] = []
    used, upto = 0, 0
    for item in items:
        text = item.render()
        if parts and used + len(text) > budget:
            break
        parts.append(text)
        used += len(text) + 1
        upto = item.seq
    if not parts:
        return "", 0
    left = len(items) - len(parts)
    more = f"\n({left} more waiting; they arrive next turn)" if left else ""
    body = "\n".join(parts)
    return f"{fence.wrap(LABEL, body + more)}\n{FOOTER}", upto


def deliver(store: HordeStore, run: str, member: str, fence: Fence) -> str:
    """Hand `member` its undelivered messages, fenced with its session's `fence`: the
    user-message text, or '' when none.

    The receipt and the text come from the same locked view of the ledger, so two
    sessions of one member can never both deliver an item.
    """
    store.refresh()
    if not pending(store.state, member):
        return ""  # the common case writes nothing, not even an event
    delivered: list[str] = []

    def decide(state: LedgerState) -> Decision:
        text, upto = render_delivery(pending(state, member), fence)
        if not upto:
            return Decision(True, "nothing to deliver", outcome="unchanged")
        delivered.append(text)
        return Decision(
            True,
            f"delivered inbox to {member} up to seq {upto}",
            None,
            [{"op": "inbox.deliver", "member": member, "upto": upto}],
            outcome="delivered",
        )

    receipt: Receipt = store.transact(run, "inbox-deliver", {"member": member}, decide)
    return delivered[0] if receipt.ok and delivered else ""
