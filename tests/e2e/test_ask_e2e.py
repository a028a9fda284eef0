"""`horde-tui ask` on a real run (issue 33): `demo --headless`, then `ask last "..."` with
a scripted analyst on the stub model, as a person runs them from a shell.

The analyst cites one real finding, one made-up finding and a line that does not hold
the code it quotes: the two wrong ones are marked in the answer printed and in
`asks.jsonl`, and the ledgers are byte-identical afterwards. A live run (`slow`: a second
gateway) is asked through its own gateway and counts against its budget: once the
budget is spent, an ask is refused in one line and nothing is kept.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from conftest import start_gateway
from support.cli import cli
from support.gateway import price_map_entry
from support.processes import alive, children, describe, kill_all

from horde_tui.launch.ask import AskStep
from horde_tui.launch.ask import ask as launch_ask
from horde_tui.store.asks import read_asks
from horde_tui.store.runs import mark_live, run_ids
from horde_tui.store.transcript import summarize
from horde_tui.stubmodel import StubThread
from horde_tui.supervisor.summary import DEMO_MODEL

WRONG_LINE = 'app.py:13 `SECRET_KEY = "hunter2"`'
ANSWER = f"F1 holds: the token is hard-coded. F42 says it was rotated, but {WRONG_LINE} disagrees."
PRICED = "openai/gpt-4o-mini"
BIG = 100_000
"""Prompt tokens of one priced call: $0.015 at gpt-4o-mini's input price."""


def ask(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return cli(cwd, "ask", *args, timeout_s=240, **env)


def ledgers(project: Path) -> dict[str, bytes]:
    """Every ledger file and the run's event log, as bytes."""
    horde = project / ".horde"
    files = [p for p in horde.iterdir() if p.is_file()]
    files += list(horde.glob("runs/*/events.jsonl"))
    return {str(p.relative_to(horde)): p.read_bytes() for p in files}


def test_ask_last_marks_a_made_up_finding_and_a_wrong_line_and_changes_no_ledger(
    demo_copy: Path, stub_model: StubThread, tmp_path: Path
) -> None:
    stub_model.stub.set_scripts(
        {
            "ask": [
                {"tool_calls": [{"name": "horde", "arguments": {"action": "list"}}]},
                {"tool_calls": [{"name": "grep", "arguments": {"pattern": "SECRET_KEY"}}]},
                {"content": ANSWER},
            ]
        }
    )
    before = ledgers(demo_copy)
    flags = ("--model", stub_model.model, "--api-base", stub_model.api_base, "--api-key", "x")
    done = ask(
        demo_copy, "last", "Is the admin token still hard-coded?", *flags, TMPDIR=str(tmp_path)
    )
    assert done.returncode == 0, done.stderr
    assert not list(tmp_path.glob("horde-ask-*"))  # the ask's own gateway folder is gone

    assert ledgers(demo_copy) == before
    assert done.stdout.startswith(ANSWER)  # streamed as it came, then the answer as kept
    kept = (
        "F1 holds: the token is hard-coded. F42 [check: no such finding in the ledgers] "
        'says it was rotated, but app.py:13 `SECRET_KEY = "hunter2"` [check: the quoted '
        "code is not on those lines] disagrees."
    )
    assert "--- checked: 2 of 3 citations do not hold; the answer as kept ---" in done.stdout
    assert done.stdout.rstrip().endswith(kept)
    assert "  · horde list\n  · grep SECRET_KEY .\n" in done.stderr
    assert "ask: 3 citations checked, 2 marked; " in done.stderr

    (run,) = run_ids(demo_copy / ".horde")
    run_dir = demo_copy / ".horde" / "runs" / run
    (record,) = read_asks(run_dir)
    assert (record.question, record.answer, record.live) == (
        "Is the admin token still hard-coded?",
        kept,
        False,
    )
    assert [(c.token, c.ok) for c in record.citations] == [
        ("F1", True),
        ("F42", False),
        ("app.py:13", False),
    ]
    assert record.model == stub_model.model and record.prompt_tokens > 0
    # The analyst: read-only tools, streamed, its transcript apart from the members'.
    (first, *_) = stub_model.stub.requests_for("ask")
    offered = {t["function"]["name"] for t in first.body["tools"]}
    assert offered == {"read", "grep", "horde"} and first.body["stream"] is True
    assert "Is the admin token still hard-coded?" in first.body["messages"][1]["content"]
    assert list((run_dir / "asks" / "ask").glob("*.jsonl"))
    assert (run_dir / "asks" / "ask.log").is_file()
    spent = [json.loads(x) for x in (run_dir / "usage.jsonl").read_text().splitlines()]
    assert "ask" not in {u["member"] for u in spent}  # a finished run's usage is its own
    assert not (run_dir / "sessions" / "ask").exists()
    assert summarize("grep", {"pattern": "x"}) == "grep x ."


def test_the_demo_model_answers_an_ask_of_the_demo_from_its_ledgers(
    demo_copy: Path, tmp_path: Path
) -> None:
    """A newcomer's first ask, on the demo, without a key: the demo model plays a scripted
    analyst that reads the ledger, says it is a script, and cites what it read (each
    citation holds)."""
    before = ledgers(demo_copy)
    done = ask(demo_copy, "last", "What did the horde find?", TMPDIR=str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "The demo model plays the analyst here: it is a script" in done.stdout
    assert "[check:" not in done.stdout and "--- checked" not in done.stdout
    assert ledgers(demo_copy) == before
    assert not list(tmp_path.glob("horde-ask-*"))
    (run,) = run_ids(demo_copy / ".horde")
    (record,) = read_asks(demo_copy / ".horde" / "runs" / run)
    assert record.model == DEMO_MODEL and "The run filed 5 findings" in record.answer
    assert [(c.token, c.ok) for c in record.citations] == [("F1", True), ("app.py:13", True)]


def test_bad_input_is_refused_in_one_line_with_status_2(demo_copy: Path) -> None:
    """An empty question and a run that is not there: one line each, nothing kept."""
    for args, said in (
        (("last", "  "), "the question is empty"),
        (("no-such-run", "why?"), "no run named no-such-run"),
    ):
        done = ask(demo_copy, *args)
        assert done.returncode == 2 and done.stdout == "", done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and said in done.stderr


@pytest.fixture
def live(demo_copy: Path, stub_model: StubThread, tmp_path: Path) -> Iterator[Path]:
    """A copy of the demo's project whose run is live (this process supervises it) with
    its own gateway on a priced model and a $0.02 budget."""
    copy = tmp_path / "live"
    shutil.copytree(demo_copy, copy, symlinks=True)
    (run,) = run_ids(copy / ".horde")
    run_dir = copy / ".horde" / "runs" / run
    for spent in ("asks.jsonl", "usage.jsonl"):  # the demo's: this gateway starts at zero
        (run_dir / spent).unlink(missing_ok=True)
    gw = start_gateway(stub_model, run_dir, "--max-cost-usd", "0.02", HORDE_MODEL=PRICED)
    mark_live(run_dir)
    try:
        yield run_dir
    finally:
        gw.proc.terminate()
        gw.proc.wait(30)


@pytest.mark.slow  # a second gateway process and four asks on top of the demo
async def test_a_live_run_is_asked_through_its_gateway_and_refused_once_its_budget_is_spent(
    live: Path, stub_model: StubThread
) -> None:
    """Through the run's own gateway: an ask closed mid-answer (the pane closed) stops its
    analyst and keeps nothing; an answered one is in the run's usage and budget; once a
    member spent the rest, the next is refused in one line; model flags are refused."""
    list_call = {"tool_calls": [{"name": "horde", "arguments": {"action": "list"}}]}
    big = {"prompt_tokens": BIG, "completion_tokens": 0}
    stub_model.stub.set_scripts(
        {
            "ask": [list_call, {"content": "late", "delay_ms": 120_000}],
            "member-1": [{"content": "ok", **big}],
        }
    )
    events = launch_ask(live, "Which findings?")
    async for event in events:
        if isinstance(event, AskStep):
            break
    started = children("horde_tui.member")
    assert len(started) == 1, describe(started)
    await events.aclose()
    try:
        assert not [p for p in started if alive(p)], describe(started)
    finally:
        kill_all(started)
    assert not (live / "asks.jsonl").exists()

    stub_model.stub.set_scripts(
        {"ask": [{"content": "F1 holds.", **big}], "member-1": [{"content": "ok", **big}]}
    )
    project = live.parent.parent.parent
    done = ask(project, live.name, "Does F1 hold?", "--json")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    per_call = BIG * price_map_entry("gpt-4o-mini")["input_cost_per_token"]
    assert record["live"] is True and record["cost_usd"] == pytest.approx(per_call)
    assert record["citations"] == [{"token": "F1", "ok": True, "problem": ""}]
    usage = [json.loads(x) for x in (live / "usage.jsonl").read_text().splitlines()]
    assert {u["member"] for u in usage} == {"ask"}  # the run's gateway counted it

    # A member spends the rest of the budget; the next ask is refused in one line.
    info = json.loads((live / "gateway.json").read_text())
    token = (live / "gateway.token").read_text().strip()
    spent = httpx.post(
        info["url"] + "/v1/chat/completions",
        json={"model": "horde", "messages": [{"role": "user", "content": "Go."}]},
        headers={"Authorization": f"Bearer {token}", "X-Horde-Member": "member-1"},
        timeout=60,
    )
    assert spent.status_code == 200
    refused = ask(project, "last", "And now?")
    assert refused.returncode == 1 and refused.stdout == ""
    (line,) = refused.stderr.strip().splitlines()
    # $0.03 and the closed ask's first call: what it spent before it was stopped counts
    assert "cost budget is spent ($0.030" in line and "of $0.0200, HORDE_MAX_COST_USD" in line
    assert "ask once the run" in line
    assert len(read_asks(live)) == 1
    flagged = ask(project, "last", "q", "--model", "x")  # a live run: its own model
    assert flagged.returncode == 2 and "leave out --model" in flagged.stderr
