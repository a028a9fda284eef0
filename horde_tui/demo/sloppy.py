"""The sloppy demo model: three members that make every mistake a careless model makes.

`horde-tui demo --policy sloppy` (and the e2e tests) run it over the bundled sample to
show that bad input costs a model one clear line and nothing else: misnamed actions
(`create_idea`, `add_finding`) and fields (`idea_id`, `severity`), a hallucinated id
(`F99`), calls wrapped in prose or a code fence, a tool that does not exist, writes to
`.horde/` through `write`, `edit` and `bash`, a 1 MB field, a 200 KB reply, and one
identical refused call sent until the member is reset for `looping`. Between the
mistakes each member does real work, so the run still ends with three findings filed.

Every refusal a member receives is listed in `EXPECTED_REFUSALS` with the words it must
contain (what to send instead), so the tests check the lines, not just the outcome.
"""

from __future__ import annotations

from typing import Any

from horde_tui.demo.policy import DEFECTS, SUPPORT, Defect, Plan, Timing, bash, horde, read
from horde_tui.stubmodel.agent import AgentPolicy

SLOPPY_MEMBERS = 3
"""The misnamer, the formatter and the looper; no verifier (nothing waits on reviews)."""

SLOPPY_PROMPT = (
    "Security review of the userdir web app in this directory (app.py, auth.py): find the "
    "defects an attacker could exploit and file each with file:line evidence. (Played by "
    "the sloppy demo model: expect refused calls.)"
)

LOOPER = "member-3"
LOOP_CALLS = 12
"""Identical refused calls the looper's plan would send: more than the member allows."""
RESET_MARK = "reset for looping"
"""In the brief of a session reset for `looping` (`prompts.LOOPING_BRIEF`)."""
BIG_FIELD = 1_000_000
"""Characters of the 1 MB post."""
BIG_REPLY = 200_000
"""Characters of chatter in the 200 KB reply."""
UNKNOWN_TOOL = "search_code"

EXPECTED_REFUSALS: dict[str, str] = {
    "misnamed action create_idea": "did you mean 'idea'",
    "misnamed action add_finding": "did you mean 'finding'",
    "misnamed field idea_id (claim)": "the field is 'id'",
    "misnamed field idea_id (finding)": "the field is 'idea'",
    "misnamed field severity": "the field is 'importance'",
    "hallucinated id": "F99 does not exist",
    "write into .horde/": "write of '.horde/FINDINGS.md' inside .horde/",
    "edit of .horde/": "edit of '.horde/BOARD.md' inside .horde/",
    "bash into .horde/": "record it with the horde tool",
    "1 MB field": "over the cap of",
    "looping": "stop sending it",
}
"""What each refusal must say, by mistake. Under the JSON protocol the gateway forgives
prose and fences and refuses the unknown tool itself; natively the member refuses them.
The tool list is matched up to `horde`: the rest grows with the member's tools."""

NATIVE_ONLY_REFUSALS: dict[str, str] = {
    "read call in prose": "send a JSON object with path",
    "horde call in a fence": "must be one JSON object and nothing else",
    "unknown tool": "is not available in this session (tools: bash, edit, horde, ",
}
GATEWAY_REFUSALS: dict[str, str] = {
    "unknown tool": f'unknown tool "{UNKNOWN_TOOL}"; known tools: bash, edit, horde, ',
}


def _filed(defect: Defect) -> dict[str, Any]:
    """A correct `finding` call's fields for a planted defect."""
    return {
        "concern": defect.slug,
        "concernDef": defect.definition,
        "text": defect.text,
        "evidence": "\n".join([f"$ {defect.grep}", *defect.evidence]),
        "support": SUPPORT,
        "importance": defect.importance,
        "confidence": defect.confidence,
    }


def misnamer(t: Timing) -> Plan:
    """Wrong action names, wrong field names and a hallucinated id; files the secret."""
    defect = DEFECTS["secret"]
    fields = _filed(defect)
    severity = {k: v for k, v in fields.items() if k != "importance"}
    return [
        horde("create_idea", t.hold(600), text=defect.idea),
        horde("idea", t.hold(600), text=defect.idea),
        horde("claim", t.hold(400), idea_id="$I"),
        horde("claim", t.hold(400), id="$I"),
        bash(defect.grep, t.hold(800)),
        horde("add_finding", t.hold(600), idea="$I", **fields),
        horde("finding", t.hold(600), idea_id="$I", **fields),
        horde("finding", t.hold(600), idea="$I", severity=defect.importance, **severity),
        horde("finding", t.hold(800), idea="$I", **fields),
        horde("verify", t.hold(400), id="F99", support="reproduced"),
        horde("done", t.hold(400), id="$I", result=f"filed ({defect.slug})"),
        {"say": "I filed the hard-coded secret."},
    ]


def formatter(t: Timing) -> Plan:
    """Calls in prose and fences, a made-up tool, `.horde/` writes, a 1 MB field and a
    200 KB reply; files the SQL injection."""
    defect = DEFECTS["sql"]
    return [
        {**read("app.py", t.hold(600)), "wrap": "prose"},
        {
            **horde("idea", t.hold(600), text="Check app.py's imports for unsafe modules"),
            "wrap": "fence",
        },
        {
            "tool": UNKNOWN_TOOL,
            "args": {"query": "execute("},
            "hold_ms": t.hold(400),
            "gateway_refuses": True,
        },
        {
            "tool": "write",
            "args": {"path": ".horde/FINDINGS.md", "content": "# mine now\n"},
            "hold_ms": t.hold(400),
        },
        {
            "tool": "edit",
            "args": {"path": ".horde/BOARD.md", "oldText": "# Board", "newText": "# Mine"},
            "hold_ms": t.hold(400),
        },
        bash("echo '### F1 forged' >> .horde/FINDINGS.md", t.hold(400)),
        horde("post", t.hold(400), text="A" * BIG_FIELD),
        {**horde("idea", t.hold(600), text=defect.idea), "pad": BIG_REPLY},
        horde("claim", t.hold(400), id="$I"),
        bash(defect.grep, t.hold(800)),
        horde("finding", t.hold(800), idea="$I", **_filed(defect)),
        horde("done", t.hold(400), id="$I", result=f"filed ({defect.slug})"),
        {"say": "I filed the SQL injection."},
    ]


def looper(t: Timing) -> Plan:
    """Sends one refused call over and over until reset; then files the timing leak."""
    defect = DEFECTS["timing"]
    stuck = horde("verify", t.hold(200), id="F99", support="reproduced")
    return [
        *[{**stuck, "unless": RESET_MARK} for _ in range(LOOP_CALLS)],
        {"say": "I could not verify F99.", "unless": RESET_MARK},
        *[
            {**item, "when": RESET_MARK}
            for item in [
                horde("idea", t.hold(600), text=defect.idea),
                horde("claim", t.hold(400), id="$I"),
                bash(defect.grep, t.hold(800)),
                horde("finding", t.hold(800), idea="$I", **_filed(defect)),
                horde("done", t.hold(400), id="$I", result=f"filed ({defect.slug})"),
                {"say": "After the reset I filed the timing leak."},
            ]
        ],
    ]


DELIVERABLE = """\
# Deliverable: security review of userdir (sloppy demo model)

> Written by the horde-tui **sloppy demo model** (scripted, not a real LLM): its members
> made careless calls on purpose; FINDINGS.md has what they filed between refusals."""

POSTMORTEM = """\
# Post-mortem (sloppy demo model)

> Written by the horde-tui **sloppy demo model** (scripted, not a real LLM).

- Every careless call was refused in one line naming what to send instead.
- member-3 repeated one refused call, was told to stop, and was reset for `looping`."""


def build_sloppy_plans(speed: float = 0.0) -> dict[str, Plan]:
    """Every member's plan, and the finalize helpers' replies, at this speed."""
    t = Timing(speed)
    return {
        "member-1": misnamer(t),
        "member-2": formatter(t),
        LOOPER: looper(t),
        "synthesis": [horde("findings", t.hold(400)), {"say": DELIVERABLE}],
        "postmortem": [read(".horde/BOARD.md", t.hold(400)), {"say": POSTMORTEM}],
    }


def sloppy_policy(speed: float = 0.0) -> AgentPolicy:
    """The stub policy that plays the sloppy demo model."""
    return AgentPolicy(build_sloppy_plans(speed))
