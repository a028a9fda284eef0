"""A run told to use a shared gateway (`HORDE_SHARED_GATEWAY_URL` and `_TOKEN`, what
`horde-tui eval` gives its runs) joins it instead of starting its own: its members call
that gateway with the run's own token, its usage lands in its own run directory, and when
the run ends it leaves the gateway running. A gateway that is not there fails the run
with one line, before any member starts.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import httpx
import pytest
from conftest import start_gateway
from support.cli import cli_argv, host_env
from support.gateway import closed_port
from support.plans import HELPERS, lifecycle, run_supervisor, settings, worker

from horde_tui.sandbox.shell import scrubbed_env
from horde_tui.stubmodel import StubThread
from horde_tui.stubmodel.agent import AgentPolicy
from horde_tui.supervisor.setup import RunRequest


@pytest.mark.slow
@pytest.mark.e2e
@pytest.mark.spawned_gateway  # the pid the run records is the shared gateway's own
def test_a_run_joins_the_shared_gateway_and_leaves_it_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plans = {"member-1": worker("Check app.py", "the password is hard-coded", "secrets")}
    with StubThread(policy=AgentPolicy({**plans, **HELPERS})) as stub:
        gw = start_gateway(stub, tmp_path / "gw", "--shared")
        try:
            monkeypatch.setenv("HORDE_SHARED_GATEWAY_URL", gw.url)
            monkeypatch.setenv("HORDE_SHARED_GATEWAY_TOKEN", gw.token)
            (tmp_path / "work").mkdir()
            cfg = settings(stub, postmortem=False)
            summary, sup, _ = run_supervisor(tmp_path / "work", RunRequest("Review", 1), cfg)
            assert summary.outcome != "failed", summary.diagnosis
            info = json.loads((sup.run_dir / "gateway.json").read_text())
            assert info["shared"] is True and info["pid"] == gw.proc.pid and info["url"] == gw.url
            usage = (sup.run_dir / "usage.jsonl").read_text().splitlines()
            assert usage and len(usage) == len(stub.stub.requests)  # every call, this run's
            assert not (gw.run_dir / "usage.jsonl").exists()
            assert gw.proc.poll() is None  # the run ended; the shared gateway did not
            own = httpx.get(gw.url + "/v1/usage", headers={"Authorization": f"Bearer {gw.token}"})
            assert own.json()["runs"] == 0  # the run left it
            assert ("member-spawn", "member-1") in lifecycle(sup.run_dir)
        finally:
            gw.proc.terminate()
            gw.proc.wait(30)
    # The gateway's own token (which joins runs) never reaches a member.
    member_env = scrubbed_env({"HORDE_SHARED_GATEWAY_TOKEN": gw.token, "PATH": "/bin"})
    assert gw.token not in member_env.values()


@pytest.mark.e2e
def test_a_run_told_to_use_a_gateway_that_is_not_there_fails_with_one_line(
    tmp_path: Path,
) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    with StubThread() as stub:
        env = host_env(
            HORDE_MODEL=stub.model,
            HORDE_API_BASE=stub.api_base,
            HORDE_API_KEY="stub",
            HORDE_SHARED_GATEWAY_URL=url,
            HORDE_SHARED_GATEWAY_TOKEN="t" * 32,
        )
        done = subprocess.run(
            cli_argv("run", "--headless", "1", "Review app.py"),
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert not stub.stub.requests
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    assert "Traceback" not in output
    said = [line for line in output.splitlines() if "shared model gateway" in line]
    assert len(said) >= 1 and all(url in line for line in said), output
    assert "HORDE_SHARED_GATEWAY_URL" in said[0] and "did not answer" in said[0], said[0]
    (run_dir,) = (tmp_path / ".horde" / "runs").iterdir()
    assert ("member-spawn", "member-1") not in lifecycle(run_dir)
