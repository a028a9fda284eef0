"""How a member reads wherever it is shown: one row model and one set of formatters.

The app's member table (`widgets.member_table`), the browser view's pages (`web.pages`)
and REPORT.md / SUMMARY.md (`supervisor.summary`) all show a member from the same
`MemberRow` and format its numbers here, so a member reads alike in all three: a cost is
`-` before the member's first model call, `unknown` once a call was unpriced (a guess
would read as a fact), and dollars with four decimals under $1. It sits in `store/`,
the layer the supervisor, the views, the widgets and the web may all import.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass

from horde_tui.store import activity as activities
from horde_tui.store.causes import ABNORMAL_CAUSES
from horde_tui.store.members import MemberState

ACTIVITY_TONES = {
    activities.RATE_LIMITED: "note",
    activities.LOOPING: "note",
    activities.BLOCKED: "note",
    activities.IDLE: "quiet",
}
"""How the table paints a state: held back or looping stands out, idle recedes."""


def format_cost(cost: float | None, called: bool = True) -> str:
    """`$0.0123` (`$1.23` from a dollar), `unknown` when the provider did not say, `-`
    before the first model call (its cost is neither $0 nor unknown yet)."""
    if not called:
        return "-"
    if cost is None:
        return "unknown"
    return f"${cost:.2f}" if cost >= 1 else f"${cost:.4f}"


def format_tokens(tokens: float) -> str:
    """`950`, `5.2k`, `1.3M`: a token count short enough for a table cell."""
    if tokens < 1000:
        return str(round(tokens))
    if tokens < 1_000_000:
        return f"{tokens / 1000:.1f}k"
    return f"{tokens / 1_000_000:.1f}M"


def format_count(n: int) -> str:
    """`12,345`: a count in full (the report's and the pages' token columns)."""
    return f"{n:,}"


def format_elapsed(seconds: float | None) -> str:
    """`4:05`, `1:02:03`: a running clock; `-` before a start."""
    if seconds is None:
        return "-"
    total = max(0, int(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def format_duration(seconds: float) -> str:
    """`4m 05s`, `1h 02m 03s`: how long something took, in words."""
    total = max(0, round(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h {minutes:02d}m {secs:02d}s" if hours else f"{minutes}m {secs:02d}s"


def format_time(epoch: float | None) -> str:
    """`2026-01-02 12:10:00 UTC`; `unknown` when the time was not recorded."""
    if epoch is None:
        return "unknown"
    return _dt.datetime.fromtimestamp(epoch, _dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def called(member: MemberState) -> bool:
    """Whether the member made a model call (before one, its cost is `-`)."""
    return bool(member.turns or member.prompt_tokens or member.completion_tokens)


def is_partial(member: MemberState) -> bool:
    """An abnormal end after measurable work: its ledger entries are real but unfinished."""
    return member.exit_cause in ABNORMAL_CAUSES and called(member)


def end_label(member: MemberState) -> str:
    """How the member's session ended (`completed`, `killed, partial`), or `not ended
    (running)`: the state word of the report's and the pages' `end` column."""
    cause = member.exit_cause or f"not ended ({member.status})"
    return f"{cause}, partial" if is_partial(member) else cause


def elapsed(state: MemberState, now: float) -> float | None:
    """Seconds since the member's current session started (frozen once it ended)."""
    if state.started is None:
        return None
    end = state.ended if state.status == "exited" and state.ended else now
    return max(0.0, end - state.started)


@dataclass(frozen=True)
class MemberRow:
    """One member as every table shows it, as plain values; the formatters above (and
    the properties below) turn them into text."""

    name: str
    role: str
    status: str
    tool: str = ""
    """The tool running now ("" between tools)."""
    summary: str = ""
    """The running tool's summary, or the last tool's once it ended (shown dimmed)."""
    elapsed_s: float | None = None
    turns: int = 0
    tokens: int = 0
    cost_usd: float | None = 0.0
    """None means the provider did not say what a call cost: shown as `unknown`."""
    resets: int = 0
    exit_cause: str | None = None
    activity: str = ""
    """A running member's state and for how long (`store.activity`): `rate-limited 12s
    (429, retry in 3s)`, `running a tool 40s: bash: pytest -q`; "" for the others."""
    activity_short: str = ""
    """The same in fewer words (`tool 40s: pytest -q`), for a column too narrow for it."""
    activity_tone: str = ""
    """`note` (held back or looping: painted as a warning), `quiet` (idle: dimmed) or ""."""
    ledger_s: float | None = None
    """Seconds since a running member last wrote the ledger (None: not running, or no
    write yet: `-`). The stall rule resets a member after the stall time without one."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    end: str = ""
    """`end_label`: how its session ended, or `not ended (<status>)`."""

    @classmethod
    def of(cls, state: MemberState, now: float | None = None) -> MemberRow:
        """The row of `state`; `now` (a live view's clock) adds its elapsed time and
        what it is doing."""
        doing = activities.activity(state, now) if now is not None else None
        return cls(
            name=state.name,
            role=state.role,
            status=state.status,
            tool=state.current_tool,
            summary=state.tool_summary,
            elapsed_s=elapsed(state, now) if now is not None else None,
            turns=state.turns,
            tokens=state.prompt_tokens + state.completion_tokens,
            cost_usd=state.cost_usd,
            resets=state.resets,
            exit_cause=state.exit_cause,
            activity=doing.text(now) if doing and now is not None else "",
            activity_short=doing.text(now, short=True) if doing and now is not None else "",
            activity_tone=ACTIVITY_TONES.get(doing.state, "") if doing else "",
            ledger_s=now - state.last_write if doing and now and state.last_write else None,
            prompt_tokens=state.prompt_tokens,
            completion_tokens=state.completion_tokens,
            end=end_label(state),
        )

    @property
    def called(self) -> bool:
        return bool(self.tokens or self.turns)

    @property
    def cost(self) -> str:
        return format_cost(self.cost_usd, self.called)

    @property
    def tokens_in_out(self) -> str:
        """`12,345 / 678`: tokens in and out, in full."""
        return f"{format_count(self.prompt_tokens)} / {format_count(self.completion_tokens)}"
