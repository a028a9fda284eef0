"""`horde-tui fork RUN --at E#`: a new run that starts from RUN's ledgers as they were
after event E#.

Looking back at a run is half of learning where a swarm went wrong; the other half is
trying again from the moment it went wrong. The fork is a new directory: a copy of the
working directory (without `.horde/`), a `.horde/ledger.jsonl` holding the ledger
records written up to E# (byte for byte, so its fold is RUN's fold at E#), and a
`config.toml` holding RUN's recorded settings (never the key). A new run then starts
there with RUN's task, member count and plan, unless flags change them; MANIFEST.json
says `forked_from: RUN@E#`.

Where E# leaves the ledger: every tool answer's event records the ledger `seq` it left
(`store.transact`); the last answer at or before E# says it. Runs older than that record
are cut by time: the records stamped no later than E#.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from horde_tui.store.events import EVENT_ID
from horde_tui.store.jsonl import JsonlTail, parse_record
from horde_tui.store.paths import atomic_write_text
from horde_tui.store.runs import resolve_run
from horde_tui.supervisor.lessons import lessons_path


class ForkRefused(Exception):
    """One line: what cannot be forked and what to do."""


@dataclass(frozen=True)
class Fork:
    into: Path
    run: str
    at: str
    """`E#`, as the new run's MANIFEST names it."""
    seq: int
    """The last ledger seq the fork keeps."""
    manifest: dict[str, Any]
    prompt: str


def ledger_seq_at(
    events: list[dict[str, Any]], at: int, records: list[tuple[dict[str, Any], bytes]]
) -> int:
    """The ledger seq after event `E{at}` (see the module docstring)."""
    upto = [e for e in events if _number(e.get("id")) <= at]
    if not upto or _number(upto[-1].get("id")) != at:
        raise ForkRefused(f"refused: the run has no event E{at}; its events end at E{len(events)}")
    seqs = [int(e["seq"]) for e in upto if e.get("type") == "outcome" and "seq" in e]
    if seqs:
        return max(seqs)
    stamp = str(upto[-1].get("ts", ""))
    return max((r["seq"] for r, _ in records if str(r.get("ts", "")) <= stamp), default=0)


def _number(ident: Any) -> int:
    m = EVENT_ID.fullmatch(str(ident or ""))
    return int(m[1]) if m else 0


def _lines(ledger: Path) -> list[tuple[dict[str, Any], bytes]]:
    """Every whole, parsed record of the ledger with its line as written."""
    out = []
    for raw in ledger.read_bytes().splitlines(keepends=True):
        if not raw.endswith(b"\n"):
            break  # a torn tail: not a record
        record, error = parse_record(raw.rstrip(b"\n"))
        if record is not None and not error and isinstance(record.get("seq"), int):
            out.append((record, raw))
    return out


def prepare(workdir: Path, run: str, at: str, into: Path | None) -> Fork:
    """Make the fork's directory (see the module docstring); refuse in one line when the
    run, the event or the target is not usable."""
    horde_dir = workdir / ".horde"
    run_dir = resolve_run(horde_dir, run)  # UnknownRun: bad usage
    if run_dir.parent.parent != horde_dir:
        raise ForkRefused(
            f"refused: {run} is a swarm's horde run; fork a run of {horde_dir} (a swarm's "
            "hordes share its partition, which a fork of one would not have)"
        )
    m = EVENT_ID.fullmatch(at.strip())
    if m is None:
        raise ForkRefused(f"refused: --at {at!r} is not an event id; give E# (e.g. E42)")
    try:
        manifest = json.loads((run_dir / "MANIFEST.json").read_text())
        task = (run_dir / "TASK.md").read_text()
    except (OSError, ValueError) as exc:
        raise ForkRefused(
            f"refused: run {run} has no readable MANIFEST.json and TASK.md ({exc}); only a "
            "run a supervisor started can be forked"
        ) from None
    events = JsonlTail(run_dir / "events.jsonl").read_new()
    lines = _lines(horde_dir / "ledger.jsonl")  # read once: the cut and the copy
    seq = ledger_seq_at(events, int(m[1]), lines)
    target = into or workdir.parent / f"{workdir.name}-fork-{run}-E{m[1]}"
    if target.exists() and any(target.iterdir()):
        raise ForkRefused(f"refused: {target} exists and is not empty; pass --into a new folder")
    shutil.copytree(
        workdir, target, symlinks=True, ignore=shutil.ignore_patterns(".horde"), dirs_exist_ok=True
    )
    fork_horde = target / ".horde"
    fork_horde.mkdir()
    kept = b"".join(raw for record, raw in lines if record["seq"] <= seq)
    (fork_horde / "ledger.jsonl").write_bytes(kept)
    atomic_write_text(fork_horde / "config.toml", config_toml(manifest.get("config") or {}))
    presets = horde_dir / "presets"
    if presets.is_dir():
        shutil.copytree(presets, fork_horde / "presets")
    given = lessons_path(horde_dir)  # a run with `lessons = true` needs them in the fork too
    if given.is_file():
        shutil.copyfile(given, fork_horde / given.name)
    from horde_tui.supervisor.resume import prompt_of  # the one reader of TASK.md's prompt

    return Fork(target, run, f"E{m[1]}", seq, manifest, prompt_of(task))


def demo_model(prompt: str, speed: float) -> Any:
    """The demo model (a `StubThread`, a context manager) playing the script of the demo
    `prompt` came from (the sloppy members, or the four-member review), for a fork of a
    run it played: the one that played it died with the demo's process."""
    from horde_tui.demo.policy import demo_policy
    from horde_tui.demo.sloppy import SLOPPY_PROMPT, sloppy_policy
    from horde_tui.stubmodel import demo_stub

    policy = sloppy_policy(speed) if prompt == SLOPPY_PROMPT else demo_policy(speed)
    return demo_stub(policy)


def config_toml(config: dict[str, Any]) -> str:
    """The recorded settings as a `[horde]` table (unset ones left out)."""
    lines = ["# The settings of the run this fork started from (horde-tui fork).", "[horde]"]
    for key, value in sorted(config.items()):
        if value is None or key == "api_key":
            continue
        lines.append(f"{key} = {_toml(value)}")
    return "\n".join(lines) + "\n"


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(str(value))  # a JSON string is a TOML basic string
