"""A run's outcome follows how it ended: the rows of `OUTCOME_TABLE`, each met by a real
run (a supervisor and its members on the stub model, through one shared
gateway so that litellm's import is paid once), and the docs' table is the code's. Two
rows need a run of their own and have it in test_supervisor_e2e.py (slow): `interrupted`
(the supervisor SIGKILLed, then `finalize`) and `stopped at budget` (a priced model).

The run whose provider dies after the canary (issue 28) is played for real: the stub
server is stopped and every member's call is refused at the socket."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import GatewayProcess, start_gateway
from support.cli import cli
from support.gateway import closed_port
from support.paths import REPO
from support.plans import HELPERS, horde, lifecycle, settings, worker
from support.processes import wait_until

from horde_tui.protocol.outcome import OUTCOME_TABLE, RunSummary
from horde_tui.stubmodel import StubThread
from horde_tui.stubmodel.agent import AgentPolicy
from horde_tui.stubmodel.script import Step
from horde_tui.supervisor.run import Supervisor, SupervisorEvent
from horde_tui.supervisor.setup import RunRequest
from horde_tui.view.run import RunsIndex

pytestmark = pytest.mark.e2e

RUNNING_PAGE = REPO / "docs" / "guide" / "running.md"
"""The user guide's page that holds the outcome table."""

REFUSED = Step(status=400, error_message="the provider refused the request: bad key")
"""A provider error the gateway does not retry: the member ends `model_error` at once."""


class Switch:
    """The stub's policy, switched per test: the runs of this module share one stub and
    one gateway, and each test plays its own plans (None: refuse every call)."""

    def __init__(self) -> None:
        self.play: Callable[[str, dict[str, Any]], Step | None] = lambda m, b: None

    def __call__(self, member: str, body: dict[str, Any]) -> Step | None:
        return self.play(member, body)


@dataclass
class Shared:
    stub: StubThread
    switch: Switch
    gateway: GatewayProcess


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shared]:
    switch = Switch()
    with StubThread(policy=switch) as stub:
        gw = start_gateway(stub, tmp_path_factory.mktemp("shared-gw"), "--shared")
        try:
            # litellm's import, paid here once rather than by whichever run comes first.
            assert wait_until(lambda: httpx.get(gw.url + "/health").json()["litellm_ready"], 60)
            yield Shared(stub, switch, gw)
        finally:
            gw.proc.terminate()
            gw.proc.wait(30)


@pytest.fixture
def on_shared(
    shared: Shared, fast_gateway: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Shared:
    """This test's runs join the module's gateway (their own tokens and folders)."""
    monkeypatch.setenv("HORDE_SHARED_GATEWAY_URL", shared.gateway.url)
    monkeypatch.setenv("HORDE_SHARED_GATEWAY_TOKEN", shared.gateway.token)
    (tmp_path / "app.py").write_text("PASSWORD = 'hunter2'\n")
    return shared


def refusing(refused: Callable[[str, dict[str, Any]], bool], plans: dict[str, Any]) -> Any:
    """`plans` played by `AgentPolicy`, except the calls `refused` picks, which fail."""
    agent = AgentPolicy({**plans, **HELPERS})
    return lambda m, b: REFUSED if refused(m, b) else agent(m, b)


def after_first_reply() -> Callable[[str, dict[str, Any]], bool]:
    """Refuse every call after the first (member-1's): the canary passes, then the
    provider fails everyone."""
    calls = iter(range(1_000_000))
    return lambda member, body: next(calls) > 0


LISTER = [horde("list"), {"say": "Nothing to add."}]
FILER = [*worker("Check app.py for a hard-coded password", "app.py hard-codes it", "secrets")]


@dataclass(frozen=True)
class Row:
    """One way a run ends: the stub's behaviour, what (if anything) the test does once the
    canary passed, and the outcome and exit status it must end with."""

    policy: Callable[[], Any]
    outcome: str
    exit_code: int
    diagnosis: str
    """A regex the diagnosis must match."""
    act: Callable[[Supervisor], Any] | None = None
    members: int = 2
    cfg: tuple[tuple[str, Any], ...] = ()
    """Settings of this run besides the module's."""
    env: tuple[tuple[str, str], ...] = ()
    """Environment variables of this run (the shared gateway's address)."""


async def _stop(sup: Supervisor) -> None:
    await sup.stop_hard()


async def _past_deadline(sup: Supervisor) -> None:
    sup.started -= sup.settings.supervisor.max_minutes * 60  # type: ignore[operator]


BUSY = [{**horde("list"), "hold_ms": 200}] * 10
"""A member that reads for a few seconds, then ends: a clean stop needs no grace."""


ROWS = {
    "finished": Row(
        lambda: AgentPolicy({"member-1": [*FILER, {"say": "Done."}], "*": LISTER, **HELPERS}),
        "finished",
        0,
        r"^every member finished its work; 4 ledger writes by member-1$",
    ),
    "failed-no-ledger-write": Row(
        lambda: AgentPolicy({"*": LISTER, **HELPERS}),
        "failed",
        1,
        r"^every member finished its work; no member wrote the ledger$",
    ),
    "failed-every-member-failed": Row(
        lambda: refusing(after_first_reply(), {"*": [{**horde("list"), "hold_ms": 300}]}),
        "failed",
        1,
        r"^2 of 2 members ended model_error: .*bad key.* \(openai/stub at http://127\.0\.0\.1:\d+/v1\); "
        r"no member wrote the ledger$",
    ),
    "finished-with-failures": Row(
        lambda: refusing(lambda m, b: m == "member-2", {"member-1": [*FILER, {"say": "Done."}]}),
        "finished with failures",
        5,
        r"^1 of 2 members ended model_error: .*bad key.*; 4 ledger writes by member-1$",
    ),
    "canary-failed": Row(
        lambda: refusing(lambda m, b: True, {}),
        "canary failed",
        1,
        r"^the canary \(member-1\) failed twice \(model_error\)",
    ),
    "solved": Row(
        lambda: AgentPolicy(
            {
                "member-1": [horde("solved", text="the password is hard-coded"), {"say": "ok"}],
                "member-2": [
                    {**horde("confirm-solved", text="checked app.py:1"), "until_ok": 80},
                    {"say": "validated"},
                ],
                **HELPERS,
            }
        ),
        "solved",
        3,
        r"^answer by member-1 validated by member-2$",
    ),
    "solved-unvalidated": Row(
        lambda: AgentPolicy(
            {"member-1": [horde("solved", text="the password is hard-coded"), {"say": "ok"}]}
        ),
        "solved-unvalidated",
        4,
        r"^answer by member-1 was not validated by another member$",
        members=1,
    ),
    "failed-no-gateway": Row(
        lambda: AgentPolicy({}),
        "failed",
        1,
        r"^the model gateway did not start|^the shared model gateway at .* did not answer",
        env=(("HORDE_SHARED_GATEWAY_URL", f"http://127.0.0.1:{closed_port()}"),),
    ),
    "stopped-at-deadline": Row(
        lambda: AgentPolicy({"*": BUSY, **HELPERS}),
        "stopped at deadline",
        1,
        r"^the 30-minute deadline \(HORDE_MAX_MINUTES\) was reached$",
        act=_past_deadline,
        cfg=(("max_minutes", 30),),
    ),
    "stopped-by-user": Row(
        lambda: AgentPolicy({"*": [{**horde("list"), "hold_ms": 200}] * 200, **HELPERS}),
        "stopped by user",
        130,
        r"^stopped hard by the user$",
        act=_stop,
    ),
}


def run_row(workdir: Path, shared: Shared, row: Row) -> tuple[RunSummary, Supervisor]:
    shared.switch.play = row.policy()
    cfg = settings(
        shared.stub,
        deliverable=False,
        postmortem=False,
        reset_cap=1,
        allow_unverified=True,
        **dict(row.cfg),
    )
    events: list[SupervisorEvent] = []
    sup = Supervisor(
        workdir, RunRequest("Review app.py", row.members, verifier=False), cfg, events.append
    )

    async def drive() -> RunSummary:
        task = asyncio.create_task(sup.run())
        if row.act is not None:
            while not any(e.kind == "canary" for e in events) and not task.done():
                await asyncio.sleep(0.05)
            await row.act(sup)
        summary = await asyncio.wait_for(task, 120)
        assert summary is not None
        return summary

    return asyncio.run(drive()), sup


@pytest.mark.parametrize("name", list(ROWS))
def test_each_row_of_the_outcome_table_is_how_a_real_run_ends(
    name: str, on_shared: Shared, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    row = ROWS[name]
    for variable, value in row.env:
        monkeypatch.setenv(variable, value)
    summary, sup = run_row(tmp_path, on_shared, row)
    assert (summary.outcome, summary.exit_code) == (row.outcome, row.exit_code), (
        summary.diagnosis,
        [(m.name, m.exit_cause, m.detail) for m in summary.members],
    )
    assert re.search(row.diagnosis, summary.diagnosis), summary.diagnosis
    # Every reader of the finished run names the same outcome.
    report = (sup.run_dir / "REPORT.md").read_text()
    assert report.startswith(f"# Run {sup.run_id} report: {row.outcome}\n"), report[:300]
    assert f"Outcome: **{row.outcome}** (exit code {row.exit_code})" in report
    manifest = json.loads((sup.run_dir / "MANIFEST.json").read_text())
    assert (manifest["outcome"], manifest["diagnosis"], manifest["exit_code"]) == (
        row.outcome,
        summary.diagnosis,
        row.exit_code,
    )
    (listed,) = [r for r in _rows(tmp_path) if r.run_id == sup.run_id]
    assert listed.outcome == row.outcome
    assert lifecycle(sup.run_dir)[-1] == ("run-end", None)
    # `status` with no run live names the last run's end; `--run` that run's.
    line = f"run {sup.run_id} ended: {row.outcome}: {summary.diagnosis}"
    for status in (cli(tmp_path, "status"), cli(tmp_path, "status", "--run", sup.run_id)):
        assert status.returncode == 0 and line in status.stdout.splitlines(), status.stdout


def _rows(workdir: Path) -> list[Any]:
    index = RunsIndex(workdir / ".horde")
    index.refresh()
    return index.rows()


@pytest.mark.slow
def test_a_provider_that_dies_after_the_canary_fails_the_run_and_says_why(
    tmp_path: Path, fast_gateway: None
) -> None:
    """Issue 28's run: the model server stops once the canary answered; every member's
    call is refused at the socket, resets are used up, and the run ends `failed` (exit 1)
    naming the cause and the provider's own line, not `finished`."""
    plans = {"*": [{**horde("list"), "hold_ms": 300}] * 50, **HELPERS}
    stub = StubThread(policy=AgentPolicy(plans))
    events: list[SupervisorEvent] = []

    def sink(event: SupervisorEvent) -> None:
        events.append(event)
        if event.kind == "canary":
            threading.Thread(target=stub.close).start()  # the provider dies now

    try:
        cfg = settings(stub, deliverable=False, postmortem=False, reset_cap=1)
        sup = Supervisor(tmp_path, RunRequest("Review", 3, verifier=False), cfg, sink)
        summary = asyncio.run(asyncio.wait_for(sup.run(), 240))
    finally:
        stub.close()
    assert summary is not None
    assert (summary.outcome, summary.exit_code) == ("failed", 1), summary.diagnosis
    assert all(m.exit_cause == "model_error" for m in summary.members), summary.members
    assert re.fullmatch(
        r"3 of 3 members ended model_error: Connection error\. "
        r"\(openai/stub at http://127\.0\.0\.1:\d+/v1\); no member wrote the ledger",
        summary.diagnosis,
    ), summary.diagnosis
    report = (sup.run_dir / "REPORT.md").read_text()
    assert f"Diagnosis: {summary.diagnosis}" in report


def test_the_docs_outcome_table_is_the_codes() -> None:
    """The docs' outcome table (Running a horde) lists the rows of `OUTCOME_TABLE`, in order, with their
    exit status and rule word for word."""
    text = RUNNING_PAGE.read_text(encoding="utf-8")
    head = "| outcome | exit | when |"
    assert head in text
    table = text.split(head, 1)[1].split("\n\n", 1)[0].strip().splitlines()[1:]
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in table]
    assert rows == [[f"`{r.outcome}`", str(r.exit_code), r.when] for r in OUTCOME_TABLE]
