"""solved, confirm-solved, contest-solved: the two-phase answer."""

from __future__ import annotations

import re

from horde_tui.protocol.context import ActionContext, resolve
from horde_tui.protocol.params import ConfirmSolvedParams, ContestSolvedParams, SolvedParams
from horde_tui.store.ledgers import answers
from horde_tui.store.ledgers.facts import is_provisional
from horde_tui.store.model import Proposal
from horde_tui.store.state import LedgerState
from horde_tui.store.store import ActionRefused, Decision

_REF = re.compile(r"\b([FTA])(\d+)\b")


def _check_citations(state: LedgerState, refs: list[str], verb: str) -> dict[str, int]:
    """Refuse superseded findings, provisional facts and unknown ids; return F# pins."""
    pins: dict[str, int] = {}
    for ref in refs:
        kind = {"F": "findings", "T": "facts"}.get(ref[:1].upper())
        if kind is None:
            raise ActionRefused(
                f"refused: cannot cite {ref!r} in an answer (solved rule); cite F# findings "
                "and T# facts"
            )
        ident = resolve(state, ref, kind, "cites")
        if kind == "findings":
            f = state.findings[ident]
            if f.superseded_by:
                raise ActionRefused(
                    f"refused: the answer cites {ident}, superseded by {f.superseded_by} "
                    f"(solved rule); cite {f.superseded_by} and {verb} again"
                )
            pins[ident] = f.revision
        elif is_provisional(state, state.facts[ident]):
            raise ActionRefused(
                f"refused: the answer quotes {ident}, still provisional on "
                f"{state.facts[ident].provisional_on} (solved rule); wait until that closes"
            )
    return pins


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
    reopen = f"; it reopens once {', '.join(ideas)} close" if ideas else ""
    return Decision(
        True,
        f"ok answer contested (round {prop.round}){reopen}",
        "answer",
        [{"op": "solved.contest", "text": p.text, "ideas": ideas}],
        outcome="contested",
    )
