"""Member statuses and exit causes: what each one means, in one table.

A member's end is written once (`member-exit` in `events.jsonl`, `cause=...`) and read
by the report (`partial` marker), the member table (the colour), the event log (the
level) and the supervisor (whether to reset). They all classify a cause here, so they
cannot disagree about one.

Every cause has a kind:

- `done`: the session ended on its own, or went on elsewhere (`handoff`), or a person
  reset it (a fresh session takes its name at once).
- `capped`: a normal end at the turn cap while it still wanted a turn (`turns`); it may
  have left work undone, but it neither failed nor is reset.
- `stopped`: a person stopped it (`stopped by user`). The reference lists it among the
  report's abnormal ends, so its work after measurable turns is marked `partial`; it is
  not the member's failure, so it is painted amber like a capped session, not red.
- `failed`: the member or its process went wrong (model error, no output, killed,
  a non-zero exit, looping, no ledger write for the stall time, a canary that stayed
  silent): painted red, logged as an error, marked `partial` after work.
"""

from __future__ import annotations

from typing import Literal

CauseKind = Literal["done", "capped", "stopped", "failed"]

MEMBER_EXIT_CAUSES = (
    "completed",
    "turns",
    "model_error",
    "no_output",
    "killed",
    "exit_nonzero",
    "looping",
)
"""How a member session can end, as its own `exit` status line names it. `turns`:
stopped at the turn cap while it still wanted a turn (a normal end, not a failure: the
parent neither resets it nor marks its work partial). `looping`: the model kept repeating itself after it
was told to stop: the same refused call, the same call with the same result in a row, or
the same cycle of two or three calls (`store.activity.RepeatGuard`; a failure: the parent
resets it)."""

HANDOFF = "handoff"
"""The end the supervisor records for a session it stopped to hand the run to another
process (`Supervisor.handoff`): `horde-tui resume` carries the same session on, so it is
neither a failure nor a finish: no reset, no `partial` marker."""

USER_RESET = "reset by user"
"""The exit cause of a session a person reset (`reset`); its `member-reset` says `user`."""

USER_STOP = "stopped by user"
"""The exit cause of a session a person's stop (hard, or a clean stop's end) ended."""

NO_LEDGER_PROGRESS = "no-ledger-progress"
"""The exit cause of a session that wrote nothing to the ledger for the stall time
(`HORDE_STALL_MS`; `supervisor.watch.check_stalls`): the supervisor resets it."""


def token_share_spent(tokens: int) -> str:
    """The detail of a session ended at its token share (`killed`), whichever side saw it
    first: the member before its next call, or the supervisor's poll during a long one."""
    return f"its token share of {tokens} tokens was spent"


CAUSES: dict[str, CauseKind] = {
    "completed": "done",
    "turns": "capped",
    "model_error": "failed",
    "no_output": "failed",
    "killed": "failed",
    "exit_nonzero": "failed",
    "looping": "failed",
    NO_LEDGER_PROGRESS: "failed",
    "stalled": "failed",
    "silent": "failed",
    USER_STOP: "stopped",
    USER_RESET: "done",
    HANDOFF: "done",
}
"""Every exit cause a `member-exit` event can carry: the member's own, plus those the
supervisor records (`no-ledger-progress`: no ledger write for the stall time; `stalled`,
its name in runs before issue 28, kept so their events still read; `silent`: a canary
with no model output in time; a person's stop or reset; a hand-off)."""

FINISHED_CAUSES = frozenset({"completed", "turns"})
"""A session that ended on its own: it stopped calling tools (`completed`), or it was
stopped at its turn cap while it still wanted a turn (`turns`, a repair attempt's cap).
Neither is a failure: no reset, no `partial` marker; a verifier still owing reviews and
an --until-stop member go on as after `completed`."""

ABNORMAL_CAUSES = frozenset(c for c, kind in CAUSES.items() if kind in ("stopped", "failed"))
"""Ends that leave the member's work unfinished: the report marks them `partial` after
measurable work."""

FAILED_CAUSES = frozenset(c for c, kind in CAUSES.items() if kind == "failed")
"""Ends that count as failures (painted red, logged as errors)."""

RESET_CAUSES = FAILED_CAUSES - {"killed", "silent"}
"""Failures the supervisor answers with a fresh session (within the reset cap): not a
kill (a person's or the supervisor's own stop) and not a silent canary (the run stops)."""

KIND_PAINT: dict[CauseKind, str] = {
    "done": "done",
    "capped": "capped",
    "stopped": "capped",
    "failed": "failed",
}
"""The member table's class for an exited member, by the kind of its cause."""

KIND_LEVEL: dict[CauseKind, str] = {
    "done": "info",
    "capped": "warn",
    "stopped": "warn",
    "failed": "error",
}
"""The event log's level of a `member-exit`, by the kind of its cause."""

STATUS_CLASSES = ("running", "paused", "waiting", "done", "capped", "failed")
"""Every state `status_class` returns: the CSS classes a repaint must clear."""

STATUS_PAINT = {
    "running": "running",
    "paused": "paused",
    "stopped": "paused",
    "pending": "waiting",
    "starting": "waiting",
    "waiting": "waiting",
}
"""The class of a member that has not exited (`stopped` is SIGSTOP's word for paused)."""


def cause_kind(cause: str | None) -> CauseKind:
    """The kind of an exit cause; an unknown or missing one is an ordinary end."""
    return CAUSES.get(cause or "", "done")


def status_class(status: str, exit_cause: str | None) -> str:
    """The state a status is painted as: running, paused, waiting, done, capped or failed."""
    if status == "exited":
        return KIND_PAINT[cause_kind(exit_cause)]
    return STATUS_PAINT.get(status, "waiting")


def exit_level(cause: str | None) -> str:
    """The event log's level for a `member-exit` with this cause."""
    return KIND_LEVEL[cause_kind(cause)]
