"""The bundled eval task set: complete truth, every planted defect really at its lines."""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

import pytest
from support.cli import cli_argv

from horde_tui.eval.score import grade
from horde_tui.eval.taskset import bundled_root, load_taskset, parse_number

FAMILIES = {
    "sql-injection",
    "path-traversal",
    "ssrf",
    "broken-access-control",
    "timing-attack",
    "off-by-one",
    "race-condition",
    "hardcoded-secret",
    "docs-contradiction",
}


def test_the_bundled_set_has_the_issues_task_families_and_two_lookup_tasks() -> None:
    taskset = load_taskset("bundled")
    assert len(taskset.tasks) >= 8
    concerns = {d.concern for t in taskset.tasks for d in t.defects}
    assert concerns >= FAMILIES
    assert sum(1 for t in taskset.tasks if t.kind == "answers") >= 2


def test_every_planted_defect_is_at_its_stated_lines() -> None:
    """Read straight from the files (not through the loader): each defect names a marker,
    and the marker is on one of the stated lines and nowhere else in the file, so the
    lines cannot drift to a neighbouring copy."""
    root = bundled_root()
    checked = 0
    for truth_path in sorted(root.glob("*/truth.toml")):
        for defect in tomllib.loads(truth_path.read_text()).get("defect", []):
            lines = (truth_path.parent / "material" / defect["file"]).read_text().splitlines()
            first, last = defect["lines"][0], defect["lines"][-1]
            assert 1 <= first <= last <= len(lines), (truth_path, defect["id"])
            where = [n for n, line in enumerate(lines, 1) if defect["marker"] in line]
            assert len(where) == 1 and first <= where[0] <= last, (truth_path, defect["id"], where)
            checked += 1
    assert checked >= 14


def test_each_regex_grader_accepts_the_date_the_material_states() -> None:
    """The other graders compare with the reference answer itself (the next test checks
    those answers against the statements); a regex is written by hand and can miss."""
    regex = [q for task in load_taskset("bundled").tasks for q in task.questions]
    regex = [q for q in regex if q.grader == "regex"]
    assert regex
    for q in regex:
        assert grade(q, "30 June 2024"), q.id


def _table(path: Path, column: int = 0) -> dict[str, float]:
    """`| Line | 2023 | 2022 |` rows and `- Line: value` bullets -> {line: value}, the
    value in `column` (0: the first, the latest year)."""
    values: dict[str, float] = {}
    for line in path.read_text().splitlines():
        if m := re.match(r"^\| ([^|]+) \|((?: [\d,.]+ \|)+)", line):
            cells = [c.strip() for c in m.group(2).strip(" |").split("|")]
        elif m := re.match(r"^- ([^:]+): ([\d.]+)$", line):
            cells = [m.group(2)]
        else:
            continue
        if column < len(cells):
            number = parse_number(cells[column])
            assert number is not None
            values[m.group(1).strip()] = number
    return values


def test_the_finance_answers_are_what_the_statements_say() -> None:
    root = bundled_root()
    acme = _table(root / "finance-acme/material/acme_2023.md")
    acme_2022 = _table(root / "finance-acme/material/acme_2023.md", column=1)
    assert acme["Revenue"] - acme["Cost of goods sold"] == acme["Gross profit"]
    ratios = {
        "q1": acme["Total current assets"] / acme["Total current liabilities"],
        "q2": 100 * acme["Gross profit"] / acme["Revenue"],
        "q3": (acme["Short-term debt"] + acme["Long-term debt"]) / acme["Shareholders' equity"],
        "q4": 100 * (acme["Net income"] - acme_2022["Net income"]) / acme_2022["Net income"],
    }
    borealis = _table(root / "finance-borealis/material/borealis_fy2024.md")
    ratios_b = {
        "q1": borealis["Operating profit (EBIT)"] / borealis["Finance costs (interest)"],
        "q2": (borealis["Current assets"] - borealis["Inventories"])
        / borealis["Current liabilities"],
        "q3": 100
        * borealis["Profit for the year"]
        / ((borealis["Total equity, 30 June 2024"] + borealis["Total equity, 30 June 2023"]) / 2),
    }
    taskset = load_taskset("bundled")
    for name, expected in (("finance-acme", ratios), ("finance-borealis", ratios_b)):
        (task,) = taskset.select([name])
        numeric = {q.id: q for q in task.questions if q.grader == "numeric"}
        assert set(numeric) == set(expected), (name, sorted(numeric))
        for qid, value in expected.items():
            assert grade(numeric[qid], f"{value:.4f}"), (name, qid, value)


def test_eval_list_prints_one_task_per_line_name_first() -> None:
    done = subprocess.run(
        cli_argv("eval", "--list"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    names = [line.split("\t")[0] for line in done.stdout.splitlines()]
    assert names == [t.name for t in load_taskset("bundled").tasks]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["eval", "bundled"], "give --model"),
        (["eval", "bundled", "--model", "m", "--configs", "horde:1"], "2-12 members"),
        (["eval", "bundled", "--model", "m", "--configs", "swarm"], "not a configuration"),
        (["eval", "bundled", "--model", "m", "--tasks", "nope"], "no task named nope"),
        (["eval", "bundled", "--model", "m", "--repeat", "0"], "--repeat must be"),
        (["eval", "/no/such/set", "--list"], "is not a folder"),
    ],
)
def test_bad_eval_input_is_one_line_and_exit_2(
    tmp_path: Path, args: list[str], needle: str
) -> None:
    done = subprocess.run(
        cli_argv(*args, "--out", str(tmp_path / "out"))
        if "--list" not in args
        else cli_argv(*args),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert needle in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "out").exists()
