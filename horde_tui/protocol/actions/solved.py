"""solved, confirm-solved, contest-solved: the two-phase answer.

An answer cites F# findings, A# artifacts and T# facts, and pins the current revision of
every F# and A# it cites (`A2@r3` names the revision expected). Amending or superseding a
pinned finding, or republishing a pinned artifact, withdraws a pending proposal
(`withdrawals`), so nobody validates an answer resting on bytes it never saw.
"""

from __future__ import annotations

import re
from typing import Any

from horde_tui.protocol.collab import reviewable
from horde_tui.protocol.context import ActionContext, resolve
from horde_tui.protocol.params import ConfirmSolvedParams, ContestSolvedParams, SolvedParams
from horde_tui.store.ledgers import answers
from horde_tui.store.ledgers.facts import is_provisional
from horde_tui.store.model import Proposal
from horde_tui.store.state import LedgerState
from horde_tui.store.store import ActionRefused, Decision

_REF = re.compile(r"\b([FTA])([0-9]+)\b")
_CITE = re.compile(r"^\s*([FTAfta]?[0-9]+)\s*(?:@\s*[rR]?([0-9]{1,18}))?\s*$")
KINDS = {"F": "findings", "T": "facts", "A": "artifacts"}


def withdrawals(state: LedgerState, ref: str, why: str) -> list[dict[str, Any]]:
    """Withdraw every pending proposal that pinned F# or A# `ref` (its answer is now stale)."""
    out = []
    for run, props in state.proposals.items():
        prop = props[-1] if props else None
        if prop is not None and prop.status == "pending" and ref in prop.pins:
            out.append({"op": "solved.withdraw", "run": run, "reason": f"{ref} {why}"})
    return out


def reopenings(state: LedgerState, run: str, closing: str) -> tuple[list[dict[str, Any]], str]:
    """Closing idea `closing` closes the last idea a contest of `run`'s answer named: the
    answer reopens as a new round with the pins it had (`solved.reopen`), or, when a cited
    finding changed or a quoted fact is still provisional, is withdrawn instead. Returns
    the records and a note for the receipt (nothing when no contest waits on `closing`)."""
    prop = answers.current(state, run)
    if prop is None or prop.status != "contested" or closing not in prop.contest_ideas:
        return [], ""
    if any(not state.ideas[i].closed for i in prop.contest_ideas if i != closing):
        return [], ""
    named = f" Every idea the contest of run {run}'s answer named is closed"
    changed = answers.changed_citations(state, prop)
    why = [f"{', '.join(changed)} changed"] if changed else []
    for ref in prop.cites:
        fact = state.facts.get(ref)
        # The closing idea settles the facts provisional on it.
        if fact is not None and fact.provisional_on != closing and is_provisional(state, fact):
            why.append(f"{ref} is still provisional on {fact.provisional_on}")
    if why:
        # The receipt says what the withdrawal reason says, the change dated to the pins.
        told = [f"{why[0]} since the answer pinned it", *why[1:]] if changed else why
        waited = ", ".join(prop.contest_ideas)
        reason = f"{' and '.join(why)} while the contest waited on {waited}"
        return (
            [{"op": "solved.withdraw", "run": run, "reason": reason}],
            f"{named}, but {' and '.join(told)}: the answer is withdrawn for re-proposal.",
        )
    round_no = len(state.proposals[run]) + 1
    return (
        [{"op": "solved.reopen", "run": run, "of": prop.round}],
        f"{named}: the answer reopens as round {round_no}, awaiting validation by another member.",
    )


def _citation(state: LedgerState, raw: str) -> tuple[str, str, int | None]:
    """`F3`, `A2@r4`, `T1` -> (table, id, revision named or None)."""
    m = _CITE.match(raw)
    kind = KINDS.get(raw.strip()[:1].upper()) if m else None
    if m is None or kind is None:
        raise ActionRefused(
            f"refused: cannot cite {raw!r} in an answer (solved rule); cite F# findings, "
            "A# artifacts (optionally at a revision, A2@r3) and T# facts"
        )
    ident = resolve(state, m.group(1), kind, "cites")
    return kind, ident, int(m.group(2)) if m.group(2) else None


def _check_citations(state: LedgerState, refs: list[str], verb: str) -> dict[str, int]:
    """Refuse superseded findings, provisional facts, unknown ids and revisions other than
    the current one; return the F# and A# pins (id -> revision)."""
    pins: dict[str, int] = {}
    for ref in refs:
        kind, ident, named = _citation(state, ref)
        if kind == "facts":
            if named is not None:
                raise ActionRefused(
                    f"refused: the answer cites {ident}@r{named}, but facts have no revisions "
                    f"(solved rule); cite {ident}"
                )
            if is_provisional(state, state.facts[ident]):
                raise ActionRefused(
                    f"refused: the answer quotes {ident}, still provisional on "
                    f"{state.facts[ident].provisional_on} (solved rule); wait until that closes"
                )
            continue
        if kind == "findings" and state.findings[ident].superseded_by:
            newer = state.findings[ident].superseded_by
            raise ActionRefused(
                f"refused: the answer cites {ident}, superseded by {newer} (solved rule); "
                f"cite {newer} and {verb} again"
            )
        current = reviewable(state, ident).revision
        if named is not None and named != current:
            raise ActionRefused(
                f"refused: the answer cites {ident}@r{named}, but {ident} is at r{current} "
                f"(solved rule: an answer pins the current revision); cite {ident}@r{current}"
            )
        pins[ident] = current
    return pins


def _cited_ids(state: LedgerState, refs: list[str]) -> list[str]:
    """The ids cited, without the revisions some of them name (already checked)."""
    return list(dict.fromkeys(_citation(state, ref)[1] for ref in refs))


def solved(ctx: ActionContext, p: SolvedParams, state: LedgerState) -> Decision:
    prop = answers.current(state, ctx.run)
    if prop is not None and prop.status == "pending":
        raise ActionRefused(
            f"refused: {prop.by}'s answer is pending (one proposal at a time); validate it with "
            "confirm-solved or refute it with contest-solved"
        )
    until_stop = (ctx.store.paths.run_dir(ctx.run) / ".until-stop").exists()
    if prop is not None and prop.status == "validated" and not until_stop:
        raise ActionRefused(
            f"refused: the answer was already validated by {prop.validated_by}; the run is "
            "winding down, so post anything further to the board"
        )
    mentioned = [f"{m.group(1)}{m.group(2)}" for m in _REF.finditer(p.text)]
    refs = list(dict.fromkeys([*p.cites, *mentioned]))
    pins = _check_citations(state, refs, "propose")
    refs = _cited_ids(state, refs)
    round_no = len(state.proposals.get(ctx.run, [])) + 1
    pinned = ", ".join(f"{k}@r{v}" for k, v in pins.items()) or "nothing"
    return Decision(
        True,
        f"ok answer proposed (round {round_no}), ANSWER.md written, pinned {pinned}; another "
        "member must confirm-solved or contest-solved it",
        "answer",
        [{"op": "solved.propose", "text": p.text, "cites": refs, "pins": pins}],
        outcome="proposed",
    )


def _pending_from_other(ctx: ActionContext, state: LedgerState, verb: str) -> Proposal:
    prop = answers.current(state, ctx.run)
    if prop is None or prop.status != "pending":
        status = "no proposal" if prop is None else f"the proposal is {prop.status}"
        raise ActionRefused(
            f"refused: nothing to {verb}: {status} in run {ctx.run} (solved is two-phase: only "
            "a pending proposal is validated or contested); check `inspect target=answer`"
        )
    if prop.by == ctx.actor:
        raise ActionRefused(
            f"refused: you proposed this answer; a different member must {verb} it (solved is "
            "two-phase)"
        )
    return prop


def confirm_solved(ctx: ActionContext, p: ConfirmSolvedParams, state: LedgerState) -> Decision:
    prop = _pending_from_other(ctx, state, "validate")
    changed = answers.changed_citations(state, prop)
    if changed:
        raise ActionRefused(
            f"refused: {', '.join(changed)} changed since the proposal pinned them; the answer "
            "must be re-proposed before it can be validated"
        )
    _check_citations(state, prop.cites, "validate")
    return Decision(
        True,
        f"ok answer validated (round {prop.round})",
        "answer",
        [{"op": "solved.confirm", "text": p.text}],
        outcome="validated",
    )


def contest_solved(ctx: ActionContext, p: ContestSolvedParams, state: LedgerState) -> Decision:
    prop = _pending_from_other(ctx, state, "contest")
    ideas = [resolve(state, raw, "ideas", "ideas") for raw in p.ideas]
    for ident in ideas:
        if state.ideas[ident].closed:
            raise ActionRefused(
                f"refused: {ident} is already {state.ideas[ident].status}; a contest names the "
                "open or claimed ideas the answer waits on (solved rule: it reopens once they "
                "close); name open ideas, or contest without ideas"
            )
    reopen = f"; it reopens once {', '.join(ideas)} close" if ideas else ""
    return Decision(
        True,
        f"ok answer contested (round {prop.round}){reopen}",
        "answer",
        [{"op": "solved.contest", "text": p.text, "ideas": ideas}],
        outcome="contested",
    )
