"""The one grammar of a cited path (`src/app.py:12-14`), and where cited files are.

The report checks that cited paths exist, the `horde` tool checks quoted evidence
against the cited lines, and the eval scores cited lines against planted defects: all
read citations here.

Path extraction is deliberately conservative. A token counts as a path when it has a
file extension or a line suffix (`src/app.py:12`, `lib/Makefile:3`); a bare name
(`app.py`) only with a well-known source extension. Not checked: anything inside a URL
or after a host name, rooted paths outside the working directory (`/api/users` is a
route, not a file), and templates with a date or placeholder slot
(`logs/gate-YYYY-MM-DD.jsonl`, `out/<id>.json`, `{name}.txt`, `member-N.log`). A path
that is not at the cited place but ends an existing file's path (`store/state.py` for
`horde_tui/store/state.py`) is accepted, as people cite that way.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.I)
_TOKEN = re.compile(r"[^\s`'\"()\[\],;|]+")
_LINE = re.compile(
    r"(?::(?P<first>\d+)(?:(?P<sep>[-–:])(?P<last>\d+))?|#L(?P<lfirst>\d+)(?:-L?(?P<llast>\d+))?)$"
)
"""A citation's line suffix: `:12`, `:12-14` (or `–`), `:12:5` (line 12, column 5),
`#L12` or `#L12-L14`."""
_SPACED_RANGE = re.compile(r"(:\d+)\s*[-–]\s*(?=\d)")
"""`app.py:12 - 14`, written as one token before the text is split."""
_EXT = re.compile(r"\.([A-Za-z][A-Za-z0-9]{0,7})$")
_HOSTLIKE = re.compile(r"^(?:localhost|(?:[\w-]+\.)+[A-Za-z]{2,})(?::\d+)?/")
_PLACEHOLDER = re.compile(
    r"<[^>]*>|\{[^}]*\}|[*?$%]|\.\.\."
    r"|(?:^|[-_./])(?:Y{2,4}|MM|DD|HH|N|X+|ID|NAME)(?=$|[-_./:])"
)
BARE_EXTENSIONS = frozenset(
    """py pyi js mjs cjs jsx ts tsx md txt json jsonl yaml yml toml cfg ini rs go c h cc
    cpp hpp java kt rb php sh bash sql html css tcss lock log csv xml swift""".split()
)
"""Extensions that make a bare name (no `/`) a file: `os.path` or `e.g` must not be one."""
SKIP_DIRS = frozenset({"node_modules", "__pycache__", "venv", ".venv", ".git", ".horde"})
INDEX_CAP = 50_000
"""Files indexed for suffix matches; past it, unresolved paths are not reported."""


@dataclass(frozen=True)
class PathCitation:
    token: str
    """As cited, line suffix included: what the warning quotes."""
    path: str
    """Relative to the working directory, line suffix removed: what is checked."""
    first: int | None = None
    """The first line cited (None: the file only)."""
    last: int | None = None
    """The last line cited (`first` for one line, or for a range that runs backwards)."""
    quote: str | None = None
    """The code quoted after a line citation, to be found on those lines (None: none)."""


def _clean(token: str) -> str:
    """Drop sentence punctuation, markdown emphasis and a pytest `::test` node suffix."""
    if token.startswith("*") and token.endswith("*"):
        token = token.strip("*")
    token = token.rstrip(".,:!?")
    return token.split("::", 1)[0]


def _lines(token: str) -> tuple[int | None, int | None]:
    """The lines a token's suffix cites: `app.py:24-3` is line 24, not a backwards range."""
    m = _LINE.search(token)
    if m is None:
        return None, None
    first = int(m.group("first") or m.group("lfirst"))
    last = m.group("llast") or (m.group("last") if m.group("sep") != ":" else None)
    return first, max(first, int(last)) if last else first


def _as_path(token: str, workdir: Path | None) -> str | None:
    """The workdir-relative path a token cites, or None when it is not a checkable path
    (a rooted path with no `workdir` to be relative to is none)."""
    m = _LINE.search(token)
    base = token[: m.start()] if m else token
    if not base or "\\" in base or base[0] in "~@" or _PLACEHOLDER.search(base):
        return None
    if _HOSTLIKE.match(base) or base.endswith("/"):
        return None
    ext = _EXT.search(base.rsplit("/", 1)[-1])
    if "/" not in base:
        named = ext and ext.start() > 0 and ext.group(1).lower() in BARE_EXTENSIONS
        return base if named else None
    if not ext and not m:
        return None
    if base.startswith("/"):
        root = str(workdir).rstrip("/") + "/"
        return base[len(root) :] if workdir and base.startswith(root) else None
    if base.startswith("../") or "/../" in base:
        if workdir is None:
            return None
        resolved = os.path.normpath(os.path.join(str(workdir), base))
        root = os.path.normpath(str(workdir))
        return os.path.relpath(resolved, root) if resolved.startswith(root + os.sep) else None
    return base.removeprefix("./")


def path_citations(text: str, workdir: Path | None = None) -> list[PathCitation]:
    """Path-like tokens of `text` worth checking, in order, each once, with the lines
    they cite and, after a line suffix, the code they quote. The one grammar of a cited
    path: the report checks the paths exist, the tool checks the quotes, the eval scores
    the lines against planted defects."""
    # URLs are blanked in place, so a quote (which may hold one) is read from `text`; the
    # spaced ranges are closed first (quotes are compared ignoring whitespace anyway).
    text = _SPACED_RANGE.sub(r"\1-", text)
    scan = _URL.sub(lambda m: " " * len(m[0]), text)
    found: dict[str, PathCitation] = {}
    for m in _TOKEN.finditer(scan):
        token = _clean(m[0])
        path = _as_path(token, workdir)
        if path and token not in found:
            first, last = _lines(token)
            quote = _quote(text, m.end(), m[0]) if first is not None else None
            found[token] = PathCitation(token, path, first, last, quote)
    return list(found.values())


_AFTER_COLON = re.compile(r"[ \t]*([^\n]+)")
_QUOTED = re.compile(r"[ \t]*(?:[-–—:][ \t]*)?`([^`\n]+)`")


def _quote(text: str, end: int, raw: str) -> str | None:
    """The code a citation quotes: a backticked span right after it (`app.py:3 `x = 1``,
    also after a dash or colon), or the rest of its line after a colon (`app.py:3: x = 1`)."""
    if text[end : end + 1] == "`":
        end += 1  # the citation was itself in backticks
    quoted = _QUOTED.match(text, end)
    if quoted:
        return quoted[1].strip() or None
    if raw.endswith(":") and not raw.endswith("::"):
        after = _AFTER_COLON.match(text, end)
        if after:
            return after[1].strip().strip("`").strip() or None
    return None


@dataclass
class PathIndex:
    """Answers "does this cited path exist?", falling back to suffix matches.

    The tree is walked lazily, once, only when a path is not where it is cited.
    """

    workdir: Path
    _files: list[str] | None = field(default=None, repr=False)
    _complete: bool = field(default=True, repr=False)

    def _walk(self) -> list[str]:
        if self._files is None:
            self._files = []
            for top, dirs, names in os.walk(self.workdir):
                dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
                rel = os.path.relpath(top, self.workdir)
                for name in sorted(names):
                    self._files.append(name if rel == "." else f"{rel}/{name}")
                if len(self._files) > INDEX_CAP:
                    self._complete = False
                    break
        return self._files

    def exists(self, path: str) -> bool:
        """True when present (or ends an indexed path); unsure counts as present."""
        if (self.workdir / path).exists():
            return True
        if self.ending(path):
            return True
        return not self._complete

    def ending(self, path: str) -> list[str]:
        """Indexed files that are `path` or end with it (people cite `store/state.py`
        for `horde_tui/store/state.py`)."""
        suffix = "/" + path
        return [f for f in self._walk() if f == path or f.endswith(suffix)]


CHUNK = 64 * 1024
"""Bytes read at a time while counting lines up to a citation."""


def cited_lines(file: Path, first: int, last: int) -> bytes | None:
    """Lines `first`..`last` (1-based) of `file` as bytes, None when the file is gone or
    shorter. Lines before the span are only counted, a chunk at a time, and nothing after
    it is read: a citation in a 10 MB file costs a pass of `count`, not a split of it."""
    want = last - first + 1
    tail = bytearray()  # the file from the start of line `first`, once reached
    line = 1  # the line the next byte read is on, until `first` is reached
    buf = bytearray(CHUNK)
    try:
        with open(file, "rb", buffering=0) as f:
            while (n := f.readinto(buf)) > 0:
                if line < first:
                    # Counted as what a removal takes away: `replace` finds the newlines
                    # with memchr, about twice as fast as `count`'s byte loop.
                    chunk = buf if n == len(buf) else buf[:n]
                    newlines = n - len(chunk.replace(b"\n", b""))
                    if line + newlines < first:
                        line += newlines
                        continue
                    at = -1
                    for _ in range(first - line):
                        at = buf.index(b"\n", at + 1, n)
                    line = first
                    tail += buf[at + 1 : n]
                else:
                    tail += buf[:n]
                if tail.count(b"\n") >= want:
                    break
    except OSError:
        return None
    if line < first:
        return None
    parts = bytes(tail).split(b"\n", want)
    if len(parts) < want or (len(parts) == want and not parts[-1]):
        return None  # fewer than `last` lines
    return b"\n".join(parts[:want])


def span_hash(lines: bytes) -> str:
    """What a recorded span keeps of its lines: enough to see that they changed."""
    return hashlib.sha256(lines).hexdigest()[:16]


def locate(workdir: Path, path: str, index: PathIndex | None = None) -> Path | None:
    """The file a cited path names: at that path, or the one file whose path it ends
    (people cite `store/state.py` for `horde_tui/store/state.py`); None if none or many."""
    direct = workdir / path
    if direct.is_file():
        return direct
    matches = (index or PathIndex(workdir)).ending(path)
    return workdir / matches[0] if len(matches) == 1 else None
