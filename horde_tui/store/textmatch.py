"""Duplicate and overlap detection for ideas, findings, facts, claims and resources.

Two members rarely describe the same bug in the same words, but they do name the same
file, symbol, URL, host, hash or bug id. So matching looks at those *hard identifiers*
first and at word overlap second:

- both texts name identifiers and share one -> a duplicate when the wording overlaps
  at least a little (`SHARED_ID_OVERLAP`);
- both name identifiers and share none -> different targets, never a duplicate;
- otherwise -> a duplicate only when the wording overlaps strongly (`TOKEN_OVERLAP`).

`MatchIndex` keeps postings so a new text is compared only with entries that share an
identifier or a rare word, not with every entry: the cost of a write does not grow with
the size of the ledger.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

SHARED_ID_OVERLAP = 0.2
TOKEN_OVERLAP = 0.6
SIMILAR_OVERLAP = 0.4
"""Below a duplicate but worth a warning (`claim` warns on a similar idea)."""

_URL = re.compile(r"\bhttps?://[^\s<>\"'`)\]]+", re.I)
_BUG = re.compile(
    r"\b(?:CVE-\d{4}-\d{4,}|GHSA(?:-[a-z0-9]{4}){3}|CWE-\d+|[A-Z][A-Z0-9]{1,9}-\d+)\b"
)
_HASH = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,64}\b", re.I)
_IP = re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?\b")
_PATH = re.compile(
    r"(?<![\w/.-])(?:\.{0,2}/)?(?:[\w.-]+/)*[\w-]+\.[A-Za-z][A-Za-z0-9]{0,7}\b(?::\d+)?"
)
_HOST = re.compile(
    r"\b(?:[a-z0-9-]+\.)+(?:com|org|net|io|dev|gov|edu|co|uk|de|ai|app|cloud|internal|local)\b",
    re.I,
)
_SYMBOL = re.compile(
    r"\b[A-Za-z_][A-Za-z0-9_]*(?:(?:\.|::)[A-Za-z_][A-Za-z0-9_]*)+\(?\)?"
    r"|\b[A-Za-z_][A-Za-z0-9_]*\(\)"
    r"|\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b"
    r"|\b[a-z]+(?:[A-Z][a-z0-9]+)+\b"
    r"|`[^`\s]{2,80}`"
)
_WORD = re.compile(r"[a-z0-9]+")
_FILE_EXT_HOSTS = {"py", "js", "ts", "md", "txt", "json", "rs", "go", "c", "h", "java", "rb"}

STOPWORDS = frozenset(
    """a an and are as at be been but by can could did do does for from has have how if in
    into is it its may might more most no not of on or our should so than that the their
    then there these this those to too was were what when where which who why will with
    would you your we they them he she also any all each other some such only just very
    via per about after before over under again further once here both same own out up down
    off below above between through during while because until against among
    check look find review audit investigate examine inspect whether""".split()
)
"""Common words, plus the verbs every idea starts with ("check X", "review Y")."""


def _stem(word: str) -> str:
    """A deliberately small stemmer: enough to match 'checks'/'checked'/'checking'."""
    for suffix in ("ingly", "edly", "ing", "ed", "es", "s", "ly"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def identifiers(text: str) -> frozenset[str]:
    """Hard identifiers named in `text`, normalised (lower case, no trailing slash/colon)."""
    found: set[str] = set()
    rest = text
    for rx in (_URL, _BUG, _IP):
        for m in rx.finditer(rest):
            found.add(m.group(0).rstrip(".,;:/").lower())
        rest = rx.sub(" ", rest)
    for m in _PATH.finditer(rest):
        token = m.group(0)
        base = token.split(":")[0].lstrip("./")
        if "/" in base or base.rsplit(".", 1)[-1].lower() in _FILE_EXT_HOSTS:
            found.add(base.lower())
    for m in _HOST.finditer(rest):
        found.add(m.group(0).lower())
    for m in _HASH.finditer(rest):
        # A hex-looking file name (`src/cafe1234.py`) is part of its path, not a commit
        # hash: as a separate identifier it would match every file of that name.
        digest = m.group(0).lower()
        if not any(digest in f for f in found):
            found.add(digest)
    for m in _SYMBOL.finditer(rest):
        sym = m.group(0).strip("`").rstrip("()").lower()
        if len(sym) >= 3 and sym not in found and not any(sym in f for f in found):
            found.add(sym)
    return frozenset(found)


def is_path(ident: str) -> bool:
    """A file path names a place where many different things can be wrong; a bug id, a
    URL, a hash, a host or a symbol names one thing."""
    if "://" in ident:
        return False
    return "/" in ident or ident.rsplit(".", 1)[-1] in _FILE_EXT_HOSTS


def tokens(text: str) -> frozenset[str]:
    """Content words of `text`: lower case, stemmed, stopwords and 1-2 letter words out."""
    return frozenset(
        _stem(w) for w in _WORD.findall(text.lower()) if len(w) > 2 and w not in STOPWORDS
    )


def overlap(a: frozenset[str], b: frozenset[str]) -> float:
    """Overlap coefficient: shared / size of the smaller set (0 when either is empty)."""
    if not a or not b:
        return 0.0
    return len(a & b) / min(len(a), len(b))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


@dataclass(frozen=True)
class TextKey:
    """What matching needs to know about one text, computed once."""

    ids: frozenset[str]
    words: frozenset[str]
    plain: frozenset[str] = frozenset()
    """The words outside the identifiers (`src/app.py` contributes `app` to `words` only)."""

    @classmethod
    def of(cls, text: str) -> TextKey:
        ids = identifiers(text)
        words = tokens(text)
        plain = words - frozenset().union(*(tokens(i) for i in ids)) if ids else words
        return cls(ids, words, plain)


def _soft(a: frozenset[str], b: frozenset[str]) -> float:
    word_score = jaccard(a, b) if a and b else 0.0
    return max(word_score, overlap(a, b) * 0.85)


def similarity(a: TextKey, b: TextKey) -> float:
    """0..1: how likely `a` and `b` describe the same thing (see the module docstring).

    When the only identifiers both name are file paths, the wording is compared without
    the paths' own words: a shared path must not also count as shared wording, or two
    different bugs in one file would look alike twice over (see `is_path`).
    """
    if a.ids and b.ids:
        shared = a.ids & b.ids
        if shared:
            only_paths = all(is_path(i) for i in shared) and a.plain and b.plain
            soft = _soft(a.plain, b.plain) if only_paths else _soft(a.words, b.words)
            return 1.0 if soft >= SHARED_ID_OVERLAP else soft
        return min(_soft(a.words, b.words), SIMILAR_OVERLAP - 0.01)
    return _soft(a.words, b.words)


def is_duplicate(a: TextKey, b: TextKey) -> bool:
    if a.ids and b.ids and a.ids & b.ids:
        return similarity(a, b) >= SHARED_ID_OVERLAP
    return similarity(a, b) >= TOKEN_OVERLAP


@dataclass
class MatchIndex:
    """Postings from identifiers and words to entry keys, for candidate lookup.

    Words that occur in more than `common_fraction` of entries (and at least
    `common_floor` of them) carry little signal and are skipped for candidate
    generation; the exact score still uses every word.
    """

    common_fraction: float = 0.05
    common_floor: int = 40
    max_candidates: int = 32
    keys: dict[str, TextKey] = field(default_factory=dict)
    by_id: dict[str, set[str]] = field(default_factory=dict)
    by_word: dict[str, set[str]] = field(default_factory=dict)

    def add(self, entry: str, key: TextKey) -> None:
        self.remove(entry)
        self.keys[entry] = key
        for ident in key.ids:
            self.by_id.setdefault(ident, set()).add(entry)
        for word in key.words:
            self.by_word.setdefault(word, set()).add(entry)

    def remove(self, entry: str) -> None:
        old = self.keys.pop(entry, None)
        if old is None:
            return
        for ident in old.ids:
            self.by_id.get(ident, set()).discard(entry)
        for word in old.words:
            self.by_word.get(word, set()).discard(entry)

    def candidates(self, key: TextKey) -> list[str]:
        """Entries worth scoring against `key`: shared identifiers, then shared rare words."""
        found: set[str] = set()
        for ident in key.ids:
            found |= self.by_id.get(ident, set())
        limit = max(self.common_floor, int(len(self.keys) * self.common_fraction))
        counts: Counter[str] = Counter()
        for word in key.words:
            posting = self.by_word.get(word)
            if posting and len(posting) <= limit:
                counts.update(posting)
        found.update(e for e, _ in counts.most_common(self.max_candidates))
        return sorted(found)

    def best(self, key: TextKey, allowed: Iterable[str] | None = None) -> tuple[str, float] | None:
        """The most similar entry (and its score), optionally restricted to `allowed`."""
        allow = None if allowed is None else set(allowed)
        best: tuple[str, float] | None = None
        for entry in self.candidates(key):
            if allow is not None and entry not in allow:
                continue
            score = similarity(key, self.keys[entry])
            if best is None or score > best[1]:
                best = (entry, score)
        return best

    def duplicates(self, key: TextKey, allowed: Iterable[str] | None = None) -> list[str]:
        allow = None if allowed is None else set(allowed)
        return [
            e
            for e in self.candidates(key)
            if (allow is None or e in allow) and is_duplicate(key, self.keys[e])
        ]
