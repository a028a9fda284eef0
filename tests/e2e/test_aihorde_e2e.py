"""Whole headless runs on the fake AI Horde with the anonymous key (issue 16).

Real processes throughout: `horde-tui run --headless 2` starts its supervisor, the
gateway (whose litellm routes `aihorde/...` to the provider) and two members; only the
model is fake, answering in horde.py's JSON format (its first reply in each session cut
mid-string, as a worker stops at `max_length`). What the fake received is the evidence:
the anonymous key capped on `max_length` alone (prompts over 512 tokens sent whole to a
worker with 8,192 tokens of context, none refused), and no job left queued once a run
stops.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest
from support.aihorde import FakeHorde, FakeHordeThread, FakeModel, json_tool_answer
from support.cli import cli_argv
from support.plans import APP
from support.processes import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.e2e]  # whole real runs: `pytest -m slow`

SKYFALL = "aphrodite/TheDrummer/Skyfall-31B-v4.2"
IDLE_CAP = 512
"""The anonymous `max_length` cap on an idle horde (tests/support/aihorde.py upfront_cap)."""


def headless_on(fake: FakeHordeThread, workdir: Path, **extra: str) -> subprocess.Popen[str]:
    """`run --headless 2` on the fake with no key at all (the anonymous key)."""
    (workdir / "app.py").write_text(APP)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HORDE_")}
    env.update(
        HORDE_MODEL=f"aihorde/{SKYFALL}",
        HORDE_API_BASE=fake.api_base,
        HORDE_ACTIVE_GRACE_MS="300",
        HORDE_GATEWAY_BACKOFF_MS="20",
        HORDE_DELIVERABLE="off",
        HORDE_POSTMORTEM="off",
        HORDE_REPAIR_ROUNDS="0",
        HORDE_MAX_MINUTES="4",
        **extra,
    )
    return subprocess.Popen(
        cli_argv("run", "--headless", "2", "Review app.py"),
        cwd=workdir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def swarm(**extra: int) -> FakeHorde:
    return FakeHorde(
        models=[FakeModel(SKYFALL, workers=2, eta=30, max_context_length=8192)],
        answer=json_tool_answer,
        **extra,
    )


def test_two_members_on_the_anonymous_queue_file_findings_within_the_cap(
    tmp_path: Path,
) -> None:
    with FakeHordeThread(swarm(polls_to_done=2, burst_429=1)) as served:
        proc = headless_on(served, tmp_path)
        try:
            _, err = proc.communicate(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
        fake = served.fake
        accepted = fake.accepted()
        unfinished = fake.unfinished()
    assert proc.returncode == 0, err[-3000:]
    run_dir = next((tmp_path / ".horde" / "runs").iterdir())
    # Findings filed by the members, through the horde tool the fake's JSON asked for.
    findings = (tmp_path / ".horde" / "FINDINGS.md").read_text()
    assert "F1" in findings and "PASSWORD is hard-coded" in findings, findings
    # The anonymous key is capped on max_length alone: the workers' whole context is
    # asked for, prompts over 512 tokens go (over 2,048 characters: 512 tokens at four
    # characters each, and real tokenizers count more), and none is refused.
    assert accepted
    for submit in accepted:
        params = submit.body["params"]
        assert submit.headers["apikey"] == "0000000000"
        assert params["max_context_length"] == 8192
        assert params["max_length"] <= IDLE_CAP
    assert max(len(s.body["prompt"]) for s in accepted) > 4 * IDLE_CAP
    assert all(s.status in (202, 429) for s in fake.submits)  # no KudosUpfront
    statuses = [s.status for s in fake.submits]
    assert statuses.count(429) == 1, [s.message for s in fake.submits]  # the burst, retried
    # Usage and tokens recorded per member, priced at $0 (kudos, not dollars).
    usage = [json.loads(line) for line in (run_dir / "usage.jsonl").open()]
    members = {u["member"] for u in usage}
    assert {"member-1", "member-2"} <= members
    for name in ("member-1", "member-2"):
        mine = [u for u in usage if u["member"] == name]
        assert sum(u["prompt_tokens"] for u in mine) > 0
        assert sum(u["completion_tokens"] for u in mine) > 0
        assert all(u["cost_usd"] == 0.0 for u in mine)
    assert unfinished == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_stopped_run_leaves_no_job_queued_on_the_horde(
    tmp_path: Path, sig: signal.Signals
) -> None:
    """Jobs that never finish (the anonymous queue at its worst): the run is stopped during
    the canary by Ctrl-C (a clean stop, which has nothing to wrap up there and so stops
    hard) or by SIGTERM (as a service manager stops it). The gateway deletes the stopped
    member's job within 2 s, and no second job is submitted (issue 28)."""
    with FakeHordeThread(swarm(polls_to_done=100_000)) as served:
        # Not shorter than a loaded machine's litellm import and first call: a member
        # killed before its job was submitted takes its request with it.
        proc = headless_on(served, tmp_path, HORDE_CANARY_MS="60000")
        try:
            assert wait_until(lambda: len(served.fake.accepted()) >= 1, 120), proc.stderr
            proc.send_signal(sig)
            deleted = wait_until(lambda: served.fake.cancels, 2.0)
            proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
        fake = served.fake
        accepted = [s.job for s in fake.accepted()]
        assert deleted, "no DELETE of the job within 2 s of the stop"
        assert len(accepted) == 1 and fake.unfinished() == []
        assert fake.cancels == accepted
