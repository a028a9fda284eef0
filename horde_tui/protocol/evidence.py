"""Evidence checked by code: a quote must be on the lines it cites.

Evidence that cites `path:line` or `path:start-end` and quotes code after it (in
backticks, or after a colon) is checked when it is written: the quoted text must be on
those lines of the file in the working directory, ignoring whitespace. Otherwise the
write is refused with where the text really is (`quote not at src/api/users.py:42;
found at :47`) or that it is nowhere. A model's word about its own evidence is what the
peers trust; this is the part a program can check.

Every cited span of an existing file (quoted or not) is recorded with a hash of its
lines, so finalize can say which evidence went `stale` (the file changed under it) or
`missing` (the file is gone). Command output and URLs are not paths here and are not
checked; a cited path that is not in the working directory is refused only when it
quotes (there is nothing to check the quote against); otherwise the report warns.
"""

from __future__ import annotations

import bisect
import re
from pathlib import Path
from typing import Any

from horde_tui.store.pathcite import (
    PathCitation,
    PathIndex,
    cited_lines,
    locate,
    path_citations,
    span_hash,
)
from horde_tui.store.store import ActionRefused

MAX_CHECKED_BYTES = 64 * 1024 * 1024
"""Files larger than this are cited but not read (a quote in them is not checked)."""
_SPACE = re.compile(rb"\s+")


def checked_spans(text: str, workdir: Path) -> list[dict[str, Any]]:
    """The spans `text` cites, each with its lines' hash, once every quote has been found
    on its lines; raise `ActionRefused` naming the first quote that is not."""
    spans: list[dict[str, Any]] = []
    index = PathIndex(workdir)
    for cite in path_citations(text, workdir):
        if cite.first is None or cite.last is None:
            continue
        state, file, lines = cite_state(cite, workdir, index)
        if state == "absent" and cite.quote:
            raise ActionRefused(
                f"refused: evidence quotes {cite.token}, but {cite.path} is not a file in "
                f"the working directory (evidence rule: a quote is checked against the "
                "cited file); cite the file by its path in the working directory"
            )
        if state == "short" and cite.quote:
            raise ActionRefused(
                f"refused: evidence quotes {cite.token}, but {cite.path} has fewer than "
                f"{cite.last} lines (evidence rule: a quote is checked against the cited "
                "lines); cite the line the quote is on"
            )
        if state == "misquoted" and file is not None:
            raise ActionRefused(_misquoted(cite, file))
        if state != "ok" or file is None or lines is None:
            continue
        rel = file.relative_to(workdir).as_posix()
        spans.append(
            {"path": rel, "first": cite.first, "last": cite.last, "sha": span_hash(lines)}
            | ({"quoted": True} if cite.quote else {})
        )
    return spans


def cite_state(
    cite: PathCitation, workdir: Path, index: PathIndex
) -> tuple[str, Path | None, bytes | None]:
    """How a line citation stands in the working directory, with its file and lines when
    read: `ok`, `absent` (no such file), `unread` (too large, or unreadable), `short` (the
    file has fewer lines than cited) or `misquoted` (the code it quotes is not on them).
    One check for finding evidence when it is written and generated documents at finalize."""
    assert cite.first is not None and cite.last is not None
    file = locate(workdir, cite.path, index)
    if file is None:
        return "absent", None, None
    try:
        if file.stat().st_size > MAX_CHECKED_BYTES:
            return "unread", file, None
    except OSError:
        return "unread", file, None
    lines = cited_lines(file, cite.first, cite.last)
    if lines is None:
        return "short", file, None
    if cite.quote and _squeeze(cite.quote.encode()) not in _squeeze(lines):
        return "misquoted", file, lines
    return "ok", file, lines


def span_state(span: dict[str, Any], workdir: Path) -> str:
    """`ok`, `stale` (the cited lines changed) or `missing` (the file is gone or shorter)."""
    lines = cited_lines(workdir / span["path"], int(span["first"]), int(span["last"]))
    if lines is None:
        return "missing"
    return "ok" if span_hash(lines) == span.get("sha") else "stale"


def _squeeze(data: bytes) -> bytes:
    return _SPACE.sub(b"", data)


def _misquoted(cite: PathCitation, file: Path) -> str:
    """The refusal for a quote not on its lines: where it is instead, or that it is
    nowhere in the file."""
    assert cite.quote is not None
    found = _find(file.read_bytes(), _squeeze(cite.quote.encode()))
    where = (
        f"found at :{found}; cite {cite.path}:{found}"
        if found
        else f"it is nowhere in {cite.path}; quote the file as it is"
    )
    return (
        f"refused: quote not at {cite.token}; {where} (evidence rule: quoted code must be on "
        "the lines cited)"
    )


def _find(data: bytes, quote: bytes) -> int | None:
    """The first line on which `quote` (whitespace removed) starts, or None."""
    squeezed = bytearray()
    starts: list[int] = []  # squeezed offset where each line starts
    for line in data.split(b"\n"):
        starts.append(len(squeezed))
        squeezed += _squeeze(line)
    at = bytes(squeezed).find(quote)
    if at < 0:
        return None
    return bisect.bisect_right(starts, at)  # the last line starting at or before `at`


def span_label(span: dict[str, Any]) -> str:
    """`path:first` or `path:first-last`, as a person would cite it."""
    first, last = span["first"], span["last"]
    return f"{span['path']}:{first}" + (f"-{last}" if last != first else "")


def changed_spans(spans: list[dict[str, Any]], workdir: Path) -> dict[str, str]:
    """The spans whose lines are no longer as filed: label -> `stale` or `missing`."""
    out: dict[str, str] = {}
    for span in spans:
        state = span_state(span, workdir)
        if state != "ok":
            out[span_label(span)] = state
    return out
