"""Shared fixtures: a `.horde/` in a temp dir and a transcript-style call helper.

`horde(actor, action, **fields)` runs one `horde` tool call as `actor`, so a test reads
like the transcript of a run: who did what, and what the tool answered.
"""

from __future__ import annotations

import gc
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from horde_tui.protocol import ToolResult, run_action
from horde_tui.sandbox.policy import bwrap_problem, network_problem
from horde_tui.store.state import LedgerState
from horde_tui.store.store import Decision, HordeStore
from horde_tui.stubmodel import StubThread

if TYPE_CHECKING:
    from support.cli import StoppedClean


class Horde:
    """One `.horde/` directory with one `HordeStore` per actor, created on first use."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.root = workdir / ".horde"
        self.stores: dict[str, HordeStore] = {}

    def store(self, actor: str = "member-1") -> HordeStore:
        if actor not in self.stores:
            self.stores[actor] = HordeStore(self.root, actor)
        return self.stores[actor]

    def __call__(
        self, actor: str, action: str, role: str = "member", run: str = "r1", **fields: Any
    ) -> ToolResult:
        return run_action(self.store(actor), {"action": action, **fields}, run=run, role=role)

    def state(self, actor: str = "member-1") -> LedgerState:
        """The folded state as `actor` sees it after catching up with the file."""
        store = self.store(actor)
        store.refresh()
        return store.state

    def claimed(self, actor: str, text: str) -> str:
        """Add an idea as `actor` and claim it; return its id."""
        ident = self(actor, "idea", text=text).id
        assert self(actor, "claim", id=ident).ok
        return str(ident)

    def inject(self, actor: str, *records: dict[str, Any], run: str = "r1") -> None:
        """Append raw ledger records through the locked write path, with no rule applied.

        For state the tool cannot reach by itself: V# reviews, parent seeding.
        """
        receipt = self.store(actor).transact(
            run, "test-inject", {}, lambda _state: Decision(True, "ok", None, list(records))
        )
        assert receipt.ok

    def events(self, run: str = "r1") -> list[dict[str, Any]]:
        path = self.root / "runs" / run / "events.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def ledger_bytes(self) -> bytes:
        path = self.root / "ledger.jsonl"
        return path.read_bytes() if path.exists() else b""


@pytest.fixture
def horde(tmp_path: Path) -> Horde:
    return Horde(tmp_path)


PROBLEM = bwrap_problem()
"""Why bubblewrap cannot run here, or None."""
needs_bwrap = pytest.mark.skipif(PROBLEM is not None, reason=f"no sandbox here: {PROBLEM}")


@pytest.fixture
def no_bwrap(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This process believes bwrap is not installed (`HORDE_BWRAP` names a missing one)."""
    monkeypatch.setenv("HORDE_BWRAP", "horde-no-such-bwrap")
    bwrap_problem.cache_clear()
    yield
    bwrap_problem.cache_clear()


@pytest.fixture
def no_slirp4netns(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This process believes slirp4netns is not installed (`HORDE_SLIRP4NETNS` names a
    missing one): commands with the network on share the host's."""
    monkeypatch.setenv("HORDE_SLIRP4NETNS", "horde-no-such-slirp4netns")
    network_problem.cache_clear()
    yield
    network_problem.cache_clear()


# -- a real gateway process in front of the scripted stub model ------------------------------


@dataclass
class GatewayProcess:
    """A running `python -m horde_tui.gateway` serving the stub model."""

    url: str
    token: str
    proc: subprocess.Popen[str]
    run_dir: Path
    stub: StubThread

    def member_env(self, horde_dir: Path, run: str, name: str, **extra: str) -> dict[str, str]:
        """The environment a supervisor gives a member process."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("HORDE_")}
        env.update(
            HORDE_MEMBER=name,
            HORDE_NAME=name,
            HORDE_DIR=str(horde_dir),
            HORDE_RUN=run,
            HORDE_ROLE="member",
            HORDE_ATTEMPT="1",
            HORDE_PARENT_PID=str(os.getpid()),
            HORDE_GATEWAY_URL=self.url,
            HORDE_GATEWAY_TOKEN=self.token,
        )
        env.update(extra)
        return env


def start_gateway(
    stub: StubThread,
    run_dir: Path,
    *args: str,
    preexec_fn: Callable[[], None] | None = None,
    **env_extra: str,
) -> GatewayProcess:
    """Start a gateway process and wait (bounded) for its `listening on URL` line;
    `preexec_fn` runs in the child before the gateway starts (a lowered rlimit)."""
    token = "test-token-" + os.urandom(4).hex()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HORDE_")}
    env.update(
        HORDE_MODEL=stub.model,
        HORDE_API_BASE=stub.api_base,
        HORDE_API_KEY="stub-key",
        HORDE_GATEWAY_TOKEN=token,
        HORDE_GATEWAY_BACKOFF_MS="20",
        HORDE_PARENT_PID=str(os.getpid()),
    )
    env.update(env_extra)  # may replace the stub's model, endpoint and key
    if preexec_fn is not None:  # it must run in the gateway's own process: spawn that
        env.pop(GATEWAY_FORK_ENV, None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "horde_tui.gateway", "--run-dir", str(run_dir), *args],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=preexec_fn,
    )
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], 30)
    line = proc.stdout.readline() if ready else ""
    if not line.startswith("listening on "):
        proc.kill()
        raise RuntimeError(f"gateway did not start: {line!r}")
    return GatewayProcess(line.split()[-1], token, proc, run_dir, stub)


@pytest.fixture(scope="session")
def stub_model() -> Iterator[StubThread]:
    with StubThread() as stub:
        yield stub


@pytest.fixture(scope="session")
def gateway(
    stub_model: StubThread, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[GatewayProcess]:
    """One gateway for the session: litellm's import (seconds) is paid once."""
    gw = start_gateway(stub_model, tmp_path_factory.mktemp("gateway-run"))
    try:
        yield gw
    finally:
        gw.proc.terminate()
        gw.proc.wait(10)


@pytest.fixture
def no_horde_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings are read from the environment and members inherit it: keep the host's
    HORDE_* out of a test (the launch form, a hosted run's members)."""
    for name in list(os.environ):
        if name.startswith("HORDE_"):
            monkeypatch.delenv(name)


@pytest.fixture
def fast_gateway(no_horde_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """`no_horde_env`, and a gateway that retries a refused model call after 20 ms
    instead of its production backoff (the stub model refuses on purpose)."""
    monkeypatch.setenv("HORDE_GATEWAY_BACKOFF_MS", "20")


@pytest.fixture
def in_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run the test from `tmp_path`, as a person runs `horde-tui` from their project."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HORDE_DIR", raising=False)
    return tmp_path


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A fresh directory with a short path, for a test whose socket goes under it: a pytest
    worker's `tmp_path` (`.../popen-gw1/test_name_0/`) leaves too little of a Unix socket
    path's 108 bytes."""
    with tempfile.TemporaryDirectory(prefix="horde-t") as short:
        yield Path(short)


@pytest.fixture(scope="session")
def stopped_clean(tmp_path_factory: pytest.TempPathFactory) -> StoppedClean:
    """One headless run stopped clean from another shell, shared by the tests that read
    such a run (the stop, its report and board, the post-mortem in the output)."""
    from support.cli import run_stopped_clean  # whole-run helpers load only when used

    return run_stopped_clean(tmp_path_factory.mktemp("stopped-clean"))


@pytest.fixture(scope="session")
def demo_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's kept project after one `demo --headless --speed 0` (a solved run), shared
    by the commands that read a finished run (`ask`, `share`). Read it only: a test that
    writes there copies it first (`shutil.copytree`)."""
    from support.cli import run_demo

    return run_demo(tmp_path_factory.mktemp("demo"))


@pytest.fixture
def demo_copy(demo_project: Path, tmp_path: Path) -> Path:
    """A copy of the demo's kept project, for a test that writes there (an ask appends
    to its run's asks.jsonl)."""
    return Path(shutil.copytree(demo_project, tmp_path / demo_project.name, symlinks=True))


E2E = Path(__file__).resolve().parent / "e2e"
"""Whole runs with real processes: the folder is the marker."""


# -- pytest-xdist: how many workers, and which tests share one -----------------------------

WORKERS = 3
"""Three on the CI machine's two cores: with every gateway forked (not importing litellm),
the suite's real processes wait more than they compute. The default run on one tree,
2026-12-06: 330 s of wall time with two workers, 301 s with three."""


def workers_for(args: list[str]) -> int:
    """`WORKERS` for a run of many files, none (one process) for one file or its tests:
    starting workers costs more than it saves on a single file."""
    files = {arg.split("::")[0] for arg in args}
    if len(files) == 1 and Path(next(iter(files))).is_file():
        return 0
    return WORKERS


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """What `-n auto` (pyproject's addopts) means for this suite: `workers_for` its paths."""
    return workers_for(list(config.args))


def pytest_configure(config: pytest.Config) -> None:
    """A suite started in the background of a script (`cmd &`) inherits SIGINT ignored,
    and so would every process a test starts: a Ctrl-C test (export, eval, stop) would
    then see it ignored. A terminal's Ctrl-C is what those tests mean: take it back.

    The gateway fork server starts here, in each process that runs tests, so that its
    litellm import overlaps collection."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    runs_tests = os.environ.get("PYTEST_XDIST_WORKER") or not getattr(
        config.option, "numprocesses", None
    )
    if runs_tests and os.environ.get(SPAWN_GATEWAYS_ENV) != "1":
        _FORK_SERVER.start()


def pytest_unconfigure(config: pytest.Config) -> None:
    _FORK_SERVER.stop()


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection loaded (the libraries, every test module) lives for the whole
    run: out of the collector's full scans from here on (`gc.freeze`). `pytest tests/app
    -n 0`: 155 CPU-s without, 146 with (2026-12-06, one run each)."""
    gc.collect()
    gc.freeze()


GATEWAY_FORK = Path(__file__).parent / "support" / "gatewayfork"
GATEWAY_FORK_ENV = "TEST_GATEWAY_FORKSERVER"
SPAWN_GATEWAYS_ENV = "HORDE_TEST_SPAWN_GATEWAYS"
"""Set to 1: no fork server, every gateway of the run starts the ordinary way."""


class ForkServer:
    """One fork server per test process: every gateway a test starts, directly or through
    a run, is forked from it with litellm imported (support/gatewayfork/server.py says
    why and what differs). `HORDE_TEST_SPAWN_GATEWAYS=1` turns it off for a whole run;
    the `spawned_gateway` marker for one test."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.folder = ""
        self.saved: dict[str, str | None] = {}

    def start(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="gwfork-", dir="/tmp")  # a socket path is short
        path = os.path.join(self.folder, "s")
        self.saved = {name: os.environ.get(name) for name in (GATEWAY_FORK_ENV, "PYTHONPATH")}
        os.environ[GATEWAY_FORK_ENV] = path
        os.environ["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(GATEWAY_FORK), self.saved["PYTHONPATH"]) if p
        )
        # Started after: the server imports the starter's helpers from its sitecustomize.
        self.proc = subprocess.Popen(
            [sys.executable, str(GATEWAY_FORK / "server.py"), path, str(os.getpid())],
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )

    def stop(self) -> None:
        if self.proc is None:
            return
        for name, value in self.saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        self.proc.terminate()
        self.proc.wait(10)
        shutil.rmtree(self.folder, ignore_errors=True)
        self.proc = None


_FORK_SERVER = ForkServer()


@pytest.fixture(autouse=True)
def _spawned_gateway(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests marked `spawned_gateway` start their gateways as real spawned processes."""
    if request.node.get_closest_marker("spawned_gateway"):
        monkeypatch.delenv(GATEWAY_FORK_ENV, raising=False)


SHARED_RUNS = ("stopped_clean", "demo_project")
"""Session fixtures that cost a whole run: their tests go to one worker, which starts it once."""


@pytest.hookimpl(tryfirst=True)  # before xdist reads the marks (its hook names the groups)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under `--dist loadgroup` (pyproject's addopts) a test goes to any free worker, and each
    worker sets up its own copy of a wider-scoped fixture. A module whose tests share a
    module-scoped fixture (a gateway, a recorded run) stays on one worker, so it is set up
    once; the tests of a whole shared run (`SHARED_RUNS`) likewise.

    The folder is the e2e marker: every test under `tests/e2e/` is `e2e` (`pytest -m e2e`
    and `pytest tests/e2e` select the same tests; tests/project/test_suite_layout.py)."""
    for item in items:
        if E2E in item.path.parents:
            item.add_marker(pytest.mark.e2e)
        info = getattr(item, "_fixtureinfo", None)
        if info is None:
            continue
        shared = [name for name in SHARED_RUNS if name in info.names_closure]
        if shared:
            item.add_marker(pytest.mark.xdist_group(shared[0]))
            continue
        defs = info.name2fixturedefs.values()
        if any(d[-1].scope == "module" for d in defs if d):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
