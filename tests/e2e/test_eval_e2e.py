"""`horde-tui eval` end to end: real eval, run, gateway and member processes on two
bundled tasks, with a scripted model that reads the task's truth and files some true and
some false findings (and some right and some wrong replies), so every score is exact.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.cli import cli_argv
from support.eval_plans import cite, finding
from support.plans import horde
from support.processes import wait_until

from horde_tui.eval.taskset import load_taskset
from horde_tui.stubmodel import StubThread
from horde_tui.stubmodel.agent import POLL_TRIES, AgentPolicy

pytestmark = [pytest.mark.slow, pytest.mark.e2e]  # four real runs: about a minute

REPAIR_MARK = "This is a REPAIR session"
TASKS = load_taskset("bundled")
SQL = TASKS.select(["sql-injection"])[0]
ACME = TASKS.select(["finance-acme"])[0]
SQL_WHEN = SQL.prompt[:40]
ACME_WHEN = "Acme's current ratio"
SINGLE = "members: 1 ("


def sql_worker_one() -> list[dict[str, Any]]:
    """True (login lookup), duplicate of it, false (a parameterised query), one refusal."""
    return [
        horde("claim", id="#99"),  # refused: no such idea (counted as a refusal)
        horde("idea", text="Check store.py's queries for SQL injection"),
        horde("claim", id="$id"),
        finding(
            "sql-injection", "find_user concatenates email into SQL", cite(SQL, "login-lookup")
        ),
        finding("login-query-input", "the login query is injectable", cite(SQL, "login-lookup", 1)),
        finding(
            "orders-query",
            "list_orders may be injectable",
            "store.py:18: return db.execute(",  # the quote is checked against the line
        ),
        horde("done", id="$I", result="filed three"),
    ]


def sql_worker_two() -> list[dict[str, Any]]:
    """True: the product search's f-string."""
    return [
        horde("idea", text="Check search_products for injection"),
        horde("claim", id="$id"),
        finding(
            "product-search-sql",
            "search_products formats term into SQL",
            cite(SQL, "product-search"),
        ),
        horde("done", id="$I", result="filed one"),
    ]


def verifier() -> list[dict[str, Any]]:
    """Accept member-2's finding only: accepted recall is 1 of 2 planted."""
    return [
        {
            **horde("findings"),
            "match": [r"^- (F\d+) .*\(#\d+ · product-search-sql · member-2 · r\d+ · \w+\)$"],
            "bind": ["$<b>"],
            "wait_ms": 200,
            "tries": POLL_TRIES,
        },
        horde(
            "review",
            target="$<b>",
            verdict="supports",
            support="reproduced",
            checked="re-read store.py at the cited line",
            evidenceText="the f-string puts term into the SQL text",
        ),
    ]


ACME_SINGLE = "q1: 2.00\nq2: 40.0\nq3: 0.70\nq4: 58.5"  # q3 is wrong (0.65)
ACME_HORDE = "- **q1**: 2.00\n- **q2**: 40.0%\n- **q3**: 0.65\n- **q4**: 58.5%"


def plans() -> dict[str, list[dict[str, Any]]]:
    """Each member's plan for both tasks: `when` picks the task from the member's brief
    (a single run's brief says `members: 1 (`); repair sessions play nothing."""

    def only(when: str, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{**i, "when": when, "unless": REPAIR_MARK} for i in items]

    return {
        "member-1": [
            *only(SQL_WHEN, sql_worker_one()),
            {**horde("solved", text=ACME_SINGLE), "when": SINGLE, "unless": SQL_WHEN},
            {**horde("solved", text=ACME_HORDE), "when": ACME_WHEN, "unless": SINGLE},
        ],
        "member-2": [
            *only(SQL_WHEN, sql_worker_two()),
            *only(
                ACME_WHEN,
                [
                    {
                        **horde("inspect", target="answer"),
                        "match": [r"^Status: proposed"],
                        "wait_ms": 200,
                        "tries": POLL_TRIES,
                    },
                    horde("confirm-solved", text="re-computed each ratio from the statements"),
                ],
            ),
        ],
        "member-4": only(SQL_WHEN, verifier()),
    }


def test_eval_scores_single_and_horde_exactly_and_the_outputs_agree(tmp_path: Path) -> None:
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HORDE_")}
    env.update(HORDE_GATEWAY_BACKOFF_MS="20", HORDE_ACTIVE_GRACE_MS="300")
    with StubThread(policy=AgentPolicy(plans()), token="stub") as stub:
        done = subprocess.run(
            cli_argv(
                "eval",
                "bundled",
                "--tasks",
                "sql-injection,finance-acme",
                "--configs",
                "single,horde:4",
                "--model",
                stub.model,
                "--api-base",
                stub.api_base,
                "--api-key",
                "stub",
                "--parallel",
                "2",
                "--out",
                str(out),
            ),
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=400,
        )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert sum(1 for line in lines if line.startswith("eval: start ")) == 4
    assert sum(1 for line in lines if line.startswith("eval: done ")) == 4
    assert "(4/4, spent $0.0000 + 4 unpriced run(s))" in done.stdout  # not a $0 eval
    data = json.loads((out / "EVAL.json").read_text())
    runs = {(r["task"], r["config"]): r for r in data["runs"]}
    assert set(runs) == {
        ("sql-injection", "single"),
        ("sql-injection", "horde:4"),
        ("finance-acme", "single"),
        ("finance-acme", "horde:4"),
    }
    single, hord = runs["sql-injection", "single"], runs["sql-injection", "horde:4"]
    assert (single["found"], single["findings"], single["duplicates"]) == (1, 3, 1)
    assert single["recall"] == 0.5 and single["precision"] == pytest.approx(2 / 3)
    assert single["accepted_recall"] == 0.0  # no verifier in a single run
    assert single["refusals"] == 1
    assert (hord["found"], hord["findings"], hord["duplicates"]) == (2, 4, 1)
    assert hord["recall"] == 1.0 and hord["precision"] == 0.75
    assert hord["accepted_recall"] == 0.5
    assert hord["refusals"] == 1
    assert [a["correct"] for a in runs["finance-acme", "single"]["answers"]] == [
        True,
        True,
        False,
        True,
    ]
    assert runs["finance-acme", "horde:4"]["answer_accuracy"] == 1.0
    for r in data["runs"]:
        run_dir = Path(r["folder"]) / "work" / ".horde" / "runs" / r["run_id"]
        manifest = json.loads((run_dir / "MANIFEST.json").read_text())
        assert len(manifest["members"]) == (1 if r["config"] == "single" else 4)
        assert r["manifest_sha256"] and r["acceptance_sha256"]
        assert r["tokens"] > 0 and r["cost_usd"] is None  # the stub has no price
    assert re.fullmatch(r"[0-9a-f]{64}", data["taskset"]["sha256"])
    # The three outputs agree: EVAL.md's summary and the SVG's bars print EVAL.json's means.
    summary = data["summary"]
    assert summary["single"]["recall"]["mean"] == 0.5
    assert summary["horde:4"]["recall"]["mean"] == 1.0
    md = (out / "EVAL.md").read_text()
    section = md.split("## Summary by configuration")[1].split("\n## ")[0]
    head, _, *body = [line.strip("| ").split(" | ") for line in section.strip().splitlines()]
    table = {row[0]: dict(zip(head, row, strict=True)) for row in body}
    assert table["single"]["recall"] == "0.50" and table["horde:4"]["recall"] == "1.00"
    assert table["single"]["precision"] == "0.67"  # 2 of 3; the answers task has none
    assert table["horde:4"]["accepted recall"] == "0.50"
    assert (
        table["single"]["answers right"] == "0.75" and table["horde:4"]["answers right"] == "1.00"
    )
    assert table["single"]["runs"] == "2"
    svg = (out / "eval.svg").read_text()
    assert svg.startswith("<svg") and "single: 0.50" in svg and "horde:4: 1.00" in svg
    terminal = done.stdout.split("\n\n")[-2].splitlines()
    assert terminal[0].split()[:3] == ["configuration", "runs", "recall"]
    assert terminal[1].split()[:3] == ["single", "2", "0.50"]
    assert terminal[2].split()[:3] == ["horde:4", "2", "1.00"]


def test_ctrl_c_stops_the_live_run_clean_scores_it_and_starts_no_more(tmp_path: Path) -> None:
    """SIGINT to the eval: the live run gets a clean stop (its member sees WRAP UP on the
    board and ends), is scored, the next task never starts, the outputs hold the one run."""
    plan = [
        horde("idea", text="Check store.py's queries for SQL injection"),
        horde("claim", id="$id"),
        finding(
            "sql-injection", "find_user concatenates email into SQL", cite(SQL, "login-lookup")
        ),
        {
            "tool": "read",
            "args": {"path": ".horde/BOARD.md"},
            "match": ["WRAP UP"],
            "wait_ms": 300,
            "tries": POLL_TRIES * 4,
        },
        {"say": "Wrapped up."},
    ]
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HORDE_")}
    env.update(HORDE_GATEWAY_BACKOFF_MS="20")
    with StubThread(policy=AgentPolicy({"member-1": plan}), token="stub") as stub:
        proc = subprocess.Popen(
            cli_argv(
                "eval",
                "bundled",
                "--configs",
                "single",
                *("--tasks", "sql-injection,ssrf", "--model", stub.model),
                *("--api-base", stub.api_base, "--api-key", "stub", "--out", str(out)),
            ),
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            ledger = out / "runs" / "sql-injection.single.1" / "work" / ".horde" / "ledger.jsonl"
            assert wait_until(lambda: ledger.exists() and '"F1"' in ledger.read_text(), 120)
            proc.send_signal(signal.SIGINT)
            stdout, stderr = proc.communicate(timeout=180)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 130, stdout[-3000:] + stderr[-3000:]
    assert "interrupted: 1 of 2 run(s) scored" in stderr
    assert "eval: start ssrf" not in stdout
    (run,) = json.loads((out / "EVAL.json").read_text())["runs"]
    assert run["task"] == "sql-injection" and run["found"] == 1 and run["exit_code"] == 130
    assert run["outcome"] == "stopped by user"
    result = json.loads((out / "runs" / "sql-injection.single.1" / "RESULT.json").read_text())
    assert result["found"] == 1
    assert not (out / "runs" / "ssrf.single.1").exists()


def test_a_budget_the_gateway_cannot_price_refuses_the_eval_before_any_run(
    tmp_path: Path,
) -> None:
    """A budget on a model litellm cannot price: the eval's one gateway refuses to start,
    so the eval says why in one line and starts no run (each run would be refused)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HORDE_")}
    with StubThread(token="stub") as stub:
        done = subprocess.run(
            cli_argv(
                "eval",
                "bundled",
                "--tasks",
                "ssrf",
                "--configs",
                "single",
                "--model",
                stub.model,
                "--api-base",
                stub.api_base,
                "--api-key",
                "stub",
                "--max-cost-usd",
                "1",
                "--out",
                str(tmp_path / "out"),
            ),
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
    assert done.returncode == 2, done.stdout + done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("horde-tui eval: no run started: the model gateway did not start")
    assert "has no price for openai/stub" in line, line
    assert "eval: start" not in done.stdout
    assert not (tmp_path / "out" / "runs").exists()
    assert not stub.stub.requests  # no member ever called the model
