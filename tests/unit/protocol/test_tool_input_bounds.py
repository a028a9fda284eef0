"""Size and content bounds at the tool boundary (issue 11, item 5).

Every string a `horde` call carries is capped, control characters other than newline
and tab are refused, and actor names are checked for syntax, all in one line and before
anything but a clipped audit copy reaches `events.jsonl`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import types
import typing
from pathlib import Path
from typing import Any

import pytest
from support.cli import cli

from horde_tui.protocol.bounds import ACTOR_NAME_CAP, LIST_CAP, cap_of
from horde_tui.protocol.params import ACTION_MODELS, NAME_CAP, TEXT_CAP
from horde_tui.protocol.schema import tool_schema
from horde_tui.store.store import HordeStore


def events_size(horde: Any) -> int:
    path = horde.root / "runs" / "r1" / "events.jsonl"
    return path.stat().st_size if path.exists() else 0


def test_a_5_mb_id_is_refused_and_events_grow_by_a_clipped_copy(horde):
    horde("member-1", "idea", text="Audit app/db/query.py")
    before_events, before_ledger = events_size(horde), horde.ledger_bytes()

    result = horde("member-1", "claim", id="1" * 5_000_000)

    assert (result.ok, result.exit_code) == (False, 1)
    assert result.text == (
        f"refused: `id` is 5000000 characters, over the cap of {NAME_CAP} (size cap); give "
        "the entry's id, such as #3 or F2"
    )
    assert horde.ledger_bytes() == before_ledger
    assert events_size(horde) - before_events < 4 * NAME_CAP + 1000
    intent = [e for e in horde.events() if e["type"] == "intent"][-1]
    assert intent["params"]["id"] == "1" * NAME_CAP + "[... 4999800 characters over the cap cut]"


@pytest.mark.parametrize(
    ("char", "code", "why"),
    [
        ("\x00", "U+0000", "control character"),
        ("\x1b", "U+001B", "control character"),
        ("\r", "U+000D", "control character"),
        ("\x7f", "U+007F", "control character"),
        ("\x85", "U+0085", "control character"),
    ],
)
def test_control_characters_are_refused_naming_field_and_position(horde, char, code, why):
    horde("member-1", "post", text="first post")
    board = (horde.root / "BOARD.md").read_bytes()

    result = horde("member-1", "post", text=f"abc{char}def")

    assert (result.ok, result.exit_code) == (False, 1)
    assert result.text == (
        f"refused: `text` has {why} {code} at position 4 (content rule: newline and tab are "
        "the only control characters allowed); remove it, and put binary or terminal output "
        "in a file under the working directory, cited by path"
    )
    assert (horde.root / "BOARD.md").read_bytes() == board


def test_newline_and_tab_are_accepted(horde):
    result = horde("member-1", "post", text="line one\n\tline two")

    assert result.ok
    assert horde.state().posts[-1].text == "line one\n\tline two"
    assert "line one\n  line two" in (horde.root / "BOARD.md").read_text()


def test_an_unpaired_surrogate_is_one_usage_line(horde):
    result = horde("member-1", "finding", text="x", concern="a", evidence="ok \ud800 there")

    assert (result.ok, result.exit_code) == (False, 2)
    assert result.text == (
        "usage: field 'evidence' must be valid Unicode text (an unpaired surrogate such as "
        "\\ud800 is not), got 'ok \\ud800 there'"
    )


def test_an_unpaired_surrogate_is_never_written_as_a_crash():
    """`bounds` refuses it too, for any value that reaches it without the models."""
    from horde_tui.protocol.bounds import clipped, field_problem

    assert field_problem("evidence", "ok \ud800") == (
        "refused: `evidence` has unpaired surrogate U+D800 at position 4 (content rule: text "
        "must be valid Unicode); remove it, and put binary or terminal output in a file under "
        "the working directory, cited by path"
    )
    assert clipped({"id": "\udcff" * 300})["id"].encode("utf-8").startswith(b"???")


def test_a_long_numeric_id_is_a_refusal_not_a_traceback(horde):
    horde("member-1", "idea", text="Audit app/db/query.py")

    result = horde("member-1", "claim", id="9" * 5000)

    assert (result.ok, result.exit_code) == (False, 1)
    assert result.text.startswith("refused: `id` is 5000 characters, over the cap of 200")


def _value(annotation: Any) -> Any:
    """A valid value for a required field of `annotation` (first literal, a list, text)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return typing.get_args(annotation)[0]
    if origin is typing.Annotated:
        return _value(typing.get_args(annotation)[0])
    if annotation is bool:
        return False
    if origin is list:
        return ["x"]
    return "x"


def _is_text(annotation: Any) -> bool:
    """True for fields that take free text (not a literal, bool or list)."""
    if typing.get_origin(annotation) is typing.Annotated:
        return _is_text(typing.get_args(annotation)[0])
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return any(_is_text(a) for a in args if a is not type(None))
    return annotation is str


def _every_text_field() -> list[tuple[str, str]]:
    return [
        (action, name)
        for action, model in sorted(ACTION_MODELS.items())
        for name, field in model.model_fields.items()
        if name not in ("action", "requestId") and _is_text(field.annotation)
    ]


@pytest.mark.parametrize(("action", "name"), _every_text_field())
def test_every_text_field_of_every_action_is_capped(horde, action, name):
    model = ACTION_MODELS[action]
    raw = {
        n: _value(f.annotation)
        for n, f in model.model_fields.items()
        if f.is_required() and n != "action"
    }
    cap = cap_of(name)
    raw[name] = "y" * (cap + 1)
    before = events_size(horde)

    result = horde("member-1", action, **raw)

    assert (result.ok, result.exit_code) == (False, 1), result.text
    assert result.text.startswith(
        f"refused: `{name}` is {cap + 1} characters, over the cap of {cap} (size cap); "
    )
    assert events_size(horde) - before < 2 * cap + 2000


@pytest.mark.parametrize(("action", "name"), _every_text_field())
def test_every_text_field_refuses_a_nul(horde, action, name):
    model = ACTION_MODELS[action]
    raw = {
        n: _value(f.annotation)
        for n, f in model.model_fields.items()
        if f.is_required() and n != "action"
    }
    raw[name] = "ab\x00"

    result = horde("member-1", action, **raw)

    assert (result.ok, result.exit_code) == (False, 1), result.text
    assert result.text.startswith(f"refused: `{name}` has control character U+0000 at position 3")


def test_list_fields_cap_items_and_their_length(horde):
    many = horde("member-1", "solved", text="answer", cites=[f"F{i}" for i in range(LIST_CAP + 1)])
    long = horde("member-1", "solved", text="answer", cites=["F1", "F" + "2" * NAME_CAP])

    assert many.text == (
        f"refused: `cites` has {LIST_CAP + 1} items, over the cap of {LIST_CAP} (size cap); "
        "list fewer"
    )
    assert long.text.startswith(
        f"refused: `cites` item 2 is {NAME_CAP + 1} characters, over the cap of {NAME_CAP}"
    )
    intent = [e for e in horde.events() if e["type"] == "intent"][-2]
    assert len(intent["params"]["cites"]) == LIST_CAP + 1  # the last entry says what was cut
    assert intent["params"]["cites"][-1] == "[... 1 items over the cap cut]"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("to", "Member-2"),
        ("to", "../member-2"),
        ("to", "member 2"),
        ("to", "2nd-member"),
    ],
)
def test_a_recipient_that_is_not_a_member_name(horde, field, value):
    horde("member-2", "idea", text="Audit app/db/query.py")

    result = horde("member-1", "message", kind="question", text="Why?", **{field: value})

    assert (result.ok, result.exit_code) == (False, 1)
    assert result.text == (
        f"refused: `{field}`={value!r} is not a member name (names rule: a lower-case letter, "
        f"then up to {ACTOR_NAME_CAP - 1} lower-case letters, digits, '.', '_' or '-'); use a "
        "name such as member-2"
    )


def test_a_list_owner_that_is_not_a_member_name(horde):
    result = horde("member-1", "list", owner="x\x00")

    assert (result.ok, result.exit_code) == (False, 1)
    assert result.text.startswith("refused: `owner` has control character U+0000 at position 2")


@pytest.mark.parametrize("actor", ["Member-1", "../etc", "a b", "", "member-1\n", "x" * 65])
def test_an_actor_that_is_not_a_member_name_writes_nothing(horde, actor):
    store = HordeStore(horde.root, actor)
    from horde_tui.protocol import run_action

    result = run_action(store, {"action": "post", "text": "hi"}, run="r1")

    assert (result.ok, result.exit_code) == (False, 2)
    assert result.text.startswith(f"usage: actor {actor!r} is not a member name (names rule")
    assert not (horde.root / "ledger.jsonl").exists()


@pytest.mark.parametrize("name", ["member-1", "member-12", "parent", "user", "ext-1", "person"])
def test_the_names_the_horde_uses_are_accepted(horde, name):
    assert horde(name, "post", text=f"hello from {name}").ok


def test_a_request_id_with_a_control_character_is_a_usage_error(horde):
    result = horde("member-1", "post", text="hi", requestId="r\x001")

    assert (result.ok, result.exit_code) == (False, 2)
    assert "`requestId` has control character U+0000 at position 2" in result.text
    assert not (horde.root / "ledger.jsonl").exists()


def test_a_huge_wrong_typed_value_is_not_echoed_whole(horde):
    result = horde("member-1", "post", text=["x" * 100_000])

    assert result.exit_code == 2
    assert len(result.text) < 400


@pytest.mark.parametrize(
    "raw",
    [
        {"action": "post", "text": "x", "k\x00" * 100_000: 1},
        {"action": "p\x00" * 100_000},
        {"action": "post", "text": 1},
    ],
)
def test_usage_lines_quote_names_and_values_cut_short_and_printable(horde, raw):
    from horde_tui.protocol import run_action

    result = run_action(horde.store("member-1"), raw, run="r1")

    assert result.exit_code == 2
    assert len(result.text) < 600
    assert "\x00" not in result.text and "\n" not in result.text


def test_the_schema_carries_every_cap():
    props = tool_schema()["function"]["parameters"]["properties"]
    for name, prop in props.items():
        if prop.get("type") == "string" and "enum" not in prop:
            assert prop.get("maxLength") == cap_of(name), name
        if prop.get("type") == "array":
            assert prop.get("maxItems") == LIST_CAP, name
    assert props["text"]["maxLength"] == TEXT_CAP


# -- the command line: HORDE_MEMBER and text=@file ----------------------------------------


def test_cli_refuses_a_horde_member_that_is_not_a_name(tmp_path: Path) -> None:
    r = cli(tmp_path, "tool", "post", "text=hi", member="Bob Smith")

    assert r.returncode == 2
    err = r.stderr
    assert err.startswith("horde-tui tool: HORDE_MEMBER='Bob Smith' is not a member name")
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / ".horde").exists()


def test_cli_file_value_over_the_cap_is_refused_without_reading_it_whole(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    big.write_bytes(b"z" * (50 * 1024 * 1024))

    r = cli(tmp_path, "tool", "post", "text=@big.txt", member="member-1")

    assert r.returncode == 2
    err = r.stderr
    assert err == (
        f"horde-tui tool: refused: `text` from big.txt is over the cap of {TEXT_CAP} "
        "characters (size cap); shorten it, or cite the file by path in a shorter text\n"
    )
    assert not (tmp_path / ".horde").exists()


def test_cli_file_value_that_is_not_utf8(tmp_path: Path) -> None:
    (tmp_path / "bin.txt").write_bytes(b"ok\n\xff\xfe")

    r = cli(tmp_path, "tool", "post", "text=@bin.txt", member="member-1")

    assert r.returncode == 2
    assert r.stderr == (
        "horde-tui tool: cannot read bin.txt: not UTF-8 text (byte 0xff at offset 3); "
        "convert it, or cite the file by path\n"
    )


def test_cli_stdin_value_is_bounded_too(tmp_path: Path) -> None:
    r = cli(tmp_path, "tool", "post", "text=@-", member="member-1", stdin="w" * (TEXT_CAP + 1))

    assert r.returncode == 2
    assert "`text` from standard input is over the cap of" in r.stderr


def test_cli_file_value_at_the_cap_is_accepted(tmp_path: Path) -> None:
    (tmp_path / "ok.txt").write_text("v" * TEXT_CAP)

    r = cli(tmp_path, "tool", "post", "text=@ok.txt", member="member-1")

    assert r.returncode == 0, r.stderr


def test_a_member_process_with_a_bad_name_stops_in_one_line(tmp_path: Path) -> None:
    """The name becomes sessions/<name>/ and every record's actor: checked at start-up."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HORDE_")}
    env.update(
        HORDE_NAME="../escape",
        HORDE_DIR=str(tmp_path / ".horde"),
        HORDE_RUN="r1",
        HORDE_GATEWAY_URL="http://127.0.0.1:9",
        HORDE_GATEWAY_TOKEN="t",
    )
    r = subprocess.run(
        [sys.executable, "-m", "horde_tui.member"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert r.returncode == 2
    assert r.stderr.startswith(
        "horde-tui member: HORDE_NAME='../escape' is not a member name (names rule:"
    )
    assert len(r.stderr.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []
