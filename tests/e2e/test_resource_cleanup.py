"""Resource cleanup at finalize (issue 13 item 3): each cleanup command of the run runs
once, after acceptance is frozen, in the working directory under a timeout; REPORT.md
says what ran, its status and its output tail; a failure or a timeout is reported, never
fatal; HORDE_CLEANUP=off skips with a line. The kernel keeps "cleanup never changes
files" (issue 31 item 5): commands run in bubblewrap with the working directory and
`.horde/` read-only, and without bubblewrap they do not run.

Real supervisor, gateway, member processes and cleanup commands; the model is the stub.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import Horde, needs_bwrap

from horde_tui.common.settings import load_settings
from horde_tui.sandbox.policy import SandboxPolicy
from horde_tui.stubmodel import StubThread
from horde_tui.stubmodel.agent import AgentPolicy
from horde_tui.supervisor import cleanup
from horde_tui.supervisor.recover import finalize_from_disk
from horde_tui.supervisor.run import Supervisor
from horde_tui.supervisor.setup import RunRequest

STOP_LAB = """\
echo "lab stopped"
touch lab/stopped .horde/cleanup-was-here 2>/dev/null || echo "read-only here"
"""


def horde(action: str, **args: Any) -> dict[str, Any]:
    return {"tool": "horde", "args": {"action": action, **args}}


PLAN = {
    "member-1": [
        horde("resource", name="lab", path="lab", text="the lab server", cleanup="sh stop-lab.sh"),
        horde(
            "resource",
            name="broken-lab",
            text="a lab whose teardown fails",
            cleanup="sh -c 'echo broken lab >&2; exit 3'",
        ),
        horde("resource", name="slow-lab", text="a lab that never stops", cleanup="sleep 30"),
        {"say": "Labs claimed."},
    ]
}


@pytest.fixture(autouse=True)
def fast_gateway(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HORDE_GATEWAY_BACKOFF_MS", "20")


def _lab(workdir: Path) -> None:
    (workdir / "lab").mkdir()
    (workdir / "lab" / "state").write_text("running\n")
    (workdir / "stop-lab.sh").write_text(STOP_LAB)


def _run(workdir: Path, **env: str) -> Supervisor:
    with StubThread(policy=AgentPolicy(PLAN)) as stub:
        environ = {
            "HORDE_MODEL": stub.model,
            "HORDE_API_BASE": stub.api_base,
            "HORDE_API_KEY": "stub",
            "HORDE_DELIVERABLE": "off",
            "HORDE_POSTMORTEM": "off",
            **env,
        }
        sup = Supervisor(workdir, RunRequest("Set up a lab", 1), load_settings(environ=environ))
        summary = asyncio.run(asyncio.wait_for(sup.run(), 240))
    assert summary is not None and summary.outcome == "finished", summary
    return sup


def _lifecycle(run_dir: Path) -> list[dict[str, Any]]:
    lines = (run_dir / "events.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e.get("type") == "lifecycle"]


def _resource_lines(report: str) -> list[str]:
    section = report.split("## Resources", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.strip()]


@needs_bwrap
@pytest.mark.slow  # a long real-process run: `pytest -m slow`
@pytest.mark.e2e
def test_cleanups_run_at_finalize_after_the_freeze_and_are_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cleanup, "TIMEOUT_S", 1.0)
    _lab(tmp_path)

    sup = _run(tmp_path)

    assert not (tmp_path / "lab" / "stopped").exists()
    assert not (tmp_path / ".horde" / "cleanup-was-here").exists()
    kinds = [e["kind"] for e in _lifecycle(sup.run_dir)]
    ran = [e for e in _lifecycle(sup.run_dir) if e["kind"] == "resource-cleanup"]
    assert [e["resource"] for e in ran] == ["R1", "R2", "R3"]
    assert kinds.index("acceptance") < kinds.index("resource-cleanup")
    assert kinds.index("resource-cleanup") < kinds.index("run-end")
    assert [e["exit"] for e in ran] == [0, 3, None]
    lines = _resource_lines((sup.run_dir / "REPORT.md").read_text())
    r1 = lines.index(next(line for line in lines if line.startswith("- R1 ")))
    assert lines[r1].startswith(
        "- R1 `lab`: owner member-1; no reusers; path `lab`; cleanup `sh stop-lab.sh`: exit 0 in "
    )
    assert lines[r1 + 1 : r1 + 3] == ["    | lab stopped", "    | read-only here"]
    r2 = next(line for line in lines if line.startswith("- R2 "))
    assert "cleanup `sh -c 'echo broken lab >&2; exit 3'`: exit 3 in " in r2
    assert lines[lines.index(r2) + 1] == "    | broken lab"
    r3 = next(line for line in lines if line.startswith("- R3 "))
    assert r3.endswith("cleanup `sleep 30`: timed out after 1s; process group killed")


@pytest.mark.slow  # a long real-process run: `pytest -m slow`
@pytest.mark.e2e
def test_cleanup_off_skips_with_a_line_saying_so(tmp_path: Path) -> None:
    _lab(tmp_path)

    sup = _run(tmp_path, HORDE_CLEANUP="off")

    assert (tmp_path / "lab" / "state").read_text() == "running\n"
    lines = _resource_lines((sup.run_dir / "REPORT.md").read_text())
    entries = [line for line in lines if line.startswith("- R")]
    assert len(entries) == 3 and not any(line.startswith("    |") for line in lines)
    for line in entries:
        assert line.endswith(": skipped: cleanup is off (HORDE_CLEANUP=off)"), line


def test_a_cleanup_recorded_past_the_rule_is_not_run(horde: Horde) -> None:
    """A ledger record can predate the rule (or be written around the tool): finalize
    checks the command again and reports it instead of running it."""
    build = horde.workdir / "build"
    build.mkdir()
    (build / "keep.txt").write_text("kept\n")
    horde.inject(
        "member-1",
        {"op": "resource.add", "id": "R1", "name": "b", "text": "", "cleanup": "env rm -rf build"},
    )
    res = horde.state().resources["R1"]

    fields = cleanup.run_one(
        res, horde.workdir, horde.root, horde.root / "runs" / "r1", SandboxPolicy("off")
    )

    assert (build / "keep.txt").read_text() == "kept\n"
    assert fields["exit"] is None
    assert fields["status"].startswith("not run, refused: 'env rm -rf build' changes files")
    assert cleanup.results([{"kind": "resource-cleanup", **fields}]) == {"R1": fields["status"]}


def _interrupted(horde: Horde, script: str, sandbox: str = "auto") -> Path:
    """A run r1 whose supervisor died before finalize, with one resource R1 whose cleanup
    runs `script`; its run directory."""
    _lab(horde.workdir)
    (horde.workdir / "stop-lab.sh").write_text(script)
    assert horde("member-1", "resource", name="lab", cleanup="sh stop-lab.sh").ok
    run_dir = horde.root / "runs" / "r1"
    config = {"cleanup": True, "sandbox": sandbox, "sandbox_network": True, "sandbox_env": []}
    (run_dir / "MANIFEST.json").write_text(json.dumps({"created": 0, "config": config}))
    return run_dir


@needs_bwrap
def test_finalize_from_disk_runs_the_cleanups_the_dead_supervisor_did_not(horde: Horde) -> None:
    """`horde-tui finalize` of an interrupted run tears down its resources too, with the
    run's own settings (MANIFEST.json), and never runs one twice."""
    run_dir = _interrupted(horde, "echo stopping\n")

    finalize_from_disk(horde.root, "r1")
    finalize_from_disk(horde.root, "r1")

    assert [e["kind"] for e in _lifecycle(run_dir)].count("resource-cleanup") == 1
    lines = _resource_lines((run_dir / "REPORT.md").read_text())
    r1 = lines.index(next(line for line in lines if line.startswith("- R1 ")))
    assert "cleanup `sh stop-lab.sh`: exit 0 in " in lines[r1]
    assert lines[r1 + 1] == "    | stopping"


TEARDOWNS = {
    "rm -rf": "rm -rf lab .horde",
    "find -delete": "find . -delete",
    "python os.remove": "python3 -c 'import os; os.remove(\"lab/state\")'",
    "redirect truncation": ": > lab/state",
    "ledger append": "printf '{}\\n' >> .horde/ledger.jsonl",
    "git clean": "git clean -fdx",
    "mv": "mv lab lab.gone",
}
"""What a cleanup command may try, hidden in a script file the refusal list cannot read."""


@needs_bwrap
@pytest.mark.parametrize("body", TEARDOWNS.values(), ids=list(TEARDOWNS))
def test_the_kernel_keeps_every_file_whatever_a_cleanup_runs(horde: Horde, body: str) -> None:
    """bwrap mounts the working directory and `.horde/` read-only for cleanup, even when
    the run's members have no sandbox (`sandbox = off`): the command runs and fails, and
    the files survive."""
    subprocess.run(["git", "init", "-q"], cwd=horde.workdir, check=True)
    _interrupted(horde, f"echo tearing down\n{body}\n", sandbox="off")
    ledger = horde.ledger_bytes()

    fields = cleanup.run_one(
        horde.state().resources["R1"],
        horde.workdir,
        horde.root,
        horde.root / "runs" / "r1",
        SandboxPolicy("off"),
    )

    assert fields["exit"] not in (0, None), fields
    assert "Read-only file system" in fields["tail"], fields
    assert (horde.workdir / "lab" / "state").read_text() == "running\n"
    assert (horde.workdir / "stop-lab.sh").is_file()
    assert horde.ledger_bytes() == ledger


def test_without_bubblewrap_cleanups_do_not_run_and_the_report_says_why(
    horde: Horde, no_bwrap: None
) -> None:
    """No kernel boundary, no cleanup: the command is not run (not even in the PID
    namespace members get without bwrap) and its REPORT.md line says why."""
    run_dir = _interrupted(horde, "touch ran\n")

    finalize_from_disk(horde.root, "r1")

    assert not (horde.workdir / "ran").exists()
    lines = _resource_lines((run_dir / "REPORT.md").read_text())
    r1 = next(line for line in lines if line.startswith("- R1 "))
    assert r1.endswith(
        "cleanup `sh stop-lab.sh`: skipped: cleanup commands run only inside bubblewrap, "
        "with the working directory read-only, and bwrap is not installed; install "
        "bubblewrap (Debian/Ubuntu: apt-get install bubblewrap)"
    ), r1
    assert not any(line.startswith("    |") for line in lines)
