"""`horde-tui eval --parallel`: the runs of one configuration share one provider limit.

Three single-member runs at once, each with its own gateway, all calling one stub
provider with slow replies: with `max_in_flight` 2 the provider never sees more than two
requests at a time from the whole eval, not two per run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.plans import horde

from horde_tui.stubmodel import StubThread
from horde_tui.stubmodel.agent import AgentPolicy

pytestmark = [pytest.mark.slow, pytest.mark.e2e]  # three real runs at once: half a minute

TASKS = "sql-injection,ssrf,path-traversal"
SLOW_CALLS = [{**horde("list"), "hold_ms": 400}] * 12
"""About five seconds of model calls per run: long enough for the three to overlap."""


def test_parallel_runs_keep_the_provider_within_one_shared_limit(tmp_path: Path) -> None:
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HORDE_")}
    env.update(
        HORDE_MAX_IN_FLIGHT="2",
        HORDE_GATEWAY_BACKOFF_MS="20",
        HORDE_ACTIVE_GRACE_MS="300",
        HORDE_DELIVERABLE="off",
        HORDE_POSTMORTEM="off",
    )
    with StubThread(policy=AgentPolicy({"member-1": SLOW_CALLS}), token="stub") as stub:
        done = subprocess.run(
            [
                sys.executable,
                *("-m", "horde_tui", "eval", "bundled", "--tasks", TASKS),
                *("--configs", "single", "--parallel", "3", "--model", stub.model),
                *("--api-base", stub.api_base, "--api-key", "stub", "--out", str(out)),
            ],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=400,
        )
        peak = stub.stub.peak_in_flight
        calls = len(stub.stub.requests_for("member-1"))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    runs = json.loads((out / "EVAL.json").read_text())["runs"]
    assert len(runs) == 3 and all(r["run_id"] for r in runs)
    assert calls >= 3 * len(SLOW_CALLS)  # every run made its calls
    assert 1 <= peak <= 2, f"{peak} provider requests in flight at once; the shared limit is 2"
