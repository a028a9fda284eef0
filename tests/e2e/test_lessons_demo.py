"""`horde-tui lessons` right after `horde-tui demo` (issue 33): the demo model reads its
own post-mortem, no key needed, and every quote it gives holds."""

from __future__ import annotations

from pathlib import Path

from support.cli import cli

from horde_tui.demo.policy import LESSONS
from horde_tui.store.runs import run_ids


def test_lessons_on_the_demo_are_the_demo_models_own_and_every_quote_holds(
    demo_copy: Path,
) -> None:
    project = demo_copy
    done = cli(project, "lessons", timeout_s=240)
    assert done.returncode == 0, done.stderr
    assert f"{len(LESSONS)} lesson(s) from 1 post-mortem(s), 0 quote(s) failing" in done.stdout
    text = (project / ".horde" / "LESSONS.md").read_text()
    (run,) = run_ids(project / ".horde")
    assert "by demo model (scripted, not a real LLM)" in text
    quotes = [line for line in text.splitlines() if line.startswith("- run ")]
    assert len(quotes) == len(LESSONS) and not [q for q in quotes if "[check:" in q], quotes
    for lesson, quote in LESSONS:
        assert lesson in text and f'run {run}: "{quote}"' in text
