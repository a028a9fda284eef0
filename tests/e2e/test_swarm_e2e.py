"""Swarms end to end: a real swarm supervisor, gateways, hordes and helper processes, the
stub model playing the planner, the members and the merge helper."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.cli import cli, cli_argv, host_env, stub_env, wait_for_line
from support.processes import wait_until

from horde_tui.common.settings import load_settings
from horde_tui.stubmodel import StubThread
from horde_tui.stubmodel.agent import AgentPolicy
from horde_tui.supervisor.observe import SupervisorEvent
from horde_tui.supervisor.setup import RunRequest
from horde_tui.supervisor.swarm import SwarmSupervisor
from horde_tui.view.source import send_control

pytestmark = [pytest.mark.slow, pytest.mark.e2e]  # whole real runs: `pytest -m slow`

APP = "PASSWORD = 'hunter2'\n\n\ndef login(user, password):\n    return password == PASSWORD\n"
PARTITION = (
    "h1: Audit app.py for hard-coded secrets\n"
    "acceptance: every secret in app.py is filed with its line\n"
    "h2: Audit login() for timing attacks\n"
    "acceptance: the comparison in login() is classified with evidence\n"
)
MERGED = (
    "# Swarm deliverable\n\n- The password is hard-coded [h1 F1: open].\n"
    "- login() compares in non-constant time [h2 F1: open].\n"
)
CONTRACT_KEYS = {
    "id",
    "prompt",
    "hordes",
    "members",
    "model",
    "demo",
    "layers",
    "state",
    "parent_pid",
    "started",
    "ended",
    "outcome",
    "diagnosis",
    "partition",
    "runs",
    "merge",
    "timeline",
}


def horde(action: str, **args: Any) -> dict[str, Any]:
    return {"tool": "horde", "args": {"action": action, **args}}


PLANS = {
    "member-1": [
        horde("fact", text="app.py defines login(user, password)"),
        horde("idea", text="Check app.py line 1"),
        horde("claim", id="$id"),
        horde(
            "finding",
            concern="secrets",
            concernDef="credentials in source",
            text="app.py:1 hard-codes a password",
            evidence="app.py:1",
            support="tested",
            importance="high",
            confidence="high",
        ),
        horde("done", id="$I", result="filed $F"),
        {"say": "Done."},
    ],
    "member-2": [horde("facts"), {"say": "Nothing more."}],
    "synthesis": [{"say": "# Deliverable\n\nF1 holds."}],
    "postmortem": [{"say": "# Post-mortem\n\nFine."}],
    "merge": [{"say": MERGED}],
}


def settings(stub: StubThread, **extra: Any) -> Any:
    env = {"HORDE_MODEL": stub.model, "HORDE_API_BASE": stub.api_base, "HORDE_API_KEY": "stub"}
    overrides = {"swarm_stagger_ms": 100, "postmortem": False, **extra}
    return load_settings(environ=env, overrides=overrides)


@pytest.fixture(autouse=True)
def fast_gateway(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HORDE_GATEWAY_BACKOFF_MS", "20")


def run_swarm(sw: SwarmSupervisor) -> Any:
    return asyncio.run(asyncio.wait_for(sw.run(), 300))


def test_a_2_by_2_swarm_plans_runs_both_hordes_merges_and_reports(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(APP)
    events: list[SupervisorEvent] = []
    plans = {**PLANS, "planner": [{"say": PARTITION}]}
    with StubThread(policy=AgentPolicy(plans)) as stub:
        sw = SwarmSupervisor(
            tmp_path, RunRequest("Review app.py", 2), settings(stub), 2, sink=events.append
        )
        summary = run_swarm(sw)

    data = json.loads((sw.swarm_dir / "SWARM.json").read_text())
    assert set(data) == CONTRACT_KEYS
    assert data["state"] == summary.state == "finished"
    assert summary.exit_code == {"completed": 0, "solved": 3}[data["outcome"]], data
    assert [w["workstream"] for w in data["partition"]] == [
        "Audit app.py for hard-coded secrets",
        "Audit login() for timing attacks",
    ]
    assert data["merge"] == "done" and data["ended"] is not None
    kinds = [(t["kind"], t["horde"]) for t in data["timeline"]]
    assert kinds[:2] == [("planner-start", None), ("planner-end", None)]
    for name in ("h1", "h2"):
        assert ("horde-start", name) in kinds and ("horde-end", name) in kinds
    assert kinds[-3:] == [("merge-start", None), ("merge-end", None), ("swarm-end", None)]

    for n, name in enumerate(("h1", "h2")):
        run_dir = sw.swarm_dir / data["runs"][name]
        assert run_dir == sw.swarm_dir / name / "runs" / f"{sw.swarm_id}-{name}"
        assert (run_dir / "REPORT.md").is_file() and (run_dir / "DELIVERABLE.md").is_file()
        task = (run_dir / "TASK.md").read_text()
        assert data["partition"][n]["workstream"] in task and "Work ONLY" in task
        other = "h2" if name == "h1" else "h1"
        assert str(sw.swarm_dir / other) in (run_dir / "SYSTEM.md").read_text()
        # member-2's `horde facts` went through a real member process: its siblings came
        # with it (HORDE_SIBLINGS), whatever the other horde had recorded by then.
        transcript = next((run_dir / "sessions" / "member-2").glob("*.jsonl")).read_text()
        assert "## Sibling hordes' facts (read-only, tagged [hN]" in transcript
        report = (run_dir / "REPORT.md").read_text()
        assert "app.py:1" in report and "does not exist" not in report  # cited in workdir
        assert summary.hordes[name].outcome in ("finished", "solved")
    assert not (tmp_path / ".horde" / "ledger.jsonl").exists()  # project ledgers untouched

    report = (sw.swarm_dir / "REPORT.md").read_text()
    assert "## h1: " in report and "## h2: " in report
    assert "Audit login() for timing attacks" in report and "[h1 F1]" in report
    helpers = report.split("## Swarm helpers (planner, merge)")[1]
    assert "| planner | planner | completed | 1 |" in helpers and "| merge | merge |" in helpers
    deliverable = (sw.swarm_dir / "DELIVERABLE.md").read_text()
    assert deliverable.strip() == MERGED.strip()  # attributed to both: no horde-tui note
    merge_sessions = list((sw.swarm_dir / "deliverable-sessions" / "merge").glob("*.jsonl"))
    assert len(merge_sessions) == 1
    brief = merge_sessions[0].read_text()
    for name in ("h1", "h2"):
        assert f"{name}/runs/{sw.swarm_id}-{name}/DELIVERABLE.md" in brief
    assert list((sw.swarm_dir / "planner-sessions" / "planner").glob("*.jsonl"))

    tagged = {e.data.get("horde") for e in events if e.kind == "member-spawn"}
    assert {"h1", "h2"} <= tagged
    swarm_kinds = [e.kind for e in events if e.member is None and e.kind.startswith("horde-")]
    assert swarm_kinds.count("horde-start") == 2 and swarm_kinds.count("horde-end") == 2


LOOPING = {
    "*": [{**horde("list"), "until_ok": 0, "hold_ms": 200}] * 400,
    "synthesis": [{"say": "# Deliverable\n\nNothing found."}],
    "postmortem": [{"say": "# Post-mortem\n\nFine."}],
    "merge": [{"say": "# Swarm deliverable\n\n- [h1: open] nothing\n- [h2: open] nothing\n"}],
}


def _lifecycle(run_dir: Path) -> list[tuple[str, float]]:
    lines = (run_dir / "events.jsonl").read_text().splitlines()
    events = [json.loads(line) for line in lines]
    return [(e["kind"], e.get("ts", 0)) for e in events if e.get("type") == "lifecycle"]


def test_a_headless_plan_swarm_deals_layers_and_takes_horde_targets_from_another_shell(
    tmp_path: Path,
) -> None:
    with StubThread(policy=AgentPolicy(LOOPING)) as stub:
        env = stub_env(stub, HORDE_SWARM_STAGGER_MS="100")
        proc = subprocess.Popen(
            cli_argv("plan", "--headless", "2/1", "api; db; ui"),
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            wait_for_line(proc, "h2 [member-spawn] member-1", 90)
            status = cli(tmp_path, "status")
            assert status.returncode == 0, status.stdout + status.stderr
            assert "\nh1: layers: api; ui\n" in status.stdout
            assert "\nh2: layers: db\n" in status.stdout and "member-1" in status.stdout
            one = cli(tmp_path, "status", "h2:member-1")  # one horde's block, one member
            assert one.returncode == 0, one.stdout + one.stderr
            assert "\nh2: layers: db\n" in one.stdout and "h1:" not in one.stdout, one.stdout
            assert "  member-1 " in one.stdout

            paused = cli(tmp_path, "pause", "h2:member-1")
            assert paused.stdout.strip() == "h2: paused member-1", paused.stdout + paused.stderr
            resumed = cli(tmp_path, "resume", "member-1")  # a bare member: every horde
            assert resumed.stdout.splitlines() == [
                "h1: resumed nothing (no paused member matched)",
                "h2: resumed member-1",
            ]
            assert cli(tmp_path, "pause", "h3").returncode == 2  # not in this swarm
            # One path for the CLI and the swarm screen (`send_control`, its remote
            # controls): one request in the swarm's own `control/`, answered by the swarm
            # supervisor, which forwards it once to each horde the target names.
            swarm_dir = next((tmp_path / ".horde" / "swarms").iterdir())
            assert send_control(swarm_dir, "pause", "h1:member-1") == "h1: paused member-1"
            assert send_control(swarm_dir, "resume", "all").splitlines() == [
                "h1: resumed member-1",
                "h2: resumed nothing (no paused member matched)",
            ]
            h1_run = swarm_dir / "h1" / "runs" / f"{swarm_dir.name}-h1"

            def canary_done() -> bool:
                return any(kind == "canary" for kind, _ in _lifecycle(h1_run))

            assert wait_until(canary_done, 90), "a reset waits for discovery (h1's canary)"
            reset = send_control(swarm_dir, "reset", "h1:member-1")
            assert reset == "h1: reset member-1: session stopped, a fresh attempt starts"
            answered = list((swarm_dir / "control").glob("resp-*"))
            assert len(answered) == 7, "four from the CLI (status twice, pause, resume), three here"
            assert not list(swarm_dir.glob("h*/runs/*/control/*")), "no horde was sent to"
            one = cli(tmp_path, "stop-clean", "h2", "--grace", "1")
            assert one.stdout.startswith("h2: clean stop requested"), one.stdout + one.stderr
            wait_for_line(proc, "h2 [run-end]", 90)
            rest = cli(tmp_path, "stop-clean", "--grace", "1")
            assert "h1: clean stop requested" in rest.stdout, rest.stdout + rest.stderr
            out, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 130, out[-3000:] + err[-3000:]
    assert "outcome: stopped by user" in out
    swarm_dir = next((tmp_path / ".horde" / "swarms").iterdir())
    data = json.loads((swarm_dir / "SWARM.json").read_text())
    assert [w["layers"] for w in data["partition"]] == [["api", "ui"], ["db"]]
    assert data["state"] == "finished" and data["outcome"] == "stopped by user"
    h1, h2 = (swarm_dir / data["runs"][h] for h in ("h1", "h2"))
    assert "api; ui" in (h1 / "PLAN.md").read_text() and "db" in (h2 / "PLAN.md").read_text()
    h2_stop = next(ts for kind, ts in _lifecycle(h2) if kind == "stop-clean")
    h2_end = next(ts for kind, ts in _lifecycle(h2) if kind == "run-end")
    h1_stop = next(ts for kind, ts in _lifecycle(h1) if kind == "stop-clean")
    assert h2_stop < h2_end < h1_stop  # `stop-clean h2` reached h2 alone
    assert (swarm_dir / "REPORT.md").is_file() and (swarm_dir / "DELIVERABLE.md").is_file()


def _tool_results(session: Path) -> list[str]:
    """What every tool call of a helper's session answered, from its transcript."""
    return [
        str(message.get("content"))
        for line in session.read_text(encoding="utf-8").splitlines()
        if line.strip()
        for message in [json.loads(line)]
        if message.get("role") == "tool"
    ]


def test_a_2_horde_demo_gives_every_helper_its_own_runs_files(tmp_path: Path) -> None:
    """Issue 32: each horde's deliverable and post-mortem helpers, and the merge helper,
    are told the paths their run's files have (a swarm horde's are not under `.horde/`):
    on a real `demo --hordes 2`, no helper read is refused and each POSTMORTEM.md cites
    its own horde's report and board, not the other's."""
    done = subprocess.run(
        cli_argv("demo", "--headless", "--speed", "0", "--hordes", "2"),
        cwd=tmp_path,
        env=host_env(TMPDIR=str(tmp_path)),  # the demo's temp project lands in tmp_path
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 3, done.stdout[-3000:] + done.stderr[-3000:]  # solved
    workdir = next(tmp_path.glob("horde-demo-*"))
    swarm_dir = next((workdir / ".horde" / "swarms").iterdir())
    swarm = swarm_dir.name
    sessions = list((swarm_dir / "deliverable-sessions" / "merge").glob("*.jsonl"))
    for name in ("h1", "h2"):
        run_dir = swarm_dir / name / "runs" / f"{swarm}-{name}"
        for helper in ("synthesis", "postmortem"):
            sessions += list((run_dir / "sessions" / helper).glob("*.jsonl"))
        postmortem = (run_dir / "POSTMORTEM.md").read_text(encoding="utf-8")
        own = f".horde/swarms/{swarm}/{name}"
        assert f"`{own}/runs/{swarm}-{name}/REPORT.md`" in postmortem, postmortem
        assert f"`{own}/BOARD.md`" in postmortem, postmortem
        other = "h2" if name == "h1" else "h1"
        assert f"/{other}/" not in postmortem
    assert len(sessions) == 5, sessions  # the merge, and two helpers per horde
    results = [text for session in sessions for text in _tool_results(session)]
    reads = [text for text in results if "begin read result" in text]
    assert len(reads) == 7, results  # the merge's one read, one and two per horde
    refused = [text for text in results if "refused" in text]
    assert refused == [], refused
