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

import functools
import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

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
_TLDS = "com|org|net|io|dev|gov|edu|co|uk|de|ai|app|cloud|internal|local"
_HOST = re.compile(rf"\b(?:[a-z0-9-]+\.)+(?:{_TLDS})\b", re.I)
_HOST_END = re.compile(rf"\.(?:{_TLDS})\b", re.I)
"""What every `_HOST` match ends with: a search for it is cheap where `_HOST`'s own scan
(a dotted run tried at every word) is not, and most dotted texts name files, not hosts."""
_HEX_RUN = re.compile(r"[0-9a-f]{7}", re.I)
"""What every `_HASH` match holds (seven hex digits in a row): `_HASH` tries its two
lookaheads at every position of the text, so it runs only where this finds one."""
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


@functools.lru_cache(maxsize=1 << 16)
def _stem(word: str) -> str:
    """A deliberately small stemmer: enough to match 'checks'/'checked'/'checking'.

    Cached: every process folds every text of the ledger, and words repeat.
    """
    for suffix in ("ingly", "edly", "ing", "ed", "es", "s", "ly"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


_PLAIN_WORD = re.compile(r"[a-z]+[,.;:!?]?")
"""A lower-case word, maybe ending a clause: no identifier pattern can match in it."""


def _identifier_chunks(text: str) -> str:
    """`text` without its plain words.

    No identifier pattern spans whitespace, and each sees a whitespace boundary the same
    as a space, so scanning what is left finds exactly what scanning `text` would; prose
    is mostly plain words, and every process folds every text of the ledger.
    """
    return " ".join(chunk for chunk in text.split() if not _PLAIN_WORD.fullmatch(chunk))


def identifiers(text: str) -> frozenset[str]:
    """Hard identifiers named in `text`, normalised (lower case, no trailing slash/colon).

    A pattern is only run when `text` has the characters it needs (an upper-case letter
    for a bug id, a dot for a path or host): most of them find nothing in most texts.
    """
    found: set[str] = set()
    rest = _identifier_chunks(text)
    if not rest:
        return frozenset()
    upper = rest != rest.lower()
    first = (
        (_URL, "://" in rest),
        (_BUG, upper and "-" in rest),
        (_IP, rest.count(".") >= 3),
    )
    for rx, possible in first:
        if possible:
            for m in rx.finditer(rest):
                found.add(m.group(0).rstrip(".,;:/").lower())
            rest = rx.sub(" ", rest)
    dotted = "." in rest
    for m in _PATH.finditer(rest) if dotted else ():
        token = m.group(0)
        base = token.split(":")[0].lstrip("./")
        if "/" in base or base.rsplit(".", 1)[-1].lower() in _FILE_EXT_HOSTS:
            found.add(base.lower())
    for m in _HOST.finditer(rest) if dotted and _HOST_END.search(rest) else ():
        found.add(m.group(0).lower())
    for m in _HASH.finditer(rest) if _HEX_RUN.search(rest) else ():
        # A hex-looking file name (`src/cafe1234.py`) is part of its path, not a commit
        # hash: as a separate identifier it would match every file of that name.
        digest = m.group(0).lower()
        if not any(digest in f for f in found):
            found.add(digest)
    if not (upper or any(ch in rest for ch in ".:(_`")):
        return frozenset(found)
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
        return _text_key(text)


@functools.lru_cache(maxsize=1024)
def _text_key(text: str) -> TextKey:
    """Cached: a writer keys its text to decide, then again when it folds its own record."""
    ids = identifiers(text)
    words = tokens(text)
    plain = words - frozenset().union(*(tokens(i) for i in ids)) if ids else words
    return TextKey(ids, words, plain)


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


class MatchIndex:
    """Postings from identifiers and words to entry keys, for candidate lookup.

    Words that occur in more than `common_fraction` of entries (and at least
    `common_floor` of them) carry little signal and are skipped for candidate
    generation; the exact score still uses every word.

    Texts added with `add_text` are keyed when the index is first asked something, not
    when folded: every process folds every record, and most never ask (a `post` asks no
    index; the supervisor rarely does). A checkpoint keeps the keys packed in one string
    (cheap to load), unpacked when a process first asks.
    """

    def __init__(
        self, common_fraction: float = 0.05, common_floor: int = 40, max_candidates: int = 32
    ) -> None:
        self.common_fraction = common_fraction
        self.common_floor = common_floor
        self.max_candidates = max_candidates
        self._keys: dict[str, TextKey] = {}
        self.by_id: dict[str, set[str]] = {}
        self.by_word: dict[str, set[str]] = {}
        self._pending: dict[str, str] = {}
        """Entry -> its text, for entries added as text and not keyed yet."""
        self._packed = ""
        """Keys from a checkpoint, not unpacked yet (JSON: entry -> [ids, words, plain])."""
        self._dropped: set[str] = set()
        """Entries removed while still packed."""
        self._asked = False

    @property
    def keys(self) -> dict[str, TextKey]:
        """Entry -> key, every pending text keyed first."""
        self._key_pending()
        return self._keys

    def add(self, entry: str, key: TextKey) -> None:
        self.remove(entry)
        self._post(entry, key)

    def add_text(self, entry: str, text: str) -> None:
        """Add `entry`, keyed from `text` when the index is next asked something."""
        self.remove(entry)
        self._pending[entry] = text

    def remove(self, entry: str) -> None:
        self._pending.pop(entry, None)
        if self._packed:
            self._dropped.add(entry)  # still packed: dropped when unpacked
        old = self._keys.pop(entry, None)
        if old is None:
            return
        for ident in old.ids:
            self.by_id.get(ident, set()).discard(entry)
        for word in old.words:
            self.by_word.get(word, set()).discard(entry)

    def prepare(self) -> None:
        """Key everything now, and keep it keyed ahead of the lock from here on (`warm`)."""
        self._key_pending()

    def warm(self) -> None:
        """Key what is pending if this process asked the index before (work done ahead of
        the lock; an index it never asks costs nothing)."""
        if self._asked:
            self._key_pending()

    def _key_pending(self) -> None:
        self._asked = True
        self._key_all()

    def _key_all(self) -> None:
        self._unpack()
        pending, self._pending = self._pending, {}
        for entry, text in pending.items():
            self._post(entry, TextKey.of(text))

    def _unpack(self) -> None:
        if not self._packed:
            return
        packed, self._packed = json.loads(self._packed), ""
        dropped, self._dropped = self._dropped, set()
        for entry, (ids, words, plain) in packed.items():
            if entry in dropped or entry in self._keys or entry in self._pending:
                continue  # removed, or added again since the checkpoint
            self._post(entry, TextKey(frozenset(ids), frozenset(words), frozenset(plain)))

    def _post(self, entry: str, key: TextKey) -> None:
        self._keys[entry] = key
        for ident in key.ids:
            self.by_id.setdefault(ident, set()).add(entry)
        for word in key.words:
            self.by_word.setdefault(word, set()).add(entry)

    def __eq__(self, other: object) -> bool:
        """Same entries with the same keys (the postings follow from them)."""
        if not isinstance(other, MatchIndex):
            return NotImplemented
        config = (self.common_fraction, self.common_floor, self.max_candidates)
        theirs = (other.common_fraction, other.common_floor, other.max_candidates)
        return config == theirs and self.keys == other.keys

    __hash__ = None  # type: ignore[assignment]

    def __getstate__(self) -> dict[str, object]:
        # Whoever saves keys what is pending (after a write, outside the lock), so the
        # process that loads the checkpoint only unpacks.
        self._key_all()
        packed = {
            e: [sorted(k.ids), sorted(k.words), sorted(k.plain)] for e, k in self._keys.items()
        }
        return {
            "config": (self.common_fraction, self.common_floor, self.max_candidates),
            "packed": json.dumps(packed, ensure_ascii=False, separators=(",", ":")),
        }

    def __setstate__(self, saved: dict[str, Any]) -> None:
        self.__init__(*saved["config"])  # type: ignore[misc]
        self._packed = saved["packed"]

    def candidates(self, key: TextKey) -> list[str]:
        """Entries worth scoring against `key`: shared identifiers, then shared rare words."""
        self._key_pending()
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
