"""Lessons across runs: the recurring critiques of the post-mortems, checked and ranked.

`horde-tui lessons` (`commands/lessons.py`) gives every run's POSTMORTEM.md to a model
and asks for the critiques of how members coordinated, each with the runs that raise it
and a quote from each. The model's word is not taken for the quotes: each is looked for
in the POSTMORTEM.md it is attributed to (`check_quote`), a quote that is not there is
marked and not counted, and a lesson is ranked by the runs whose quotes were found
(`rank`), so a made-up critique cannot climb the list. `run --lessons` gives members the
top ones (`top_lessons`, read back from LESSONS.md, so a person's edit of the file counts).

Pure but for reading the post-mortems: no gateway, no model here.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from horde_tui.store.paths import HordePaths
from horde_tui.store.runs import run_ids, swarm_ids

LESSONS_FILE = "LESSONS.md"
"""In the horde directory: what `horde-tui lessons` writes and `run --lessons` reads."""
TOP_LESSONS = 5
"""How many lessons a run's members get in their brief, most raised first."""
MIN_QUOTE_WORDS = 4
"""A quote shorter than this proves nothing (a word or two is in any post-mortem)."""
LESSON_CAP = 300
"""Characters of one lesson a brief takes: a lesson is a line of advice, and a model's
text that reaches every member's system prompt is kept short."""
POSTMORTEM_CAP = 16_000
"""Characters of one post-mortem the model is given; quotes are checked against all of it."""
NOT_WRITTEN = "Not written: the helper ended with"
"""The first words of a post-mortem the helper never wrote (`finalize.helper_document`)."""


class LessonsError(ValueError):
    """The model's answer is not the lessons asked for; one line says why."""


@dataclass(frozen=True)
class PostMortem:
    """One run's POSTMORTEM.md as read."""

    run: str
    path: Path
    text: str


@dataclass(frozen=True)
class Quote:
    run: str
    text: str
    problem: str = ""
    """Why it does not count (not found, too short, an unknown run); empty: checked."""


@dataclass
class Lesson:
    text: str
    quotes: list[Quote] = field(default_factory=list)

    @property
    def runs(self) -> list[str]:
        """The runs that raise it: those with a checked quote, in order of citation."""
        return list(dict.fromkeys(q.run for q in self.quotes if not q.problem))

    @property
    def found_quotes(self) -> int:
        return sum(not q.problem for q in self.quotes)


def postmortem_paths(horde_dir: Path) -> list[tuple[str, Path]]:
    """(run, POSTMORTEM.md path) of every run of the horde directory, a swarm's hordes'
    runs included, oldest first; the file may be missing."""
    paths = HordePaths(horde_dir)
    found = [(run, paths.run_dir(run) / "POSTMORTEM.md") for run in run_ids(horde_dir)]
    for swarm in swarm_ids(horde_dir):
        for horde in sorted((paths.swarms / swarm).glob("h[0-9]*")):
            found += [
                (run, HordePaths(horde).run_dir(run) / "POSTMORTEM.md") for run in run_ids(horde)
            ]
    return found


def read_postmortems(horde_dir: Path) -> tuple[list[PostMortem], list[tuple[str, str]]]:
    """The post-mortems worth reading, and (run, why) for each run left out."""
    kept: list[PostMortem] = []
    skipped: list[tuple[str, str]] = []
    for run, path in postmortem_paths(horde_dir):
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            skipped.append((run, "no POSTMORTEM.md"))
            continue
        if not text.strip():
            skipped.append((run, "POSTMORTEM.md is empty"))
        elif NOT_WRITTEN in text[:200]:
            skipped.append((run, "its post-mortem helper wrote none"))
        else:
            kept.append(PostMortem(run, path, text))
    return kept, skipped


LESSONS_BRIEF = """\
You read the post-mortems of several runs of a horde: agents that worked one task in
parallel, coordinating only through shared ledgers (ideas, claims, findings, reviews,
messages). Find the critiques of HOW THE MEMBERS COORDINATED that recur across runs
(duplicated work, stalls, unreviewed claims, rule refusals, wasted turns, and so on), not
critiques of the task's subject. For each lesson give one imperative line a member could
follow next time, and for each run that raises it one quote copied word for word from
that run's post-mortem (a whole phrase, at least {words} words). Put the lessons raised by
the most runs first. Answer with JSON only, in this form:
{{"lessons": [{{"lesson": "...", "quotes": [{{"run": "<run id>", "quote": "..."}}]}}]}}"""


def messages(postmortems: list[PostMortem]) -> list[dict[str, str]]:
    """The model's conversation: the brief, then every post-mortem under its run id."""
    parts = []
    for pm in postmortems:
        text = pm.text.strip()
        if len(text) > POSTMORTEM_CAP:
            text = text[:POSTMORTEM_CAP] + f"\n[... cut: {len(text) - POSTMORTEM_CAP} characters]"
        parts.append(f"=== post-mortem of run {pm.run} ===\n{text}")
    return [
        {"role": "system", "content": LESSONS_BRIEF.format(words=MIN_QUOTE_WORDS)},
        {"role": "user", "content": "\n\n".join(parts)},
    ]


def _words(text: str) -> str:
    return " ".join(text.split())


def check_quote(quote: str, postmortem: str) -> str:
    """Why `quote` does not count as coming from `postmortem` ("" when it does): it must
    appear there word for word (line breaks and runs of spaces aside: the file is
    wrapped markdown) and be at least `MIN_QUOTE_WORDS` words long."""
    words = _words(quote.strip().strip("\"'“”"))
    if len(words.split()) < MIN_QUOTE_WORDS:
        return f"shorter than {MIN_QUOTE_WORDS} words"
    if words not in _words(postmortem):
        return "not found in that run's POSTMORTEM.md"
    return ""


def _json_object(answer: str) -> Any:
    """The JSON object in the model's answer (a fenced block or prose around it allowed)."""
    start, end = answer.find("{"), answer.rfind("}")
    if start < 0 or end < start:
        raise LessonsError("the model's answer holds no JSON object")
    try:
        return json.loads(answer[start : end + 1])
    except ValueError as exc:
        raise LessonsError(f"the model's answer is not valid JSON ({exc})") from None


def parse_answer(answer: str, postmortems: list[PostMortem]) -> list[Lesson]:
    """The model's lessons with every quote checked against its run's post-mortem."""
    data = _json_object(answer)
    items = data.get("lessons") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise LessonsError('the model\'s answer has no "lessons" list')
    texts = {pm.run: pm.text for pm in postmortems}
    lessons: list[Lesson] = []
    for item in items:
        if not isinstance(item, dict) or not _words(str(item.get("lesson") or "")):
            continue
        lesson = Lesson(_words(str(item["lesson"])))
        quotes = item.get("quotes")
        for quote in quotes if isinstance(quotes, list) else []:
            if not isinstance(quote, dict):
                continue
            run, text = str(quote.get("run") or "").strip(), str(quote.get("quote") or "")
            problem = (
                check_quote(text, texts[run]) if run in texts else "no post-mortem of that run"
            )
            lesson.quotes.append(Quote(run, _words(text), problem))
        lessons.append(lesson)
    return lessons


def rank(lessons: list[Lesson]) -> tuple[list[Lesson], list[Lesson]]:
    """(kept, dropped): the lessons some run's checked quote supports, by how many runs
    raise them (then checked quotes, then the model's order), and the rest."""
    dropped = [lesson for lesson in lessons if not lesson.runs]
    found = [(n, lesson) for n, lesson in enumerate(lessons) if lesson.runs]
    found.sort(key=lambda item: (-len(item[1].runs), -item[1].found_quotes, item[0]))
    return [lesson for _, lesson in found], dropped


HEADING = re.compile(r"^## (\d+)\. (?P<text>.+) (?P<count>\(raised in \d+ of \d+ runs?\))$")


def render(
    kept: list[Lesson], dropped: list[Lesson], postmortems: list[PostMortem], model: str, when: str
) -> str:
    """LESSONS.md: each kept lesson under a numbered heading (`HEADING`, which
    `top_lessons` reads back) with its quotes, marked ones included; then the dropped."""
    total = len(postmortems)
    lines = [
        "# Lessons across runs",
        "",
        f"Distilled from the post-mortems of {total} run{'s' if total != 1 else ''} "
        f"({', '.join(pm.run for pm in postmortems)}) by {model or 'the model'} on {when}. "
        "Ranked by how many runs raise each lesson. Every quote was looked for, word for "
        "word (line breaks aside), in the POSTMORTEM.md of the run it is attributed to; "
        "one that was not found is marked `[check: ...]` and does not count.",
        "",
    ]
    for n, lesson in enumerate(kept, 1):
        runs = len(lesson.runs)
        lines += [
            f"## {n}. {lesson.text} (raised in {runs} of {total} run{'s' if total != 1 else ''})",
            "",
        ]
        lines += [_quote_line(q) for q in lesson.quotes]
        lines.append("")
    if not kept:
        lines += ["_No lesson is supported by a quote found in the post-mortems._", ""]
    if dropped:
        lines += ["## Not kept", "", "No quote of these was found in the post-mortem it names:", ""]
        for lesson in dropped:
            lines.append(f"- {lesson.text}")
            lines += [f"  {_quote_line(q)}" for q in lesson.quotes]
        lines.append("")
    return "\n".join(lines)


def _quote_line(quote: Quote) -> str:
    mark = f" [check: {quote.problem}]" if quote.problem else ""
    return f'- run {quote.run or "(none named)"}: "{quote.text}"{mark}'


def top_lessons(text: str, count: int = TOP_LESSONS) -> list[str]:
    """The first `count` lessons of a LESSONS.md, each as `text (raised in N of M runs)`
    (`LESSON_CAP` characters of its text at the most)."""
    found = []
    for line in text.splitlines():
        m = HEADING.match(line.strip())
        if m:
            text = m["text"] if len(m["text"]) <= LESSON_CAP else m["text"][: LESSON_CAP - 1] + "…"
            found.append(f"{text} {m['count']}")
    return found[:count]


def lessons_path(horde_dir: Path) -> Path:
    """The project's LESSONS.md: a swarm's horde (`.horde/swarms/<s>/hN`) reads its
    project's, in the `.horde/` that holds `swarms/`."""
    return HordePaths(horde_dir).top / LESSONS_FILE


def read_top(horde_dir: Path) -> tuple[list[str], str | None]:
    """The top lessons a run in `horde_dir` gives its members and the sha256 of the
    LESSONS.md they were read from (one read: the hash is of what was given);
    ([], None) when there is no file."""
    try:
        data = lessons_path(horde_dir).read_bytes()
    except OSError:
        return [], None
    return top_lessons(data.decode("utf-8", errors="replace")), hashlib.sha256(data).hexdigest()


def missing(horde_dir: Path) -> str | None:
    """Why a run in `horde_dir` would have no lesson to give (`path, which ...`), or None."""
    path = lessons_path(horde_dir)
    if read_top(horde_dir)[0]:
        return None
    return f"{path}, which {'holds no ranked lesson' if path.is_file() else 'does not exist'}"


def report_line(run_dir: Path) -> str:
    """REPORT.md's line on the lessons the run's members were given, as its MANIFEST.json
    recorded them; "" when they were given none."""
    try:
        manifest = json.loads((run_dir / "MANIFEST.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    given = manifest.get("lessons") if isinstance(manifest, dict) else None
    if not isinstance(given, int) or isinstance(given, bool) or given <= 0:
        return ""
    digest = (manifest.get("hashes") or {}).get(LESSONS_FILE) or "unknown"
    return (
        f"Lessons: the members' brief held the top {given} lesson{'s' if given != 1 else ''} "
        f"of .horde/{LESSONS_FILE} (sha256 `{digest}`), from earlier runs' post-mortems"
    )
