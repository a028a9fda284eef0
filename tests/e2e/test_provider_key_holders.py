"""The provider key reaches the gateway alone: not in the initial environment (what
`/proc/<pid>/environ` shows to any process of the user, a member's command without the
sandbox among them) of the gateway or a member. The supervisor hands
it to the gateway on a pipe; the gateway puts it in its own memory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.cli import cli, headless, host_env, wait_for_line
from support.processes import member_pids

from horde_tui.common import procfs
from horde_tui.eval.gateway import start_shared_gateway
from horde_tui.stubmodel import StubThread
from horde_tui.stubmodel.agent import AgentPolicy

PLAN = {"*": [{"tool": "horde", "args": {"action": "list"}, "until_ok": 0, "hold_ms": 200}] * 300}


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


@pytest.mark.slow
@pytest.mark.e2e
def test_only_the_gateway_gets_the_provider_key(tmp_path: Path) -> None:
    key = "sk-provider-" + os.urandom(12).hex()
    other = "sk-other-" + os.urandom(12).hex()
    with StubThread(policy=AgentPolicy(PLAN)) as stub:
        proc = headless(
            tmp_path, stub, ("HORDE_API_KEY", key), ("OPENAI_API_KEY", other), members=1
        )
        try:
            wait_for_line(proc, "[member-spawn] member-1")
            run_dir = next((tmp_path / ".horde" / "runs").iterdir())
            pids = {f"member {n}": p for n, p in member_pids(run_dir).items()}
            for st in procfs.processes():
                line = _cmdline(st.pid)
                if "horde_tui.gateway" in line and str(run_dir) in line:
                    pids["gateway"] = st.pid
            assert {"gateway", "member member-1"} <= set(pids), pids
            holding = {
                name: sorted(k for k, v in procfs.environ(pid).items() if v in (key, other))
                for name, pid in pids.items()
            }
        finally:
            cli(tmp_path, "stop-hard")
            proc.communicate(timeout=120)
    assert all(not names for names in holding.values()), holding


def test_the_evals_shared_gateway_gets_the_key_on_the_pipe_as_a_runs_gateway_does(
    tmp_path: Path,
) -> None:
    """One starter for both: the eval's gateway is started as a run's is, so its key is
    not in its initial environment either, and a failed start says the same line."""
    key = "sk-provider-" + os.urandom(12).hex()
    with StubThread() as stub:
        overrides = {"model": stub.model, "api_base": stub.api_base, "api_key": key}
        gateway = start_shared_gateway(host_env(), overrides, tmp_path / "gw")
        try:
            assert key not in procfs.environ(gateway.proc.pid).values()
            assert gateway.url.startswith("http://127.0.0.1:")
        finally:
            gateway.stop()
        assert gateway.proc.poll() is not None
