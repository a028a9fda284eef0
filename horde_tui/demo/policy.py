"""The demo model: scripted plans for a 4-member security review of the bundled sample.

`horde-tui demo` must show a whole run on a machine with no provider key, so the model
is the stub server playing an `AgentPolicy`. It plays what the product is for: three
workers read and grep the sample, claim ideas, file findings with `file:line` evidence and
ask the verifier (member-4) for reviews; member-2 publishes a runnable proof of concept as
an artifact; member-3 files a suspicion that does not hold, the verifier's refuting
review opens a challenge, and member-3 answers it in the repair phase; member-1 proposes
the answer once every finding is reviewed and member-2 validates it.

Members wait like sensible members: they read (`inbox`, `findings`, `inspect
target=answer`) until what they wait for is there, and never retry a refused call. The
ids the run hands out depend on who writes first, so plans bind them from what they read
(`$<sql>` is the F# of the SQL injection) and use `$id`/`$I` for the idea just added.

Every defect's evidence is data (`DEFECTS`), not prose, so a test can check that each
`file:line` still points at the planted line after anyone edits the sample.

Pauses: `hold_ms` is think time for a person watching and scales with `speed` (0: none).
The wait between reads and the final linger are synchronisation, not theatre, so they
keep a floor even at speed 0: a wait must not spin the member through its turn budget, and the run
must still be live when the supervisor sees the answer validated and every finding
verified (that is what makes the outcome `solved` rather than `finished`).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from horde_tui.stubmodel.agent import POLL_TRIES, AgentPolicy

Plan = list[dict[str, Any]]

DEMO_PROMPT = (
    "Security review of the userdir web app in this directory (app.py, auth.py): find the "
    "defects an attacker could exploit and file each with file:line evidence."
)
"""The run's task. No `F<digits>` or `ok #N` in it: reminders repeat the task inside tool
results, where the policy reads finding and idea ids."""

POLL_FLOOR_MS = 150
"""Least wait between two reads of a wait, at any speed."""
POLL_MS = 1000
"""Wait between two reads of a wait at speed 1."""
LINGER_FLOOR_MS = 600
"""Least pause before the validator's last read and the verifier's last post (over two
supervisor ticks), so the run is still live when the solved condition is met."""
VERIFIER = "member-4"
REPAIR_MARK = "This is a REPAIR session"
"""How a repair session's brief begins (`supervisor.repair.REPAIR_BRIEF`): the demo
model plays its repair items only there."""
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

FALSE_LEAD = Defect(
    slug="reflected-xss",
    definition="request input echoed into an HTML page without escaping",
    idea="Check whether /users reflects the name parameter into the page (XSS)",
    grep='grep -n "json\\|Content-Type" app.py',
    text="GET /users in app.py writes the rows found for the `name` parameter straight into "
    "the response without HTML escaping, so a crafted name could run script in a browser",
    evidence=(
        'app.py:32: rows = find_user(db, params.get("name", [""])[0])',
        "app.py:34: return [json.dumps(rows).encode()]",
    ),
    needle="json.dumps(rows)",
    importance="medium",
    confidence="low",
)
"""A plausible suspicion that does not hold: /users answers JSON (app.py:33), not HTML.
member-3 files it, the verifier refutes it, and the challenge that opens is answered in
the repair phase."""

REFUTATION = (
    "app.py:33 sends Content-Type application/json and app.py:34 encodes the rows with "
    "json.dumps: no HTML page is rendered, so nothing is reflected as markup"
)

POC_PATH = "poc_sqli.py"
POC = """\
\"\"\"Proof of concept: find_user() in app.py returns every user for a crafted name.\"\"\"

import sqlite3

from app import find_user

db = sqlite3.connect(":memory:")
db.execute("CREATE TABLE users (name TEXT, email TEXT, admin INTEGER)")
db.executemany(
    "INSERT INTO users VALUES (?, ?, ?)",
    [("alice", "alice@example.com", 0), ("bob", "bob@example.com", 1)],
)
rows = find_user(db, "' OR '1'='1")
print(f"{len(rows)} rows for name=' OR '1'='1: {rows}")
assert len(rows) == 2, "find_user was not injectable"
"""
"""member-2's runnable artifact: it shows the injection instead of describing it."""
POC_CRITERIA = (
    "`python3 poc_sqli.py` exits 0 and prints 2 rows (every user) for the name ' OR '1'='1"
)

REVIEWED = ("secret", "sql", "authz", "poc", "timing", "xss")
"""The order in which the verifier takes its review requests (about the order they come)."""
ANSWER = (
    "The userdir sample has four exploitable defects, each filed with file:line evidence "
    "and accepted in review: the admin token is hard-coded ($<secret>, app.py:13); find_user "
    "builds SQL by string concatenation, an injection ($<sql>, app.py:24, shown by the "
    "runnable proof of concept poc_sqli.py); check_token compares the token with == in "
    "non-constant time ($<timing>, auth.py:6); and delete_user never calls is_admin, so the "
    "documented admin check is missing ($<authz>, auth.py:14-16). A suspected reflected XSS "
    "in /users was refuted in review: /users answers JSON (app.py:33)."
)

DELIVERABLE = """\
# Deliverable: security review of userdir (demo model)

> Written by the horde-tui **demo model** (scripted, not a real LLM). The run, its
> ledgers and its reports are real; the reasoning was played from a script.

Four defects, each filed as a finding with `file:line` evidence and accepted in review by
the verifier (member-4); FINDINGS.md has the F# ids and the exact evidence.

1. **Hard-coded admin token** (critical): `SECRET_KEY` is committed in `app.py:13`.
   Move it to the environment and rotate it.
2. **SQL injection** (critical): `find_user` concatenates `name` into SQL (`app.py:24`).
   Use a `?` placeholder. The runnable proof of concept `poc_sqli.py` (an artifact,
   reproduced by the verifier) returns every user for the name `' OR '1'='1`.
3. **Timing-unsafe token check** (medium): `check_token` uses `==` (`auth.py:6`). Use
   `hmac.compare_digest`.
4. **Missing authorization** (high): `delete_user` never calls `is_admin`
   (`auth.py:14-16`) although its docstring says only admins may delete users.

Not a defect: a suspected reflected XSS in `/users` was refuted in review, because
`/users` answers `application/json` (`app.py:33`); its reporter agreed in the repair
phase. REPORT.md lists it under Acceptance as refuted."""

POSTMORTEM = """\
# Post-mortem (demo model)

> Written by the horde-tui **demo model** (scripted, not a real LLM): this critique is
> part of the script, not an analysis of the run.

- **What worked**: each worker claimed a distinct idea, so no work was duplicated; every
  finding names a concern slug and cites `file:line` evidence; each worker asked the
  verifier for a review with `message kind=review-request`, and the verifier reviewed
  every finding and the proof-of-concept artifact; the answer was proposed by one member
  and validated by another.
- **What went wrong**: member-3 filed a reflected XSS that does not hold (`/users`
  answers JSON). The verifier's refuting review opened a challenge; member-3 had already
  finished, so the repair phase gave it a short session to answer it.
- **Waits**: members waited by reading (`inbox`, `findings`, `inspect target=answer`),
  never by retrying a refused call.
- **Fixes**: read the response's content type before filing an injection into a page. Try
  a real model with `horde-tui run 4 "<your task>" --model <litellm model>` in your own
  project.
- **Read**: `$<report>` and `$<board>`."""

LESSONS = (
    (
        "Wait by reading the ledger (inbox, findings, inspect), never by retrying a refused call.",
        "never by retrying a refused call",
    ),
    (
        "Claim a distinct idea before working on it, so no work is duplicated.",
        "each worker claimed a distinct idea, so no work was duplicated",
    ),
    (
        "Check what a response really is (its content type) before filing an injection into it.",
        "read the response's content type before filing an injection into a page",
    ),
)
"""The demo model's lessons from its own post-mortem (`horde-tui lessons` on demo runs):
each line with the quote of POSTMORTEM it rests on, word for word."""


def lessons_plan() -> list[dict[str, Any]]:
    """The stub plan that answers `horde-tui lessons` on demo runs: the lessons above,
    each quoted from the first post-mortem it is sent (its run id bound from the brief)."""
    lessons = [
        {"lesson": f"{text} (demo model: scripted)", "quotes": [{"run": "$<run>", "quote": quote}]}
        for text, quote in LESSONS
    ]
    return [
        {"brief": [r"=== post-mortem of run (\S+) ==="], "bind": ["$<run>"]},
        {"say": json.dumps({"lessons": lessons})},
    ]


def brief_paths(**files: str) -> dict[str, Any]:
    """Bind `$<name>` to the path of each file a helper's brief lists (one a line, `- path`),
    so the demo's helpers read their own run's files wherever the run lives."""
    return {
        "brief": [rf"^- (\S+/{re.escape(file)})$" for file in files.values()],
        "bind": [f"$<{name}>" for name in files],
    }


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


def write(path: str, content: str, hold_ms: int = 0) -> dict[str, Any]:
    return {"tool": "write", "args": {"path": path, "content": content}, "hold_ms": hold_ms}


def wait(
    read_item: dict[str, Any], t: Timing, match: list[str], names: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Repeat a read until every `match` regex is in its result; bind their groups.

    This is how a sensible member waits for another's work: it reads the inbox or the
    ledger, it does not retry a call that was refused."""
    return {
        **read_item,
        "match": match,
        "bind": list(names),
        "wait_ms": t.retry,
        "tries": POLL_TRIES,
    }


def bind(item: dict[str, Any], pattern: str, name: str) -> dict[str, Any]:
    """`item`, binding `name` to the id its receipt names (`ok F2 filed` -> F2)."""
    return {**item, "match": [pattern], "bind": [name]}


def discovery(plan: Plan) -> Plan:
    """Items played in discovery sessions only (not in a repair session)."""
    return [{**item, "unless": REPAIR_MARK} for item in plan]


def repair(plan: Plan) -> Plan:
    """Items played only in a repair session, whose brief starts with REPAIR_MARK."""
    return [{**item, "when": REPAIR_MARK} for item in plan]


def evidence_text(defect: Defect) -> str:
    """The finding's evidence: the grep that found it, then the cited lines."""
    return "\n".join([f"$ {defect.grep}", *defect.evidence])


def var(key: str) -> str:
    """The plan variable holding the id of `key`'s finding (or of the PoC artifact)."""
    return f"$<{key}>"


def review_request(key: str, text: str, hold_ms: int) -> dict[str, Any]:
    """Ask the verifier to review `key`'s F# (or A#); the text opens with `[key]`, which
    is how the verifier's inbox wait tells the requests apart."""
    return horde(
        "message",
        hold_ms,
        to=VERIFIER,
        kind="review-request",
        target=var(key),
        text=f"[{key}] {text}",
    )


def work(key: str, defect: Defect, t: Timing) -> Plan:
    """Add an idea, claim it, grep for the defect, file it, ask for a review, close it."""
    return [
        horde("idea", t.hold(600), text=defect.idea),
        horde("claim", t.hold(300), id="$id"),
        bash(defect.grep, t.hold(800)),
        bind(
            horde(
                "finding",
                t.hold(1000),
                idea="$I",
                concern=defect.slug,
                concernDef=defect.definition,
                text=defect.text,
                evidence=evidence_text(defect),
                support=SUPPORT,
                importance=defect.importance,
                confidence=defect.confidence,
            ),
            r"\bok (F\d+) filed",
            var(key),
        ),
        review_request(key, f"please check the cited lines of {defect.slug}.", t.hold(300)),
        horde("done", t.hold(300), id="$I", result=f"filed {var(key)} ({defect.slug})"),
    ]


def finding_line(slug: str, status: str) -> str:
    """A `findings` read's line for the finding of `slug` once its review status is
    `status`; group 1 is its F#."""
    return rf"^- (F\d+) .*\(#\d+ · {slug} · member-\d+ · r\d+ · {status}\)$"


def inbox_request(key: str) -> str:
    """The verifier's inbox entry of the review request `[key]`; group 1 is its target."""
    return rf"review-request member-\d+ -> {VERIFIER} about ([FA]\d+) r\d+ · \w+\n\s+\[{key}\]"


def challenge(state: str = r"\w+") -> str:
    """The challenge about the refuted finding in an inbox; group 1 is its Q#."""
    return rf"^- (Q\d+) challenge {VERIFIER} -> member-3 about F\d+ r\d+ · {state}"


AUDITOR_POST = (
    "delete_user skips the admin check it documents; I also filed a possible XSS in /users."
)
SIGN_OFF = rf"^- \[x\] #\d+ {re.escape(FALSE_LEAD.idea[:40])}.*; done by member-3\)"
"""member-3's XSS idea closed, as `list` shows it: the last call of its session, after
its board post, so a challenge opened from here on waits for the repair phase."""


def verifier_plan(t: Timing) -> Plan:
    """Review each request as it comes: supports for the four defects, reproduced for the
    PoC, refutes for the false lead (which opens a challenge to member-3)."""
    plan: Plan = [read("app.py", t.hold(800)), read("auth.py", t.hold(800))]
    for key in REVIEWED:
        plan.append(wait(horde("inbox"), t, [inbox_request(key)], (var(key),)))
        if key == "poc":
            plan.append(bash(f"python3 {POC_PATH}", t.hold(600)))
            plan.append(
                horde(
                    "review",
                    t.hold(600),
                    target=var(key),
                    verdict="supports",
                    support="reproduced",
                    checked=f"ran `python3 {POC_PATH}`: it printed 2 rows for ' OR '1'='1",
                    evidenceText=f"$ python3 {POC_PATH}\n2 rows for name=' OR '1'='1: "
                    "[('alice', 'alice@example.com'), ('bob', 'bob@example.com')]",
                )
            )
        elif key == "xss":
            # Refuted after member-3 signed off, so its challenge waits for the repair phase.
            plan.append(wait(horde("list"), t, [SIGN_OFF]))
            plan.append(bash('grep -n "Content-Type\\|json.dumps" app.py', t.hold(600)))
            plan.append(
                horde(
                    "review",
                    t.hold(600),
                    target=var(key),
                    verdict="refutes",
                    support="derived",
                    checked="app.py:33-34, the /users response's content type and encoding",
                    evidenceText=REFUTATION,
                )
            )
        else:
            plan.append(
                horde(
                    "review",
                    t.hold(600),
                    target=var(key),
                    verdict="supports",
                    support=VERIFY_SUPPORT,
                    checked="the cited lines, re-read, and the evidence's grep, re-run",
                    evidenceText=f"Re-read the cited lines and checked them with "
                    f"`{VERIFY_GREP}`: the defect is in the code as described.",
                )
            )
    plan.append(
        horde(
            "post",
            t.linger(600),
            text="Reviewed every finding and the PoC artifact: four defects hold, the "
            "reflected XSS does not (/users answers JSON); I opened a challenge on it.",
        )
    )
    return [
        *discovery([*plan, {"say": "I reviewed every finding and the artifact."}]),
        *repair(
            [
                wait(horde("inbox", t.hold(300)), t, [challenge("responded")], ("$<q>",)),
                horde(
                    "resolve",
                    t.hold(500),
                    id="$<q>",
                    text="member-3 agrees the XSS does not hold; the finding stays refuted.",
                ),
                {"say": "I resolved my challenge."},
            ]
        ),
    ]


def build_plans(speed: float = 1.0) -> dict[str, Plan]:
    """Every member's plan, and the two finalize helpers' replies, at this speed."""
    t = Timing(speed)
    accepted = [finding_line(DEFECTS[k].slug, "full") for k in ("secret", "sql", "timing", "authz")]
    proposer: Plan = discovery(
        [
            read("app.py", t.hold(600)),
            *work("secret", DEFECTS["secret"], t),
            *work("timing", DEFECTS["timing"], t),
            horde(
                "post",
                t.hold(500),
                text="The admin token is hard-coded in app.py (filed $<secret>) and "
                "check_token leaks it through timing ($<timing>). I will propose the answer "
                "once every finding has been reviewed.",
            ),
            wait(
                horde("findings", t.hold(300)),
                t,
                [*accepted, finding_line(FALSE_LEAD.slug, "disputed")],
                (var("secret"), var("sql"), var("timing"), var("authz")),
            ),
            horde(
                "solved",
                t.hold(600),
                text=ANSWER,
                cites=[var(k) for k in ("secret", "sql", "timing", "authz")],
            ),
            {"say": "I proposed the answer; another member must validate it."},
        ]
    )
    validator: Plan = discovery(
        [
            read("app.py", t.hold(600)),
            *work("sql", DEFECTS["sql"], t),
            write(POC_PATH, POC, t.hold(1000)),
            bash(f"python3 {POC_PATH}", t.hold(700)),
            bind(
                horde(
                    "artifact",
                    t.hold(700),
                    path=POC_PATH,
                    artifactKind="runnable",
                    criteria=POC_CRITERIA,
                ),
                r"\bok (A\d+)\b",
                var("poc"),
            ),
            review_request("poc", f"please run {POC_PATH} against its criteria.", t.hold(400)),
            horde(
                "post",
                t.hold(500),
                text="find_user in app.py is injectable (filed $<sql>); poc_sqli.py shows it.",
            ),
            wait(horde("inspect", t.hold(300), target="answer"), t, [r"^Status: proposed"]),
            horde(
                "confirm-solved",
                t.hold(500),
                text="Re-read app.py:13, app.py:24, auth.py:6 and auth.py:14-16 and ran "
                f"{POC_PATH}: each cited defect is in the code as the answer describes.",
            ),
            # A read, not a board post: it keeps the session live over two supervisor
            # ticks without a post after the wrap-up.
            horde("inbox", t.linger(600)),
            {"say": "I validated member-1's answer."},
        ]
    )
    lead = work("xss", FALSE_LEAD, t)
    auditor: Plan = [
        *discovery(
            [
                read("auth.py", t.hold(600)),
                *work("authz", DEFECTS["authz"], t),
                *lead[:-1],
                horde("post", t.hold(500), text=AUDITOR_POST),
                lead[-1],  # done: closing the idea is its last call
                {"say": "I filed the missing admin check and a possible XSS."},
            ]
        ),
        *repair(
            [
                wait(horde("inbox", t.hold(300)), t, [challenge()], ("$<q>",)),
                horde(
                    "respond",
                    t.hold(600),
                    id="$<q>",
                    text=f"Agreed: {REFUTATION}. My finding does not hold; leave it refuted.",
                ),
                {"say": "I answered the challenge: the XSS finding does not hold."},
            ]
        ),
    ]
    return {
        "member-1": proposer,
        "member-2": validator,
        "member-3": auditor,
        VERIFIER: verifier_plan(t),
        # The helpers read their own run's files, by the paths their briefs name.
        "synthesis": [
            brief_paths(report="REPORT.md"),
            read("$<report>", t.hold(200)),
            horde("findings", t.hold(200)),
            {"say": DELIVERABLE},
        ],
        "postmortem": [
            brief_paths(report="REPORT.md", board="BOARD.md"),
            read("$<report>", t.hold(200)),
            read("$<board>", t.hold(200)),
            {"say": POSTMORTEM},
        ],
        # A swarm's helpers: the planner answers for the number of hordes its brief
        # names; the merge helper reads h1's deliverable first.
        "planner": [
            horde("list", t.hold(800)),
            *[
                {"say": partition_reply(n), "when": f"into exactly {n} disjoint"}
                for n in sorted(WORKSTREAMS)
            ],
        ],
        "merge": [
            {"brief": [r"^- h1 .*?(\S+/DELIVERABLE\.md)"], "bind": ["$<h1>"]},
            read("$<h1>", t.hold(800)),
            *[
                {"say": merged_reply(n), "when": f"its {n} hordes have finished"}
                for n in range(2, 5)
            ],
        ],
    }


def demo_policy(speed: float = 1.0) -> AgentPolicy:
    """The stub policy that plays the demo model."""
    return AgentPolicy(build_plans(speed))
