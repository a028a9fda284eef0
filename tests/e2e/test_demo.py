"""`horde-tui demo`: a whole real run over the bundled sample, played by the demo model.

The end-to-end test runs the command as a new user would (a subprocess, no HORDE_*
variables, no provider key); the unit tests keep the script honest: every call it makes
is a valid `horde` action, and every `file:line` it cites is the planted line.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.cli import cli_argv

from horde_tui.commands.cli import main
from horde_tui.common import prompts
from horde_tui.demo.policy import (
    ANSWER,
    DEFECTS,
    DELIVERABLE,
    DEMO_PROMPT,
    FALSE_LEAD,
    LINGER_FLOOR_MS,
    POC,
    POC_PATH,
    POLL_FLOOR_MS,
    POLL_MS,
    REFUTATION,
    REPAIR_MARK,
    VERIFY_GREP,
    Timing,
    build_plans,
    demo_policy,
)
from horde_tui.demo.run import prepare_demo, sample_files
from horde_tui.member.tools import TOOL_DEFINITIONS
from horde_tui.protocol.dispatch import READS, parse_params
from horde_tui.store.store import HordeStore
from horde_tui.store.timestamps import epoch
from horde_tui.stubmodel.agent import AgentPolicy
from horde_tui.supervisor.repair import REPAIR_BRIEF
from horde_tui.supervisor.summary import DEMO_MODEL
from horde_tui.supervisor.swarm_plan import parse_partition

SAMPLE = Path(str(sample_files()))
EVIDENCE_LINE = re.compile(r"^(?P<path>[\w./-]+\.py):(?P<line>\d+): (?P<code>.+)$")
PLACEHOLDERS = {"$id": "#1", "$I": "#1", "$F": "F1", "$<poc>": "A1", "$<q>": "Q1", "$<": "F1"}
"""Run-time ids a plan names, as the ids they stand for (`$<key>` binds an F#, but the
PoC's is an A# and `$<q>` a Q#); `$<` last, so the specific names win."""
PROVIDER_KEY = re.compile(r"(API_KEY|_TOKEN|SECRET|^AWS_|^AZURE_|^GOOGLE_|^VERTEX)", re.I)
ITEM_KEYS = {
    "tool",
    "args",
    "hold_ms",
    "say",
    "when",
    "unless",
    "match",
    "bind",
    "brief",
    "wait_ms",
    "tries",
}
"""No `until_ok`/`delay_ms`: the demo model never retries a refused call."""
SCHEMAS = {d["function"]["name"]: d["function"]["parameters"] for d in TOOL_DEFINITIONS}


def clean_env(tmp_path: Path) -> dict[str, str]:
    """The caller's environment minus HORDE_* and anything that looks like a provider key."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("HORDE_") and not PROVIDER_KEY.search(k)
    }
    env["TMPDIR"] = str(tmp_path)  # the demo's temp project lands in pytest's tmp dir
    return env


def sample_line(path: str, number: int) -> str:
    return (SAMPLE / path).read_text(encoding="utf-8").splitlines()[number - 1].strip()


def substituted(value: Any) -> Any:
    if isinstance(value, str):
        for name, dummy in PLACEHOLDERS.items():
            value = re.sub(re.escape(name) + (r"\w+>" if name == "$<" else ""), dummy, value)
        return value
    if isinstance(value, dict):
        return {k: substituted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [substituted(v) for v in value]
    return value


# -- end to end ---------------------------------------------------------------------------


RUN_BOUND_S = 60.0
"""The issue's promise: the demo finishes in under a minute at the default speed a person
watches. Asserted on run-start to run-end minus the gateway's warm-up (its litellm import
before member-1's first turn, ~6 s on an idle box and 11-17 s on this loaded 2-core one),
which the script cannot shorten; measured whole runs: 44-52 s at load ~9."""


def load_events(run_dir: Path) -> list[dict[str, Any]]:
    lines = (run_dir / "events.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def refusals(events: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(intent, outcome) of every refused `horde` call, in order."""
    intents: dict[str, dict[str, Any]] = {}
    refused = []
    for event in events:
        if event.get("type") == "intent":
            intents[event["actor"]] = event
        elif event.get("type") == "outcome" and event.get("ok") is False:
            refused.append((intents.get(event["actor"], {}), event))
    return refused


def call_key(intent: dict[str, Any]) -> str:
    """A call as the member's repeat guard sees it: action and arguments, no requestId."""
    return json.dumps(
        [intent.get("actor"), intent.get("action"), intent.get("params")], sort_keys=True
    )


@pytest.mark.e2e
@pytest.mark.slow  # the demo at its default speed: about 20 s
@pytest.mark.spawned_gateway  # the newcomer's first run, exactly as it starts for them
def test_demo_runs_end_to_end_headless_without_a_key(tmp_path: Path) -> None:
    """The demo as a newcomer runs it (default speed, no key): no spinning on refused
    calls, and a run that shows what the product is for."""
    done = subprocess.run(
        cli_argv("demo", "--headless"),
        cwd=tmp_path,
        env=clean_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=240,
    )
    out = done.stdout
    assert done.returncode == 3, out[-4000:] + done.stderr[-4000:]  # solved's status
    copied = re.search(r"^demo: sample project copied to (.+)$", out, re.M)
    assert copied, out[:2000]
    workdir = Path(copied.group(1))
    assert workdir.parent == tmp_path.resolve() and workdir.is_dir()
    assert DEMO_MODEL in out and "outcome: solved" in out
    # The lines `run --headless` ends with: the outcome, then where its report is.
    (run_dir,) = (workdir / ".horde" / "runs").iterdir()
    tail = out.split("\noutcome: solved: ", 1)[1].splitlines()
    assert tail[1] == f"report: {run_dir / 'REPORT.md'}", tail[:3]
    for name in ("app.py", "auth.py", "README.md", "AGENTS.md"):
        assert (workdir / name).read_bytes() == (SAMPLE / name).read_bytes()

    report = (run_dir / "REPORT.md").read_text()
    assert DEMO_MODEL in report and "Outcome: **solved**" in report
    assert "demo model" in (run_dir / "TASK.md").read_text()
    manifest = json.loads((run_dir / "MANIFEST.json").read_text())
    assert manifest["demo_model"] is True
    events = load_events(run_dir)

    # A sensible member: not one refused call, so none repeated unchanged and no
    # confirm-solved with nothing pending (the old script sent ~20 of those).
    refused = refusals(events)
    keys = [call_key(intent) for intent, _ in refused]
    assert len(set(keys)) == len(keys), "a refused call was sent again unchanged"
    assert not [o for i, o in refused if i.get("action") == "confirm-solved"]
    assert refused == [], [o["text"] for _, o in refused]

    # Several findings: four defects accepted, one suspicion refuted.
    findings = (workdir / ".horde" / "FINDINGS.md").read_text()
    assert len(re.findall(r"^### F\d+ ", findings, re.M)) == 5
    for defect in [*DEFECTS.values(), FALSE_LEAD]:
        assert f"concern `{defect.slug}`" in findings
        for line in defect.evidence:
            assert line in findings  # cites real sample files, checked line by line below
    assert findings.count("status full") == 4 and findings.count("status disputed") == 1
    acceptance = {a["target"]: a for a in json.loads((run_dir / "ACCEPTANCE.json").read_text())}
    states = sorted((t[0], a["state"], bool(a["refuting"])) for t, a in acceptance.items())
    assert states == [("A", "accepted", False)] + [("F", "accepted", False)] * 4 + [
        ("F", "open", True)
    ], states
    artifact = next(a for t, a in acceptance.items() if t.startswith("A"))
    assert artifact["owner"] == "member-2"
    assert (run_dir / "artifacts" / POC_PATH).read_text() == POC

    # The refuting review opened a challenge to the finding's owner; the owner answered
    # it in the repair phase and the verifier resolved it there.
    opened = [
        e
        for e in events
        if e.get("action") == "review" and "challenge opened to member-3" in e.get("text", "")
    ]
    assert len(opened) == 1, "one refuting review opens one challenge"
    challenge = re.search(r"\b(Q\d+) challenge opened", opened[0]["text"])
    assert challenge
    repair_at = next(
        i
        for i, e in enumerate(events)
        if e.get("kind") == "phase-start" and e.get("phase") == "repair"
    )
    answered = [
        (i, e["actor"], e["action"])
        for i, e in enumerate(events)
        if e.get("type") == "outcome" and e.get("entry") == challenge.group(1)
    ]
    assert [(a, act) for _, a, act in answered] == [
        ("member-3", "respond"),
        ("member-4", "resolve"),
    ]
    assert all(i > repair_at for i, _, _ in answered), "answered in the repair phase"

    # Threads for the Threads tab: a review request per finding and artifact, the challenge.
    reader = HordeStore(workdir / ".horde", "reader")
    reader.refresh()
    state = reader.state
    kinds = sorted(t.kind for t in state.threads.values())
    assert kinds == ["challenge"] + ["review-request"] * 6, kinds
    assert all(t.closed for t in state.threads.values())

    # A clean report with an Acceptance section, and the answer citing the four defects.
    assert "## Acceptance" in report and "1 refuted" in report and "5 accepted" in report
    assert "## Consistency warnings\n\n_None._" in report
    late = report.split("## Late board posts")[-1].split("\n## ")[0]
    assert "**member-" not in late, late  # nobody posted after the wrap-up
    answer = (run_dir / "ANSWER.md").read_text()
    assert "Status: validated by member-2" in answer
    cites = re.search(r"Cites: (.+)\.", answer)
    accepted = {t for t, a in acceptance.items() if t[0] == "F" and a["state"] == "accepted"}
    assert cites and set(cites.group(1).split(", ")) == accepted, answer
    deliverable = (run_dir / "DELIVERABLE.md").read_text()
    assert deliverable.startswith("# Deliverable") and "demo model" in deliverable
    assert "demo model" in (run_dir / "POSTMORTEM.md").read_text()

    def at(kind: str, member: str | None = None) -> float:
        stamp = next(
            e["ts"] for e in events if e.get("kind") == kind and e.get("member", member) == member
        )
        return epoch(stamp) or 0.0

    took = at("run-end") - at("run-start")
    warm_up = at("member-spawn", "member-2") - at("member-spawn", "member-1")
    print(f"demo run-start to run-end: {took:.1f} s, of which gateway warm-up {warm_up:.1f} s")
    assert 0 < took - warm_up < RUN_BOUND_S, (took, warm_up)


# -- the script -------------------------------------------------------------------------------


@pytest.mark.parametrize("speed", [0.0, 1.0, 2.5])
def test_every_plan_item_is_a_valid_tool_call(speed: float) -> None:
    plans = build_plans(speed)
    assert set(plans) == {
        "member-1",
        "member-2",
        "member-3",
        "member-4",
        "synthesis",
        "postmortem",
        "planner",
        "merge",
    }
    for member, plan in plans.items():
        assert "say" in plan[-1], f"{member} must end with a final message"
        for item in plan:
            assert set(item) <= ITEM_KEYS, item
            if "say" in item:
                assert isinstance(item["say"], str) and item["say"].strip()
                continue
            groups = [re.compile(p).groups for p in item.get("match", item.get("brief", ()))]
            if "brief" in item:  # binds from the helper's brief, is not played
                assert set(item) == {"brief", "bind"} and sum(groups) == len(item["bind"])
                continue
            assert item["hold_ms"] >= 0 and item.get("wait_ms", 0) >= 0
            # Every name the step binds is captured by one of its patterns' groups.
            assert sum(groups) >= len(item.get("bind", ())), item
            args = substituted(item["args"])
            if item["tool"] == "horde":
                params = parse_params(args)  # raises UsageError on any bad field
                if member in ("synthesis", "postmortem", "planner", "merge"):
                    assert params.action in READS, "helpers are read-only"
                continue
            schema = SCHEMAS[item["tool"]]
            assert item["tool"] in ("read", "bash", "write"), "the demo never edits the sample"
            if item["tool"] == "write":
                assert not (SAMPLE / args["path"]).exists(), "the demo never edits the sample"
            assert set(schema["required"]) <= set(args) <= set(schema["properties"])


def test_speed_scales_pauses_but_waits_and_lingers_keep_a_floor() -> None:
    fast, slow = build_plans(0), build_plans(2)
    for member in fast:
        for quick, paced in zip(fast[member], slow[member], strict=True):
            if "wait_ms" in quick:
                assert quick["wait_ms"] >= POLL_FLOOR_MS and paced["wait_ms"] == 2 * POLL_MS
            elif quick.get("hold_ms"):
                assert quick["hold_ms"] == LINGER_FLOOR_MS  # only the two lingers at speed 0
            if "hold_ms" in paced:
                assert paced["hold_ms"] >= quick["hold_ms"]
    with pytest.raises(ValueError):
        Timing(-1)
    with pytest.raises(ValueError):
        Timing(float("nan"))


def test_finding_evidence_points_at_the_planted_lines() -> None:
    """Every `file:line: code` in a finding's evidence is that line of the sample, and one
    of them is the defect itself; the grep in the evidence really finds it."""
    filed = [
        item["args"]
        for plan in build_plans().values()
        for item in plan
        if item.get("tool") == "horde" and item["args"]["action"] == "finding"
    ]
    planted = [*DEFECTS.values(), FALSE_LEAD]
    assert sorted(a["concern"] for a in filed) == sorted(d.slug for d in planted)
    by_slug = {d.slug: d for d in planted}
    for args in filed:
        defect = by_slug[args["concern"]]
        refs = [m for line in args["evidence"].splitlines() if (m := EVIDENCE_LINE.match(line))]
        assert refs, args["evidence"]
        for ref in refs:
            assert sample_line(ref["path"], int(ref["line"])) == ref["code"], ref.group(0)
        hits = [r for r in refs if defect.needle in r["code"]]
        assert hits, f"no cited line of {defect.slug} contains {defect.needle!r}"
        grep = subprocess.run(
            defect.grep, shell=True, cwd=SAMPLE, capture_output=True, text=True, timeout=10
        )
        assert any(f"{r['line']}:" in grep.stdout and r["code"] in grep.stdout for r in hits), (
            grep.stdout
        )


def test_the_verifiers_grep_finds_every_defect_line() -> None:
    grep = subprocess.run(
        VERIFY_GREP, shell=True, cwd=SAMPLE, capture_output=True, text=True, timeout=10
    )
    for defect in DEFECTS.values():
        assert any(defect.needle in line for line in grep.stdout.splitlines()), defect.slug


def test_answer_and_deliverable_cite_defect_lines() -> None:
    """The `file:N` and `file:N-M` references in the prose land on lines the findings cite."""
    cited = {
        (m["path"], int(m["line"]))
        for d in DEFECTS.values()
        for line in d.evidence
        if (m := EVIDENCE_LINE.match(line))
    }
    # The refutation cites the lines that show /users answers JSON, not HTML.
    assert '"application/json"' in sample_line("app.py", 33) and "app.py:33" in REFUTATION
    assert "json.dumps" in sample_line("app.py", 34) and "app.py:34" in REFUTATION
    cited |= {("app.py", 33)}
    refs = re.findall(r"\b(\w+\.py):(\d+)(?:-(\d+))?", ANSWER + DELIVERABLE)
    assert len(refs) >= 8
    for path, first, last in refs:
        assert (path, int(first)) in cited and (not last or (path, int(last)) in cited)
    assert not re.search(r"\bF\d+\b|\bok #", DEMO_PROMPT), "ids in the task confuse the policy"
    for path in SAMPLE.rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts:
            text = path.read_text(encoding="utf-8")
            assert not re.search(r"\bF\d+\b|\bok #", text), f"{path.name} would confuse $F/$I"


# -- setup and the command line ---------------------------------------------------------------


def test_prepare_demo_ignores_the_users_model_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HORDE_MODEL", "anthropic/some-real-model")
    monkeypatch.setenv("HORDE_API_KEY", "a-real-key")
    monkeypatch.setenv("NO_PROXY", "example.com")
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    demo = prepare_demo(0, parent=tmp_path)
    try:
        assert demo.workdir.parent == tmp_path.resolve()
        assert sorted(p.name for p in demo.workdir.iterdir()) == [
            "AGENTS.md",
            "README.md",
            "app.py",
            "auth.py",
        ]
        assert demo.settings.gateway.model == demo.stub.model == "openai/stub"
        assert demo.settings.gateway.api_base == demo.stub.api_base
        assert demo.settings.gateway.api_key == "demo"
        assert demo.request.demo and demo.request.count == 4 and demo.request.verifier
        assert os.environ["NO_PROXY"] == "example.com,127.0.0.1,localhost"
        assert os.environ["no_proxy"] == "127.0.0.1,localhost"
    finally:
        demo.stub.close()


def test_bad_speed_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--headless", "--speed", "-1"]) == 2
    assert "speed must be" in capsys.readouterr().err


@pytest.mark.parametrize("hordes", [2, 3, 4])
def test_the_demo_model_plans_and_merges_a_swarm_of_any_size(hordes: int) -> None:
    """The planner and merge helpers answer for the number of hordes their briefs name:
    a partition the swarm accepts, and a deliverable attributing every defect to every
    horde."""
    policy = demo_policy(0)
    planner_brief = prompts.PLANNER_BRIEF.format(hordes=hordes)
    merge_brief = prompts.MERGE_BRIEF.format(swarm="s1", hordes=hordes, files="- h1: ...")

    def final(member: str, brief: str) -> str:
        messages: list[dict[str, Any]] = [{"role": "user", "content": f"# Task\n\nx\n\n{brief}"}]
        step = policy(member, {"messages": messages})
        assert step is not None and step.tool_calls  # a read-only look first
        messages.append({"role": "tool", "content": "[horde result: data]\nok"})
        step = policy(member, {"messages": messages})
        assert step is not None and not step.tool_calls
        return step.content or ""

    shares = parse_partition(final("planner", planner_brief), hordes)
    assert [s.horde for s in shares] == [f"h{n}" for n in range(1, hordes + 1)]
    merged = final("merge", merge_brief)
    for n in range(1, hordes + 1):
        assert merged.count(f"[h{n} F") == len(DEFECTS)


def test_the_demo_helpers_read_and_cite_the_files_their_brief_names() -> None:
    """A finalize helper's brief lists its run's files (issue 32): the demo's post-mortem
    reads the report and the board at those paths and cites them."""
    files = "- .horde/swarms/s1/h2/runs/s1-h2/REPORT.md\n- .horde/swarms/s1/h2/BOARD.md"
    brief = prompts.POSTMORTEM_BRIEF.format(run="s1-h2", files=files)
    policy = demo_policy(0)
    messages: list[dict[str, Any]] = [{"role": "user", "content": f"# Task\n\nx\n\n{brief}"}]
    paths = []
    for _ in range(2):
        step = policy("postmortem", {"messages": messages})
        assert step is not None and [c.name for c in step.tool_calls] == ["read"]
        paths.append(json.loads(step.tool_calls[0].arguments)["path"])
        messages.append({"role": "tool", "content": "[read result: data]\nok"})
    assert paths == [line.removeprefix("- ") for line in files.splitlines()]
    step = policy("postmortem", {"messages": messages})
    assert step is not None and not step.tool_calls and step.content
    assert "`.horde/swarms/s1/h2/runs/s1-h2/REPORT.md` and `.horde/swarms/s1/h2/BOARD.md`" in (
        step.content
    )


def test_a_wait_reads_until_it_sees_what_it_waits_for_and_binds_the_ids() -> None:
    """The agent policy's wait: the same read repeats `wait_ms` apart (never a refused
    write) until its regex matches, and the ids it captured fill the next call."""
    policy = AgentPolicy(
        {
            "member-1": [
                {
                    "tool": "horde",
                    "args": {"action": "findings"},
                    "match": [r"^- (F\d+) .*sql-injection"],
                    "bind": ["$<sql>"],
                    "wait_ms": 700,
                    "hold_ms": 50,
                },
                {"tool": "horde", "args": {"action": "solved", "text": "x", "cites": ["$<sql>"]}},
                {"say": "done"},
            ]
        }
    )
    messages: list[dict[str, Any]] = [{"role": "user", "content": "task"}]

    def step() -> tuple[dict[str, Any], int]:
        reply = policy("member-1", {"messages": messages})
        assert reply is not None and reply.tool_calls
        return json.loads(reply.tool_calls[0].arguments_json()), reply.delay_ms

    assert step() == ({"action": "findings"}, 50)
    for shown in ("No findings yet.", "1 findings:\n- F1 [high] a secret (#1 · secrets · m · r1)"):
        messages.append({"role": "tool", "content": f"[horde result: data]\n{shown}"})
        assert step() == ({"action": "findings"}, 700), "same read again, no requestId"
    messages.append(
        {"role": "tool", "content": "[horde result: data]\n- F1 x\n- F2 [critical] sql-injection"}
    )
    assert step() == ({"action": "solved", "text": "x", "cites": ["F2"]}, 0)


def test_the_repair_items_play_in_a_repair_session() -> None:
    """The demo's repair items are keyed on how the supervisor's repair brief begins."""
    assert REPAIR_BRIEF.startswith(REPAIR_MARK)
    repair_items = [
        i for plan in build_plans().values() for i in plan if i.get("when") == REPAIR_MARK
    ]
    assert {i["args"]["action"] for i in repair_items if "args" in i} == {
        "inbox",
        "respond",
        "resolve",
    }
