"""`horde-tui fork RUN --at E#`: a new run from RUN's ledgers as they were after E#.

The scene is written through the real `horde` tool; after every answer the test keeps
what each markdown ledger said then. A fork at any of those events must fold to exactly
that, in a copy of the working directory with the run's settings.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from horde_tui.commands.fork import ForkRefused, prepare
from horde_tui.store.runs import UnknownRun
from horde_tui.store.state import RENDERERS
from horde_tui.store.store import HordeStore


@pytest.fixture
def scene(horde):
    """Run r1 with a task, a manifest and a dozen writes; returns (horde, {E#: renders})."""
    (horde.workdir / "app.py").write_text("PASSWORD = 'hunter2'\n")
    horde.store("parent").ensure_run("r1", "# Task\n\nReview app.py\n")
    run_dir = horde.root / "runs" / "r1"
    manifest = {
        "members": [{"name": "member-1"}, {"name": "member-2"}],
        "config": {"model": "openai/gpt-4o-mini", "max_minutes": 30, "member_models": {}},
        "request": {"count": 2, "layers": [], "verifier": True, "until_stop": False},
    }
    (run_dir / "MANIFEST.json").write_text(json.dumps(manifest))
    seen: dict[str, dict[str, str]] = {}

    def call(actor: str, action: str, **fields: str) -> str:
        result = horde(actor, action, run="r1", **fields)
        assert result.event, result.text
        seen[result.event] = {k: horde.state(actor).render(k) for k in RENDERERS}
        return str(result.id or "")

    idea = call("member-1", "idea", text="Check app.py for secrets")
    call("member-1", "claim", id=idea)
    call("member-2", "claim", id=idea)  # refused: recorded, writes nothing
    call("member-1", "post", text="looking at app.py")
    call(
        "member-1",
        "finding",
        text="app.py hard-codes the password",
        evidence="app.py:1 `PASSWORD = 'hunter2'`",
        concern="secrets",
        concernDef="secrets in source",
    )
    other = call("member-2", "idea", text="Check login() timing")
    call("member-2", "claim", id=other)
    call("member-2", "fact", text="app.py has one module-level constant")
    call("member-1", "done", id=idea, result="filed F1")
    call("member-2", "post", text="nothing on timing yet")
    return horde, seen


def test_a_fork_at_any_event_folds_to_the_ledgers_as_they_were(scene, tmp_path: Path) -> None:
    horde, seen = scene
    for n, (event, renders) in enumerate(seen.items()):
        fork = prepare(horde.workdir, "r1", event, tmp_path / f"fork-{n}")
        store = HordeStore(fork.into / ".horde", "reader")
        store.refresh()
        assert {k: store.state.render(k) for k in RENDERERS} == renders, event
    last = fork.into
    assert (last / "app.py").read_text() == "PASSWORD = 'hunter2'\n"  # the material, copied
    assert not (last / ".horde" / "runs").exists()  # nothing of the original's run files
    config = tomllib.loads((last / ".horde" / "config.toml").read_text())["horde"]
    assert config == {"model": "openai/gpt-4o-mini", "max_minutes": 30, "member_models": {}}
    assert fork.prompt == "Review app.py" and fork.at == event


def test_a_fork_takes_the_lessons_along(scene, tmp_path: Path) -> None:
    """A run started with `lessons = true` (kept in the fork's config.toml) would be
    refused in a fork without them: the fork gets the project's LESSONS.md as it is."""
    horde, seen = scene
    (horde.root / "LESSONS.md").write_text("## 1. Claim first. (raised in 2 of 2 runs)\n")
    fork = prepare(horde.workdir, "r1", next(iter(seen)), tmp_path / "fork")
    assert (fork.into / ".horde" / "LESSONS.md").read_text() == (
        horde.root / "LESSONS.md"
    ).read_text()


def test_bad_forks_are_refused_in_one_line(scene, tmp_path: Path) -> None:
    horde, _ = scene
    with pytest.raises(UnknownRun, match=r"^no run named r9 in .*\(newest: r1\)"):
        prepare(horde.workdir, "r9", "E1", None)
    for run, at, into, expected in (
        ("r1", "E999", None, "refused: the run has no event E999; its events end at E"),
        ("r1", "x", None, "refused: --at 'x' is not an event id; give E# (e.g. E42)"),
        ("r1", "E2", horde.workdir, "exists and is not empty; pass --into a new folder"),
    ):
        with pytest.raises(ForkRefused) as refused:
            prepare(horde.workdir, run, at, into)
        assert expected in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.slow  # a whole real run: `pytest -m slow`
@pytest.mark.e2e
def test_horde_tui_fork_starts_a_run_there_that_says_where_it_came_from(
    scene, tmp_path: Path
) -> None:
    """The fork's run starts with the original's task and members on the forked ledgers;
    its MANIFEST.json names RUN@E#, and its members see the findings filed before E#."""
    import subprocess

    from support.cli import cli_argv, stub_env
    from support.plans import horde as call

    from horde_tui.stubmodel import StubThread
    from horde_tui.stubmodel.agent import AgentPolicy

    horde, seen = scene
    at = list(seen)[4]  # just after member-1 filed F1
    # A board post: a run whose members wrote nothing ends `failed` (the outcome table).
    plans = {"*": [call("findings"), call("post", text="read F1"), {"say": "Done."}]}
    with StubThread(policy=AgentPolicy(plans)) as stub:
        into = tmp_path / "forked"
        done = subprocess.run(
            cli_argv("fork", "r1", "--at", at, "--into", str(into), "--headless"),
            cwd=horde.workdir,
            env=stub_env(stub, HORDE_DELIVERABLE="false", HORDE_POSTMORTEM="false"),
            capture_output=True,
            text=True,
            timeout=240,
        )
        sent = [json.dumps(r.body) for r in stub.stub.requests]
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert f"forked run r1 at {at}" in done.stdout
    (run_dir,) = [p for p in (into / ".horde" / "runs").iterdir() if p.name != "r1"]
    manifest = json.loads((run_dir / "MANIFEST.json").read_text())
    assert manifest["forked_from"] == f"r1@{at}"
    assert manifest["request"]["count"] == 2
    assert "Review app.py" in (run_dir / "TASK.md").read_text()
    assert any("app.py hard-codes the password" in r for r in sent), "the forked run never showed F1"


def _demo_run(horde_dir: Path) -> str:
    """A run directory whose MANIFEST.json says the demo model played it."""
    from support.rundir import RunDir

    run = RunDir(horde_dir, "20260102-120000-de30")
    manifest = json.loads((run.path / "MANIFEST.json").read_text())
    (run.path / "MANIFEST.json").write_text(json.dumps({**manifest, "demo_model": True}))
    run.event(0, "run-start", members=3, model="openai/stub")
    return run.path.name


def test_a_demo_runs_fork_cannot_be_detached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The demo model lives in the process that hosts the fork, so a detached fork would
    lose it: refused in one line before anything is copied."""
    from horde_tui.commands.cli import main

    project = tmp_path / "project"
    run = _demo_run(project / ".horde")
    monkeypatch.chdir(project)
    into = tmp_path / "fork"
    assert main(["fork", run, "--at", "E1", "--into", str(into), "--detach"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and "demo model" in err, err
    assert not into.exists()


@pytest.mark.slow  # the demo, then its fork: two whole real runs
@pytest.mark.e2e
def test_a_fork_of_a_demo_run_is_played_by_the_demo_model(tmp_path: Path) -> None:
    """The demo's model died with the demo; its fork serves the demo model again (the
    run before pointed its gateway at the dead one's port, and every call failed)."""
    import subprocess

    from support.cli import cli_argv, host_env

    env = host_env(TMPDIR=str(tmp_path))
    demo = subprocess.run(
        cli_argv("demo", "--headless", "--speed", "0"),
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert demo.returncode == 3, demo.stdout[-2000:] + demo.stderr[-2000:]  # solved
    (workdir,) = tmp_path.glob("horde-demo-*")
    (run,) = (p.name for p in (workdir / ".horde" / "runs").iterdir())
    into = tmp_path / "forked"
    fork = ["fork", run, "--at", "E5", "--into", str(into), "--headless", "--speed", "0"]
    done = subprocess.run(
        cli_argv(*fork),
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode in (0, 3), done.stdout[-3000:] + done.stderr[-2000:]
    assert "the demo model" in done.stdout
    (forked,) = [p for p in (into / ".horde" / "runs").iterdir() if p.name != run]
    manifest = json.loads((forked / "MANIFEST.json").read_text())
    assert manifest["demo_model"] is True and manifest["forked_from"] == f"{run}@E5"
    assert "model_error" not in (forked / "events.jsonl").read_text()
