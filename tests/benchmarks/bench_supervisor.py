"""Benchmark: the supervisor's own cost while it runs 12 members x 30 turns.

    python tests/benchmarks/bench_supervisor.py

A real supervisor (in this process) runs 12 real member processes through one real
gateway against a zero-latency stub model (its own process), each member making 30
turns. Reported: the supervisor's CPU time per member-turn [target < 2 ms] and the
discovery phase's wall time over the ideal, where the ideal is the same 12 members
started directly against the same gateway and stub, with no supervisor.
"""

from __future__ import annotations

import asyncio
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from bench_members import _clean_env, _start, members_through_gateway

from horde_tui.common.settings import load_settings
from horde_tui.supervisor.run import Supervisor
from horde_tui.supervisor.setup import RunRequest

MEMBERS, TURNS = 12, 30


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def supervised(tmp: Path) -> dict[str, float]:
    script = tmp / "script.json"
    steps = [
        {"tool_calls": [{"name": "horde", "arguments": {"action": "list"}}], "repeat": TURNS - 1},
        {"content": "done"},
    ]
    script.write_text(json.dumps({"*": steps}))
    stub, url = _start(
        [sys.executable, "-m", "horde_tui.stubmodel", "--script", str(script)], _clean_env()
    )
    workdir = tmp / "work"
    workdir.mkdir()
    settings = load_settings(
        environ={"HORDE_MODEL": "openai/stub", "HORDE_API_BASE": url + "/v1", "HORDE_API_KEY": "x"},
        overrides={"deliverable": False, "postmortem": False, "remind_calls": 0},
    )
    sup = Supervisor(workdir, RunRequest("benchmark", MEMBERS, verifier=False), settings)
    try:
        cpu_before = _cpu()
        summary = asyncio.run(sup.run())
        cpu = _cpu() - cpu_before
    finally:
        stub.terminate()
        stub.wait(10)
    events = [json.loads(x) for x in (sup.run_dir / "events.jsonl").read_text().splitlines()]
    lifecycle = [e for e in events if e.get("type") == "lifecycle"]

    def ts(e: dict) -> float:
        return time.mktime(time.strptime(e["ts"][:19], "%Y-%m-%dT%H:%M:%S")) + float(
            "0." + e["ts"][20:26]
        )

    fan_out = next(
        ts(e) for e in lifecycle if e["kind"] == "member-spawn" and e.get("member") == "member-2"
    )
    end = next(ts(e) for e in lifecycle if e["kind"] == "phase-end")
    turns = sum(m.turns for m in summary.members)
    assert all(m.exit_cause == "completed" for m in summary.members), summary.members
    return {"turns": turns, "cpu_s": cpu, "discovery_s": end - fan_out}


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        ideal = members_through_gateway(Path(tmp), MEMBERS, TURNS)
    with tempfile.TemporaryDirectory() as tmp:
        sup = supervised(Path(tmp))
    per_turn_ms = sup["cpu_s"] / sup["turns"] * 1000
    ratio = sup["discovery_s"] / ideal["wall_s"]
    print(f"{MEMBERS} members x {TURNS} turns: {sup['turns']} member-turns")
    print(
        f"supervisor CPU (whole run incl. setup and finalize): {sup['cpu_s']:.2f} s = "
        f"{per_turn_ms:.2f} ms per member-turn (target < 2)"
    )
    print(
        f"discovery wall {sup['discovery_s']:.1f} s vs the same members unsupervised "
        f"{ideal['wall_s']:.1f} s: {ratio:.2f}x"
    )
    ok = per_turn_ms < 2
    print("targets met" if ok else "targets NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
