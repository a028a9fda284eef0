"""Hosting a supervisor in this process: the one place that picks the app or headless.

`host` serves `run`, `plan`, `resume RUN`, `resume SWARM` and `demo` alike: on a terminal
the full-screen app hosts the supervisor (a run or a swarm); otherwise (`--headless`, or
output to a pipe) each event is one printed line, Ctrl-C asks for a clean stop and a
second one stops hard. Either way the shell gets the run's exit status, and the lines
that end a run (outcome, report, post-mortems, or where a handed-off run goes on).

Textual-free: the app is imported only when it is the host, so a headless run never
loads Textual.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any, TextIO

QUIET_STATUS = frozenset({"turn-start", "usage", "tool-end"})
"""Member statuses headless output leaves out (several a turn, none worth a line)."""


def print_event(event: Any) -> None:
    """Headless mode: one line per event, no colour unless stdout is a terminal; a
    swarm's events start with their horde (`h2 member-1: ...`, `swarm [merge-start]`)."""
    horde = ""
    if "horde" in event.data:
        horde = f"{event.data['horde'] or 'swarm'} "
    if event.kind == "member-status":
        data = event.data
        kind = data.get("type")
        if kind in QUIET_STATUS:
            return
        if kind == "tool-start":
            text = f"{data.get('summary') or data.get('tool')}"
        elif kind == "message":
            text = "says: " + " ".join(str(data.get("text", "")).split())[:160]
        elif kind == "exit":
            text = f"exit {data.get('cause')} after {data.get('turns')} turns"
            detail = " ".join(str(data.get("detail") or "").split())[:160]
            text += f" ({detail})" if detail else ""
        else:
            text = kind or "?"
        line = f"{time.strftime('%H:%M:%S')} {horde}{event.member}: {text}"
    elif event.kind == "run-detached":  # the log of a background run: where to watch it
        where = event.data["reattach"]
        line = f"{time.strftime('%H:%M:%S')} {horde}[run-detached] re-attach: {where}"
    elif event.kind == "forecast" and event.data.get("text"):
        # The forecast's own sentence (`supervisor.forecast`), not its numbers as key=value.
        line = f"{time.strftime('%H:%M:%S')} {horde}[forecast] {event.data['text']}"
    else:
        extras = " ".join(
            f"{k}={v}" for k, v in event.data.items() if k != "horde" and v not in (None, "", [])
        )
        who = f" {event.member}" if event.member else ""
        line = f"{time.strftime('%H:%M:%S')} {horde}[{event.kind}]{who} {extras}".rstrip()
    print(line, flush=True)


def is_swarm(sup: Any) -> bool:
    """A `SwarmSupervisor` (hordes, a swarm id) rather than one run's `Supervisor`."""
    return hasattr(sup, "swarm_id")


def host(sup: Any, intro: str, *, headless: bool, mouse: bool = True) -> int:
    """Host a run's or a swarm's supervisor here until it ends; return its exit status.

    The app hosts it when standard output is a terminal and `headless` was not asked
    for; either way the outcome line is followed by a `report:` line with the report's
    path (`run`, `plan`, `resume` and `demo` alike)."""
    if headless or not sys.stdout.isatty():
        sup.sink = print_event
        print(intro, flush=True)
        return asyncio.run(host_headless(sup))
    from horde_tui.app.app import HordeApp

    if is_swarm(sup):
        app = HordeApp(horde_dir=sup.swarm_dir.parent.parent, swarm=sup)
    else:
        app = HordeApp(sup)
    app.run(mouse=mouse)
    if app.handed_off is not None:  # the terminal is the shell's again: say where it went
        with contextlib.suppress(OSError):  # unless it hung up (SIGHUP): then nobody is there
            print(app.handed_off, flush=True)
        return app.exit_code
    if app.summary is not None:
        print(f"outcome: {app.summary.outcome}: {app.summary.diagnosis}")
    if not is_swarm(sup):
        print(f"report: {sup.run_dir / 'REPORT.md'}")
    return app.exit_code


async def host_headless(sup: Any) -> int:
    """Run the supervisor; Ctrl-C asks for a clean stop, a second Ctrl-C stops hard."""
    loop = asyncio.get_running_loop()
    interrupts = 0
    pending: set[asyncio.Task[Any]] = set()

    def hard() -> None:
        task = asyncio.ensure_future(sup.stop_hard())
        pending.add(task)
        task.add_done_callback(pending.discard)

    def on_interrupt() -> None:
        nonlocal interrupts
        interrupts += 1
        if interrupts == 1:
            sup.stop_clean(reason="stopped by user")
        else:
            hard()

    loop.add_signal_handler(signal.SIGINT, on_interrupt)
    loop.add_signal_handler(signal.SIGTERM, hard)
    asking = None
    if sup.settings.member.confirm and sys.stdin.isatty():
        asking = asyncio.create_task(TerminalAsker(sup).run())
    try:
        summary = await sup.run()
    finally:
        if asking is not None:
            asking.cancel()
    if summary is None:  # handed off: another process carries the run on
        what = f"swarm {sup.swarm_id}" if is_swarm(sup) else f"run {sup.run_id}"
        print(f"\n{what} handed off")
        return 0
    print(f"\noutcome: {summary.outcome}: {summary.diagnosis}")
    print(f"report: {sup.run_dir / 'REPORT.md'}")
    for label, path, text in postmortems(sup):
        print(f"\n{label}post-mortem: {path}\n{text.rstrip()}", flush=True)
    return int(summary.exit_code)


ANSWERS = {"y": "allow", "yes": "allow", "a": "allow-all", "all": "allow-all"}
"""What the terminal takes for yes and for allow-all; anything else refuses (y/N)."""


class TerminalAsker:
    """Confirm mode in a headless run on a terminal: each command waiting in the run's
    (or each horde's) `ConfirmDesk` is asked on the terminal, one at a time, y/N/a, as
    horde.py asks; a command decided meanwhile from another shell is let go."""

    def __init__(self, sup: Any, stdin: TextIO | None = None, out: TextIO | None = None) -> None:
        self.sup = sup
        self.stdin = stdin or sys.stdin
        self.out = out or sys.stderr
        self.asked: tuple[Any, Any] | None = None
        """(desk, waiting command) on the terminal now."""
        self.typed = ""

    def desks(self) -> list[Any]:
        hordes = getattr(self.sup, "hordes", None)
        if isinstance(hordes, dict):
            return [h.confirms for _, h in sorted(hordes.items())]
        return [self.sup.confirms]

    async def run(self) -> None:
        """Ask until cancelled (the run ended): a line from the terminal answers."""
        loop = asyncio.get_running_loop()
        fd = self.stdin.fileno()
        loop.add_reader(fd, self.on_readable, fd)
        try:
            while True:
                self.tick()
                await asyncio.sleep(0.1)
        finally:
            loop.remove_reader(fd)

    def tick(self) -> None:
        if self.asked is not None:
            desk, wait = self.asked
            if wait.id in desk.waiting:
                return
            print("(decided elsewhere)", file=self.out, flush=True)
            self.asked = None
        for desk in self.desks():
            for wait in desk.waiting.values():
                self.asked = (desk, wait)
                where = f"h{desk.horde}:" if len(self.desks()) > 1 else ""
                print(
                    f"{where}{wait.member} wants to run: {wait.command} (in {wait.cwd}) "
                    "allow? [y/N/a=all from this member] ",
                    end="",
                    file=self.out,
                    flush=True,
                )
                return

    def on_readable(self, fd: int) -> None:
        data = b"?"
        with contextlib.suppress(BlockingIOError):
            data = os.read(fd, 4096)
            self.typed += data.decode(errors="replace")
        if not data:  # the terminal went away: stop reading (EOF stays readable)
            asyncio.get_running_loop().remove_reader(fd)
            print(
                "confirm mode: the terminal closed; decide with horde-tui approve/refuse",
                file=self.out,
                flush=True,
            )
            return
        while "\n" in self.typed:
            line, self.typed = self.typed.split("\n", 1)
            self.answer(line)

    def answer(self, line: str) -> None:
        """Decide the command on the terminal (a line with none asked is ignored)."""
        if self.asked is None:
            return
        desk, wait = self.asked
        self.asked = None
        if wait.id in desk.waiting:
            decision = ANSWERS.get(line.strip().lower(), "refuse")
            print(desk.decide(wait.member, decision, "terminal"), file=self.out, flush=True)
        self.tick()


def postmortems(sup: Any) -> list[tuple[str, Path, str]]:
    """The post-mortem text the reference hands back with the diagnosis: the run's
    POSTMORTEM.md, or each horde's in a swarm (`h2 `), when the reviewer wrote one."""
    hordes = getattr(sup, "hordes", None)
    runs = (
        [(f"{name} ", h.run_dir) for name, h in sorted(hordes.items())]
        if isinstance(hordes, dict)
        else [("", sup.run_dir)]
    )
    out = []
    for label, run_dir in runs:
        path = run_dir / "POSTMORTEM.md"
        try:
            out.append((label, path, path.read_text(encoding="utf-8", errors="replace")))
        except OSError:
            continue  # not generated: a clean stop without `postmortem`, a hard stop
    return out
