"""Benchmark: how soon an AI Horde job is cancelled once its member gives up.

    python tests/benchmarks/bench_aihorde_cancel.py [--trials 7]

A gateway process on the fake AI Horde (`tests/support/aihorde.py`, jobs that never
finish); per trial a member-like process (the member's own `GatewayClient`) makes one
call, is SIGKILLed once the fake accepted its job, and the time from the kill to the
fake receiving the job's DELETE is measured. Before the gateway watched its client's
connection, the job stayed queued until the per-call deadline (6 minutes) or the run's
stop. Prints the median and the largest.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # conftest, support

from conftest import start_gateway
from support.aihorde import FakeHorde, FakeHordeThread, FakeModel, json_tool_answer
from support.gateway import post

from horde_tui.stubmodel import StubThread

MODEL = "aphrodite/TheDrummer/Skyfall-31B-v4.2"
MEMBER = """
import sys
from horde_tui.common.gatewayclient import GatewayClient
GatewayClient(sys.argv[1], sys.argv[2], "member-1").chat(
    [{"role": "user", "content": "Review app.py"}], [])
"""


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=7)
    args = p.parse_args()
    fake = FakeHorde([FakeModel(MODEL)], json_tool_answer, polls_to_done=1)
    seconds: list[float] = []
    with StubThread() as stub, FakeHordeThread(fake) as served:
        gw = start_gateway(
            stub,
            Path(tempfile.mkdtemp()),
            HORDE_MODEL=f"aihorde/{MODEL}",
            HORDE_API_BASE=served.api_base,
            HORDE_API_KEY="",
        )
        try:
            hello = {"model": "horde", "messages": [{"role": "user", "content": "hi"}]}
            assert post(gw, "warm-up", hello).status_code == 200  # litellm imported
            fake.polls_to_done = 10**9
            for _ in range(args.trials):
                submitted, cancelled = len(fake.accepted()), len(fake.cancels)
                member = subprocess.Popen(
                    [sys.executable, "-c", MEMBER, gw.url, gw.token], stderr=subprocess.DEVNULL
                )
                while len(fake.accepted()) == submitted:
                    time.sleep(0.01)
                killed = time.monotonic()
                member.kill()
                member.wait()
                while len(fake.cancels) == cancelled:
                    if time.monotonic() - killed > 60:
                        raise SystemExit("no DELETE within 60 s of the member's kill")
                    time.sleep(0.002)
                seconds.append(time.monotonic() - killed)
        finally:
            gw.proc.terminate()
            gw.proc.wait(10)
    print(
        f"member killed -> job DELETE: median {statistics.median(seconds) * 1000:.0f} ms, "
        f"max {max(seconds) * 1000:.0f} ms over {len(seconds)} trials"
    )


if __name__ == "__main__":
    main()
