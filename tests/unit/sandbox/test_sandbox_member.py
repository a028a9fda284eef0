"""The sandbox as a run sets it up: settings, the launch check, the supervisor's member
environment, the report line, and a real member process whose scripted commands try the
attacks of issue 12 (the gateway token from /proc and from the run directory, a forged
ledger record as another member)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import time
from pathlib import Path

import pytest
from conftest import GatewayProcess, needs_bwrap
from support.cli import cli_argv, stub_env
from support.member import RUN, call, prepare, run_member

from horde_tui.common.settings import SettingsError, load_settings
from horde_tui.launch.launch import RunOptions, check_launch
from horde_tui.member.config import sandbox_policy
from horde_tui.protocol.outcome import RunSummary
from horde_tui.sandbox.policy import bwrap_problem, network_problem
from horde_tui.stubmodel import StubThread
from horde_tui.supervisor.processes import GatewayHandle
from horde_tui.supervisor.setup import RunRequest


def test_sandbox_settings_from_config_and_environment(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('sandbox = "bwrap"\nsandbox_network = false\nsandbox_env = ["DB_URL"]\n')
    s = load_settings(config, {})
    assert (s.sandboxing.sandbox, s.sandboxing.sandbox_network, s.sandboxing.sandbox_env) == (
        "bwrap",
        False,
        ["DB_URL"],
    )
    env = {"HORDE_SANDBOX": "off", "HORDE_SANDBOX_ENV": "A, B", "HORDE_SANDBOX_NETWORK": "on"}
    s = load_settings(config, env)
    assert (s.sandboxing.sandbox, s.sandboxing.sandbox_network, s.sandboxing.sandbox_env) == (
        "off",
        True,
        ["A", "B"],
    )
    assert load_settings(None, {}).sandboxing.sandbox == "auto"
    with pytest.raises(SettingsError, match="HORDE_SANDBOX: sandbox"):
        load_settings(None, {"HORDE_SANDBOX": "chroot"})


def test_bwrap_asked_for_where_it_cannot_run_refuses_the_launch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    bwrap_problem.cache_clear()
    try:
        options = RunOptions(count="2", prompt="audit", model="openai/x", sandbox="bwrap")
        check = check_launch(options, tmp_path / ".horde", environ={})
        auto = check_launch(RunOptions(count="2", prompt="a", model="m/x"), tmp_path, environ={})
    finally:
        bwrap_problem.cache_clear()
    refusal = check.refused("sandbox")
    assert refusal is not None and "\n" not in refusal.message
    assert refusal.message.startswith("refused: the run asks for the bwrap sandbox")
    assert "bwrap is not installed" in refusal.message and "--sandbox auto" in refusal.message
    assert auto.ok


def _supervisor(tmp_path: Path, environ: dict[str, str], monkeypatch: pytest.MonkeyPatch):
    from horde_tui.supervisor.run import Supervisor

    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    settings = load_settings(None, environ)
    sup = Supervisor(tmp_path, RunRequest(count=2, prompt="audit"), settings)
    sup.gateway = GatewayHandle(None, "http://127.0.0.1:9", "gw-token")  # type: ignore[arg-type]
    return sup


def test_members_get_the_run_sandbox_and_the_named_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sup = _supervisor(
        tmp_path,
        {"HORDE_SANDBOX_ENV": "DB_PASSWORD", "DB_PASSWORD": "pw", "HORDE_SANDBOX": "off"},
        monkeypatch,
    )
    env = sup.member_env(sup.specs[0], 1)
    assert (env["HORDE_SANDBOX"], env["HORDE_SANDBOX_NETWORK"]) == ("off", "on")
    assert env["HORDE_SANDBOX_ENV"] == "DB_PASSWORD"
    assert env["DB_PASSWORD"] == "pw"  # scrubbed by name for the member, put back as named
    assert "run without a sandbox" in sup.sandbox_note
    policy = sandbox_policy(env)
    assert (policy.mode, policy.env_names) == ("off", ("DB_PASSWORD",))
    assert policy.git_write is False  # .git/ stays read-only unless the run opts in


def test_the_git_opt_in_reaches_the_members(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sup = _supervisor(tmp_path, {"HORDE_SANDBOX_GIT_WRITE": "on"}, monkeypatch)
    env = sup.member_env(sup.specs[0], 1)
    assert sandbox_policy(env).git_write is True


def test_a_detached_runs_marker_does_not_reach_its_members(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `run` a member starts is not itself detached: it must not record `run-detached`."""
    sup = _supervisor(tmp_path, {"HORDE_DETACHED_LOG": str(tmp_path / "d.log")}, monkeypatch)
    assert "HORDE_DETACHED_LOG" not in sup.member_env(sup.specs[0], 1)


@needs_bwrap
def test_auto_resolves_to_bwrap_where_it_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sup = _supervisor(tmp_path, {"HORDE_SANDBOX": "auto"}, monkeypatch)
    assert sup.member_env(sup.specs[0], 1)["HORDE_SANDBOX"] == "bwrap"
    if network_problem() is None:
        assert sup.sandbox_note == ""
    else:  # bwrap without slirp4netns: the network is the one gap, and the note says so
        assert "share this machine's network" in sup.sandbox_note, sup.sandbox_note


@needs_bwrap
def test_without_slirp4netns_the_run_notes_once_that_commands_share_the_network(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_slirp4netns: None
) -> None:
    """bwrap without slirp4netns (issue 29 item 8): the run's one note (header, run-start,
    REPORT.md) says commands with the network on share this machine's network; with the
    network off there is nothing to say."""
    from horde_tui.store.state import LedgerState
    from horde_tui.supervisor.report import render_report

    sup = _supervisor(tmp_path, {"HORDE_SANDBOX": "auto"}, monkeypatch)
    assert sup.sandbox.mode == "bwrap"
    assert sup.sandbox_note.startswith("with sandbox_network on, member commands share this")
    now = time.time()
    summary = RunSummary("r1", "finished", "done", "ok", now - 5, now, "m/x")
    shared = RunSummary(**{**summary.__dict__, "sandbox_note": sup.sandbox_note})
    text = render_report(LedgerState(), shared, Path("."))
    assert text.count("- Sandbox: with sandbox_network on, member commands share") == 1
    env = {"HORDE_SANDBOX": "auto", "HORDE_SANDBOX_NETWORK": "off"}
    assert _supervisor(tmp_path, env, monkeypatch).sandbox_note == ""


def test_report_says_once_when_commands_ran_without_a_sandbox() -> None:
    from horde_tui.store.state import LedgerState
    from horde_tui.supervisor.report import render_report

    now = time.time()
    summary = RunSummary("r1", "finished", "done", "ok", now - 5, now, "m/x")
    bare = RunSummary(**{**summary.__dict__, "sandbox_note": "member commands run bare"})
    assert "Sandbox" not in render_report(LedgerState(), summary, Path("."))
    text = render_report(LedgerState(), bare, Path("."))
    assert text.count("- Sandbox: member commands run bare (see SECURITY.md)") == 1


# -- a real member process ------------------------------------------------------------


@needs_bwrap
def test_member_commands_cannot_reach_the_token_or_forge_records(
    gateway: GatewayProcess, tmp_path: Path
) -> None:
    horde_dir = prepare(tmp_path)
    (horde_dir / "runs" / RUN / "gateway.token").write_text(gateway.token + "\n")
    hunt = (
        "cat .horde/runs/r1/gateway.token /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' "
        f"| grep -c {gateway.token}"
    )
    forge = f"HORDE_MEMBER=member-2 {shlex.join(cli_argv('tool', 'post', 'text=forged'))}"
    gateway.stub.stub.set_scripts(
        {
            name: [
                call("bash", command=hunt),
                call("bash", command="env"),
                call("bash", command=forge),
                {"content": "done"},
            ]
            for name in ("sandboxed-1", "sandboxed-2")
        }
    )
    ledger = (horde_dir / "ledger.jsonl").read_bytes()
    code, events, stderr = run_member(gateway, tmp_path, "sandboxed-1", HORDE_SANDBOX="bwrap")
    assert code == 0, stderr
    results = _tool_results(events[-1]["transcript"])
    assert results[0].split("\n")[1] == "0", results[0]
    assert gateway.token not in results[1] and "HORDE_MEMBER=sandboxed-1" in results[1]
    assert "read-only" in results[2] and "Traceback" not in results[2]
    assert (horde_dir / "ledger.jsonl").read_bytes() == ledger

    # The same hunt without the sandbox finds the token: the check can fail.
    code, events, stderr = run_member(gateway, tmp_path, "sandboxed-2", HORDE_SANDBOX="off")
    assert code == 0, stderr
    found = _tool_results(events[-1]["transcript"])[0].split("\n")[1]
    assert int(found) >= 1, found


def _tool_results(transcript: str) -> list[str]:
    lines = [json.loads(line) for line in Path(transcript).read_text().splitlines()]
    return [m["content"] for m in lines if m["role"] == "tool"]


def test_env_allow_list_holds_for_a_member_without_the_sandbox(
    gateway: GatewayProcess, tmp_path: Path
) -> None:
    prepare(tmp_path)
    gateway.stub.stub.set_scripts({"sandboxed-3": [call("bash", command="env"), {"content": "ok"}]})
    leaky = {"DATABASE_URL": "postgres://u:pw-LEAK@h/db", "GITHUB_PAT": "ghp_LEAK"}
    code, events, stderr = run_member(
        gateway, tmp_path, "sandboxed-3", HORDE_SANDBOX="off", **leaky
    )
    assert code == 0, stderr
    (result,) = _tool_results(events[-1]["transcript"])
    assert "LEAK" not in result and f"PATH={os.environ['PATH']}" in result


def test_a_run_without_the_sandbox_says_so_once_in_its_header_and_report(
    tmp_path: Path,
) -> None:
    # One board post: a run whose member wrote nothing would end `failed`.
    script = [call("horde", action="post", text="Looked at app.py."), {"content": "Done."}]
    with StubThread({"member-1": script}) as stub:
        env = stub_env(stub, HORDE_DELIVERABLE="off", HORDE_POSTMORTEM="off")
        done = subprocess.run(
            cli_argv(
                "run",
                "--headless",
                "--sandbox",
                "off",
                "1",
                "Review app.py",
            ),
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[1] == (
        "warning: member commands run without a sandbox (sandbox set to off): a command can "
        "read the gateway token and spend the run's budget, write .horde/ by hand, reach every "
        "file and network service you can, and end every process of yours (kill -9 -1 in a "
        "script) (see SECURITY.md)"
    )
    assert done.stdout.count("run without a sandbox") == 2  # the header, the run-start line
    (run_dir,) = (tmp_path / ".horde" / "runs").iterdir()
    report = (run_dir / "REPORT.md").read_text()
    assert report.count("- Sandbox: member commands run without a sandbox") == 1
