"""`launch.ask` refuses what it cannot answer before any process starts: one line each,
bad input marked as such (`horde-tui ask` exits 2 for it), nothing kept."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import GatewayProcess
from support.rundir import RunDir

from horde_tui.commands.ask import ask_run_dir
from horde_tui.launch.ask import AskEvent, AskRefused, ask
from horde_tui.store.runs import UnknownRun


async def events(run_dir: Path, question: str, **flags: str) -> list[AskEvent]:
    return [e async for e in ask(run_dir, question, **flags)]


@pytest.fixture
def run(tmp_path: Path, no_horde_env: None) -> RunDir:
    return RunDir(tmp_path / ".horde", "20260102-120000-aaaa")


@pytest.mark.parametrize(
    ("question", "flags", "live", "said", "bad_input"),
    [
        ("   ", {}, False, "the question is empty", True),
        ("Why?", {"model": "openai/x"}, True, "leave out --model", True),
        ("Why?", {}, True, "has no gateway of its own", False),
    ],
)
async def test_an_ask_that_cannot_be_answered_is_one_refusal_line(
    run: RunDir, question: str, flags: dict[str, str], live: bool, said: str, bad_input: bool
) -> None:
    if live:
        run.live(os.getpid())
    (refused,) = await events(run.path, question, **flags)
    assert isinstance(refused, AskRefused)
    assert refused.line.startswith("refused: ") and "\n" not in refused.line
    assert said in refused.line and refused.bad_input is bad_input
    assert not (run.path / "asks.jsonl").exists()


async def test_a_folder_that_is_not_a_run_is_bad_input(tmp_path: Path) -> None:
    (refused,) = await events(tmp_path, "Why?")
    assert isinstance(refused, AskRefused) and refused.bad_input
    assert "is not a run started by horde-tui" in refused.line


def test_last_is_the_newest_run_and_none_is_unknown(tmp_path: Path) -> None:
    horde = tmp_path / ".horde"
    with pytest.raises(UnknownRun, match=r"no run in .* yet"):
        ask_run_dir(horde, "last")
    RunDir(horde, "20260102-120000-aaaa")
    newest = RunDir(horde, "20260102-130000-bbbb")
    assert ask_run_dir(horde, "last") == newest.path


async def test_an_analyst_that_cannot_start_is_a_refusal_not_an_exception(
    run: RunDir, gateway: GatewayProcess
) -> None:
    """A live run (its gateway up, the budget not spent) whose `asks/` is a file: the
    analyst has nowhere to keep its transcript; one line, nothing kept, no exception."""
    (run.path / "gateway.json").write_text(json.dumps({"url": gateway.url}))
    (run.path / "gateway.token").write_text(gateway.token + "\n")
    (run.path / "asks").write_text("not a folder\n")
    run.live(os.getpid())
    (refused,) = await events(run.path, "Why?")
    assert isinstance(refused, AskRefused) and not refused.bad_input
    assert "could not start" in refused.line and "\n" not in refused.line
    assert not (run.path / "asks.jsonl").exists()
