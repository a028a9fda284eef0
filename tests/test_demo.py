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
import sys
from pathlib import Path
from typing import Any

import pytest

from horde_tui import prompts
from horde_tui.cli import main
from horde_tui.demo.policy import (
    ANSWER,
    DEFECTS,
    DELIVERABLE,
    DEMO_PROMPT,
    LINGER_FLOOR_MS,
    POLL_FLOOR_MS,
    POLL_MS,
    VERIFY_GREP,
    Timing,
    build_plans,
    demo_policy,
)
from horde_tui.demo.run import prepare_demo, sample_files
from horde_tui.member.tools import TOOL_DEFINITIONS
from horde_tui.protocol.dispatch import READS, parse_params
from horde_tui.supervisor.summary import DEMO_MODEL
from horde_tui.supervisor.swarm_plan import parse_partition

SAMPLE = Path(str(sample_files()))
EVIDENCE_LINE = re.compile(r"^(?P<path>[\w./-]+\.py):(?P<line>\d+): (?P<code>.+)$")
PLACEHOLDERS = {"$id": "#1", "$I": "#1", "$F": "F1"}
PROVIDER_KEY = re.compile(r"(API_KEY|_TOKEN|SECRET|^AWS_|^AZURE_|^GOOGLE_|^VERTEX)", re.I)
ITEM_KEYS = {"tool", "args", "hold_ms", "until_ok", "delay_ms", "say", "when"}
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
            value = value.replace(name, dummy)
        return value
    if isinstance(value, dict):
        return {k: substituted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [substituted(v) for v in value]
    return value


# -- end to end ---------------------------------------------------------------------------


def test_demo_runs_end_to_end_headless_without_a_key(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "horde_tui", "demo", "--headless", "--speed", "0"],
        cwd=tmp_path,
        env=clean_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=110,
    )
    out = done.stdout
    assert done.returncode == 0, out[-4000:] + done.stderr[-4000:]
    copied = re.search(r"^demo: sample project copied to (.+)$", out, re.M)
    assert copied, out[:2000]
    workdir = Path(copied.group(1))
    assert workdir.parent == tmp_path.resolve() and workdir.is_dir()
    assert DEMO_MODEL in out and "outcome: solved" in out
    for name in ("app.py", "auth.py", "README.md", "AGENTS.md"):
        assert (workdir / name).read_bytes() == (SAMPLE / name).read_bytes()

    runs = list((workdir / ".horde" / "runs").iterdir())
    assert len(runs) == 1
    run_dir = runs[0]
    assert DEMO_MODEL in (run_dir / "REPORT.md").read_text()
    assert "Outcome: **solved**" in (run_dir / "REPORT.md").read_text()
    assert "demo model" in (run_dir / "TASK.md").read_text()
    manifest = json.loads((run_dir / "MANIFEST.json").read_text())
    assert manifest["demo_model"] is True

    findings = (workdir / ".horde" / "FINDINGS.md").read_text()
    for fid in ("F1", "F2", "F3", "F4"):
        assert f"### {fid} " in findings
    assert findings.count("supports r1 by member-4") == 4
    assert findings.count("status full") == 4
    for defect in DEFECTS.values():
        assert f"concern `{defect.slug}`" in findings
        for line in defect.evidence:
            assert line in findings  # cites real sample files, checked line by line below

    answer = (run_dir / "ANSWER.md").read_text()
    assert "Status: validated by member-2" in answer
    assert "Cites: F1, F2, F3, F4." in answer
    deliverable = (run_dir / "DELIVERABLE.md").read_text()
    assert deliverable.startswith("# Deliverable") and "demo model" in deliverable
    assert "demo model" in (run_dir / "POSTMORTEM.md").read_text()


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
            assert item["hold_ms"] >= 0 and item.get("delay_ms", 0) >= 0
            args = substituted(item["args"])
            if item["tool"] == "horde":
                params = parse_params(args)  # raises UsageError on any bad field
                if member in ("synthesis", "postmortem", "planner", "merge"):
                    assert params.action in READS, "helpers are read-only"
                continue
            schema = SCHEMAS[item["tool"]]
            assert item["tool"] in ("read", "bash"), "the demo never edits the sample"
            assert set(schema["required"]) <= set(args) <= set(schema["properties"])


def test_speed_scales_pauses_but_polls_and_lingers_keep_a_floor() -> None:
    fast, slow = build_plans(0), build_plans(2)
    for member in fast:
        for quick, paced in zip(fast[member], slow[member], strict=True):
            if "until_ok" in quick:
                assert quick["delay_ms"] >= POLL_FLOOR_MS and paced["delay_ms"] == 2 * POLL_MS
            elif quick.get("hold_ms"):
                assert quick["hold_ms"] == LINGER_FLOOR_MS  # only the two lingers at speed 0
            if "hold_ms" in paced and "until_ok" not in quick:
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
    assert sorted(a["concern"] for a in filed) == sorted(d.slug for d in DEFECTS.values())
    by_slug = {d.slug: d for d in DEFECTS.values()}
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
        assert demo.settings.model == demo.stub.model == "openai/stub"
        assert demo.settings.api_base == demo.stub.api_base
        assert demo.settings.api_key == "demo"
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
