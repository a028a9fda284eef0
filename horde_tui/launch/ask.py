"""Ask about a run: a read-only analyst answers a person's question, streamed, checked,
counted and kept. What `horde-tui ask` and the app's ask pane both call.

The analyst is a finalize-style helper session (`supervisor.finalize.run_helper`: the
member's own loop with `HORDE_TOOLS=readonly`), so it has `read`, `grep` and the `horde`
tool's read actions, and no writes and no shell. While the run is live it goes through
the run's own gateway: the run's model, its shared rate limit (it waits its turn like a
member) and its cost budget (an ask is refused once the budget is spent). For a finished run the analyst gets a gateway of its own, started for the ask and
stopped after it, with the run's recorded model and endpoint unless the flags say
otherwise. Every F#/T#/R#/A#/idea id and `path:line` of the answer goes through the
generated documents' check (`supervisor.citations`), problems are marked in the answer,
and the finished ask is appended to `runs/<id>/asks.jsonl` (`store.asks`). Nothing
writes to the ledgers.

What a caller (the pane) may rely on: `ask(...)` is an async generator that yields
`AskText` and `AskStep` events while the analyst works, then exactly one `AskDone` or
`AskRefused`, and nothing after it. Streamed text of a turn that went on to call a tool
(an `AskStep` follows it) was the analyst thinking aloud; `AskDone.record.answer` is the
answer as kept, with its `[check: ...]` marks, and replaces whatever was streamed. It
never raises for bad input, a spent budget or a failed model (`AskRefused`, one line),
does its file work in threads (the caller's loop is never blocked on the ledger), and
stops everything it started before its last event or when it is closed early. Earlier
asks are `store.asks.read_asks(run_dir)`; their cost, apart from the members', is
`store.asks.asks_cost(run_dir)`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from horde_tui.common import prompts
from horde_tui.common.gatewayclient import GatewayClient
from horde_tui.common.settings import Settings, SettingsError
from horde_tui.sandbox.shell import scrubbed_env
from horde_tui.store import runs
from horde_tui.store.asks import AskRecord, Citation, append_ask
from horde_tui.store.members import MemberState
from horde_tui.store.paths import HordePaths
from horde_tui.store.store import HordeStore
from horde_tui.supervisor import citations
from horde_tui.supervisor.finalize import existing_files, run_helper
from horde_tui.supervisor.processes import GatewayStartError, end_gateway, launch_gateway
from horde_tui.supervisor.setup import MemberSpec
from horde_tui.supervisor.summary import DEMO_MODEL

ANALYST = "ask"
"""The analyst's name: its status lines, its line in the gateway's `usage.jsonl`, its
transcripts under `runs/<id>/asks/ask/`."""
ASKS_DIR = "asks"
"""The analyst's own folder in the run directory (its log and transcripts), apart from
the members' `sessions/` so no view counts it as a member."""
RUN_FILES = ("REPORT.md", "DELIVERABLE.md", "POSTMORTEM.md", "SUMMARY.md", "ACCEPTANCE.md")
LEDGER_FILES = ("BOARD.md", "IDEAS.md", "FINDINGS.md", "FACTS.md", "RESOURCES.md")


@dataclass(frozen=True)
class AskText:
    """A piece of the analyst's text as it arrives. Text of a turn that then calls a
    tool is thinking aloud, not the answer: `AskDone.record.answer` is the answer."""

    text: str


@dataclass(frozen=True)
class AskStep:
    """The analyst called a tool (`read src/app.py`, `horde list`): one line to show."""

    summary: str


@dataclass(frozen=True)
class AskDone:
    """The last event of an ask that was answered: the record as appended to
    `asks.jsonl` (answer with its `[check: ...]` marks, citations, tokens, cost)."""

    record: AskRecord


@dataclass(frozen=True)
class AskRefused:
    """The last event of an ask that was not answered: one line saying what was refused,
    by which rule, and what to do. Nothing was recorded and nothing was spent, except
    when the model failed mid-answer (then the tokens spent are in the gateway's usage)."""

    line: str
    bad_input: bool = False
    """The question or the run was refused (empty question, not a run): the caller's
    input, not the model or the budget (`ask` exits 2 for it, 1 otherwise)."""


AskEvent = AskText | AskStep | AskDone | AskRefused
"""What `ask` yields: any number of `AskText` and `AskStep`, then exactly one `AskDone`
or `AskRefused`, the last event."""


class _Refused(Exception):
    """An ask refused before or instead of an answer; its message is the one line."""

    def __init__(self, line: str, bad_input: bool = False) -> None:
        super().__init__(line)
        self.bad_input = bad_input


async def ask(
    run_dir: Path,
    question: str,
    *,
    model: str | None = None,
    api_base: str | None = None,
    api_key: str | None = None,
) -> AsyncIterator[AskEvent]:
    """Ask the run in `run_dir` `question`; yield the answer as it streams, then one
    `AskDone` (also appended to the run's `asks.jsonl`) or one `AskRefused`.

    `model`, `api_base` and `api_key` are `run`'s flags, for a finished run (default:
    the run's recorded model and endpoint, the key from the environment or the config
    file as for `run`); a live run is always asked through its own gateway and model.
    Never raises for bad input or a failed model: that is an `AskRefused`. By the time
    the last event comes, the analyst and the ask's own gateway are stopped. Closing the
    generator earlier (`aclose()`, or cancelling the task iterating it: a pane closed)
    stops them too, and nothing is kept.
    """
    run_dir = Path(run_dir)
    try:
        session = await _Session.open(run_dir, question, model, api_base, api_key)
    except _Refused as exc:
        yield AskRefused(str(exc), exc.bad_input)
        return
    events = session.answer()
    last: AskDone | AskRefused | None = None
    try:
        async for event in events:
            if isinstance(event, AskDone | AskRefused):
                last = event
                break
            yield event
    finally:
        await events.aclose()  # stops the analyst when the caller stopped listening
        await session.close()
    if last is not None:
        yield last  # once everything is stopped: a caller may stop listening at once


class _Session:
    """One ask: its gateway (the run's, or one of its own), its analyst and its check."""

    def __init__(self, run_dir: Path, question: str) -> None:
        self.run_dir = run_dir
        self.horde_dir = run_dir.parent.parent
        self.workdir = HordePaths(self.horde_dir).workdir
        self.question = question
        self.live = False
        self.url = ""
        self.token = ""
        self.model = ""
        self.settings = Settings()
        self.gateway: subprocess.Popen[bytes] | None = None
        self.stub: Any = None
        """The demo model, served for an ask of a run it played (`StubThread`)."""
        self.folder: Path | None = None
        self.events: asyncio.Queue[AskText | AskStep] = asyncio.Queue()
        self.halted = asyncio.Event()

    @classmethod
    async def open(
        cls,
        run_dir: Path,
        question: str,
        model: str | None,
        api_base: str | None,
        api_key: str | None,
    ) -> _Session:
        question = question.strip()
        if not question:
            raise _Refused(
                "refused: the question is empty (ask rule: one question in words); "
                'write what you want to know, e.g. "which findings are unreviewed?"',
                bad_input=True,
            )
        session = cls(run_dir, question)
        flags = (model, api_base, api_key)
        if await asyncio.to_thread(session._read_run, *flags) == "active":
            if model or api_base or api_key:
                raise _Refused(
                    f"refused: run {run_dir.name} is live, and a live run is asked through "
                    "its own gateway and model (ask rule: it counts against the run's "
                    "budget); leave out --model, --api-base and --api-key",
                    bad_input=True,
                )
            await session._join_live()
        else:
            try:
                await session._start_own(model)
            except BaseException:
                await session.close()  # the demo model, if it was served for this ask
                raise
        return session

    def _read_run(self, model: str | None, api_base: str | None, api_key: str | None) -> str:
        """The run's settings (the flags over them) and its state; blocking (a thread)."""
        run_dir = self.run_dir
        if not (run_dir / "TASK.md").is_file() or not (run_dir / "MANIFEST.json").is_file():
            raise _Refused(
                f"refused: {run_dir} is not a run started by horde-tui (no TASK.md or "
                "MANIFEST.json); `horde-tui runs` lists the runs",
                bad_input=True,
            )
        self.settings = _recorded_settings(self.horde_dir, run_dir, model, api_base, api_key)
        return runs.run_state(run_dir)

    async def _join_live(self) -> None:
        """The live run's gateway: its address, its token, and whether the budget allows."""
        try:
            info = json.loads(
                await asyncio.to_thread((self.run_dir / "gateway.json").read_text, "utf-8")
            )
            token = await asyncio.to_thread((self.run_dir / "gateway.token").read_text, "utf-8")
            self.url, self.model, self.token = (
                str(info["url"]),
                str(info.get("model") or ""),
                token.strip(),
            )
        except (OSError, ValueError, KeyError, TypeError):
            raise _Refused(
                f"refused: run {self.run_dir.name} is live but has no gateway of its own "
                "to ask through (no gateway.json or gateway.token: it is starting, or it "
                "shares an eval's gateway); ask again in a moment, or once it has finished"
            ) from None
        self.live = True
        client = GatewayClient(self.url, self.token, ANALYST, 10.0)
        try:
            status, usage = await asyncio.to_thread(client.request, "GET", "/v1/usage")
        except OSError as exc:
            raise _Refused(
                f"refused: run {self.run_dir.name}'s gateway does not answer ({exc}); "
                "the run may be ending: ask again once it has finished"
            ) from None
        finally:
            client.close()
        if status == 200 and isinstance(usage, dict) and usage.get("budget_reached"):
            spent, budget = usage.get("total_cost_usd") or 0.0, usage.get("max_cost_usd") or 0.0
            raise _Refused(
                f"refused: run {self.run_dir.name}'s cost budget is spent (${spent:.4f} of "
                f"${budget:.4f}, HORDE_MAX_COST_USD) and an ask counts against it; ask "
                "once the run has finished, when asks no longer count"
            )

    async def _start_own(self, model: str | None) -> None:
        """A gateway of the ask's own, for a finished run, in a temporary folder (its
        usage file and token are not the run's)."""
        manifest = await asyncio.to_thread(_manifest, self.run_dir)
        if manifest.get("demo_model") and not model:
            await self._serve_demo_analyst()
        from horde_tui.supervisor.run import gateway_env

        self.folder = Path(tempfile.mkdtemp(prefix="horde-ask-"))
        env = {**os.environ, **gateway_env(self.settings)}
        start = asyncio.ensure_future(asyncio.to_thread(launch_gateway, self.folder, env, None))
        try:
            self.gateway, self.url = await asyncio.shield(start)
        except GatewayStartError as exc:
            shutil.rmtree(self.folder, ignore_errors=True)
            raise _Refused(f"refused: {exc}; check --model, --api-base and --api-key") from None
        except asyncio.CancelledError:
            # Closed while the gateway starts (a thread cannot be cancelled): once it is
            # up, it is stopped, so no gateway outlives the ask.
            with contextlib.suppress(Exception):
                proc, _ = await start
                await asyncio.to_thread(end_gateway, proc)
            shutil.rmtree(self.folder, ignore_errors=True)
            raise
        self.token = env["HORDE_GATEWAY_TOKEN"]
        if self.stub is not None:
            self.model = DEMO_MODEL
            return
        try:
            info = json.loads(await asyncio.to_thread((self.folder / "gateway.json").read_text))
            self.model = str(info.get("model") or "")
        except (OSError, ValueError):
            self.model = self.settings.gateway.model or ""

    async def _serve_demo_analyst(self) -> None:
        """A run the demo model played is asked of the demo model again (the one that
        played it died with the demo), which plays a scripted analyst: a newcomer's
        first ask works without a key, and says it is a script."""
        from horde_tui.stubmodel import DEMO_KEY, demo_stub
        from horde_tui.stubmodel.agent import AgentPolicy
        from horde_tui.stubmodel.analyst import analyst_plan

        stub = demo_stub(AgentPolicy({ANALYST: analyst_plan()}))
        self.stub = await asyncio.to_thread(stub.__enter__)
        self.settings = await asyncio.to_thread(
            _recorded_settings, self.horde_dir, self.run_dir, stub.model, stub.api_base, DEMO_KEY
        )

    async def answer(self) -> AsyncIterator[AskEvent]:
        """Run the analyst, yielding its text and steps; then its checked record."""
        try:
            host = await asyncio.to_thread(_AnalystHost, self)
        except OSError as exc:
            yield AskRefused(self._cannot_start(exc))
            return
        brief = await asyncio.to_thread(_brief, self)
        timeout_s = self.settings.supervisor.postmortem_ms / 1000
        helper = asyncio.ensure_future(run_helper(host, ANALYST, brief, timeout_s, self.halted))
        got: asyncio.Future[AskText | AskStep] | None = None
        try:
            while not helper.done() or not self.events.empty():
                got = asyncio.ensure_future(self.events.get())
                await asyncio.wait({helper, got}, return_when=asyncio.FIRST_COMPLETED)
                if got.done():
                    yield got.result()
                else:
                    got.cancel()
            state = helper.result()
        except OSError as exc:  # the analyst's process could not be started
            yield AskRefused(self._cannot_start(exc))
            return
        finally:
            if got is not None:
                got.cancel()
            if not helper.done():
                self.halted.set()
                await asyncio.shield(helper)
        text = state.final_message.strip()
        if state.exit_cause != "completed" or not text:
            yield AskRefused(_failure(state, self.run_dir.name))
            return
        record = await asyncio.to_thread(self._checked, state, text)  # folds the ledger
        await asyncio.to_thread(append_ask, self.run_dir, record)
        yield AskDone(record)

    def _cannot_start(self, exc: OSError) -> str:
        return (
            f"refused: the analyst of run {self.run_dir.name} could not start ({exc}); "
            f"nothing was recorded: make {self.run_dir / ASKS_DIR} a writable folder, "
            "then ask again"
        )

    def _checked(self, state: MemberState, text: str) -> AskRecord:
        """The answer with its ids and line citations checked against the ledgers and
        the working directory, each problem marked after what it is about."""
        store = HordeStore(self.horde_dir, ANALYST)
        store.refresh()
        ledger = store.state
        stale = citations.stale_spans(ledger.findings.values(), self.workdir)
        found = citations.document_citations(text, ledger, self.workdir, stale)
        marked = citations.mark_document(text, [c for c in found if c.why])
        return AskRecord(
            question=self.question,
            answer=marked,
            citations=tuple(Citation(c.token, c.why) for c in found),
            prompt_tokens=state.prompt_tokens,
            completion_tokens=state.completion_tokens,
            cost_usd=state.cost_usd,
            model=self.model,
            live=self.live,
            ended=state.exit_cause or "completed",
        )

    async def close(self) -> None:
        """Stop the ask's own gateway (never a live run's) and remove its folder."""
        if self.gateway is not None:
            await asyncio.to_thread(end_gateway, self.gateway)
            self.gateway = None
        if self.folder is not None:
            await asyncio.to_thread(shutil.rmtree, self.folder, ignore_errors=True)
            self.folder = None
        if self.stub is not None:
            await asyncio.to_thread(self.stub.close)
            self.stub = None


class _AnalystHost:
    """What hosts the analyst (`finalize.HelperHost`): the ask, not a supervisor. It
    writes no event: asking leaves the run's events and ledgers as they were."""

    def __init__(self, session: _Session) -> None:
        self.session = session
        self.workdir = session.workdir
        self.folder = session.run_dir / ASKS_DIR
        self.folder.mkdir(exist_ok=True)

    @property
    def run_dir(self) -> Path:
        """Where `run_helper` keeps the analyst's log: the asks folder, not the run's
        own, where a log would read as a member's."""
        return self.folder

    def member_env(self, spec: MemberSpec, attempt: int, **extra: str) -> dict[str, str]:
        """The analyst's environment: no provider key, the run's member settings, the
        gateway, its transcripts in the asks folder, its answers streamed."""
        from horde_tui.supervisor.run import member_settings_env

        s = self.session
        env = scrubbed_env(os.environ)
        env.update(member_settings_env(s.settings))
        env.update(
            HORDE_MEMBER=spec.name,
            HORDE_NAME=spec.name,
            HORDE_DIR=str(s.horde_dir),
            HORDE_RUN=s.run_dir.name,
            HORDE_ROLE=spec.role,
            HORDE_ATTEMPT=str(attempt),
            HORDE_PARENT_PID=str(os.getpid()),
            HORDE_GATEWAY_URL=s.url,
            HORDE_GATEWAY_TOKEN=s.token,
            HORDE_SESSIONS=str(self.folder),
            HORDE_STREAM="1",
            HORDE_CONFIRM="",
        )
        env.update(extra)
        return env

    def on_status(self, state: MemberState, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "delta" and isinstance(event.get("text"), str):
            self.session.events.put_nowait(AskText(event["text"]))
        elif kind == "tool-start":
            self.session.events.put_nowait(AskStep(str(event.get("summary") or event.get("tool"))))

    def emit(self, kind: str, member: str | None = None, record: bool = True, **data: Any) -> None:
        """Nothing: an ask is not an event of the run."""


def _brief(session: _Session) -> str:
    run_dir, horde_dir = session.run_dir, session.horde_dir
    paths = [run_dir / name for name in RUN_FILES] + [horde_dir / n for n in LEDGER_FILES]
    files = "\n".join(f"- {p}" for p in existing_files(session.workdir, paths))
    sessions = os.path.relpath(runs.sessions_dir(run_dir), session.workdir)
    events = os.path.relpath(run_dir / "events.jsonl", session.workdir)
    state = "while it works" if session.live else "after it finished"
    return prompts.ASK_BRIEF.format(
        run=run_dir.name,
        state=state,
        files=files or "- (none yet)",
        sessions=sessions,
        events=events,
        question=session.question,
    )


def _failure(state: MemberState, run: str) -> str:
    """The one line for an analyst that ended without an answer."""
    detail = " ".join((state.detail or "").split())[:300]
    if "budget" in detail and detail.startswith("refused:"):
        return detail  # the gateway's own budget line
    why = f" ({detail})" if detail else ""
    return (
        f"refused: the analyst of run {run} ended with {state.exit_cause or 'no answer'}{why} "
        "before it answered; nothing was recorded: check the model with `horde-tui doctor`, "
        "then ask again"
    )


def _manifest(run_dir: Path) -> dict[str, Any]:
    try:
        data = json.loads((run_dir / "MANIFEST.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _recorded_settings(
    horde_dir: Path,
    run_dir: Path,
    model: str | None,
    api_base: str | None,
    api_key: str | None,
) -> Settings:
    """The run's own settings (MANIFEST.json), the key as for any run, the flags over
    them; the one line of a refusal when they do not validate."""
    from horde_tui.supervisor.resume import ResumeRefused, recorded_settings

    try:
        settings = recorded_settings(horde_dir, _manifest(run_dir), None)
        changed = {
            k: v
            for k, v in (("model", model), ("api_base", api_base), ("api_key", api_key))
            if v
        }
        if changed:
            gateway = settings.gateway.model_copy(update=changed)
            settings = settings.model_copy(update={"gateway": gateway})
        return settings
    except (ResumeRefused, SettingsError, ValueError) as exc:
        raise _Refused(f"refused: run {run_dir.name}'s settings cannot be read: {exc}") from None
