"""Resources: first claim owns the name, safe cleanup commands, paths inside the workdir."""

from __future__ import annotations

import pytest


def test_first_claim_owns_the_name(horde):
    made = horde("member-1", "resource", name="lab", text="docker lab", cleanup="docker rm -f lab")

    assert (made.ok, made.id, made.text) == (True, "R1", "ok R1 `lab` is yours")
    res = horde.state().resources["R1"]
    assert (res.name, res.by, res.cleanup, res.reusers) == (
        "lab",
        "member-1",
        "docker rm -f lab",
        [],
    )


def test_later_claim_by_another_member_returns_owner_and_records_reuser(horde):
    horde("member-1", "resource", name="lab", text="docker lab", path="lab/")

    reuse = horde("member-2", "resource", name="Lab")

    assert (reuse.ok, reuse.id) == (True, "R1")
    assert reuse.text.startswith("R1 `lab` is owned by member-1 (run r1); recorded you as a reuser")
    assert "use it at `lab/`, do not rebuild it" in reuse.text
    state = horde.state()
    assert list(state.resources) == ["R1"]
    assert state.resources["R1"].reusers == ["member-2"]


def test_same_path_under_another_name_is_the_same_resource(horde):
    horde("member-1", "resource", name="corpus", path="data/corpus")

    reuse = horde("member-2", "resource", name="fuzz-corpus", path="data/corpus")

    assert (reuse.ok, reuse.id) == (True, "R1")
    assert horde.state().resources["R1"].reusers == ["member-2"]


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (  # the same directory, named in the description of a differently named claim
            {"name": "corpus", "path": "data/corpus", "text": "PNG fuzzing corpus"},
            {"name": "png-seeds", "text": "the PNG seed files under data/corpus/ for the fuzzer"},
        ),
        (  # the same path spelled another way
            {"name": "corpus", "path": "data/corpus", "text": "PNG fuzzing corpus"},
            {"name": "fuzz-inputs", "path": "./data/corpus/", "text": "inputs for the fuzzer"},
        ),
        (  # the same URL in other words
            {"name": "staging-api", "text": "staging API at https://staging.example.com/api"},
            {"name": "stage-server", "text": "server https://staging.example.com/api for tests"},
        ),
        (  # no identifier at all: the wording alone
            {"name": "pg", "text": "postgres database container for the integration tests"},
            {"name": "postgres-db", "text": "postgres database container for integration tests"},
        ),
    ],
)
def test_a_resource_described_in_other_words_is_the_same_resource(horde, first, second):
    """Identifiers first, then wording, as ideas and facts (issue 13 item 6)."""
    horde("member-1", "resource", **first)

    reuse = horde("member-2", "resource", **second)

    assert (reuse.ok, reuse.id) == (True, "R1"), reuse.text
    assert reuse.text.startswith(f"R1 `{first['name']}` is owned by member-1 (run r1)")
    assert "recorded you as a reuser" in reuse.text
    state = horde.state()
    assert list(state.resources) == ["R1"]
    assert state.resources["R1"].reusers == ["member-2"]


def test_owner_claiming_its_resource_again_in_other_words_gets_no_second_one(horde):
    horde("member-1", "resource", name="corpus", path="data/corpus", text="PNG fuzzing corpus")

    again = horde("member-1", "resource", name="png-seeds", text="PNG seeds in data/corpus/")

    assert (again.ok, again.id) == (True, "R1")
    assert again.text.startswith(
        "ok R1 `corpus` is already yours and matches `png-seeds` (both name `data/corpus`)"
    )
    assert list(horde.state().resources) == ["R1"]
    assert horde.state().resources["R1"].text == "PNG fuzzing corpus"


@pytest.mark.parametrize(
    "second",
    [
        {"name": "lab-b", "path": "labs/b", "text": "docker lab for the parser"},
        {"name": "lab-c", "text": "docker lab for the parser in labs/c"},
        {"name": "metrics", "text": "prometheus scraper for the lab"},
    ],
)
def test_resources_naming_different_paths_stay_apart(horde, second):
    horde("member-1", "resource", name="lab-a", path="labs/a", text="docker lab for the parser")

    made = horde("member-2", "resource", **second)

    assert (made.ok, made.id) == (True, "R2"), made.text
    assert sorted(horde.state().resources) == ["R1", "R2"]


def test_owner_updates_its_own_resource(horde):
    horde("member-1", "resource", name="lab", text="docker lab")

    updated = horde("member-1", "resource", name="lab", text="docker lab on port 8080")

    assert (updated.ok, updated.id, updated.text) == (True, "R1", "ok R1 updated (text)")
    assert horde.state().resources["R1"].text == "docker lab on port 8080"


def test_owner_may_not_update_description_from_another_run(horde):
    horde("member-1", "resource", name="lab", text="docker lab")

    later = horde("member-1", "resource", run="r2", name="lab", text="a different lab")

    assert (later.ok, later.id) == (False, None)
    assert later.text.startswith("refused: R1 `lab` was claimed in run r1; only the owning run")
    assert horde.state().resources["R1"].text == "docker lab"


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf x",
        "find . -delete",
        "echo > f",
        "docker rm -f lab; rm notes.txt",
        "mv out.log old.log",
        # Wrappers, nested shells and writers the old regex let through (issue 13 item 3).
        "env rm -rf build",
        "nohup rm -f server.pid",
        "command rm notes.txt",
        "timeout 5 rm -rf build",
        "bash -c 'rm -rf build'",
        "sed -i s/a/b/ notes.txt",
        "tee notes.txt",
        "cp /dev/null notes.txt",
        'docker stop lab && sh -c "mv a b"',
        "echo $(unlink notes.txt)",
        "find build -name '*.o' -exec rm {} +",
        "git clean -fdx",
        "git --namespace lab clean -fdx",
        "docker logs lab >> lab.log",
    ],
)
def test_cleanup_that_deletes_moves_or_overwrites_files_is_refused(horde, command):
    """The cleanup rule parses the command like the member shell does: a courtesy that
    tells the member at once; the kernel keeps the files whatever runs
    (tests/e2e/test_resource_cleanup.py)."""
    result = horde("member-1", "resource", name="lab", cleanup=command)

    assert (result.ok, result.id, result.exit_code) == (False, None, 1), result.text
    assert result.text.startswith("refused: '")
    assert "cleanup commands may not delete, move or overwrite files (resources rule)" in (
        result.text
    )
    assert "docker rm -f NAME" in result.text
    assert horde.state().resources == {}


@pytest.mark.parametrize(
    "command",
    [
        "docker rm -f lab 2>&1",
        "docker compose -p lab down --volumes",
        "pkill -f 'uvicorn app:lab'",
        "docker stop lab > /dev/null 2>&1 || true",
        "grep -q rm lab.txt",
    ],
)
def test_cleanup_rule_still_accepts_teardown_of_runtime_objects(horde, command):
    result = horde("member-1", "resource", name="lab", cleanup=command)

    assert (result.ok, result.id) == (True, "R1"), result.text


def test_cleanup_touching_the_horde_directory_is_refused(horde):
    result = horde("member-1", "resource", name="lab", cleanup="docker cp lab:/log .horde/log")

    assert (result.ok, result.id) == (False, None)
    assert result.text.startswith("refused: cleanup commands may not touch this run's tree")
    assert horde.state().resources == {}


@pytest.mark.parametrize("command", ["docker rm -f lab", "kill 123", "docker stop lab > /dev/null"])
def test_cleanup_of_external_runtime_objects_is_accepted(horde, command):
    result = horde("member-1", "resource", name="lab", cleanup=command)

    assert (result.ok, result.id) == (True, "R1")
    assert horde.state().resources["R1"].cleanup == command


@pytest.mark.parametrize("path", ["../../etc", "/etc/passwd", "data/../../outside"])
def test_path_outside_the_working_directory_is_refused(horde, path):
    result = horde("member-1", "resource", name="lab", path=path)

    assert (result.ok, result.id) == (False, None)
    assert result.text.startswith(f"refused: path {path!r} is outside the working directory")
    assert "(path containment)" in result.text
    assert horde.state().resources == {}


def test_path_inside_the_working_directory_is_accepted(horde):
    result = horde("member-1", "resource", name="corpus", path="data/corpus")

    assert (result.ok, result.id) == (True, "R1")
    assert horde.state().resources["R1"].path == "data/corpus"
