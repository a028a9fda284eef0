"""The `horde-tui` command line as a person runs it: a real process in a working
directory, with the host's HORDE_* settings kept out (`host_env`, `cli`), the
environment of a run on the scripted stub model (`stub_env`), a headless run on it
(`headless`), and a bounded read of its output (`wait_for_line`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from horde_tui.commands.cli import main
from horde_tui.stubmodel import StubThread
from horde_tui.stubmodel.agent import AgentPolicy
from support.plans import HELPERS, horde

HEADLESS_PLAN = {
    "*": [{**horde("list"), "until_ok": 0, "hold_ms": 200}] * 400,
    **HELPERS,
}


def cli_argv(*args: str) -> list[str]:
    """The command line of `horde-tui ARGS` in a fresh interpreter of this environment: the
    one way the tests spawn the CLI (no console script needed, and never another install)."""
    return [sys.executable, "-m", "horde_tui", *args]


def host_env(**extra: str) -> dict[str, str]:
    """This process's environment without the host's `HORDE_*` settings, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HORDE_")}
    env.update(extra)
    return env


def stub_env(stub: StubThread, **extra: str) -> dict[str, str]:
    """The environment of a run on `stub` started from a shell: its model, endpoint and
    key, a short clean-stop grace and a gateway that retries after 20 ms; `extra` over them."""
    defaults = {
        "HORDE_MODEL": stub.model,
        "HORDE_API_BASE": stub.api_base,
        "HORDE_API_KEY": "stub",
        "HORDE_ACTIVE_GRACE_MS": "300",
        "HORDE_GATEWAY_BACKOFF_MS": "20",
    }
    return host_env(**{**defaults, **extra})


def headless(
    tmp_path: Path, stub: StubThread, *extra_env: tuple[str, str], members: int = 3
) -> subprocess.Popen[str]:
    env = stub_env(stub, **dict(extra_env))
    return subprocess.Popen(
        cli_argv("run", "--headless", str(members), "Review app.py"),
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_line(proc: subprocess.Popen[str], needle: str, timeout_s: float = 60) -> list[str]:
    assert proc.stdout is not None
    seen = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
        if needle in line:
            return seen
    raise AssertionError(f"{needle!r} not seen in: {''.join(seen)[-2000:]}")


def cli(
    cwd: Path, *args: str, member: str | None = None, stdin: str | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    """`horde-tui ARGS` in `cwd` from a shell (as `member` when given: HORDE_MEMBER),
    with `env` over the host's environment without its `HORDE_*`."""
    if member is not None:
        env["HORDE_MEMBER"] = member
    return subprocess.run(
        cli_argv(*args),
        cwd=cwd,
        env=host_env(**env),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def heavy_imports(cwd: Path, *argv: str, heavy: tuple[str, ...]) -> tuple[int, list[str]]:
    """Run the CLI on `argv` in a fresh interpreter in `cwd`: its exit status and which of
    the `heavy` modules it imported (a command that must stay fast imports none)."""
    code = (
        "import json, sys\n"
        "from horde_tui.commands.cli import main\n"
        "code = main(sys.argv[1:])\n"
        f"print(json.dumps([m for m in {heavy!r} if m in sys.modules]), file=sys.stderr)\n"
        "sys.exit(code)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *argv], cwd=cwd, capture_output=True, text=True, timeout=60
    )
    return done.returncode, json.loads(done.stderr.strip().splitlines()[-1])


def one_line_refusal(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """Run the CLI in-process on `argv` and return its refusal, checked to be one line."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


@dataclass
class StoppedClean:
    """A headless three-member run, driven from another shell and stopped clean with a
    post-mortem: what each command answered and what the run printed."""

    workdir: Path
    seen: list[str]
    """The run's output up to member-3's spawn (the canary line is in it)."""
    status: subprocess.CompletedProcess[str]
    paused: subprocess.CompletedProcess[str]
    resumed: subprocess.CompletedProcess[str]
    stopped: subprocess.CompletedProcess[str]
    returncode: int
    out: str
    err: str
    stop_hard_after: subprocess.CompletedProcess[str]
    """`stop-hard` once the run has ended: nothing is live any more."""

    @property
    def run_dir(self) -> Path:
        return next((self.workdir / ".horde" / "runs").iterdir())


def run_stopped_clean(workdir: Path) -> StoppedClean:
    """Start `run --headless 3` on `HEADLESS_PLAN`; once member-3 has spawned, `status`,
    `pause member-2`, `resume 2` and `stop-clean postmortem --grace 1` from another shell.
    One run serves every test that reads a clean stop (it takes a minute on a loaded box)."""
    with StubThread(policy=AgentPolicy(HEADLESS_PLAN)) as stub:
        proc = headless(workdir, stub)
        try:
            seen = wait_for_line(proc, "[member-spawn] member-3")
            status = cli(workdir, "status")
            paused = cli(workdir, "pause", "member-2")
            resumed = cli(workdir, "resume", "2")
            stopped = cli(workdir, "stop-clean", "postmortem", "--grace", "1")
            out, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
    return StoppedClean(
        workdir,
        seen,
        status,
        paused,
        resumed,
        stopped,
        proc.returncode,
        out,
        err,
        cli(workdir, "stop-hard"),
    )


def start(tmp_path: Path, stub: StubThread, members: int) -> tuple[subprocess.Popen[str], Path]:
    """A headless run of `members` on `stub`, once its last member has spawned."""
    proc = headless(tmp_path, stub, members=members)
    wait_for_line(proc, f"[member-spawn] member-{members}")
    return proc, next((tmp_path / ".horde" / "runs").iterdir())


def run_demo(tmp: Path) -> Path:
    """`demo --headless --speed 0` in `tmp` (its temp project lands there): the kept
    project folder, once the run has ended solved (exit status 3)."""
    done = subprocess.run(
        cli_argv("demo", "--headless", "--speed", "0"),
        cwd=tmp,
        env=host_env(TMPDIR=str(tmp)),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 3, done.stderr[-2000:]
    return next(tmp.glob("horde-demo-*"))
