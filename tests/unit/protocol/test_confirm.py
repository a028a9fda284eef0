"""Confirm mode: a member's `bash` command waits for a person's decision, asked and
answered through the run's `control/` folder (real files, real threads and processes).

The member's side is `member/confirm.py`'s gate inside `WorkspaceTools.bash`, the
supervisor's the `ConfirmDesk` queue; decisions come from the desk directly (the app,
the terminal) or from another shell (`horde-tui approve`/`refuse`)."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from support.cli import cli_argv
from support.processes import wait_until

from horde_tui.member.confirm import ConfirmGate
from horde_tui.member.tools import ToolOutput, WorkspaceTools
from horde_tui.protocol import controls
from horde_tui.supervisor.confirm import ConfirmDesk


class Desk:
    """A `ConfirmDesk` on `run_dir` whose events land in `events`."""

    def __init__(self, run_dir: Path) -> None:
        self.events: list[tuple[str, str | None, dict[str, Any]]] = []
        self.alive: dict[str, bool] = {}
        self.desk = ConfirmDesk(
            run_dir,
            lambda kind, member=None, **data: self.events.append((kind, member, data)),
            lambda name, pid: self.alive.get(name, True),
        )

    def waiting_for(self, member: str) -> bool:
        self.desk.serve()
        return self.desk.waits(member)


def start_bash(tools: WorkspaceTools, command: str) -> tuple[threading.Thread, list[ToolOutput]]:
    out: list[ToolOutput] = []
    thread = threading.Thread(target=lambda: out.append(tools.bash(command)), daemon=True)
    thread.start()
    return thread, out


def member_tools(tmp_path: Path, member: str = "member-1") -> WorkspaceTools:
    run_dir = tmp_path / ".horde" / "runs" / "r1"
    return WorkspaceTools(tmp_path, confirm=ConfirmGate(run_dir, member))


def test_a_command_waits_for_allow_then_runs(tmp_path: Path) -> None:
    tools = member_tools(tmp_path)
    desk = Desk(tmp_path / ".horde" / "runs" / "r1")
    thread, out = start_bash(tools, "echo ran > ran.txt; echo hello-confirm")
    assert wait_until(lambda: desk.waiting_for("member-1"), 10)
    (request,) = (tmp_path / ".horde" / "runs" / "r1" / "control").glob("req-*.json")
    asked = json.loads(request.read_text())
    assert asked["action"] == "confirm" and asked["target"] == "member-1"
    assert asked["command"].startswith("echo ran") and asked["cwd"] == str(tools.workdir)
    thread.join(0.5)
    assert thread.is_alive() and not (tmp_path / "ran.txt").exists(), "nothing runs before"

    assert desk.desk.decide("member-1", "allow", "test") == (
        "allowed member-1: echo ran > ran.txt; echo hello-confirm"
    )
    thread.join(10)
    assert out[0].ok and "hello-confirm" in out[0].text
    assert (tmp_path / "ran.txt").exists()
    assert not list(request.parent.glob("*.json")), "request and answer are cleaned up"
    kinds = [(k, m, d.get("decision")) for k, m, d in desk.events]
    assert kinds == [
        ("confirm-request", "member-1", None),
        ("confirm-decision", "member-1", "allow"),
    ]


def test_a_refused_command_does_not_run_and_the_member_is_told(tmp_path: Path) -> None:
    tools = member_tools(tmp_path)
    desk = Desk(tmp_path / ".horde" / "runs" / "r1")
    thread, out = start_bash(tools, "touch made.txt")
    assert wait_until(lambda: desk.waiting_for("member-1"), 10)
    assert desk.desk.decide("all", "refuse", "test") == "refused member-1: touch made.txt"
    thread.join(10)
    assert not out[0].ok and out[0].text.startswith("refused by the user: touch made.txt")
    assert not (tmp_path / "made.txt").exists()


def test_allow_all_stops_asking_for_that_member_only(tmp_path: Path) -> None:
    run_dir = tmp_path / ".horde" / "runs" / "r1"
    desk = Desk(run_dir)
    first = member_tools(tmp_path)
    thread, out = start_bash(first, "echo one")
    assert wait_until(lambda: desk.waiting_for("member-1"), 10)
    desk.desk.decide("1", "allow-all", "test")
    thread.join(10)
    assert out[0].ok and "one" in out[0].text
    assert first.bash("echo two").ok, "the same session asks no more"

    # A later session of member-1 (a reset) asks once; the desk answers it unasked.
    later = member_tools(tmp_path)
    serving = threading.Event()

    def serve() -> None:
        while not serving.is_set():
            desk.desk.serve()
            serving.wait(0.05)

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    try:
        assert later.bash("echo three").ok
    finally:
        serving.set()
        server.join(5)
    other = member_tools(tmp_path, "member-2")
    thread, out = start_bash(other, "echo four")
    assert wait_until(lambda: desk.waiting_for("member-2"), 10), "member-2 still asks"
    thread.join(0.3)
    assert thread.is_alive()
    desk.desk.decide("member-2", "refuse", "test")
    thread.join(10)
    assert not out[0].ok
    requests = [(k, m) for k, m, _ in desk.events if k == "confirm-request"]
    assert requests == [("confirm-request", "member-1"), ("confirm-request", "member-2")]


def test_a_destructive_command_is_refused_without_asking(tmp_path: Path) -> None:
    tools = member_tools(tmp_path)
    result = tools.bash("rm -rf /")
    assert not result.ok and result.text.startswith("refused:")
    assert not (tmp_path / ".horde" / "runs" / "r1" / "control").exists(), "nobody was asked"


def test_the_request_of_a_session_that_ended_is_dropped(tmp_path: Path) -> None:
    run_dir = tmp_path / ".horde" / "runs" / "r1"
    tools = member_tools(tmp_path)
    desk = Desk(run_dir)
    thread, out = start_bash(tools, "echo never")
    assert wait_until(lambda: desk.waiting_for("member-1"), 10)
    (request,) = (run_dir / "control").glob("req-*.json")
    desk.alive["member-1"] = False  # its session was stopped while it waited
    desk.desk.serve()
    assert not desk.desk.waits("member-1")
    assert not request.exists() and not list((run_dir / "control").glob("resp-*.json"))
    assert desk.events[-1][2]["decision"] == "dropped"
    assert desk.desk.decide("all", "allow", "test") == "nothing waits for a decision"
    # The thread plays a member that was killed: release it so it does not poll on.
    answer = request.name.replace("req-", "resp-")
    (run_dir / "control" / answer).write_text('{"ok": false, "text": "x"}')
    thread.join(10)
    assert not out[0].ok


def test_decisions_from_another_shell_go_through_control(tmp_path: Path) -> None:
    """What `horde-tui approve member-1` sends: a control request the desk answers."""
    run_dir = tmp_path / ".horde" / "runs" / "r1"
    tools = member_tools(tmp_path)
    desk = Desk(run_dir)
    thread, out = start_bash(tools, "echo approved-remotely")
    assert wait_until(lambda: desk.waiting_for("member-1"), 10)
    response = controls.submit(run_dir, controls.new_request("approve", "member-1"))
    desk.desk.serve()
    answer = controls.wait_response(response, 5)
    assert answer == {"ok": True, "text": "allowed member-1: echo approved-remotely"}
    thread.join(10)
    assert out[0].ok and "approved-remotely" in out[0].text
    assert desk.events[-1][2]["by"] == "control"


def refused_start(tmp_path: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HORDE_")}
    return subprocess.run(
        cli_argv("run", *flags, "1", "Review app.py"),
        cwd=tmp_path,
        env={**env, "HORDE_MODEL": "openai/gpt-4o-mini"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_confirm_without_a_terminal_is_refused_at_start_in_one_line(tmp_path: Path) -> None:
    """Nobody could answer: a headless run with no terminal, or a detached one."""
    for flags in (("--headless", "--confirm"), ("--detach", "--confirm")):
        done = refused_start(tmp_path, *flags)
        assert done.returncode == 2 and done.stdout == "", done.stdout + done.stderr
        (line,) = done.stderr.strip().splitlines()
        assert line.startswith("horde-tui: refused: confirm mode (--confirm"), line
    (tmp_path / ".horde").mkdir(exist_ok=True)
    (tmp_path / ".horde" / "config.toml").write_text("[horde]\nconfirm = true\n")
    done = refused_start(tmp_path, "--headless")
    assert done.returncode == 2 and "refused: confirm mode" in done.stderr
    assert not (tmp_path / ".horde" / "runs").exists(), "no run was started"


def test_in_confirm_mode_a_fetch_is_asked_like_a_command(tmp_path: Path) -> None:
    """`links`/`sitemap` carry data out as surely as curl: a person decides them too."""
    tools = member_tools(tmp_path)
    desk = Desk(tmp_path / ".horde" / "runs" / "r1")
    out: list[ToolOutput] = []
    url = "http://127.0.0.1:9/page.html"
    thread = threading.Thread(
        target=lambda: out.append(tools.dispatch("links", {"url": url})), daemon=True
    )
    thread.start()
    assert wait_until(lambda: desk.waiting_for("member-1"), 10)
    assert desk.desk.decide("member-1", "refuse", "test") == f"refused member-1: links {url}"
    thread.join(10)
    assert out[0].text == f"refused by the user: links {url} was not fetched"


def test_resuming_a_confirm_run_without_a_terminal_is_refused_in_one_line(
    in_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`resume RUN` carries the run's own settings on, confirm mode included: headless
    with no terminal (or detached) nobody could answer, so it is refused at start, as
    `run --confirm --headless` is, and nothing is started."""
    from support.rundir import RunDir

    from horde_tui.commands.cli import main

    run = RunDir(in_dir / ".horde", "20260102-120000-aaaa")
    manifest = json.loads((run.path / "MANIFEST.json").read_text())
    manifest["config"] = {"model": "openai/stub", "confirm": True}
    (run.path / "MANIFEST.json").write_text(json.dumps(manifest))
    run.event(0, "run-start", members=3)
    run.event(1, "phase-start", phase="discovery")
    events_before = (run.path / "events.jsonl").read_bytes()
    for flag in ("--headless", "--detach"):
        assert main(["resume", run.path.name, flag]) == 2
        out, err = capsys.readouterr()
        assert out == ""
        (line,) = err.strip().splitlines()
        assert line.startswith(f"horde-tui: refused: run {run.path.name} runs in confirm mode"), (
            line
        )
        assert "terminal" in line
    assert (run.path / "events.jsonl").read_bytes() == events_before, "nothing was resumed"
    assert not list((in_dir / ".horde").glob("detached-*.log")), "nothing was started"
