"""A task set: a folder of tasks, each with its material, its prompt and its ground truth.

    TASKSET/
      <task>/
        prompt.md      what the members are asked (the run's task)
        truth.toml     [[defect]] and/or [[question]] tables (below)
        material/      the directory the members work in (copied fresh for every run)

A defect is `{id, file, lines = [first, last], concern, words = [...]}`: where a planted
defect is (path relative to `material/`, inclusive 1-based lines), its concern family,
words of which at least one a finding about it will use, and optionally a `marker`: text
that must be on one of those lines (checked when the task is read). A question is `{id,
question, answer, grader, tolerance}`: grader `exact` (whitespace-trimmed equality),
`casefold` (case and runs of whitespace ignored), `numeric` (the first number of the
reply within `tolerance`, a relative error, of the answer's) or `regex` (the answer is a
pattern searched in the reply, case-insensitive).

Truth is read strictly: an unknown key or a bad range is an error naming the file, so a
typo in a truth file cannot silently score every run as a miss.
"""

from __future__ import annotations

import hashlib
import math
import re
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

GRADERS = ("exact", "casefold", "numeric", "regex")
BUNDLED = "bundled"
"""The TASKSET word that names the task set shipped with horde-tui."""
PROMPT_FILE = "prompt.md"
TRUTH_FILE = "truth.toml"
MATERIAL_DIR = "material"
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
_DEFECT_KEYS = frozenset({"id", "file", "lines", "concern", "words", "marker"})
_QUESTION_KEYS = frozenset({"id", "question", "answer", "grader", "tolerance"})


class TaskSetError(ValueError):
    """A task set that cannot be read; the message is one line naming the file and rule."""


@dataclass(frozen=True)
class Defect:
    """One planted defect: its place in the material and how findings name it."""

    id: str
    file: str
    first: int
    last: int
    concern: str
    words: tuple[str, ...]
    marker: str | None = None
    """Text that is on one of the defect's lines: the truth's own check that the lines
    still point at the planted code after anyone edits the material."""


@dataclass(frozen=True)
class Question:
    """One lookup question with its reference answer and how a reply is graded."""

    id: str
    question: str
    answer: str
    grader: str
    tolerance: float = 0.0


@dataclass(frozen=True)
class Task:
    """A task: where its files are, what is asked, and the complete truth."""

    name: str
    path: Path
    prompt: str
    defects: tuple[Defect, ...]
    questions: tuple[Question, ...]

    @property
    def material(self) -> Path:
        return self.path / MATERIAL_DIR

    @property
    def kind(self) -> str:
        """`defects`, `answers`, or `mixed` when the truth has both."""
        if self.defects and self.questions:
            return "mixed"
        return "defects" if self.defects else "answers"

    def run_prompt(self) -> str:
        """The task as a run is given it: the prompt, then for an answers task the
        questions and the one answer format the scorer reads (`Q-ID: reply` lines)."""
        if not self.questions:
            return self.prompt
        lines = [self.prompt.rstrip(), "", "Questions:"]
        lines += [f"{q.id}: {q.question}" for q in self.questions]
        lines += [
            "",
            "Propose one answer (the `solved` action) that gives each reply on its own "
            "line as `<question id>: <reply>`, e.g. `" + self.questions[0].id + ": 42`.",
        ]
        return "\n".join(lines)


@dataclass(frozen=True)
class TaskSet:
    """The tasks of one folder, in name order."""

    root: Path
    tasks: tuple[Task, ...]

    def select(self, names: list[str] | None) -> list[Task]:
        """The tasks named (in the order given), or every task; an unknown name is an
        error listing the known ones."""
        if not names:
            return list(self.tasks)
        by_name = {t.name: t for t in self.tasks}
        unknown = [n for n in names if n not in by_name]
        if unknown:
            raise TaskSetError(
                f"no task named {', '.join(unknown)} in {self.root}; known: "
                f"{', '.join(by_name) or 'none'}"
            )
        return [by_name[n] for n in names]


def bundled_root() -> Path:
    """The bundled task set's folder (package data, so it ships in the wheel)."""
    return Path(str(resources.files("horde_tui.eval") / "tasks"))


def resolve_root(taskset: str) -> Path:
    """`bundled` or a folder path, as the command line names a task set."""
    return bundled_root() if taskset == BUNDLED else Path(taskset).expanduser()


def load_taskset(taskset: str | Path) -> TaskSet:
    """Every task under a task-set folder (a subfolder holding `truth.toml`)."""
    root = resolve_root(taskset) if isinstance(taskset, str) else taskset
    if not root.is_dir():
        raise TaskSetError(
            f"task set {root} is not a folder; give a folder of tasks or `{BUNDLED}`"
        )
    tasks = [load_task(p) for p in sorted(root.iterdir()) if (p / TRUTH_FILE).is_file()]
    if not tasks:
        raise TaskSetError(
            f"task set {root} has no tasks (a task is a folder with {TRUTH_FILE}, "
            f"{PROMPT_FILE} and {MATERIAL_DIR}/)"
        )
    return TaskSet(root, tuple(tasks))


def _text(table: dict[str, Any], key: str, where: str) -> str:
    value = table.get(key)
    if not isinstance(value, str) or not value.strip():
        raise TaskSetError(f"{where}: `{key}` must be a non-empty string")
    return value


def _defect(table: dict[str, Any], where: str, material: Path) -> Defect:
    unknown = set(table) - _DEFECT_KEYS
    if unknown:
        raise TaskSetError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    lines = table.get("lines")
    if (
        not isinstance(lines, list)
        or len(lines) not in (1, 2)
        or not all(isinstance(n, int) and n >= 1 for n in lines)
        or lines[-1] < lines[0]
    ):
        raise TaskSetError(f"{where}: `lines` must be [first, last] (1-based, first <= last)")
    words = table.get("words")
    if not isinstance(words, list) or not words or not all(isinstance(w, str) and w for w in words):
        raise TaskSetError(f"{where}: `words` must be a non-empty list of strings")
    file = _text(table, "file", where).strip().removeprefix("./")
    if not (material / file).is_file():
        raise TaskSetError(f"{where}: `file` {file} is not a file in {material}")
    marker = table.get("marker")
    if marker is not None:
        marker = _text(table, "marker", where)
        text = (material / file).read_text(encoding="utf-8", errors="replace").splitlines()
        if not any(marker in line for line in text[lines[0] - 1 : lines[-1]]):
            raise TaskSetError(
                f"{where}: `marker` {marker!r} is not on lines {lines[0]}-{lines[-1]} of {file}"
            )
    return Defect(
        id=_text(table, "id", where),
        file=file,
        first=lines[0],
        last=lines[-1],
        concern=_text(table, "concern", where),
        words=tuple(w.casefold() for w in words),
        marker=marker,
    )


def _question(table: dict[str, Any], where: str) -> Question:
    unknown = set(table) - _QUESTION_KEYS
    if unknown:
        raise TaskSetError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    grader = table.get("grader", "exact")
    if grader not in GRADERS:
        raise TaskSetError(f"{where}: `grader` must be one of {', '.join(GRADERS)}")
    tolerance = table.get("tolerance", 0.0)
    if (
        not isinstance(tolerance, int | float)
        or isinstance(tolerance, bool)
        or not math.isfinite(tolerance)
        or tolerance < 0
    ):
        raise TaskSetError(f"{where}: `tolerance` must be a relative error >= 0, e.g. 0.01")
    answer = table.get("answer")
    if isinstance(answer, int | float) and not isinstance(answer, bool):
        answer = repr(answer)
    answer = _text({"answer": answer}, "answer", where)
    if grader == "numeric" and parse_number(answer) is None:
        raise TaskSetError(f"{where}: a numeric question's `answer` must be a number")
    if grader == "regex":
        try:
            re.compile(answer)
        except re.error as exc:
            raise TaskSetError(f"{where}: `answer` is not a valid regex: {exc}") from None
    ident = _text(table, "id", where)
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]{0,31}", ident):
        raise TaskSetError(f"{where}: question `id` must be a short word such as q1")
    return Question(ident, _text(table, "question", where), answer, grader, float(tolerance))


def load_task(path: Path) -> Task:
    """One task folder, validated: its name, prompt, material and truth."""
    if not _NAME.match(path.name):
        raise TaskSetError(
            f"{path}: a task's folder name must be lower-case letters, digits, - or _"
        )
    truth_path = path / TRUTH_FILE
    try:
        truth = tomllib.loads(truth_path.read_text(encoding="utf-8"))
        prompt = (path / PROMPT_FILE).read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise TaskSetError(f"{path}: cannot read {exc.filename}: {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise TaskSetError(f"{truth_path}: cannot parse: {exc}") from None
    if not prompt:
        raise TaskSetError(f"{path / PROMPT_FILE}: the prompt is empty")
    material = path / MATERIAL_DIR
    if not material.is_dir():
        raise TaskSetError(f"{path}: no {MATERIAL_DIR}/ folder (the members' working directory)")
    unknown = set(truth) - {"defect", "question"}
    if unknown:
        raise TaskSetError(
            f"{truth_path}: unknown table(s) {', '.join(sorted(unknown))}; "
            "use [[defect]] and [[question]]"
        )
    defects = tuple(
        _defect(t, f"{truth_path} defect {n}", material)
        for n, t in enumerate(truth.get("defect", []), 1)
    )
    questions = tuple(
        _question(t, f"{truth_path} question {n}")
        for n, t in enumerate(truth.get("question", []), 1)
    )
    if not defects and not questions:
        raise TaskSetError(f"{truth_path}: no [[defect]] or [[question]]: the truth is empty")
    for kind, ids in (("defect", [d.id for d in defects]), ("question", [q.id for q in questions])):
        if len(set(ids)) != len(ids):
            raise TaskSetError(f"{truth_path}: two {kind}s share an id")
    return Task(path.name, path, prompt, defects, questions)


_NUMBER = re.compile(r"\(?-?\$?\s?\d[\d,]*(?:\.\d+)?|\(?-?\$?\s?\.\d+")


def parse_number(text: str) -> float | None:
    """The first number in `text` (`1,234.5`, `$-3`, `(12)` as -12, `4.5%` as 4.5)."""
    m = _NUMBER.search(text)
    if m is None:
        return None
    raw = m.group(0)
    negative = raw.startswith("(") and text[m.end() :].lstrip().startswith(")")
    digits = raw.lstrip("(").replace("$", "").replace(",", "").replace(" ", "")
    try:
        value = float(digits)
    except ValueError:
        return None
    return -abs(value) if negative else value


def taskset_hash(root: Path) -> str:
    """sha256 over every file's relative path and bytes, in path order: what was scored."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        if "__pycache__" in rel or rel.endswith(".pyc"):
            continue
        digest.update(rel.encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()
