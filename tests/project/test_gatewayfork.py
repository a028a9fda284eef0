"""The suite's gateway fork server (tests/support/gatewayfork) does what it says.

Without these, a broken fork server would go unnoticed: every gateway would fall back to
an ordinary start, and the suite would only be slower.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from conftest import GATEWAY_FORK_ENV, SPAWN_GATEWAYS_ENV, GatewayProcess, start_gateway
from support.gateway import post
from support.processes import alive, wait_until

from horde_tui.stubmodel import StubThread


def _forked(stub: StubThread, run_dir: Path) -> tuple[GatewayProcess, int]:
    if os.environ.get(SPAWN_GATEWAYS_ENV) == "1":
        pytest.skip(f"{SPAWN_GATEWAYS_ENV}=1 turned the fork server off")
    assert wait_until(lambda: os.path.exists(os.environ[GATEWAY_FORK_ENV]), 120)
    gw = start_gateway(stub, run_dir)
    pid = json.loads((run_dir / "gateway.json").read_text())["pid"]
    assert pid != gw.proc.pid, "started the ordinary way, not forked"
    assert post(gw, "member-fork").status_code == 200
    return gw, pid


def test_a_forked_gateway_serves_and_ends_with_its_starters_sigterm(
    stub_model: StubThread, tmp_path: Path
) -> None:
    gw, pid = _forked(stub_model, tmp_path)
    gw.proc.send_signal(signal.SIGTERM)
    assert gw.proc.wait(15) == 0
    assert not alive(pid)


def test_a_forked_gateway_ends_when_its_starter_is_sigkilled(
    stub_model: StubThread, tmp_path: Path
) -> None:
    gw, pid = _forked(stub_model, tmp_path)
    gw.proc.kill()
    gw.proc.wait(15)
    assert wait_until(lambda: not alive(pid), 10)
