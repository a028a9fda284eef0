"""Lessons across runs without a model: the quote check, the ranking, LESSONS.md and its
read-back, and what `run --lessons` gives a run: SYSTEM.md, MANIFEST.json, REPORT.md, the
launch refusal, and a real member's first request to the model."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from conftest import GatewayProcess
from support.member import RUN, prepare, run_member

from horde_tui.commands.cli import build_parser
from horde_tui.common.settings import load_settings
from horde_tui.launch.launch import RunOptions, check_launch
from horde_tui.protocol.outcome import RunSummary
from horde_tui.store.state import LedgerState
from horde_tui.supervisor import lessons
from horde_tui.supervisor.lessons import Lesson, PostMortem, Quote
from horde_tui.supervisor.report import render_report
from horde_tui.supervisor.setup import assign_roles, write_run_files

PM = PostMortem(
    "r-a",
    Path("runs/r-a/POSTMORTEM.md"),
    "# Post-mortem\n\nTwo members worked the same\nidea without claiming it.\n",
)


def test_a_quote_counts_only_word_for_word_and_long_enough() -> None:
    # The file's line breaks and the model's quotation marks do not matter ...
    assert lessons.check_quote("“worked the same idea without claiming”", PM.text) == ""
    # ... a word changed does, and so does a quote too short to prove anything.
    assert lessons.check_quote("worked the same idea without asking", PM.text) == (
        "not found in that run's POSTMORTEM.md"
    )
    assert lessons.check_quote("same idea", PM.text) == "shorter than 4 words"


def test_the_answer_is_checked_quote_by_quote() -> None:
    answer = json.dumps(
        {
            "lessons": [
                {
                    "lesson": "Claim  first.",
                    "quotes": [
                        {"run": "r-a", "quote": "members worked the same idea"},
                        {"run": "r-zz", "quote": "members worked the same idea"},
                        "not a quote",
                    ],
                },
                {"lesson": "", "quotes": []},
                "not a lesson",
            ]
        }
    )
    [lesson] = lessons.parse_answer("Here you are:\n" + answer, [PM])
    assert lesson.text == "Claim first."
    assert [(q.run, q.problem) for q in lesson.quotes] == [
        ("r-a", ""),
        ("r-zz", "no post-mortem of that run"),
    ]
    with pytest.raises(lessons.LessonsError, match='no "lessons" list'):
        lessons.parse_answer('{"critiques": []}', [PM])
    with pytest.raises(lessons.LessonsError, match="not valid JSON"):
        lessons.parse_answer('{"lessons": [}', [PM])


def _lesson(text: str, *quotes: tuple[str, str]) -> Lesson:
    return Lesson(text, [Quote(run, f"quote from {run}", problem) for run, problem in quotes])


def test_lessons_rank_by_runs_whose_quotes_were_found() -> None:
    made_up = "not found in that run's POSTMORTEM.md"
    cited_often = _lesson("A", ("r1", ""), ("r2", made_up), ("r3", made_up), ("r4", made_up))
    same_run_twice = _lesson("B", ("r1", ""), ("r1", ""))
    two_runs = _lesson("C", ("r1", ""), ("r2", ""))
    three_runs = _lesson("D", ("r2", ""), ("r3", ""), ("r4", ""))
    invented = _lesson("E", ("r1", made_up))
    kept, dropped = lessons.rank([cited_often, same_run_twice, two_runs, invented, three_runs])
    # runs first; on one run each, two found quotes beat one; E has none found
    assert [lesson.text for lesson in kept] == ["D", "C", "B", "A"]
    assert [lesson.runs for lesson in kept] == [["r2", "r3", "r4"], ["r1", "r2"], ["r1"], ["r1"]]
    assert dropped == [invented]


def test_lessons_md_reads_back_its_top_lessons() -> None:
    kept = [_lesson(f"Lesson {n}.", *[(f"r{k}", "") for k in range(7 - n)]) for n in range(1, 7)]
    marked = Lesson("Lesson 1.", [Quote("r9", "made up", "not found in that run's POSTMORTEM.md")])
    kept[0].quotes.append(marked.quotes[0])
    pms = [PostMortem(f"r{k}", Path("x"), "") for k in range(6)]
    text = lessons.render(kept, [_lesson("Gone.", ("r1", "shorter than 4 words"))], pms, "m", "now")
    assert "## 1. Lesson 1. (raised in 6 of 6 runs)" in text
    assert '- run r9: "made up" [check: not found in that run\'s POSTMORTEM.md]' in text
    assert "## Not kept" in text and "- Gone." in text
    assert lessons.top_lessons(text) == [
        f"Lesson {n}. (raised in {7 - n} of 6 runs)" for n in range(1, 6)
    ]
    assert lessons.top_lessons("# Lessons\n\nno ranked heading\n") == []
    one = "## 1. Claim first. (raised in 1 of 1 run)"
    assert lessons.top_lessons(one) == ["Claim first. (raised in 1 of 1 run)"]
    long = "## 1. " + "word " * 100 + "(raised in 2 of 2 runs)"
    [cut] = lessons.top_lessons(long)
    assert cut == "word " * 59 + "word… (raised in 2 of 2 runs)"  # 300 characters


def test_postmortems_of_runs_and_swarm_hordes_are_read_and_the_unwritten_left_out(
    tmp_path: Path,
) -> None:
    horde = tmp_path / ".horde"
    texts = {
        horde / "runs" / "r1": "# Post-mortem\n\nReal critique.\n",
        horde / "runs" / "r2": "# Post-mortem\n\nNot written: the helper ended with `killed`.\n",
        horde / "runs" / "r3": None,
        horde / "swarms" / "s1" / "h1" / "runs" / "s1-h1": "# Post-mortem\n\nSwarm horde.\n",
    }
    for run_dir, text in texts.items():
        run_dir.mkdir(parents=True)
        if text is not None:
            (run_dir / "POSTMORTEM.md").write_text(text)
    kept, skipped = lessons.read_postmortems(horde)
    assert [pm.run for pm in kept] == ["r1", "s1-h1"]
    assert skipped == [("r2", "its post-mortem helper wrote none"), ("r3", "no POSTMORTEM.md")]


SIX = "# Lessons across runs\n\n" + "".join(
    f"## {n}. Lesson number {n}. (raised in {8 - n} of 7 runs)\n\n" for n in range(1, 7)
)


def launched(workdir: Path, *flags: str) -> tuple[Path, dict[str, object]]:
    """`run 2 ... FLAGS` checked as the CLI checks it, its run files written."""
    args = build_parser().parse_args(["run", "--headless", "2", "Review app.py", *flags])
    check = check_launch(
        RunOptions.from_args(args), workdir / ".horde", environ={"HORDE_MODEL": "openai/x"}
    )
    assert check.ok, [r.message for r in check.refusals]
    assert check.request is not None and check.settings is not None
    run_dir = write_run_files(
        workdir / ".horde", RUN, check.request, check.settings, assign_roles(check.request)
    )
    return run_dir, json.loads((run_dir / "MANIFEST.json").read_text())


def test_run_lessons_puts_the_top_lessons_in_every_members_brief(
    gateway: GatewayProcess, tmp_path: Path
) -> None:
    horde_dir = prepare(tmp_path)
    (horde_dir / "LESSONS.md").write_text(SIX)
    run_dir, manifest = launched(tmp_path, "--lessons")
    assert manifest["hashes"]["LESSONS.md"] == hashlib.sha256(SIX.encode()).hexdigest()
    assert manifest["lessons"] == 5 and manifest["config"]["lessons"] is True
    assert "Lesson" not in (run_dir / "TASK.md").read_text()  # the task is not changed
    # A real member's first model request carries them (its system prompt is SYSTEM.md).
    gateway.stub.stub.set_scripts({"member-1": [{"content": "Nothing to do."}]})
    code, _, stderr = run_member(gateway, tmp_path, "member-1")
    assert code == 0, stderr
    system = gateway.stub.stub.requests_for("member-1")[-1].body["messages"][0]["content"]
    assert "## Lessons from earlier runs" in system
    assert "1. Lesson number 1. (raised in 7 of 7 runs)" in system
    assert "5. Lesson number 5." in system and "Lesson number 6" not in system
    # REPORT.md says they were used, with the hash of the file they came from.
    line = lessons.report_line(run_dir)
    assert line == (
        "Lessons: the members' brief held the top 5 lessons of .horde/LESSONS.md "
        f"(sha256 `{manifest['hashes']['LESSONS.md']}`), from earlier runs' post-mortems"
    )
    summary = RunSummary(RUN, "finished", "done", "ok", 0.0, 1.0, "openai/x", lessons=line)
    assert f"\n- {line}\n" in render_report(LedgerState(), summary, tmp_path)


def test_a_run_without_lessons_gives_none(tmp_path: Path) -> None:
    (tmp_path / ".horde").mkdir()
    (tmp_path / ".horde" / "LESSONS.md").write_text(SIX)
    run_dir, manifest = launched(tmp_path)
    assert manifest["hashes"]["LESSONS.md"] is None and manifest["lessons"] == 0
    assert "Lessons from earlier runs" not in (run_dir / "SYSTEM.md").read_text()
    assert lessons.report_line(run_dir) == ""


@pytest.mark.parametrize(
    ("content", "why"), [(None, "which does not exist"), ("# Lessons\n", "holds no ranked lesson")]
)
def test_run_lessons_without_a_lesson_is_refused_in_one_line(
    tmp_path: Path, content: str | None, why: str
) -> None:
    (tmp_path / ".horde").mkdir()
    if content is not None:
        (tmp_path / ".horde" / "LESSONS.md").write_text(content)
    args = build_parser().parse_args(["run", "--headless", "2", "Review app.py", "--lessons"])
    check = check_launch(
        RunOptions.from_args(args), tmp_path / ".horde", environ={"HORDE_MODEL": "m/x"}
    )
    [refusal] = check.refusals
    assert refusal.exit_code == 2 and "\n" not in refusal.message
    assert why in refusal.message and "write it with `horde-tui lessons`" in refusal.message
    # the config's `lessons = true` is the same rule
    config = load_settings(environ={"HORDE_LESSONS": "on"})
    assert config.supervisor.lessons is True


def test_a_quote_past_what_the_model_was_sent_still_counts_and_swarms_share_one_file(
    tmp_path: Path,
) -> None:
    tail = "the verifier never reviewed F9 at all"
    long = PostMortem("r-b", Path("x"), "# Post-mortem\n\n" + "x" * lessons.POSTMORTEM_CAP + tail)
    assert tail not in lessons.messages([long])[1]["content"]
    answer = json.dumps({"lessons": [{"lesson": "Review.", "quotes": [quote_of("r-b", tail)]}]})
    [lesson] = lessons.parse_answer(answer, [long])
    assert lesson.runs == ["r-b"]
    horde = tmp_path / ".horde"
    assert lessons.lessons_path(horde / "swarms" / "s1" / "h2") == horde / "LESSONS.md"


def quote_of(run: str, text: str) -> dict[str, str]:
    return {"run": run, "quote": text}
