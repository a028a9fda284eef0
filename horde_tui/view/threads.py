"""One Q# thread (and a finding's collaboration) as the inspector shows it, as Markdown.

A thread's page answers what a person checks when a finding or artifact is stuck: what
was asked of whom, every message since, and, when the thread is about an F# or A#, the
review scope of that target (each V#'s verdict, the revision it pinned, what it checked,
left unchecked and disclosed as limits) and where its acceptance stands now. It reads a
folded `LedgerState` only, the same one the `collaboration` and `inspect` reads use.
"""

from __future__ import annotations

from horde_tui.protocol.actions.collab_reads import evidence_line, thread_line
from horde_tui.store.acceptance import acceptance
from horde_tui.store.ledgers.evidence import evidence_about
from horde_tui.store.ledgers.findings import owner_and_revision
from horde_tui.store.ledgers.threads import threads_about
from horde_tui.store.model import Review, Thread
from horde_tui.store.state import LedgerState

NO_TEXT = "_(no text)_"


def thread_detail(state: LedgerState, thread: Thread) -> str:
    """The thread, its messages, and its target's review scope and acceptance."""
    t = thread
    about = f" about {t.target}" + (f" r{t.target_revision}" if t.target_revision else "")
    lines = [
        f"## {t.id} {t.kind}: {t.by} -> {t.to}{about if t.target else ''} · {t.state}",
        "",
        t.text.strip() or NO_TEXT,
        "",
    ]
    if t.review:
        lines += [f"Opened by review {t.review}.", ""]
    if t.repin:
        lines += [f"Asks the owner to re-pin {t.repin}.", ""]
    lines += ["### Messages", ""]
    if not t.notes:
        lines.append(f"_No reply yet: {t.to} answers with `respond` (or `ack`, `defer`)._")
    for n in t.notes:
        text = n.text.strip() or (f"(settled automatically by {n.auto})" if n.auto else "")
        lines.append(f"- **{n.what}** by {n.by} ({n.ts[:19]})" + (f": {text}" if text else ""))
        if n.evidence:
            lines.append(f"  evidence: {n.evidence}")
    if t.target and (t.target in state.findings or t.target in state.artifacts):
        lines += ["", *target_scope(state, t.target)]
    return "\n".join(lines) + "\n"


def finding_page(state: LedgerState, finding_id: str) -> str:
    """What a finding's page adds to its ledger entry: evidence attached to it, threads
    about it, and its review scope and acceptance (as a thread about it shows them)."""
    lines = ["### Attached evidence and threads", ""]
    lines += [evidence_line(e) for e in evidence_about(state, finding_id)]
    lines += [thread_line(t) for t in threads_about(state, finding_id)]
    if len(lines) == 2:
        lines.append(f"_Nothing attached to {finding_id} and no thread about it yet._")
    return "\n".join([*lines, "", *target_scope(state, finding_id)]) + "\n"


def target_scope(state: LedgerState, target: str) -> list[str]:
    """Markdown lines: the target's reviews (current revision first) and its acceptance."""
    _owner, revision = owner_and_revision(state, target)
    reviews = [state.reviews[r] for r in state.reviews_by_target.get(target, [])]
    reviews.sort(key=lambda r: (r.revision != revision, -r.seq))
    lines = [f"### Review scope of {target} (current revision r{revision})", ""]
    if not reviews:
        lines.append(f"_No review of {target} yet._")
    lines += [line for r in reviews for line in review_scope(r, revision)]
    acc = acceptance(state, target)
    lines += ["", "### Acceptance", "", f"**{acc.label}** (r{acc.revision}): {acc.reason}"]
    if acc.deciding:
        lines.append(f"- decided by {', '.join(acc.deciding)}")
    lines += [f"- {v} limits: {text}" for v, text in acc.limits]
    return lines


def review_scope(r: Review, current: int) -> list[str]:
    """One review as a list item: verdict, pinned revision, support, and its scope."""
    stale = "" if r.revision == current else f" (an earlier revision; now r{current})"
    lines = [f"- **{r.id}** {r.verdict} r{r.revision}{stale} by {r.by} · {r.support}"]
    lines.append(f"  - checked: {r.checked.strip() or NO_TEXT}")
    lines.append(f"  - unchecked: {r.unchecked.strip() or 'nothing (full scope)'}")
    if r.limits.strip():
        lines.append(f"  - limits: {r.limits.strip()}")
    if r.reattests:
        lines.append(f"  - carries forward {r.reattests}")
    return lines
