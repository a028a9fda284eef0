"""Benchmark: what a run saves by joining the eval's shared gateway instead of starting its own.

    python tests/benchmarks/bench_eval_gateway.py [--repeat 5]

The same short headless run (`horde-tui run --headless 1 ...`: one member, two model
calls to the stub, no deliverable or post-mortem) is run `--repeat` times each way,
interleaved so both see the same machine load:

- own: the run starts its own gateway process (`python -m horde_tui.gateway`, which
  imports litellm before the first call is answered), as every eval run did before;
- shared: the run joins one gateway started beforehand (`eval.gateway.start_shared_gateway`,
  as `horde-tui eval` starts it once per eval), so it pays an HTTP join instead.

Reported: the median wall time of a run each way and the difference (the per-run
overhead the shared gateway removes), the median CPU time of the run's whole process
tree (`RUSAGE_CHILDREN`: supervisor, member and, for `own`, its gateway), and the shared
gateway's one-time start (to `listening`, and its litellm import, from `/v1/usage`).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from horde_tui.eval.gateway import start_shared_gateway
from horde_tui.stubmodel import StubThread
from horde_tui.stubmodel.agent import AgentPolicy

PLAN = {
    "member-1": [
        {"tool": "horde", "args": {"action": "list"}},
        {"say": "Nothing to report."},
    ]
}


def one_run(folder: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds (its whole reaped process tree) of one headless run."""
    folder.mkdir()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "horde_tui", "run", "--headless", "1", "Review the folder"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"run failed: {done.stdout[-1500:]} {done.stderr[-1500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HORDE_")}
    with (
        tempfile.TemporaryDirectory(prefix="bench-eval-gw-") as scratch,
        StubThread(policy=AgentPolicy(PLAN)) as stub,
    ):
        root = Path(scratch)
        env.update(
            HORDE_MODEL=stub.model,
            HORDE_API_BASE=stub.api_base,
            HORDE_API_KEY="stub",
            HORDE_GATEWAY_BACKOFF_MS="20",
            HORDE_ACTIVE_GRACE_MS="300",
            HORDE_DELIVERABLE="off",
            HORDE_POSTMORTEM="off",
        )
        started = time.perf_counter()
        gateway = start_shared_gateway(env, {}, root / "gateway")
        listening = time.perf_counter() - started
        try:
            shared_env = {**env, **gateway.run_env()}
            times: dict[str, list[tuple[float, float]]] = {"own": [], "shared": []}
            for n in range(args.repeat):
                for kind, run_env in (("own", env), ("shared", shared_env)):
                    times[kind].append(one_run(root / f"{kind}-{n}", run_env))
            request = urllib.request.Request(
                gateway.url + "/v1/usage", headers={"Authorization": f"Bearer {gateway.token}"}
            )
            with urllib.request.urlopen(request, timeout=30) as resp:
                import_s = json.loads(resp.read())["litellm_import_s"]
        finally:
            gateway.stop()
    wall = {k: statistics.median(w for w, _ in v) for k, v in times.items()}
    cpu = {k: statistics.median(c for _, c in v) for k, v in times.items()}
    print(
        f"{args.repeat} runs each way, interleaved; load average at the end "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    for kind in ("own", "shared"):
        print(
            f"{kind:>6} gateway: run wall median {wall[kind]:.2f} s, CPU median {cpu[kind]:.2f} s"
        )
    print(
        f"per-run overhead removed by the shared gateway: wall {wall['own'] - wall['shared']:.2f} s "
        f"({wall['own'] / wall['shared']:.2f}x), CPU {cpu['own'] - cpu['shared']:.2f} s"
    )
    print(
        f"shared gateway, once per eval: listening after {listening:.2f} s, litellm import "
        f"{import_s if import_s is None else round(import_s, 2)} s (in the background)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
