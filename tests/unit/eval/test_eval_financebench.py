"""The FinanceBench-style JSONL adapter: questions become an answers task set."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from support.cli import cli_argv

from horde_tui.eval.financebench import convert
from horde_tui.eval.score import grade_answers
from horde_tui.eval.taskset import TaskSetError, load_taskset

RECORDS = [
    {
        "financebench_id": "financebench_id_03029",
        "company": "3M",
        "question": "What is the FY2018 capital expenditure amount (in USD millions) for 3M?",
        "answer": "$1577.00",
        "evidence": [
            {
                "evidence_text": "Purchases of property, plant and equipment (PP&E) (1,577)",
                "doc_name": "3M_2018_10K",
                "evidence_page_num": 59,
            }
        ],
    },
    {
        "id": "free-text",
        "question": "Is 3M a capital-intensive business?",
        "answer": "No, the company is managing its CAPEX efficiently.",
        "evidence": ["Capital expenditures were 4.7% of revenue.", "Revenue grew 3.5%."],
    },
]


def _jsonl(tmp_path: Path, records: list[object]) -> Path:
    path = tmp_path / "fb.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    return path


def test_each_line_becomes_a_task_with_its_evidence_as_material(tmp_path: Path) -> None:
    taskset = load_taskset(convert(_jsonl(tmp_path, RECORDS), tmp_path / "set"))
    by_name = {t.name: t for t in taskset.tasks}
    assert set(by_name) == {"financebench-id-03029", "free-text"}
    capex = by_name["financebench-id-03029"]
    assert capex.kind == "answers"
    (question,) = capex.questions
    assert (question.grader, question.tolerance, question.answer) == ("numeric", 0.01, "$1577.00")
    (doc,) = capex.material.iterdir()
    assert doc.name == "3m-2018-10k-page-59.txt" and "(1,577)" in doc.read_text()
    assert "q1:" in capex.run_prompt() and question.question in capex.run_prompt()
    grades = grade_answers(capex.questions, "q1: 1,580 (USD millions)")  # 0.2% off
    assert grades[0].correct
    free = by_name["free-text"]
    assert free.questions[0].grader == "casefold"
    assert sorted(p.name for p in free.material.iterdir()) == [
        "document-1.txt",
        "document-2.txt",
    ]


@pytest.mark.parametrize(
    ("lines", "rule"),
    [
        (["not json"], "not a JSON object"),
        ([{"question": "q", "evidence": ["x"]}], "`answer` is missing"),
        ([{"question": "q", "answer": "1", "evidence": []}], "`evidence` must be"),
        ([], "no questions"),
    ],
)
def test_bad_jsonl_is_one_line_naming_the_line(
    tmp_path: Path, lines: list[object], rule: str
) -> None:
    path = tmp_path / "fb.jsonl"
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines))
    with pytest.raises(TaskSetError, match=rule) as info:
        convert(path, tmp_path / "set")
    assert "\n" not in str(info.value)


def test_eval_list_reads_a_jsonl_file(tmp_path: Path) -> None:
    done = subprocess.run(
        cli_argv(
            "eval",
            "--list",
            "--from-jsonl",
            str(_jsonl(tmp_path, RECORDS)),
        ),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert [line.split("\t")[0] for line in done.stdout.splitlines()] == [
        "financebench-id-03029",
        "free-text",
    ]
