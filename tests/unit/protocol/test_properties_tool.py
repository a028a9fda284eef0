"""Property test over `horde-tui tool` argument strings (issue 12): whatever a person or
a script types, the command answers with exit 0, 1 or 2 and no traceback, and
`.horde/` holds only writes that obey the rules.

The calls run in-process through `horde_tui.commands.cli.main`, the entry the `horde-tui`
script runs (a process per example would be too slow), against one real `.horde/`
that grows across examples, so later calls meet the entries earlier ones made.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from horde_tui.commands.cli import main
from horde_tui.protocol.bounds import _FORBIDDEN
from horde_tui.protocol.fields import EVIDENCE_CAP
from horde_tui.protocol.schema import tool_schema
from horde_tui.store.store import HordeStore

PROPERTIES: dict[str, Any] = tool_schema()["function"]["parameters"]["properties"]
ACTIONS: list[str] = PROPERTIES["action"]["enum"]
FIELDS = sorted(k for k in PROPERTIES if k != "action")

SETTINGS = settings(
    max_examples=120,
    deadline=None,  # a loaded 2-core box; the bound that matters is the whole test's time
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One working directory and `.horde/` for every example, with files to cite."""
    root = tmp_path_factory.mktemp("hostile")
    (root / "good.txt").write_text("src/db.py:12 f-string into SQL\n")
    (root / "bad.txt").write_bytes(b"\xff\xfe\x00 not text")
    (root / "big.txt").write_text("x" * 25_000)
    (root / "poc.py").write_text("print('poc')\n")
    yield root


# -- strategies -------------------------------------------------------------------------

NUMBERISH = st.sampled_from(
    [
        *("1", "2", "²", "r²", "٣", "#٣", "①", "1²", "-1", "0", "65536", "9" * 30, "9" * 5000),
        *("#1", "F1", "T1", "C1", "R1", "A1", "Q1", "V1", "A1@r²", "A1@3", "E1", "E" + "9" * 5000),
        *("8080", "8080,²", "F1,T1,A1@r1", "member-2", "user", "answer", "r1", "ready"),
    ]
)
FILES = st.sampled_from(["@good.txt", "@bad.txt", "@big.txt", "@/dev/zero", "@missing.txt", "@"])
HUGE = st.builds(
    lambda c, n: c * n, st.sampled_from(["x", "é", "²", "\x00", "\n"]), st.integers(190, 20_100)
)
VALUES = st.one_of(
    st.text(max_size=40),  # any unicode: control characters, surrogates, digits of every script
    st.text(alphabet=st.characters(codec="utf-8"), max_size=300),
    NUMBERISH,
    FILES,
    HUGE,
)
KEYS = st.one_of(st.sampled_from(FIELDS), st.text(max_size=12))
PAIRS = st.lists(
    st.one_of(
        st.builds(lambda k, v: f"{k}={v}", KEYS, VALUES),
        st.text(max_size=20),  # junk: no '=', a bare '-x' option, ''
    ),
    max_size=6,
)
JSON_LEAVES = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=30))
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(KEYS, inner, max_size=4)),
    max_leaves=12,
)
DEEP = st.builds(
    lambda n, wrap: ('{"text": ' if wrap else "") + "[" * n + "]" * n + ("}" if wrap else ""),
    st.integers(900, 60_000),
    st.booleans(),
)
JSON_TEXT = st.one_of(
    st.builds(json.dumps, st.dictionaries(KEYS, JSON_VALUES, max_size=5)),
    st.builds(json.dumps, JSON_VALUES),
    DEEP,
    st.text(max_size=40),
)
ACTOR = st.sampled_from(["member-1", "member-2", "ext-1", "user", "Bad Name", "member-1\n"])


def template(action: str, *fields: str) -> st.SearchStrategy[list[str]]:
    """A well-formed call with its `{}` values drawn from `VALUES`/`NUMBERISH`: most of
    these pass the usage checks and meet the rules, some succeed and write."""
    parts = [
        st.builds(f.format, st.one_of(NUMBERISH, VALUES)) if "{}" in f else st.just(f)
        for f in fields
    ]
    return st.tuples(*parts).map(lambda done: ["tool", action, *done])


TEMPLATES = st.one_of(
    template("idea", "text=Audit {} in app/db.py"),
    template("post", "text={}"),
    template("claim", "id={}"),
    template("done", "id={}", "result=checked {}"),
    template("resource", "name=db{}"),
    template("resource-state", "id={}", "state=ready", "ports={}"),
    template("artifact", "path=poc.py", "criteria={}"),
    template(
        "finding",
        "idea={}",
        "text=SQL injection {}",
        "evidence={}",
        "concern=sql-injection",
        "concernDef=SQL from input",
    ),
    template(
        "review",
        "target={}",
        "revision={}",
        "verdict=supports",
        "support=tested",
        "checked=all",
        "evidence={}",
    ),
    template("message", "to={}", "text={}"),
    template("solved", "text=answer {}", "cites={}"),
    template("inspect", "target={}"),
    template("collaboration", "target={}", "page={}"),
    template("list"),
)


@st.composite
def junk(draw: st.DrawFn) -> list[str]:
    action = draw(st.one_of(st.sampled_from(ACTIONS), st.text(max_size=12)))
    return ["tool", action, *draw(PAIRS)]


@st.composite
def argvs(draw: st.DrawFn) -> list[str]:
    argv = draw(st.one_of(TEMPLATES, junk()))
    if draw(st.integers(0, 3)) == 0:
        argv += ["--json", draw(JSON_TEXT)]
    if draw(st.integers(0, 4)) == 0:
        argv += ["--output", draw(st.sampled_from(["json", "text", "yaml"]))]
    return argv


# -- the property -----------------------------------------------------------------------


def run_tool(workdir: Path, argv: list[str], actor: str) -> tuple[int, str, str]:
    """`horde-tui ARGV` in `workdir` as `actor`: exit status, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    env = {"HORDE_DIR": str(workdir / ".horde"), "HORDE_MEMBER": actor, "HORDE_RUN": "r1"}
    env.update(HORDE_ROLE="", HORDE_SIBLINGS="")  # the defaults, whatever the shell set
    cwd = Path.cwd()
    os.chdir(workdir)
    try:
        with (
            mock.patch.dict(os.environ, env),
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(err),
        ):
            try:
                code = main(argv)
            except SystemExit as exc:  # argparse: a bad option, or --help
                code = exc.code if isinstance(exc.code, int) else 2
    finally:
        os.chdir(cwd)
    return code, out.getvalue(), err.getvalue()


def check_ledger(workdir: Path) -> None:
    """Every record parses, ids are unique, no string breaks the content rules, and the
    store folds the file with nothing skipped."""
    horde_dir = workdir / ".horde"
    ledger = horde_dir / "ledger.jsonl"
    if not ledger.exists():
        return
    seqs: list[int] = []
    created: set[str] = set()
    for line in json_lines(ledger):
        record = json.loads(line)
        assert isinstance(record, dict)
        seqs.append(record["seq"])
        if str(record.get("op", "")).endswith(".add") and "id" in record:
            assert record["id"] not in created, f"duplicate id {record['id']}"
            created.add(record["id"])
        for value in strings(record):
            assert len(value) <= EVIDENCE_CAP, f"a {len(value)}-character string in the ledger"
            assert not _FORBIDDEN.search(value), f"forbidden character in {value[:60]!r}"
    assert seqs == sorted(set(seqs)), "ledger seq numbers must strictly increase"
    events = horde_dir / "runs" / "r1" / "events.jsonl"
    if events.exists():
        ids = [json.loads(line)["id"] for line in json_lines(events)]
        assert ids == [f"E{n}" for n in range(1, len(ids) + 1)]
    store = HordeStore(horde_dir, "member-1")
    store.refresh()
    assert store.state.skipped == [] and store.corrupt_lines == []


def json_lines(path: Path) -> list[str]:
    """The lines of a JSON-lines file, split on newline only: `str.splitlines` would
    also split at U+2028 or U+0085, which JSON strings may hold unescaped."""
    return path.read_text(encoding="utf-8").removesuffix("\n").split("\n")


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def test_no_tool_input_yields_a_traceback_or_a_write_outside_the_rules(workdir: Path) -> None:
    seen: Counter[int] = Counter()

    @SETTINGS
    @given(argv=argvs(), actor=ACTOR)
    def one_call(argv: list[str], actor: str) -> None:
        code, out, err = run_tool(workdir, argv, actor)
        assert code in (0, 1, 2), (code, err)
        assert "Traceback" not in out + err
        if code == 2 and not err.startswith("usage:"):  # argparse's usage text is its own
            # One line: on stderr, or on stdout as the `--output json` object.
            assert len((err or out).strip().splitlines()) == 1, (out, err)
        check_ledger(workdir)
        seen[code] += 1

    one_call()
    # The property is worth something only if the calls reach all three outcomes:
    # some write, some break a rule, some are malformed.
    assert seen[0] and seen[1] and seen[2], seen
