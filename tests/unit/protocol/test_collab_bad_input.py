"""Bad input to the collaboration actions: refused in one line naming the rule, and
nothing half-written (ledger, artifact copies, thread state)."""

from __future__ import annotations

import os

import pytest

from horde_tui.protocol.params import EVIDENCE_CAP, TEXT_CAP


@pytest.fixture
def crew(horde):
    """member-1..3 known; member-1 published A1 (poc.py); member-2 asked Q1 of member-1."""
    for n in (1, 2, 3):
        horde(f"member-{n}", "idea", text=f"Audit module {n} of app/")
    (horde.workdir / "poc.py").write_text("print('poc')\n")
    assert horde("member-1", "artifact", path="poc.py", criteria="prints poc").id == "A1"
    assert horde("member-2", "message", to="member-1", kind="question", text="Why?").id == "Q1"
    return horde


def snapshot(horde):
    """Everything a refused write must leave alone."""
    run = horde.root / "runs" / "r1"
    files = sorted(str(p.relative_to(run)) for p in run.rglob("*") if p.is_file())
    files = [f for f in files if f != "events.jsonl"]
    return horde.ledger_bytes(), files


def refused(horde, before, result, text):
    assert (result.ok, result.id, result.exit_code) == (False, None, 1)
    assert result.text == text
    assert "\n" not in result.text
    assert snapshot(horde) == before


REVIEW = {"verdict": "supports", "support": "tested", "checked": "all", "evidence": "ran it"}


@pytest.mark.parametrize("revision", [2, "r0", 7])
def test_a_review_of_a_revision_that_does_not_exist(crew, revision):
    before = snapshot(crew)
    number = str(revision).removeprefix("r")

    result = crew("member-2", "review", target="A1", revision=revision, **REVIEW)

    refused(
        crew,
        before,
        result,
        f"refused: review of A1 r{number}, a revision that does not exist (reviews are "
        "revision-pinned; A1 has r1..r1); review r1",
    )


def test_a_revision_that_is_not_a_number(crew):
    before = snapshot(crew)

    result = crew("member-2", "review", target="A1", revision="latest", **REVIEW)

    refused(
        crew,
        before,
        result,
        "refused: `revision`='latest' is not a whole number (reviews are revision-pinned); "
        "give a number such as 2",
    )


@pytest.mark.parametrize("path", ["../outside.py", "/etc/hostname", "poc.py/../../x.py"])
def test_an_artifact_path_outside_the_working_directory(crew, path):
    before = snapshot(crew)
    workdir = os.path.realpath(crew.workdir)

    result = crew("member-1", "artifact", path=path, criteria="c")

    refused(
        crew,
        before,
        result,
        f"refused: artifact path {path!r} is outside the working directory {workdir} "
        "(artifact rule: path containment); publish a file inside it",
    )


def test_a_symlink_leading_outside_the_working_directory(crew, tmp_path_factory):
    outside = tmp_path_factory.mktemp("elsewhere") / "secret.py"
    outside.write_text("x = 1\n")
    (crew.workdir / "link.py").symlink_to(outside)
    before = snapshot(crew)

    result = crew("member-1", "artifact", path="link.py", criteria="c")

    assert result.text.startswith("refused: artifact path 'link.py' is outside the working")
    assert snapshot(crew) == before


def test_an_artifact_path_inside_horde_but_outside_artifacts(crew):
    before = snapshot(crew)

    result = crew("member-1", "artifact", path=".horde/IDEAS.md", criteria="c")

    refused(
        crew,
        before,
        result,
        "refused: artifact path '.horde/IDEAS.md' is inside .horde/ but not under this run's "
        "artifacts/ (artifact rule: only working-directory files are published); publish the "
        "file from the working directory",
    )


def test_an_artifact_path_with_no_file(crew):
    before = snapshot(crew)

    result = crew("member-1", "artifact", path="missing.py", criteria="c")

    refused(
        crew,
        before,
        result,
        "refused: no file at 'missing.py' (artifact rule: an artifact is one existing file); "
        "write the file first, then publish its path",
    )


def test_a_dependson_cycle(crew):
    (crew.workdir / "b.py").write_text("import poc\n")
    crew("member-1", "artifact", path="b.py", criteria="c", dependsOn=["A1@1"])
    (crew.workdir / "poc.py").write_text("import b\n")
    before = snapshot(crew)

    result = crew("member-1", "artifact", path="poc.py", dependsOn=["A2@1"], text="uses b")

    refused(
        crew,
        before,
        result,
        "refused: A1 dependsOn A2, which already depends on A1 (artifact rule: no dependsOn "
        "cycle); drop that pin",
    )


def test_an_artifact_depending_on_itself(crew):
    (crew.workdir / "poc.py").write_text("print('poc 2')\n")
    before = snapshot(crew)

    result = crew("member-1", "artifact", path="poc.py", dependsOn=["A1@1"], text="v2")

    refused(
        crew,
        before,
        result,
        "refused: A1 cannot depend on itself (artifact rule: no dependsOn cycle); drop it from "
        "dependsOn",
    )


@pytest.mark.parametrize(
    ("pins", "text"),
    [
        (
            ["A1@5"],
            "refused: dependsOn A1@5, a revision that does not exist (artifact rule; A1 has "
            "r1..r1); pin A1@1",
        ),
        (["A9"], "refused: A9 does not exist (highest is A1); check `horde collaboration`"),
        (
            ["poc.py"],
            "refused: dependsOn entry 'poc.py' is not A#@revision (artifact rule); give pins "
            "such as A2@3",
        ),
    ],
)
def test_bad_dependency_pins(crew, pins, text):
    (crew.workdir / "b.py").write_text("import poc\n")
    before = snapshot(crew)

    result = crew("member-2", "artifact", path="b.py", criteria="c", dependsOn=pins)

    refused(crew, before, result, text)


@pytest.mark.parametrize("action", ["ack", "respond", "defer", "resolve"])
def test_a_thread_reply_from_a_non_participant(crew, action):
    before = snapshot(crew)

    result = crew("member-3", action, id="Q1", text="me too")

    refused(
        crew,
        before,
        result,
        "refused: Q1 is between member-2 and member-1; member-3 is not a participant (threads "
        "rule: only the sender and recipient reply); send your own `message` to member-1 "
        "instead",
    )
    assert crew.state().threads["Q1"].notes == []


def test_a_reply_to_a_thread_that_does_not_exist(crew):
    before = snapshot(crew)

    result = crew("member-1", "respond", id="Q9", text="?")

    refused(
        crew,
        before,
        result,
        "refused: Q9 does not exist (highest is Q1); check `horde inbox` or `horde collaboration`",
    )


@pytest.mark.parametrize(
    ("action", "fields", "name", "cap"),
    [
        ("review", {"target": "A1", **REVIEW}, "evidenceText", EVIDENCE_CAP),
        ("attach", {"target": "A1", "relation": "supports"}, "text", TEXT_CAP),
        ("resolve", {"id": "Q1", "text": "ok"}, "evidenceText", EVIDENCE_CAP),
        ("review", {"target": "A1", **REVIEW}, "unchecked", TEXT_CAP),
    ],
)
def test_an_oversized_text(crew, action, fields, name, cap):
    before = snapshot(crew)
    actor = "member-2"

    result = crew(actor, action, **{**fields, name: "y" * (cap + 1)})

    refused(
        crew,
        before,
        result,
        f"refused: `{name}` is {cap + 1} characters, over the cap of {cap} (size cap); shorten "
        "it and put long output in a file under the working directory, cited by path",
    )
    intent = [e for e in crew.events() if e["type"] == "intent"][-1]
    assert intent["params"][name] == "y" * cap + "[... 1 characters over the cap cut]"


def test_evidence_citing_an_event_that_does_not_exist(crew):
    before = snapshot(crew)

    result = crew("member-2", "review", target="A1", **{**REVIEW, "evidence": "see E99"})

    refused(
        crew,
        before,
        result,
        "refused: `evidence` cites E99, which does not exist in run r1's events (evidence refs "
        "must exist); attach the evidence first with `attach` or pass it as evidenceText",
    )


@pytest.mark.parametrize(
    ("action", "fields", "text"),
    [
        (
            "review",
            {"target": "Q1", **REVIEW},
            "refused: `target`='Q1' is not an F# or A# id; give F# or A#",
        ),
        (
            "message",
            {"to": "member-1", "kind": "question", "target": "F3", "text": "?"},
            "refused: F3 does not exist (highest is none yet); check `horde findings`",
        ),
        (
            "attach",
            {"target": "answer", "relation": "supports", "text": "x"},
            "refused: `target`='answer' is not an F# or A# or Q# or V# id; give F# or A# or Q# "
            "or V#",
        ),
    ],
)
def test_targets_of_the_wrong_kind_or_that_do_not_exist(crew, action, fields, text):
    before = snapshot(crew)

    result = crew("member-2", action, **fields)

    refused(crew, before, result, text)
