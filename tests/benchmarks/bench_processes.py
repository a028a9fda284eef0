"""Benchmark: how soon a SIGKILLed supervisor's processes are all gone.

    python tests/benchmarks/bench_processes.py [--trials 5] [--members 6]

A real headless run (`horde-tui run --headless`) of 6 members against the scripted stub
model; each member runs a ten-minute `sleep` through its bash tool, so the run is 13
processes besides the supervisor: the gateway, 6 members, 6 commands. The supervisor
gets SIGKILL and the clock runs until every one of the 13 is gone (zombies count as
gone; polled every 20 ms). Two cases per trial: every member running, and member-2
paused (`horde-tui pause member-2`: the member and its command stopped). Target:
everything gone within 5 s; the members' and the gateway's watchdogs poll their parent
every 2 s, so about 2 s is expected. Then, in a run of 2 members, member-1 gets SIGKILL
while its command (bash and its sleep) runs: the clock runs until the command is gone.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent))

from support.cli import cli, start
from support.processes import alive, member_pids, new_tag, sleeper, state, tagged, wait_until

from horde_tui.stubmodel import StubThread
from horde_tui.stubmodel.agent import AgentPolicy

CAP_S = 30.0


def trial(members: int, pause: bool) -> tuple[int, float | None]:
    """One run killed; (processes watched, seconds until all gone or None past `CAP_S`)."""
    tag = new_tag()
    pids: list[int] = []
    with (
        tempfile.TemporaryDirectory() as tmp,
        StubThread(policy=AgentPolicy({"*": [sleeper(tag, forked=False)]})) as stub,
    ):
        workdir = Path(tmp)
        proc, run_dir = start(workdir, stub, members)
        try:
            if not wait_until(lambda: len(tagged(tag)) == members, 120):
                raise RuntimeError(f"only {len(tagged(tag))} of {members} commands started")
            found = member_pids(run_dir)
            if pause:
                cli(workdir, "pause", "member-2")
                if not wait_until(lambda: state(found["member-2"]) == "T", 20):
                    raise RuntimeError("member-2 did not stop")
            gateway = json.loads((run_dir / "gateway.json").read_text())["pid"]
            pids = [gateway, *found.values(), *tagged(tag), *tagged(tag, wrappers=True)]
            os.kill(proc.pid, signal.SIGKILL)
            killed = time.monotonic()
            while [p for p in pids if alive(p)] and time.monotonic() - killed < CAP_S:
                time.sleep(0.02)
            took = time.monotonic() - killed
            proc.wait(10)
            return len(pids), None if [p for p in pids if alive(p)] else took
        finally:
            if proc.poll() is None:
                proc.kill()
            for pid in [*pids, *tagged(tag), *tagged(tag, wrappers=True)]:
                if alive(pid):
                    os.kill(pid, signal.SIGKILL)


def member_trial(members: int) -> float | None:
    """member-1 gets SIGKILL while its command runs: seconds until the command is gone."""
    tag = new_tag()
    with (
        tempfile.TemporaryDirectory() as tmp,
        StubThread(policy=AgentPolicy({"*": [sleeper(tag, forked=True)]})) as stub,
    ):
        workdir = Path(tmp)
        proc, run_dir = start(workdir, stub, members)
        commands: list[int] = []
        try:
            if not wait_until(lambda: len(tagged(tag)) == 2 * members, 120):
                raise RuntimeError(f"only {len(tagged(tag))} command processes started")
            victim = member_pids(run_dir)["member-1"]
            commands = [p for p in tagged(tag) if _member_of(p) == victim]
            if len(commands) != 2:
                raise RuntimeError(f"member-1's bash and sleep not found: {commands}")
            os.kill(victim, signal.SIGKILL)
            killed = time.monotonic()
            while [p for p in commands if alive(p)] and time.monotonic() - killed < CAP_S:
                time.sleep(0.02)
            return None if [p for p in commands if alive(p)] else time.monotonic() - killed
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
            wait_until(lambda: not tagged(tag), 10)
            for pid in tagged(tag):
                os.kill(pid, signal.SIGKILL)


def _stat(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return []


def _member_of(pid: int) -> int:
    """The command's first ancestor that is not part of a command (its member)."""
    while fields := _stat(pid):
        try:
            parent = Path(f"/proc/{fields[1]}/cmdline").read_bytes()
        except OSError:
            return -1
        if b"sleep" not in parent:
            return int(fields[1])
        pid = int(fields[1])
    return -1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--members", type=int, default=6)
    args = parser.parse_args()
    for key in [k for k in os.environ if k.startswith("HORDE_")]:
        del os.environ[key]
    worst_ok = True
    for pause in (False, True):
        label = "member-2 paused" if pause else "all running"
        times: list[float] = []
        count = 0
        for n in range(1, args.trials + 1):
            count, took = trial(args.members, pause)
            shown = f"{took:.2f} s" if took is not None else f"NOT all gone after {CAP_S:g} s"
            print(f"{label}, trial {n}: {count} processes, {shown}", flush=True)
            if took is None:
                worst_ok = False
            else:
                times.append(took)
        if times:
            print(
                f"{label}: all {count} gone in {min(times):.2f}-{max(times):.2f} s "
                f"(median {statistics.median(times):.2f} s) in {len(times)} of {args.trials} "
                "trials [target: within 5 s]",
                flush=True,
            )
    times = []
    for n in range(1, args.trials + 1):
        took = member_trial(2)
        shown = f"{took:.2f} s" if took is not None else f"NOT gone after {CAP_S:g} s"
        print(f"member-1 SIGKILLed, trial {n}: its bash and sleep gone in {shown}", flush=True)
        worst_ok = worst_ok and took is not None
        times += [took] if took is not None else []
    if times:
        print(
            f"member-1 SIGKILLed: its command gone in {min(times):.2f}-{max(times):.2f} s "
            f"(median {statistics.median(times):.2f} s) in {len(times)} of {args.trials} trials",
            flush=True,
        )
    return 0 if worst_ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
