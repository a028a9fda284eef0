"""Artifacts: publishing, revisions, pins and repin requests; resource state; paging."""

from __future__ import annotations

import hashlib

import pytest

from horde_tui.store.acceptance import acceptance

POC = b"print('poc')\n"
POC2 = b"print('poc 2')\n"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def crew(horde):
    for n in (1, 2, 3):
        horde(f"member-{n}", "idea", text=f"Audit module {n} of app/")
    (horde.workdir / "tools").mkdir()
    (horde.workdir / "tools" / "poc.py").write_bytes(POC)
    return horde


def run_dir(horde):
    return horde.root / "runs" / "r1"


# -- publishing --------------------------------------------------------------------------


def test_a_working_directory_file_is_copied_under_artifacts_with_a_content_addressed_copy(crew):
    result = crew("member-1", "artifact", path="tools/poc.py", criteria="prints poc")

    assert (result.ok, result.id, result.text) == (
        True,
        "A1",
        f"ok A1 r1 published as artifacts/tools/poc.py (runnable, sha256 {sha(POC)[:12]}); "
        "it needs a full-scope tested or reproduced review from another member",
    )
    assert (run_dir(crew) / "artifacts" / "tools" / "poc.py").read_bytes() == POC
    assert (run_dir(crew) / "revisions" / sha(POC)).read_bytes() == POC
    art = crew.state().artifacts["A1"]
    assert (art.name, art.by, art.revision, art.current.sha256, art.current.criteria) == (
        "tools/poc.py",
        "member-1",
        1,
        sha(POC),
        "prints poc",
    )


def test_a_file_already_under_the_runs_artifacts_is_published_in_place(crew):
    folder = run_dir(crew) / "artifacts"
    folder.mkdir(parents=True)
    (folder / "lab.sh").write_bytes(b"echo lab\n")

    result = crew("member-1", "artifact", path="artifacts/lab.sh", criteria="starts the lab")

    assert (result.ok, crew.state().artifacts["A1"].name) == (True, "lab.sh")
    assert (run_dir(crew) / "revisions" / sha(b"echo lab\n")).exists()


@pytest.mark.parametrize(("name", "kind"), [("notes.md", "document"), ("run.sh", "runnable")])
def test_the_kind_defaults_from_the_extension(crew, name, kind):
    (crew.workdir / name).write_text("x\n")

    crew("member-1", "artifact", path=name, criteria="c")

    assert crew.state().artifacts["A1"].kind == kind


def test_a_non_document_file_cannot_be_a_document_artifact(crew):
    result = crew(
        "member-1", "artifact", path="tools/poc.py", artifactKind="document", criteria="c"
    )

    assert result.text.startswith(
        "refused: tools/poc.py cannot be a document artifact (artifact rule: documents are "
        ".md, .txt, .rst, .adoc, .pdf files)"
    )


def test_a_new_artifact_needs_criteria(crew):
    result = crew("member-1", "artifact", path="tools/poc.py")

    assert result.text.startswith("refused: a new artifact needs `criteria` (artifact rule")
    assert not (run_dir(crew) / "artifacts").exists()


# -- revisions -----------------------------------------------------------------------------------


@pytest.fixture
def published(crew):
    assert crew("member-1", "artifact", path="tools/poc.py", criteria="prints poc").id == "A1"
    return crew


def test_the_same_bytes_again_are_unchanged(published):
    result = published("member-1", "artifact", path="tools/poc.py")

    assert (result.ok, result.text) == (True, "ok A1 unchanged at r1")
    assert published.state().artifacts["A1"].revision == 1


@pytest.mark.parametrize(
    ("change", "named"),
    [({"criteria": "prints poc twice"}, "criteria"), ({"dependsOn": []}, None)],
)
def test_criteria_changes_without_changed_bytes_are_refused(published, change, named):
    result = published("member-1", "artifact", path="tools/poc.py", **change)

    if named is None:  # an empty dependsOn equals the current (empty) pins: nothing changed
        assert result.text == "ok A1 unchanged at r1"
        return
    assert result.text.startswith(
        "refused: criteria of A1 changed without changed bytes (artifact rule: criteria or "
        "dependency changes need changed bytes and a fresh review)"
    )


def test_changed_bytes_make_a_new_revision_and_keep_both_copies(published):
    review = {"verdict": "supports", "support": "tested", "checked": "all", "evidence": "ran"}
    published("member-2", "review", target="A1", **review)
    (published.workdir / "tools" / "poc.py").write_bytes(POC2)

    result = published("member-1", "artifact", path="tools/poc.py")

    assert result.text == (
        f"ok A1 r2 published (sha256 {sha(POC2)[:12]}); reviews of r1 stay pinned"
    )
    assert {p.name for p in (run_dir(published) / "revisions").iterdir()} == {
        sha(POC),
        sha(POC2),
    }
    assert acceptance(published.state(), "A1").label == "open"


def test_only_the_owner_republishes(published):
    (published.workdir / "tools" / "poc.py").write_bytes(b"print('mine')\n")

    result = published("member-2", "artifact", path="tools/poc.py")

    assert result.text.startswith(
        "refused: A1 artifacts/tools/poc.py belongs to member-1 (artifact rule: only the owner "
        "republishes)"
    )


# -- dependencies ----------------------------------------------------------------------------------


@pytest.fixture
def pinned(published):
    """member-2's A2 (lib/check.py) pins A1@1."""
    (published.workdir / "lib").mkdir()
    (published.workdir / "lib" / "check.py").write_text("import poc\n")
    result = published(
        "member-2", "artifact", path="lib/check.py", criteria="c", dependsOn=["A1@1"]
    )
    assert result.text.endswith(
        " · pins A1@1; it needs a full-scope tested or reproduced review from another member"
    )
    return published


def test_republishing_a_pinned_revision_needs_text_naming_the_change(pinned):
    (pinned.workdir / "tools" / "poc.py").write_bytes(POC2)

    silent = pinned("member-1", "artifact", path="tools/poc.py")
    named = pinned("member-1", "artifact", path="tools/poc.py", text="prints a version")

    assert silent.text.startswith(
        "refused: A2 pin A1@1 (artifact rule: republishing a pinned revision needs `text` "
        "naming the change)"
    )
    assert named.text.endswith("reviews of r1 stay pinned · Q1 repin request to member-2 (A2)")
    t = pinned.state().threads["Q1"]
    assert (t.kind, t.by, t.to, t.target, t.repin) == (
        "review-request",
        "member-1",
        "member-2",
        "A2",
        "A1@2",
    )


def test_the_repin_request_resolves_when_the_dependent_pins_the_new_revision(pinned):
    (pinned.workdir / "tools" / "poc.py").write_bytes(POC2)
    pinned("member-1", "artifact", path="tools/poc.py", text="prints a version")
    (pinned.workdir / "lib" / "check.py").write_text("import poc  # r2\n")

    result = pinned("member-2", "artifact", path="lib/check.py", dependsOn="A1@2")

    assert result.text.endswith("· Q1 resolved")
    assert pinned.state().threads["Q1"].state == "resolved"
    assert pinned.state().artifacts["A2"].current.depends_on == {"A1": 2}


def test_a_dependson_cycle_is_refused_and_nothing_is_written(pinned):
    before = pinned.ledger_bytes()
    (pinned.workdir / "tools" / "poc.py").write_bytes(POC2)

    result = pinned("member-1", "artifact", path="tools/poc.py", dependsOn=["A2@1"], text="x")

    assert result.text == (
        "refused: A1 dependsOn A2, which already depends on A1 (artifact rule: no dependsOn "
        "cycle); drop that pin"
    )
    assert pinned.ledger_bytes() == before
    assert not (run_dir(pinned) / "revisions" / sha(POC2)).exists()


def test_a_bare_dependency_pins_its_current_revision(published):
    (published.workdir / "b.py").write_text("x\n")

    published("member-2", "artifact", path="b.py", criteria="c", dependsOn="A1")

    assert published.state().artifacts["A2"].current.depends_on == {"A1": 1}


# -- findings citing runnables ---------------------------------------------------------------------


def test_a_finding_citing_an_unregistered_runnable_is_told_to_register_it(crew):
    crew.claimed("member-1", "Audit app/db/query.py")
    fields = {"concern": "sqli", "concernDef": "SQL built from input", "evidence": "x"}

    warned = crew("member-1", "finding", text="Injection, see artifacts/exploit.py", **fields)

    assert warned.ok
    assert warned.text.endswith(
        "Warning: artifacts/exploit.py is cited but no A# or R# covers it (reproductions rule); "
        "register it with `horde artifact path=... artifactKind=runnable criteria=...`."
    )


def test_a_finding_citing_a_registered_runnable_or_a_document_gets_no_warning(published):
    published.claimed("member-1", "Audit app/db/query.py")
    fields = {"concern": "sqli", "concernDef": "SQL built from input"}

    result = published(
        "member-1",
        "finding",
        text="Injection reproduced",
        evidence="artifacts/tools/poc.py and artifacts/notes.md",
        **fields,
    )

    assert "Warning" not in result.text


# -- resource state ---------------------------------------------------------------------------------


@pytest.fixture
def lab(crew):
    assert crew("member-1", "resource", name="lab", text="docker lab").id == "R1"
    return crew


def test_the_owner_publishes_state_lease_ports_and_health(lab):
    result = lab(
        "member-1",
        "resource-state",
        name="lab",
        state="ready",
        lease="until 18:00",
        ports=["8080", "8443"],
        evidence="curl localhost:8080/health -> 200",
    )

    assert (result.ok, result.id, result.text) == (
        True,
        "R1",
        "ok R1 `lab` is ready (generation 1) · ports 8080, 8443",
    )
    res = lab.state().resources["R1"]
    assert (res.state, res.lease, res.ports, res.health) == (
        "ready",
        "until 18:00",
        [8080, 8443],
        "curl localhost:8080/health -> 200",
    )
    assert (
        "state: ready (generation 1, lease until 18:00, ports 8080, 8443)"
        in (lab.root / "RESOURCES.md").read_text()
    )


def test_only_the_owner_publishes_resource_state(lab):
    lab("member-2", "resource", name="lab")

    result = lab("member-2", "resource-state", id="R1", state="broken", evidence="500s")

    assert result.text.startswith(
        "refused: R1 `lab` is owned by member-1 (resources rule: only the owner publishes its "
        "state)"
    )


def test_ready_needs_health_evidence(lab):
    result = lab("member-1", "resource-state", name="lab", state="ready")

    assert result.text.startswith("refused: `ready` without health evidence (resources rule")


def test_a_port_held_by_another_live_resource_is_refused_until_it_retires(lab):
    lab("member-2", "resource", name="db")
    lab("member-1", "resource-state", name="lab", state="building", ports=[5432])

    clash = lab("member-2", "resource-state", name="db", state="building", ports=[5432])
    lab("member-1", "resource-state", name="lab", state="retired")
    after = lab("member-2", "resource-state", name="db", state="building", ports=[5432])

    assert clash.text.startswith(
        "refused: port 5432 is held by R1 `lab` (owner member-1) (resources rule: one live "
        "resource per port)"
    )
    assert after.ok


def test_a_rebuild_is_a_new_generation(lab):
    lab("member-1", "resource-state", name="lab", state="building")
    lab("member-1", "resource-state", name="lab", state="broken", evidence="exit 1")

    result = lab("member-1", "resource-state", name="lab", state="building")

    assert result.text == "ok R1 `lab` is building (generation 2)"
    assert lab.state().resources["R1"].generation == 2


# -- reads -----------------------------------------------------------------------------------------


def test_collaboration_pages_25_records_per_collection_and_filters_by_target(crew):
    for n in range(30):
        crew("member-2", "message", to="member-1", kind="question", text=f"Question {n}")
    (crew.workdir / "a.md").write_text("a\n")
    crew("member-1", "artifact", path="a.md", criteria="c")
    crew("member-2", "message", to="member-1", kind="question", target="A1", text="About A1")

    first = crew("member-3", "collaboration").text
    second = crew("member-3", "collaboration", page=2).text
    small = crew("member-3", "collaboration", limit=5).text
    about = crew("member-3", "collaboration", target="a1").text

    assert "Threads: 31 (1-25)" in first and "- Q25 " in first and "- Q26 " not in first
    assert "Threads: 31 (26-31)" in second and "Artifacts: 1 (past the end: 1 page(s))" in second
    assert "Threads: 31 (1-5)" in small
    assert "Threads: 1 (1-1)\n- Q31 question member-2 -> member-1 about A1 r1 · open" in about
    assert "Acceptance: 1 (1-1)\n- A1 r1 open: no qualifying review of r1 yet" in about


@pytest.mark.parametrize("limit", [0, 101])
def test_collaboration_limit_is_1_to_100(crew, limit):
    result = crew("member-3", "collaboration", limit=limit)

    assert (result.ok, result.text) == (
        False,
        f"refused: `limit`={limit} is outside 1-100 (collaboration paging rule); give a limit "
        "from 1 to 100",
    )


def test_inspect_shows_threads_artifacts_and_idea_aliases(published):
    published("member-2", "message", to="member-1", kind="question", target="A1", text="Why?")
    published("member-1", "respond", id="Q1", text="Because.")

    thread = published("member-3", "inspect", target="Q1").text
    art = published("member-3", "inspect", target="A1").text
    idea = published("member-3", "inspect", target="I1")

    assert thread.startswith("Q1 question member-2 -> member-1 about A1 r1 · responded")
    assert "respond by member-1" in thread and "Because." in thread
    assert art.startswith("A1 artifacts/tools/poc.py (owner member-1, run r1)\n- r1 runnable")
    assert art.endswith("Acceptance: A1 r1 open: no qualifying review of r1 yet\n")
    assert idea.ok and '"text": "Audit module 1 of app/"' in idea.text


def test_inbox_lists_open_threads_to_and_from_the_actor(published):
    published("member-2", "message", to="member-1", kind="question", text="Which Python?")
    published("member-1", "message", to="member-3", kind="handoff", text="Take #1")

    text = published("member-1", "inbox").text

    assert text.startswith("Inbox of member-1: 1 open thread(s) to you, 1 of yours open.")
    assert "- Q1 question member-2 -> member-1 · open\n    Which Python?" in text
    assert "- Q2 handoff member-1 -> member-3 · open\n    Take #1" in text


# -- the frozen acceptance ---------------------------------------------------------------


def test_acceptance_json_carries_the_sha256_of_each_scored_artifact_revision(published):
    """What was scored is identified by hash: the revision the acceptance is about."""
    import json

    from horde_tui.supervisor.acceptance_freeze import freeze

    (published.workdir / "tools" / "poc.py").write_bytes(POC2)
    assert published("member-1", "artifact", path="tools/poc.py", text="prints twice").ok
    (published.workdir / "notes.md").write_text("# notes\n")
    assert published("member-2", "artifact", path="notes.md", criteria="explains the poc").ok

    freeze(published.root, published.state(), "r1")
    frozen = json.loads((run_dir(published) / "ACCEPTANCE.json").read_text())
    scored = {a["target"]: a for a in frozen}

    a1, a2 = scored["A1"], scored["A2"]
    assert (a1["revision"], a1["sha256"], a1["path"]) == (2, sha(POC2), "artifacts/tools/poc.py")
    assert a2["sha256"] == sha((run_dir(published) / a2["path"]).read_bytes())
    assert a1["sha256"] == sha((run_dir(published) / "revisions" / a1["sha256"]).read_bytes())
    snapshot = json.loads((run_dir(published) / "snapshot" / "ACCEPTANCE.json").read_text())
    assert snapshot == frozen
