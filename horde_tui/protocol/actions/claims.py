"""assert, confirm, contest, retract, supersede: the life of a C# claim."""

from __future__ import annotations

from horde_tui.protocol.context import ActionContext, resolve
from horde_tui.protocol.params import (
    AssertParams,
    ConfirmParams,
    ContestParams,
    RetractParams,
    SupersedeParams,
)
from horde_tui.store.model import Claim
from horde_tui.store.state import LedgerState
from horde_tui.store.store import ActionRefused, Decision
from horde_tui.store.textmatch import TextKey

_LIVE = ("asserted", "confirmed", "contested")


def assert_(ctx: ActionContext, p: AssertParams, state: LedgerState) -> Decision:
    key = TextKey.of(p.text)
    for cid in state.claim_index.duplicates(key):
        existing = state.claims[cid]
        if existing.status in _LIVE:
            raise ActionRefused(
                f"refused: {cid} already asserts this ({existing.status}, by {existing.by}); "
                f"use `confirm id={cid}` or `contest id={cid}` instead"
            )
    new_id = state.next_id("claims")
    return Decision(
        True,
        f"ok {new_id} asserted",
        new_id,
        [{"op": "claim.assert", "id": new_id, "text": p.text}],
        outcome="created",
    )


def _live(state: LedgerState, raw: str, verb: str) -> Claim:
    ident = resolve(state, raw, "claims")
    claim = state.claims[ident]
    if claim.status not in _LIVE:
        extra = f" by {claim.superseded_by}" if claim.superseded_by else ""
        instead = (
            f"act on {claim.superseded_by} instead"
            if claim.superseded_by
            else "assert a new claim instead"
        )
        raise ActionRefused(
            f"refused: {ident} is {claim.status}{extra}; only a live claim can be {verb} "
            f"(claims rule); {instead}"
        )
    return claim


def confirm(ctx: ActionContext, p: ConfirmParams, state: LedgerState) -> Decision:
    claim = _live(state, p.id, "confirmed")
    if claim.by == ctx.actor:
        raise ActionRefused(
            f"refused: {claim.id} is your own claim (a confirmation must be independent); ask "
            "another member to check it"
        )
    if ctx.actor in claim.confirmers:
        return Decision(True, f"ok you already confirmed {claim.id}", claim.id, outcome="unchanged")
    return Decision(
        True,
        f"ok {claim.id} confirmed",
        claim.id,
        [{"op": "claim.confirm", "id": claim.id, "text": p.text}],
        outcome="confirmed",
    )


def contest(ctx: ActionContext, p: ContestParams, state: LedgerState) -> Decision:
    claim = _live(state, p.id, "contested")
    if claim.by == ctx.actor:
        raise ActionRefused(
            f"refused: {claim.id} is your own claim; retract it or supersede it with a "
            "corrected one"
        )
    return Decision(
        True,
        f"ok {claim.id} contested",
        claim.id,
        [{"op": "claim.contest", "id": claim.id, "text": p.text}],
        outcome="contested",
    )


def retract(ctx: ActionContext, p: RetractParams, state: LedgerState) -> Decision:
    claim = _live(state, p.id, "retracted")
    if claim.by != ctx.actor:
        raise ActionRefused(
            f"refused: {claim.id} belongs to {claim.by} (only its author retracts a claim); "
            f"contest it instead"
        )
    return Decision(
        True,
        f"ok {claim.id} retracted",
        claim.id,
        [{"op": "claim.retract", "id": claim.id, "text": p.text}],
        outcome="retracted",
    )


def supersede(ctx: ActionContext, p: SupersedeParams, state: LedgerState) -> Decision:
    claim = _live(state, p.id, "superseded")
    new_id = state.next_id("claims")
    return Decision(
        True,
        f"ok {new_id} asserted, superseding {claim.id}",
        new_id,
        [
            {"op": "claim.assert", "id": new_id, "text": p.text, "supersedes": claim.id},
            {"op": "claim.supersede", "id": claim.id, "newId": new_id},
        ],
        outcome="superseded",
    )
