"""`python -m horde_tui.member`: one member process (configured by HORDE_* variables).

It imports neither litellm nor Textual: the model is reached through the run's gateway.
It exits 0 with an `exit` status line naming the cause; a crash exits non-zero, which
the supervisor records as `exit_nonzero`.
"""

from __future__ import annotations

import os
import signal
import sys
import traceback
from collections.abc import Callable
from types import FrameType

from horde_tui.common.gatewayclient import GatewayClient
from horde_tui.common.reaper import end_run, end_session
from horde_tui.common.watchdog import exit_group, start_watchdog
from horde_tui.member.config import MemberConfigError, load_member_config
from horde_tui.member.loop import Exit, MemberLoop
from horde_tui.member.session import StatusStream
from horde_tui.sandbox.shell import signal_command_groups
from horde_tui.store import identity
from horde_tui.store.lock import when_unlocked


def _stop_self() -> None:
    signal_command_groups(signal.SIGSTOP)
    os.kill(os.getpid(), signal.SIGSTOP)


def on_pause(signum: int, frame: FrameType | None) -> None:
    """SIGTSTP: forward SIGSTOP to the commands, then stop, once this process holds no
    `.horde/` lock (`when_unlocked`): paused mid-write, it would block every writer."""
    when_unlocked(_stop_self)


def install_signal_handlers(loop: MemberLoop) -> None:
    """Forward stop/continue/terminate to the process groups of running shell commands.

    Commands run in their own process groups (so a timeout kills one whole), so a signal
    to the member's group does not reach them: the parent pauses a member with SIGTSTP,
    which is forwarded as SIGSTOP before the member stops itself.
    """

    def on_term(signum: int, frame: FrameType | None) -> None:
        loop.state.stop_requested = True
        signal_command_groups(signal.SIGTERM)
        raise KeyboardInterrupt

    def on_cont(signum: int, frame: FrameType | None) -> None:
        signal_command_groups(signal.SIGCONT)

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGTSTP, on_pause)
    signal.signal(signal.SIGCONT, on_cont)


def _orphaned(run: str, parent_pid: int) -> Callable[[], None]:
    """What to do once the parent is gone: end paused siblings of the run (stopped, they
    cannot notice; the gateway does the same), this member's commands (their groups, and
    anything else left in its session), then this process. Siblings come first: once its
    command is killed, the main thread may finish and end the process mid-sweep."""

    def end() -> None:
        end_run(run, parent_pid, stopped_only=True)
        signal_command_groups(signal.SIGKILL)
        end_session(os.getpid(), spare=os.getpid())
        exit_group()

    return end


USAGE = """\
usage: python -m horde_tui.member   (configured by the environment; no arguments)

One member session against a run's gateway. The supervisor sets, for each member:
  HORDE_NAME / HORDE_MEMBER   the member's name (member-N)
  HORDE_DIR, HORDE_RUN        the .horde directory and the run id
  HORDE_GATEWAY_URL, HORDE_GATEWAY_TOKEN   the run's gateway
  HORDE_ROLE, HORDE_ATTEMPT, HORDE_LAYER, HORDE_PARENT_PID, HORDE_BRIEF
  HORDE_MAX_TURNS, HORDE_REMIND_CALLS, HORDE_REMIND_MS, HORDE_INBOX_TURNS,
  HORDE_REQUEST_TIMEOUT_S, HORDE_CONFIRM   the run's settings, validated as the
                              member's part of them (`horde-tui config`: defaults)
  HORDE_TOOLS=readonly        a read-only helper session
  HORDE_STREAM=1              stream answers: `delta` status lines as text arrives
  HORDE_SANDBOX=auto|bwrap|off, HORDE_SANDBOX_NETWORK=on|off, HORDE_SANDBOX_ENV=A,B
                              how shell commands are confined
  HORDE_RESUME_SESSION=PATH   carry on the session in this transcript instead of
                              starting one (`horde-tui resume` sets it)
Status lines (JSON) go to stdout, the transcript to runs/<run>/sessions/<name>/."""


def main() -> int:
    if {"-h", "--help"} & set(sys.argv[1:]):
        print(USAGE)
        return 0
    try:
        config = load_member_config()
    except MemberConfigError as exc:
        print(f"horde-tui member: {exc}", file=sys.stderr)
        return 2
    status = StatusStream()
    identity.adopt_orphans()  # a command that outlives its shell stays in this tree
    if config.parent_pid:
        start_watchdog(config.parent_pid, on_gone=_orphaned(config.run, config.parent_pid))
    client = GatewayClient(
        config.gateway_url, config.gateway_token, config.name, config.settings.request_timeout_s
    )
    loop = MemberLoop(config, client, status)
    install_signal_handlers(loop)
    try:
        result = loop.run()
    except KeyboardInterrupt:
        result = Exit("killed", loop.state.last_text, "stopped by the parent")
    except Exception:
        traceback.print_exc()
        status.emit(
            "exit",
            cause="exit_nonzero",
            message=loop.state.last_text[:4000],
            turns=loop.state.turns,
        )
        return 1
    finally:
        signal_command_groups(signal.SIGTERM)
        identity.end_adopted()
        client.close()
    st = loop.state
    status.emit(
        "exit",
        cause=result.cause,
        message=result.message[:4000],
        detail=result.detail,
        turns=st.turns,
        tool_calls=st.tool_calls,
        prompt_tokens=st.prompt_tokens,
        completion_tokens=st.completion_tokens,
        cost_usd=st.cost_usd,
        transcript=str(loop.transcript.path),
    )
    print(
        f"{config.name}: exit {result.cause} after {st.turns} turns. {result.detail}".strip(),
        file=sys.stderr,
    )
    loop.transcript.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
