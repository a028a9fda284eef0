"""The demo model: scripted plans for a 4-member security review of the bundled sample.

`horde-tui demo` must show a whole run on a machine with no provider key, so the model
is the stub server playing an `AgentPolicy`: three workers that read and grep the sample,
add and claim ideas, file findings with `file:line` evidence, post to the board and
settle a two-phase answer, and a verifier (member-4) that verifies every finding. The
ids the run hands out depend on who writes first, so plans use `$id`, `$I` and `$F` and
poll with `until_ok` where they wait on another member.

Every defect's evidence is data (`DEFECTS`), not prose, so a test can check that each
`file:line` still points at the planted line after anyone edits the sample.

Pauses: `hold_ms` is think time for a person watching and scales with `speed` (0: none).
Retry delays and the final linger are synchronisation, not theatre, so they keep a floor
even at speed 0: a poll must not spin the member through its turn budget, and the run
must still be live when the supervisor sees the answer validated and every finding
verified (that is what makes the outcome `solved` rather than `finished`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from horde_tui.stubmodel.agent import AgentPolicy

Plan = list[dict[str, Any]]

DEMO_PROMPT = (
    "Security review of the userdir web app in this directory (app.py, auth.py): find the "
    "defects an attacker could exploit and file each with file:line evidence."
)
"""The run's task. No `F<digits>` or `ok #N` in it: reminders repeat the task inside tool
results, where the policy reads finding and idea ids."""

POLL_FLOOR_MS = 150
"""Least wait between retries of a refused call, at any speed."""
POLL_MS = 500
"""Wait between retries at speed 1."""
LINGER_FLOOR_MS = 600
"""Least pause before the validator's and verifier's last post (over two supervisor
ticks), so the run is still live when the solved condition is met."""
POLL_TRIES = 150
"""Retries before a poll gives up; members stop at 200 turns."""
VERIFIER = "member-4"
VERIFY_GREP = 'grep -n "SECRET_KEY = \\|+ name +\\|==\\|DELETE" app.py auth.py'
"""The verifier's one check of every cited defect line."""
SUPPORT = "derived"
"""Workers read and grep the code: their findings are derived from the source."""
VERIFY_SUPPORT = "reproduced"
"""The verifier re-runs the evidence's grep and re-reads the lines."""


@dataclass(frozen=True)
class Defect:
    """A planted defect and how a worker reports it.

    `evidence` holds grep-style lines `path:line: code` (code stripped of indentation)
    that must match the sample exactly; `needle` is the part of the code that *is* the
    defect and must appear on one of those lines.
    """

    slug: str
    definition: str
    idea: str
    grep: str
    text: str
    evidence: tuple[str, ...]
    needle: str
    importance: str = "high"
    confidence: str = "high"


DEFECTS: dict[str, Defect] = {
    "secret": Defect(
        slug="hardcoded-secret",
        definition="a credential or signing key committed in the source",
        idea="Look for secrets hard-coded in the source (keys, tokens, passwords)",
        grep='grep -rn "SECRET\\|TOKEN\\|PASSWORD" --include=*.py .',
        text="app.py hard-codes the admin token SECRET_KEY; anyone who can read the source "
        "can call /delete, and rotating the token needs a code change",
        evidence=(
            'app.py:13: SECRET_KEY = "userdir-pr0d-t0ken-2291"  # the admin token',
            'app.py:36: if not check_token(environ.get("HTTP_X_TOKEN", ""), SECRET_KEY):',
        ),
        needle='SECRET_KEY = "',
        importance="critical",
    ),
    "sql": Defect(
        slug="sql-injection",
        definition="untrusted input reaches a SQL statement as code, not as a parameter",
        idea="Check how app.py builds its SQL queries for injection",
        grep='grep -n "execute\\|SELECT" app.py auth.py',
        text="find_user() in app.py concatenates the `name` query parameter into SQL, so "
        "GET /users?name=' OR '1'='1 returns every user; use a ? placeholder",
        evidence=(
            'app.py:24: query = "SELECT name, email FROM users WHERE name = \'" + name + "\'"',
            "app.py:25: return db.execute(query).fetchall()",
            'app.py:32: rows = find_user(db, params.get("name", [""])[0])',
        ),
        needle="+ name +",
        importance="critical",
    ),
    "timing": Defect(
        slug="timing-attack",
        definition="a secret compared in time that depends on how much of it matched",
        idea="Check auth.py's token comparison for timing leaks",
        grep='grep -n "==" auth.py',
        text="check_token() in auth.py compares the admin token with ==, which stops at the "
        "first differing character, so response times leak the token; use "
        "hmac.compare_digest",
        evidence=(
            "auth.py:6: return given == expected",
            'app.py:36: if not check_token(environ.get("HTTP_X_TOKEN", ""), SECRET_KEY):',
        ),
        needle="given == expected",
        importance="medium",
        confidence="medium",
    ),
    "authz": Defect(
        slug="missing-authorization",
        definition="an action that requires a role runs without checking the caller has it",
        idea="Check that delete_user in auth.py enforces the admin check it documents",
        grep='grep -n "is_admin\\|delete_user\\|DELETE" app.py auth.py',
        text="delete_user() in auth.py documents that only admins may delete users but never "
        "calls is_admin(), so any caller holding the token deletes any user whatever "
        "`actor` says",
        evidence=(
            "auth.py:9: def is_admin(db, name):",
            "auth.py:14: def delete_user(db, actor, name):",
            'auth.py:16: db.execute("DELETE FROM users WHERE name = ?", (name,))',
            'app.py:40: delete_user(db, actor, params.get("name", [""])[0])',
        ),
        needle="DELETE FROM users",
    ),
}

ANSWER = (
    "The userdir sample has four exploitable defects, each filed with file:line evidence "
    "(F1-F4): the admin token is hard-coded (app.py:13); find_user builds SQL by string "
    "concatenation, an injection (app.py:24); check_token compares the token with == in "
    "non-constant time (auth.py:6); and delete_user never calls is_admin, so the documented "
    "admin check is missing (auth.py:14-16)."
)

DELIVERABLE = """\
# Deliverable: security review of userdir (demo model)

> Written by the horde-tui **demo model** (scripted, not a real LLM). The run, its
> ledgers and its reports are real; the reasoning was played from a script.

Four defects, each filed as a finding with `file:line` evidence and verified by the
verifier (member-4); FINDINGS.md has the F# ids and the exact evidence.

1. **Hard-coded admin token** (critical): `SECRET_KEY` is committed in `app.py:13`.
   Move it to the environment and rotate it.
2. **SQL injection** (critical): `find_user` concatenates `name` into SQL (`app.py:24`).
   Use a `?` placeholder.
3. **Timing-unsafe token check** (medium): `check_token` uses `==` (`auth.py:6`). Use
   `hmac.compare_digest`.
4. **Missing authorization** (high): `delete_user` never calls `is_admin`
   (`auth.py:14-16`) although its docstring says only admins may delete users.

Nothing here is unverified or disputed."""

POSTMORTEM = """\
# Post-mortem (demo model)

> Written by the horde-tui **demo model** (scripted, not a real LLM): this critique is
> part of the script, not an analysis of the run.

- **What worked**: each worker claimed a distinct idea, so no work was duplicated; every
  finding names a concern slug and cites `file:line` evidence; the verifier checked all
  four findings; the answer was proposed by one member and validated by another.
- **Waits**: the verifier, the validator and the proposer polled with refused calls
  while they waited for findings and the answer (visible as refusals in events.jsonl).
  A real model would read the board instead of retrying.
- **Fixes**: none needed for this run. Try a real model with
  `horde-tui run 4 "<your task>" --model <litellm model>` in your own project."""


WORKSTREAMS: dict[int, list[tuple[str, str]]] = {
    2: [
        (
            "app.py: the hard-coded admin token and SQL built from user input",
            "each secret and each query in app.py is filed with file:line evidence",
        ),
        (
            "auth.py: how tokens are compared and who may delete users",
            "each comparison and privilege check in auth.py is classified with evidence",
        ),
    ],
    3: [
        ("app.py: secrets committed in the source", "every committed secret is filed"),
        ("app.py: SQL queries built from request input", "every query is classified"),
        (
            "auth.py: token comparison and the admin check of delete_user",
            "both checks are classified with file:line evidence",
        ),
    ],
    4: [
        ("app.py: secrets committed in the source", "every committed secret is filed"),
        ("app.py: SQL queries built from request input", "every query is classified"),
        ("auth.py: constant-time token comparison", "check_token is classified"),
        ("auth.py: authorization of delete_user", "delete_user's admin check is classified"),
    ],
}
"""The planner's partition of the demo task for a swarm of 2, 3 or 4 hordes."""


def partition_reply(hordes: int) -> str:
    """The planner's final message for `hordes`, in the format the swarm parses."""
    return "\n".join(
        f"h{n}: {work}\nacceptance: {criterion}"
        for n, (work, criterion) in enumerate(WORKSTREAMS[hordes], 1)
    )


DEFECT_LINES = (
    "Hard-coded admin token, `app.py:13`",
    "SQL injection in `find_user`, `app.py:24`",
    "Timing-unsafe token check, `auth.py:6`",
    "Missing admin check in `delete_user`, `auth.py:14-16`",
)


def merged_reply(hordes: int) -> str:
    """The merge helper's swarm deliverable for `hordes` hordes: every horde ran the same
    scripted review, so each defect is attributed to each horde's own F#."""
    lines = [
        "# Swarm deliverable: security review of userdir (demo model)",
        "",
        "> Merged by the horde-tui **demo model** (scripted, not a real LLM) from the",
        "> hordes' deliverables; labels are each horde's acceptance labels.",
        "",
    ]
    for i, defect in enumerate(DEFECT_LINES, 1):
        tags = " ".join(f"[h{n} F{i}: accepted]" for n in range(1, hordes + 1))
        lines.append(f"{i}. {defect} {tags}.")
    lines += ["", "The hordes agree on every defect; none reported a conflict."]
    return "\n".join(lines)


@dataclass(frozen=True)
class Timing:
    """Converts the script's base pauses (ms at speed 1) into this run's pauses."""

    speed: float = 1.0

    def __post_init__(self) -> None:
        if not math.isfinite(self.speed) or self.speed < 0:
            raise ValueError(f"speed must be a finite number >= 0, got {self.speed}")

    def hold(self, base_ms: int) -> int:
        return round(base_ms * self.speed)

    @property
    def retry(self) -> int:
        return max(POLL_FLOOR_MS, self.hold(POLL_MS))

    def linger(self, base_ms: int) -> int:
        return max(LINGER_FLOOR_MS, self.hold(base_ms))


def horde(action: str, hold_ms: int = 0, **args: Any) -> dict[str, Any]:
    """One `horde` tool call."""
    return {"tool": "horde", "args": {"action": action, **args}, "hold_ms": hold_ms}


def read(path: str, hold_ms: int = 0) -> dict[str, Any]:
    return {"tool": "read", "args": {"path": path}, "hold_ms": hold_ms}


def bash(command: str, hold_ms: int = 0) -> dict[str, Any]:
    return {"tool": "bash", "args": {"command": command}, "hold_ms": hold_ms}


def poll(item: dict[str, Any], t: Timing) -> dict[str, Any]:
    """Repeat `item` while it is refused (it waits on another member's write)."""
    return {**item, "until_ok": POLL_TRIES, "delay_ms": t.retry}


def evidence_text(defect: Defect) -> str:
    """The finding's evidence: the grep that found it, then the cited lines."""
    return "\n".join([f"$ {defect.grep}", *defect.evidence])


def work(defect: Defect, t: Timing) -> Plan:
    """Add an idea, claim it, grep for the defect, file it, close the idea."""
    return [
        horde("idea", t.hold(900), text=defect.idea),
        horde("claim", t.hold(600), id="$id"),
        bash(defect.grep, t.hold(1500)),
        horde(
            "finding",
            t.hold(2000),
            idea="$I",
            concern=defect.slug,
            concernDef=defect.definition,
            text=defect.text,
            evidence=evidence_text(defect),
            support=SUPPORT,
            importance=defect.importance,
            confidence=defect.confidence,
        ),
        horde("done", t.hold(700), id="$I", result=f"filed $F ({defect.slug})"),
    ]


def build_plans(speed: float = 1.0) -> dict[str, Plan]:
    """Every member's plan, and the two finalize helpers' replies, at this speed."""
    t = Timing(speed)
    last = f"F{len(DEFECTS)}"
    proposer: Plan = [
        bash("ls", t.hold(800)),
        read("app.py", t.hold(1200)),
        *work(DEFECTS["secret"], t),
        horde(
            "post",
            t.hold(700),
            text="The admin token is hard-coded in app.py (filed $F). I will propose "
            "the answer once every suspected defect is filed.",
        ),
        poll(horde("inspect", t.hold(500), target=last), t),
        horde(
            "solved", t.hold(1200), text=ANSWER, cites=[f"F{i + 1}" for i in range(len(DEFECTS))]
        ),
        {"say": "I proposed the answer; another member must validate it."},
    ]
    validator: Plan = [
        read("app.py", t.hold(1000)),
        *work(DEFECTS["sql"], t),
        horde("post", t.hold(700), text="find_user in app.py is injectable (filed $F)."),
        poll(
            horde(
                "confirm-solved",
                t.hold(900),
                text="Re-read app.py:13, app.py:24, auth.py:6 and auth.py:14-16: each cited "
                "defect is in the code as the answer describes.",
            ),
            t,
        ),
        horde("post", t.linger(600), text="Validated member-1's answer."),
        {"say": "I validated the answer."},
    ]
    auditor: Plan = [
        read("auth.py", t.hold(1200)),
        *work(DEFECTS["timing"], t),
        *work(DEFECTS["authz"], t),
        horde(
            "post",
            t.hold(700),
            text="auth.py compares the token in non-constant time and delete_user "
            "skips the admin check (both filed).",
        ),
        {"say": "I filed both auth.py defects."},
    ]
    verify_text = (
        f"Re-read the cited lines and checked them with `{VERIFY_GREP}`: the defect is in "
        "the code as described."
    )
    verifier: Plan = [
        read("app.py", t.hold(1000)),
        read("auth.py", t.hold(1000)),
        bash(VERIFY_GREP, t.hold(1200)),
        *[
            poll(
                horde(
                    "review",
                    t.hold(900),
                    target=f"F{i + 1}",
                    verdict="supports",
                    support=VERIFY_SUPPORT,
                    checked="the cited lines, re-read, and the evidence's grep, re-run",
                    evidenceText=verify_text,
                ),
                t,
            )
            for i in range(len(DEFECTS))
        ],
        horde("post", t.linger(600), text=f"Reviewed F1-{last} against the source."),
        {"say": "I reviewed every finding."},
    ]
    return {
        "member-1": proposer,
        "member-2": validator,
        "member-3": auditor,
        VERIFIER: verifier,
        "synthesis": [horde("findings", t.hold(800)), {"say": DELIVERABLE}],
        "postmortem": [read(".horde/BOARD.md", t.hold(800)), {"say": POSTMORTEM}],
        # A swarm's helpers: the planner answers for the number of hordes its brief
        # names; the merge helper lists the hordes' deliverables first.
        "planner": [
            horde("list", t.hold(800)),
            *[
                {"say": partition_reply(n), "when": f"into exactly {n} disjoint"}
                for n in sorted(WORKSTREAMS)
            ],
        ],
        "merge": [
            horde("facts", t.hold(800)),
            *[
                {"say": merged_reply(n), "when": f"its {n} hordes have finished"}
                for n in range(2, 5)
            ],
        ],
    }


def demo_policy(speed: float = 1.0) -> AgentPolicy:
    """The stub policy that plays the demo model."""
    return AgentPolicy(build_plans(speed))
