"""`horde-tui runs [--json]`: every run and swarm of a project from a terminal, newest
first, one line each (a swarm's hordes beneath it), read by the runs list's own index."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from support.cli import cli_argv, host_env
from support.rundir import RunDir, several_runs
from support.swarm_scene import SWARM_ID, swarm_scene, tool

from horde_tui.commands.cli import main

DONE = "20260102-120000-aaaa"
STOPPED = "20260102-115900-5709"
FAILED = "20260102-115800-fa11"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Runs in every state, a stopped one and a failed one, and a live swarm whose h1 has
    a finding; the finished run has two findings (one accepted on a tested review) and
    two priced model calls."""
    horde = tmp_path / ".horde"
    several_runs(horde)
    swarm_scene(horde)
    for run_id, outcome in ((STOPPED, "stopped by user"), (FAILED, "canary failed")):
        run = RunDir(horde, run_id, members=2)
        run.event(0, "run-start", members=2, model="openai/stub")
        run.event(9, "run-end", outcome=outcome, diagnosis="")
        (run.path / "REPORT.md").write_text("# Report\n")
    findings = []
    for n, where in enumerate(("app/db/query.py:42", "app/web/login.py:7"), start=1):
        idea = tool(horde, DONE, f"member-{n}", "idea", text=f"Audit {where.split(':')[0]}")
        tool(horde, DONE, f"member-{n}", "claim", id=idea)
        finding = tool(
            horde,
            DONE,
            f"member-{n}",
            "finding",
            text=f"SQL injection reachable at {where}",
            evidence=where,
            concern="sql-injection",
            concernDef="SQL built from untrusted input",
        )
        findings.append(finding)
    tool(
        horde,
        DONE,
        "member-3",
        "review",
        target=findings[0],
        verdict="supports",
        support="tested",
        checked="the whole claim",
        evidence="ran it: the injection goes through",
    )
    call = {"member": "member-1", "prompt_tokens": 10, "completion_tokens": 5, "cost_usd": 0.25}
    (horde / "runs" / DONE / "usage.jsonl").write_text((json.dumps(call) + "\n") * 2)
    monkeypatch.setenv("HORDE_DIR", str(horde))
    return horde


def test_runs_lists_every_run_and_swarm_newest_first(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["runs"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    header, *lines = out.splitlines()
    assert header.split() == ["ID", "STATE", "OUTCOME", "MEMBERS", "FINDINGS", "COST", "AGE"]
    ids = [line.split()[0] for line in lines]
    assert ids == [
        SWARM_ID,
        "h1",
        "h2",
        "h3",
        "20260102-120300-dddd",
        "20260102-120200-cccc",
        "20260102-120100-bbbb",
        DONE,
        STOPPED,
        FAILED,
        "20260102-120400-eeee",  # never started: no time to sort by, as in the app's list
    ]
    row = {line.split()[0]: line for line in lines}
    assert row[DONE].split()[1:3] == ["finished", "solved"]
    assert " 3 " in row[DONE] and " 1/2 " in row[DONE] and " $0.50 " in row[DONE]
    assert row[STOPPED].split()[1:5] == ["stopped", "stopped", "by", "user"]
    assert row[FAILED].split()[1:4] == ["failed", "canary", "failed"]
    assert row["20260102-120300-dddd"].split()[1] == "live"
    assert row["20260102-120200-cccc"].split()[1] == "live"  # finalizing
    assert row["20260102-120100-bbbb"].split()[1] == "interrupted"
    assert row[SWARM_ID].split()[1:3] == ["live", "-"] and " 3/3 " in row[SWARM_ID]
    assert row["h1"].startswith("  h1 ") and " 0/1 " in row["h1"]  # its finding, not accepted
    assert row["h3"].split()[1] == "pending"


def test_runs_json_is_the_same_list(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["runs", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in listed][:2] == [SWARM_ID, "20260102-120300-dddd"]
    done = next(r for r in listed if r["id"] == DONE)
    assert done["kind"] == "run" and done["state"] == "finished" and done["outcome"] == "solved"
    assert (done["members"], done["findings"], done["accepted"]) == (3, 2, 1)
    assert done["cost_usd"] == pytest.approx(0.5) and done["age_s"] > 0
    swarm = listed[0]
    assert swarm["kind"] == "swarm" and [h["id"] for h in swarm["hordes"]] == ["h1", "h2", "h3"]
    assert swarm["findings"] == sum(h["findings"] for h in swarm["hordes"]) == 1


def test_runs_of_an_empty_project_says_how_to_start(tmp_path: Path) -> None:
    done = subprocess.run(
        cli_argv("runs"),
        cwd=tmp_path,
        env=host_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.startswith(f"no runs in {tmp_path / '.horde'} yet; start one with")
    assert not (tmp_path / ".horde").exists()
    assert os.listdir(tmp_path) == []
