"""FinanceBench-style JSONL -> a task set of the answers kind (the data set is not bundled).

Each line is one question: `question`, `answer`, and `evidence`, a list of documents
(`{"evidence_text": ..., "doc_name": ..., "evidence_page_num": ...}` as FinanceBench
ships them, or plain strings); `financebench_id` (else `id`, else the line number) names
the task. The evidence texts become the task's material (one file per document, named
after it), the question its one question. An answer that is a number (money, percent,
plain) is graded `numeric` within 1%; any other is graded `casefold`, which only an exact
wording passes: edit that task's truth.toml to a `regex` for free-text answers.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from horde_tui.eval.taskset import TaskSetError, parse_number

PROMPT = (
    "Answer the question from the documents in this directory (excerpts of company "
    "filings). Quote the figures you use with file:line evidence, and compute any ratio "
    "yourself."
)
NUMERIC_ANSWER = re.compile(
    r"^\s*\(?-?\$?\s?[\d,]*\.?\d+\)?\s*(%|percent|million|billion)?\s*$", re.I
)
NUMERIC_TOLERANCE = 0.01


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "doc"


def _toml(value: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's, bar DEL, which TOML refuses raw)."""
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def _documents(record: dict[str, Any], where: str) -> list[tuple[str, str]]:
    evidence = record.get("evidence")
    if not isinstance(evidence, list) or not evidence:
        raise TaskSetError(f"{where}: `evidence` must be a non-empty list of documents")
    docs: list[tuple[str, str]] = []
    for n, item in enumerate(evidence, 1):
        if isinstance(item, str):
            name, text = f"document-{n}", item
        elif isinstance(item, dict):
            text = item.get("evidence_text") or item.get("text") or ""
            page = item.get("evidence_page_num")
            name = str(item.get("doc_name") or f"document-{n}")
            name += f"-page-{page}" if page is not None else f"-{n}"
        else:
            text = ""
        if not isinstance(text, str) or not text.strip():
            raise TaskSetError(f"{where}: evidence {n} has no text")
        filename = f"{_slug(name)}.txt"
        if any(filename == f for f, _ in docs):  # two excerpts of one page
            filename = f"{_slug(name)}-{n}.txt"
        docs.append((filename, text))
    return docs


def convert(source: Path, dest: Path) -> Path:
    """Write one task per JSONL line under `dest`; returns `dest` (a task-set folder)."""
    try:
        raw = source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskSetError(f"cannot read {source}: {exc}") from None
    records = []
    for n, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{source}:{n}"
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise TaskSetError(f"{where}: not a JSON object ({exc})") from None
        if not isinstance(record, dict):
            raise TaskSetError(f"{where}: not a JSON object")
        for key in ("question", "answer"):
            if not isinstance(record.get(key), str | int | float) or not str(record[key]).strip():
                raise TaskSetError(f"{where}: `{key}` is missing or empty")
        records.append((n, where, record))
    if not records:
        raise TaskSetError(f"{source}: no questions (one JSON object per line)")
    seen: set[str] = set()
    for n, where, record in records:
        name = _slug(str(record.get("financebench_id") or record.get("id") or f"q-{n}"))
        name = name if name not in seen else f"{name}-{n}"
        seen.add(name)
        task = dest / name
        (task / "material").mkdir(parents=True, exist_ok=True)
        for filename, text in _documents(record, where):
            (task / "material" / filename).write_text(text.rstrip() + "\n", encoding="utf-8")
        answer = str(record["answer"]).strip()
        numeric = NUMERIC_ANSWER.match(answer) is not None and parse_number(answer) is not None
        truth = [
            "[[question]]",
            'id = "q1"',
            f"question = {_toml(' '.join(str(record['question']).split()))}",
            f"answer = {_toml(answer)}",
            f'grader = "{"numeric" if numeric else "casefold"}"',
        ]
        if numeric:
            truth.append(f"tolerance = {NUMERIC_TOLERANCE}")
        (task / "truth.toml").write_text("\n".join(truth) + "\n", encoding="utf-8")
        (task / "prompt.md").write_text(PROMPT + "\n", encoding="utf-8")
    return dest
