"""`horde-tui lessons` as a person runs it: a real CLI process, a real gateway it starts
and stops, and the scripted stub model proposing lessons, one with a made-up quote."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from support.cli import cli, stub_env

from horde_tui.commands.cli import main
from horde_tui.stubmodel import StubThread

RUNS = {
    "20261201-100000-aaaa": (
        "# Post-mortem\n\nTwo members worked the same idea\nwithout claiming it first, "
        "and member-3 waited twenty minutes on a review nobody was asked for.\n"
    ),
    "20261202-100000-bbbb": (
        "# Post-mortem\n\nAgain two members worked the same idea in parallel. Findings "
        "were filed without reviews, so the verifier had nothing pinned to check.\n"
    ),
    "20261203-100000-cccc": (
        "# Post-mortem\n\nmember-2 filed findings without reviews by anyone; "
        "the board shows a stall of forty minutes.\n"
    ),
}


def plant(workdir: Path, runs: dict[str, str] = RUNS) -> Path:
    """A horde directory whose runs have these post-mortems (and one run without)."""
    horde_dir = workdir / ".horde"
    for run, text in runs.items():
        (horde_dir / "runs" / run).mkdir(parents=True)
        (horde_dir / "runs" / run / "POSTMORTEM.md").write_text(text)
    (horde_dir / "runs" / "20261204-100000-dddd").mkdir(parents=True)
    return horde_dir


def quote(run: str, text: str) -> dict[str, str]:
    return {"run": run, "quote": text}


ANSWER = {
    "lessons": [
        {
            "lesson": "Claim an idea before working it.",
            "quotes": [
                quote(
                    "20261201-100000-aaaa", "Two members worked the same idea without claiming it"
                ),
                quote("20261202-100000-bbbb", "two members worked the same idea in parallel"),
            ],
        },
        {
            "lesson": "Ask a member for each review a finding needs.",
            "quotes": [
                quote("20261202-100000-bbbb", "Findings were filed without reviews"),
                quote("20261203-100000-cccc", "filed findings without reviews by anyone"),
                quote("20261201-100000-aaaa", "nobody reviewed the three critical findings"),
            ],
        },
        {
            "lesson": "Keep the board short.",
            "quotes": [quote("20261203-100000-cccc", "the board was far too long to read")],
        },
    ]
}


def lessons_cli(workdir: Path, stub: StubThread, *args: str) -> subprocess.CompletedProcess[str]:
    return cli(workdir, "lessons", *args, **stub_env(stub))


def test_lessons_ranks_by_runs_with_found_quotes(tmp_path: Path, stub_model: StubThread) -> None:
    horde_dir = plant(tmp_path)
    stub_model.stub.set_scripts(
        {"lessons": [{"content": "```json\n" + json.dumps(ANSWER) + "\n```"}]}
    )
    done = lessons_cli(tmp_path, stub_model)
    assert done.returncode == 0, done.stderr
    assert "2 lesson(s) from 3 post-mortem(s), 2 quote(s) failing the check" in done.stdout
    assert "1 lesson(s) without a found quote (not kept)" in done.stdout
    text = (horde_dir / "LESSONS.md").read_text()
    # The review lesson cites three runs, but one quote is made up: it counts two, and
    # the claim lesson (two found) was cited first, so it stays ahead on the tie.
    assert "## 1. Claim an idea before working it. (raised in 2 of 3 runs)" in text
    assert "## 2. Ask a member for each review a finding needs. (raised in 2 of 3 runs)" in text
    made_up = next(line for line in text.splitlines() if "nobody reviewed" in line)
    assert "[check: not found in that run's POSTMORTEM.md]" in made_up
    # A lesson no found quote supports is not ranked, and says why.
    assert "## Not kept" in text and "- Keep the board short." in text
    assert text.index("## Not kept") > text.index("## 2.")
    # The model was given every written post-mortem, under its run id.
    sent = stub_model.stub.requests_for("lessons")[-1].body["messages"]
    prompt = "\n".join(m["content"] for m in sent)
    for run, body in RUNS.items():
        assert f"post-mortem of run {run}" in prompt and body.strip() in prompt
    # Its gateway was started for the call and is gone.
    info = json.loads((horde_dir / "lessons" / "gateway.json").read_text())
    try:
        os.kill(int(info["pid"]), 0)
    except ProcessLookupError:
        pass
    else:
        raise AssertionError(f"the lessons gateway (pid {info['pid']}) is still running")


def test_lessons_dry_run_calls_no_model(tmp_path: Path, stub_model: StubThread) -> None:
    horde_dir = plant(tmp_path)
    stub_model.stub.set_scripts({})
    before = len(stub_model.stub.requests)
    done = lessons_cli(tmp_path, stub_model, "--dry-run")
    assert done.returncode == 0, done.stderr
    for run, body in RUNS.items():
        assert f"{run}  runs/{run}/POSTMORTEM.md  {len(body):,} chars" in done.stdout
    assert "20261204-100000-dddd  left out: no POSTMORTEM.md" in done.stdout
    assert "no model called, nothing written" in done.stdout
    assert len(stub_model.stub.requests) == before
    assert not (horde_dir / "LESSONS.md").exists() and not (horde_dir / "lessons").exists()


def test_lessons_without_postmortems_is_one_line_and_writes_nothing(
    in_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (in_dir / ".horde" / "runs" / "20261204-100000-dddd").mkdir(parents=True)
    assert main(["lessons"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no post-mortem to learn from" in err
    assert "(1 run(s), none with a written POSTMORTEM.md)" in err
    assert not (in_dir / ".horde" / "LESSONS.md").exists()


@pytest.mark.slow  # a gateway of its own (litellm's import) for a two-line path
def test_lessons_answer_not_json_keeps_the_old_file(tmp_path: Path, stub_model: StubThread) -> None:
    horde_dir = plant(tmp_path)
    (horde_dir / "LESSONS.md").write_text("# Lessons across runs\n\nthe earlier ones\n")
    stub_model.stub.set_scripts({"lessons": [{"content": "Members should claim ideas."}]})
    done = lessons_cli(tmp_path, stub_model)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "holds no JSON object" in done.stderr
    assert (horde_dir / "lessons" / "answer.txt").read_text() == "Members should claim ideas."
    assert (horde_dir / "LESSONS.md").read_text() == "# Lessons across runs\n\nthe earlier ones\n"
