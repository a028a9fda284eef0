"""Property tests: text matching (dedup) and the `horde` tool's parameter schema."""

from __future__ import annotations

import json
import types
import typing
from typing import Any, Literal, Union

import annotated_types
import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from horde_tui.protocol.dispatch import parse_params
from horde_tui.protocol.params import ACTION_MODELS
from horde_tui.protocol.schema import NUMBER_FIELDS, tool_schema
from horde_tui.store import textmatch as tm
from horde_tui.store.textmatch import (
    SIMILAR_OVERLAP,
    MatchIndex,
    TextKey,
    identifiers,
    is_duplicate,
    similarity,
    tokens,
)

SETTINGS = settings(max_examples=60, deadline=None)

# Plain lower-case words: they carry no hard identifier, so a test controls which a text has.
WORDS = st.from_regex(r"[a-z]{1,10}", fullmatch=True)
PROSE = st.lists(WORDS, min_size=0, max_size=12).map(" ".join)
EXTS = ["py", "js", "ts", "md", "json", "rs", "go", "rb", "java", "txt"]
PATHS = st.builds(
    lambda dirs, stem, ext: "/".join([*dirs, f"{stem}.{ext}"]),
    st.lists(st.from_regex(r"[a-z]{1,6}", fullmatch=True), min_size=1, max_size=3),
    st.one_of(
        st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True),
        st.from_regex(r"[a-f][0-9a-f]{6,9}", fullmatch=True),  # looks like a commit hash
    ),
    st.sampled_from(EXTS),
)


# -- similarity and duplicates --------------------------------------------------------


@SETTINGS
@given(st.text(max_size=200), st.text(max_size=200))
def test_similarity_is_symmetric_and_bounded(a: str, b: str) -> None:
    ka, kb = TextKey.of(a), TextKey.of(b)
    assert similarity(ka, kb) == similarity(kb, ka)
    assert 0.0 <= similarity(ka, kb) <= 1.0
    assert is_duplicate(ka, kb) == is_duplicate(kb, ka)


@SETTINGS
@given(st.one_of(st.text(max_size=200), PROSE, st.builds("{} {}".format, PROSE, PATHS)))
def test_a_text_with_a_content_word_duplicates_itself(text: str) -> None:
    key = TextKey.of(text)
    if key.words:
        assert is_duplicate(key, TextKey.of(text))
        assert similarity(key, key) == 1.0


@SETTINGS
@given(PROSE, PROSE, PATHS, PATHS)
def test_texts_naming_different_paths_are_never_duplicates(
    prose_a: str, prose_b: str, path_a: str, path_b: str
) -> None:
    if path_a == path_b:
        return
    for a, b in (
        (f"{prose_a} in {path_a}", f"{prose_b} in {path_b}"),
        (
            f"{prose_a} in {path_a}",
            f"{prose_a} in {path_b}",  # the very same prose
        ),
    ):
        ka, kb = TextKey.of(a), TextKey.of(b)
        assert path_a in ka.ids and path_b in kb.ids
        assert not ka.ids & kb.ids, (ka.ids, kb.ids)
        assert not is_duplicate(ka, kb)
        assert similarity(ka, kb) < SIMILAR_OVERLAP


# Small pools so that entries share paths and words often.
POOL_PATHS = ["src/app.py", "src/db.py", "lib/auth.ts", "docs/setup.md", "cmd/main.go"]
POOL_WORDS = "cache token query login session expiry parse render upload retry limit".split()
POOL_TEXT = st.builds(
    lambda words, paths: " ".join(words + paths),
    st.lists(st.sampled_from(POOL_WORDS), min_size=0, max_size=6),
    st.lists(st.sampled_from(POOL_PATHS), min_size=0, max_size=2),
)


def brute_force(index: MatchIndex, key: TextKey) -> list[str]:
    return sorted(e for e, k in index.keys.items() if is_duplicate(key, k))


@SETTINGS
@given(
    st.lists(POOL_TEXT, min_size=0, max_size=30),
    st.lists(st.tuples(st.integers(0, 29), POOL_TEXT), max_size=5),
    POOL_TEXT,
)
def test_match_index_finds_what_a_full_scan_finds(
    texts: list[str], amends: list[tuple[int, str]], query: str
) -> None:
    index = MatchIndex()
    for i, text in enumerate(texts):
        index.add(f"e{i}", TextKey.of(text))
    for i, text in amends:  # an amended entry is re-added with its new text
        if i < len(texts):
            index.add(f"e{i}", TextKey.of(text))
    key = TextKey.of(query)
    assert sorted(index.duplicates(key)) == brute_force(index, key)
    allowed = [e for n, e in enumerate(sorted(index.keys)) if n % 2 == 0]
    assert sorted(index.duplicates(key, allowed)) == [
        e for e in brute_force(index, key) if e in allowed
    ]


@settings(max_examples=25, deadline=None)
@given(st.lists(POOL_TEXT, min_size=40, max_size=150), POOL_TEXT)
def test_large_match_index_never_misses_an_entry_sharing_an_identifier(
    texts: list[str], query: str
) -> None:
    index = MatchIndex()
    for i, text in enumerate(texts):
        index.add(f"e{i}", TextKey.of(text))
    key = TextKey.of(query)
    found = set(index.duplicates(key))
    for entry in brute_force(index, key):
        if index.keys[entry].ids & key.ids:
            assert entry in found


def _identifiers_unguarded(text: str) -> frozenset[str]:
    """The oracle: `identifiers` as first written, every pattern run over the whole text
    (the store's version skips plain words and patterns whose characters are absent)."""
    found: set[str] = set()
    rest = text
    for rx in (tm._URL, tm._BUG, tm._IP):
        for m in rx.finditer(rest):
            found.add(m.group(0).rstrip(".,;:/").lower())
        rest = rx.sub(" ", rest)
    for m in tm._PATH.finditer(rest):
        base = m.group(0).split(":")[0].lstrip("./")
        if "/" in base or base.rsplit(".", 1)[-1].lower() in tm._FILE_EXT_HOSTS:
            found.add(base.lower())
    for m in tm._HOST.finditer(rest):
        found.add(m.group(0).lower())
    for m in tm._HASH.finditer(rest):
        digest = m.group(0).lower()
        if not any(digest in f for f in found):
            found.add(digest)
    for m in tm._SYMBOL.finditer(rest):
        sym = m.group(0).strip("`").rstrip("()").lower()
        if len(sym) >= 3 and sym not in found and not any(sym in f for f in found):
            found.add(sym)
    return frozenset(found)


PIECES = st.one_of(
    WORDS,
    WORDS.map(lambda w: w + ","),
    WORDS.map(lambda w: w + "."),
    WORDS.map(lambda w: w + ":"),
    PATHS,
    PATHS.map(lambda p: f"{p}:12"),
    st.sampled_from(
        [
            "https://example.com/a/b.",
            "http://10.0.0.1:8080/x",
            "CVE-2024-12345",
            "GHSA-abcd-efgh-ijkl",
            "CWE-79",
            "JIRA-12.",
            "10.0.0.1",
            "192.168.1.20:443",
            "api.example.org",
            "deadbeef1",
            "cafe1234",
            "DeadBeef12",
            "Api.Example.COM",
            "db.internal:5432",
            "x.co.uk",
            "os.path.join()",
            "get_user()",
            "build_query",
            "parseHeader",
            "`make test`",
            "std::vector",
            "e.g.",
            "Fix",
            "(see",
            "x.y",
            "a-b",
            "x_1",
            "über",
            "ＡＢＣ-1",
        ]
    ),
    st.text(min_size=1, max_size=12),
)
SEPARATORS = st.sampled_from([" ", "  ", "\t", "\n", "\xa0", "\u2028", " \n "])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(PIECES, SEPARATORS), max_size=14))
def test_identifiers_finds_what_scanning_every_word_finds(parts: list[tuple[str, str]]) -> None:
    text = "".join(piece + sep for piece, sep in parts)
    assert identifiers(text) == _identifiers_unguarded(text)


def test_identifier_and_token_extraction_examples() -> None:
    assert identifiers("see src/app.py:12 and https://example.com/x") == {
        "src/app.py",
        "https://example.com/x",
    }
    assert "cve-2024-12345" in identifiers("fixes CVE-2024-12345")
    assert tokens("The checks were checking") == {"check"}


# -- the tool's parameter schema -------------------------------------------------------

TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=40)


def _string(metadata: list[Any]) -> st.SearchStrategy[str]:
    low = max([m.min_length for m in metadata if isinstance(m, annotated_types.MinLen)] + [0])
    high = min([m.max_length for m in metadata if isinstance(m, annotated_types.MaxLen)] + [40])
    return TEXT.filter(lambda s: low <= len(s.strip()) and len(s) <= high)


def _value(annotation: Any, metadata: list[Any]) -> st.SearchStrategy[Any]:
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        assert len(inner) == 1, annotation
        return st.one_of(st.none(), _value(inner[0], metadata))
    if origin is Literal:
        return st.sampled_from(args)
    if annotation is bool:
        return st.booleans()
    if annotation is str:
        return _string(metadata)
    if origin is list and args == (str,):
        return st.lists(_string([annotated_types.MinLen(1)]), max_size=4)
    raise AssertionError(f"no strategy for {annotation!r}")


def params_of(model: type[BaseModel]) -> st.SearchStrategy[BaseModel]:
    """Valid instances of `model`: required fields always, optional ones sometimes."""

    @st.composite
    def build(draw: st.DrawFn) -> BaseModel:
        raw: dict[str, Any] = {}
        for name, info in model.model_fields.items():
            if name in NUMBER_FIELDS:  # optional whole numbers, the schema's `integer`
                if draw(st.booleans()):
                    raw[name] = draw(st.integers(1, 10**6))
            elif info.is_required() or draw(st.booleans()):
                raw[name] = draw(_value(info.annotation, info.metadata))
        try:
            return model.model_validate(raw)
        except ValidationError:
            from hypothesis import reject

            reject()

    return build()


ALL_PARAMS = st.sampled_from(sorted(ACTION_MODELS)).flatmap(lambda a: params_of(ACTION_MODELS[a]))


@settings(max_examples=150, deadline=None)
@given(ALL_PARAMS)
def test_params_survive_a_json_round_trip(params: BaseModel) -> None:
    wire = json.loads(json.dumps(params.model_dump(exclude_none=True)))
    assert parse_params(wire) == params


SCHEMA = tool_schema()["function"]["parameters"]
# Actions whose `text` may be empty: the flat schema must accept an empty text for them.
EMPTY_TEXT_ACTIONS = ["confirm", "confirm-solved", "resource", "retract", "verify"]


@settings(max_examples=150, deadline=None)
@given(ALL_PARAMS)
def test_the_flat_tool_schema_accepts_every_valid_call(params: BaseModel) -> None:
    wire = json.loads(json.dumps(params.model_dump(exclude_none=True)))
    for name in NUMBER_FIELDS & set(wire):  # kept as text by the model, sent as integers
        wire[name] = int(wire[name])
    jsonschema.validate(wire, SCHEMA)


@pytest.mark.parametrize("action", EMPTY_TEXT_ACTIONS)
def test_the_flat_tool_schema_accepts_an_empty_optional_text(action: str) -> None:
    required = {"id": "C1", "support": "tested", "name": "corpus"}
    model = ACTION_MODELS[action]
    raw = {
        n: required[n] for n, i in model.model_fields.items() if i.is_required() and n != "action"
    }
    wire = model.model_validate({"action": action, **raw}).model_dump(exclude_none=True)
    assert wire["text"] == ""
    jsonschema.validate(wire, SCHEMA)


def test_every_action_has_a_strategy() -> None:
    for model in ACTION_MODELS.values():
        for info in model.model_fields.values():
            _value(info.annotation, info.metadata)
