"""`horde-tui eval --parallel`: the runs of one eval share ONE gateway process.

The eval starts one shared gateway (`--shared`) and every run joins it with its own
token and run directory: so the provider limit holds across the runs at once (the stub
never sees more requests in flight than the limit, while several runs are live), each
run's usage and cost stay its own, and litellm's import is paid once. SIGTERM to the
eval leaves no process behind. Real eval, run, gateway and member processes on the stub.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from support.cli import cli_argv
from support.eval_plans import cite, finding
from support.plans import horde
from support.processes import describe, kill_all, wait_until

from horde_tui.common import procfs
from horde_tui.eval.taskset import load_taskset
from horde_tui.stubmodel import StubThread
from horde_tui.stubmodel.agent import AgentPolicy

pytestmark = [pytest.mark.slow, pytest.mark.e2e]  # several real runs at once

TASKS = "sql-injection,ssrf,path-traversal"
SLOW_CALLS = [{**horde("list"), "hold_ms": 400}] * 12
"""About five seconds of model calls per run: long enough for the three to overlap."""
BUNDLED = load_taskset("bundled")
SQL = BUNDLED.select(["sql-injection"])[0]
SQL_WHEN = SQL.prompt[:40]
ACME_WHEN = "Acme's current ratio"
PRICED = "openai/gpt-4o-mini"
"""litellm prices it; the stub answers any model name, so each run's cost is known."""


def eval_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HORDE_")}
    env.update(
        HORDE_GATEWAY_BACKOFF_MS="20",
        HORDE_ACTIVE_GRACE_MS="300",
        HORDE_DELIVERABLE="off",
        HORDE_POSTMORTEM="off",
        **extra,
    )
    return env


def eval_argv(stub: StubThread, out: Path, *args: str, model: str = "") -> list[str]:
    return cli_argv(
        "eval",
        "bundled",
        "--configs",
        "single",
        *args,
        *("--model", model or stub.model, "--api-base", stub.api_base),
        *("--api-key", "stub", "--out", str(out)),
    )


def ours(tmp_path: Path) -> list[int]:
    """Live processes of this test's eval: by command line, working folder or HORDE_DIR
    under `tmp_path` (a gateway's --run-dir, a run's folder, a member's .horde)."""
    mark = str(tmp_path)
    found = []
    for st in procfs.processes():
        if st.pid == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{st.pid}/cmdline").read_bytes().decode(errors="replace")
            cwd = os.readlink(f"/proc/{st.pid}/cwd")
        except OSError:
            continue
        if (
            mark in cmdline
            or cwd.startswith(mark)
            or mark in procfs.environ(st.pid).get("HORDE_DIR", "")
        ):
            found.append(st.pid)
    return found


@contextmanager
def gateway_pids(tmp_path: Path) -> Iterator[set[int]]:
    """Every gateway process this test's eval ran, sampled every 50 ms while the body runs."""
    seen: set[int] = set()
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            for pid in ours(tmp_path):
                try:
                    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
                except OSError:
                    continue
                if b"horde_tui.gateway" in cmdline:
                    seen.add(pid)
            stop.wait(0.05)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        stop.set()
        thread.join()


def usage(run: dict[str, Any]) -> list[dict[str, Any]]:
    run_dir = Path(run["folder"]) / "work" / ".horde" / "runs" / run["run_id"]
    return [json.loads(x) for x in (run_dir / "usage.jsonl").read_text().splitlines()]


@pytest.mark.spawned_gateway  # it checks the runs name the eval's own gateway process
def test_parallel_runs_share_one_gateway_and_its_limit(tmp_path: Path) -> None:
    """Three runs at once, `max_in_flight` 2: one gateway process for the eval, and the
    provider never sees more than two requests at a time from the whole eval."""
    out = tmp_path / "out"
    with StubThread(policy=AgentPolicy({"member-1": SLOW_CALLS}), token="stub") as stub:
        with gateway_pids(tmp_path) as gateways:
            done = subprocess.run(
                eval_argv(stub, out, "--tasks", TASKS, "--parallel", "3"),
                cwd=tmp_path,
                env=eval_env(HORDE_MAX_IN_FLIGHT="2"),
                capture_output=True,
                text=True,
                timeout=400,
            )
        peak = stub.stub.peak_in_flight
        calls = len(stub.stub.requests_for("member-1"))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    runs = json.loads((out / "EVAL.json").read_text())["runs"]
    assert len(runs) == 3 and all(r["run_id"] for r in runs)
    assert len(gateways) == 1, f"{len(gateways)} gateway processes; the eval shares one"
    assert calls >= 3 * len(SLOW_CALLS)  # every run made its calls
    spans = [(u[0]["ts"], u[-1]["ts"]) for u in map(usage, runs)]
    assert max(s for s, _ in spans) < min(e for _, e in spans), "the three runs overlapped"
    assert 1 <= peak <= 2, f"{peak} provider requests in flight at once; the shared limit is 2"
    log = (out / "gateway" / "gateway.log").read_text()
    assert json.loads((out / "gateway" / "gateway.json").read_text())["shared"] is True
    for r in runs:  # each run joined that one gateway
        run_dir = Path(r["folder"]) / "work" / ".horde" / "runs" / r["run_id"]
        info = json.loads((run_dir / "gateway.json").read_text())
        assert info["shared"] is True and info["pid"] in gateways, info
    assert "Traceback" not in log


def plans() -> dict[str, list[dict[str, Any]]]:
    """sql-injection: one true finding and one false; finance-acme: three answers of four
    right, after a few reads (more calls, so the two runs' costs differ)."""
    sql = [
        horde("idea", text="Check store.py's queries for SQL injection"),
        horde("claim", id="$id"),
        finding(
            "sql-injection", "find_user concatenates email into SQL", cite(SQL, "login-lookup")
        ),
        finding("orders-query", "list_orders may be injectable", "store.py:18: return db.execute("),
        horde("done", id="$I", result="filed two"),
    ]
    acme = [
        *[horde("list")] * 4,
        horde("solved", text="q1: 2.00\nq2: 40.0\nq3: 0.70\nq4: 58.5"),  # q3 is wrong
    ]
    return {
        "member-1": [
            *({**i, "when": SQL_WHEN, "hold_ms": 150} for i in sql),
            *({**i, "when": ACME_WHEN, "hold_ms": 150} for i in acme),
        ]
    }


def test_two_parallel_runs_on_one_gateway_score_right_and_cost_apart(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with StubThread(policy=AgentPolicy(plans()), token="stub") as stub:
        with gateway_pids(tmp_path) as gateways:
            done = subprocess.run(
                eval_argv(
                    stub,
                    out,
                    "--tasks",
                    "sql-injection,finance-acme",
                    "--parallel",
                    "2",
                    model=PRICED,
                ),
                cwd=tmp_path,
                env=eval_env(),
                capture_output=True,
                text=True,
                timeout=400,
            )
        sent = stub.stub.requests_for("member-1")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert len(gateways) == 1, f"{len(gateways)} gateway processes; the eval shares one"
    runs = {r["task"]: r for r in json.loads((out / "EVAL.json").read_text())["runs"]}
    sql, acme = runs["sql-injection"], runs["finance-acme"]
    assert (sql["found"], sql["findings"], sql["planted"]) == (1, 2, 2)
    assert sql["recall"] == 0.5 and sql["precision"] == 0.5
    assert [a["correct"] for a in acme["answers"]] == [True, True, False, True]

    # Each run's usage holds its own calls, every call once: the stub's requests split
    # by the task in their brief match the runs' usage files line for line.
    def first_user(body: dict[str, Any]) -> str:
        return next(str(m["content"]) for m in body["messages"] if m["role"] == "user")

    acme_sent = [r for r in sent if ACME_WHEN in first_user(r.body)]
    assert len(usage(acme)) == len(acme_sent) and len(usage(sql)) == len(sent) - len(acme_sent)
    for run in (sql, acme):
        lines = usage(run)
        assert {x["member"] for x in lines} == {"member-1"}
        assert run["cost_usd"] == pytest.approx(sum(x["cost_usd"] for x in lines))
        assert run["cost_usd"] > 0
    assert sql["cost_usd"] != pytest.approx(acme["cost_usd"])
    total = sql["cost_usd"] + acme["cost_usd"]
    assert f"(2/2, spent ${total:.4f})" in done.stdout


def test_sigterm_to_the_eval_leaves_no_process_behind(tmp_path: Path) -> None:
    """SIGTERM while runs are live: the runs are stopped hard, the shared gateway is
    stopped, the eval exits, and no process of it is left (members included)."""
    out = tmp_path / "out"
    forever = [{**horde("list"), "hold_ms": 300}] * 400
    with StubThread(policy=AgentPolicy({"member-1": forever}), token="stub") as stub:
        proc = subprocess.Popen(
            eval_argv(stub, out, "--tasks", "sql-injection,ssrf", "--parallel", "2"),
            cwd=tmp_path,
            env=eval_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        left: list[int] = []
        try:
            assert wait_until(lambda: len(stub.stub.requests_for("member-1")) >= 6, 120)
            assert len(ours(tmp_path)) >= 5  # the eval's gateway, 2 runs, 2 members at least
            proc.send_signal(signal.SIGTERM)
            stdout, stderr = proc.communicate(timeout=120)
            wait_until(lambda: not ours(tmp_path), 15)
            left = ours(tmp_path)
        finally:
            if proc.poll() is None:
                proc.kill()
            kill_all(ours(tmp_path))
    assert not left, f"left behind: {describe(left)}"
    assert proc.returncode != 0, stdout[-2000:] + stderr[-2000:]
    assert "Traceback" not in stderr
    assert "interrupted" in stderr
    assert len(json.loads((out / "EVAL.json").read_text())["runs"]) == 2
