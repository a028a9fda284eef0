"""Benchmark: member start-up and RSS, gateway overhead per call, 12 members x 20 turns.

    python tests/benchmarks/bench_members.py             # gateway overhead: median of 5 runs
    python tests/benchmarks/bench_members.py --runs 9
    python tests/benchmarks/bench_members.py --against ../main   # paired with main's gateway

Measures (issue 3 targets in brackets):
- member start-up: process start to its first request at the model endpoint [< 0.5 s],
  and the member's peak RSS [< 60 MB];
- gateway overhead: the gateway process's CPU time per chat call while serving 12
  concurrent clients against a zero-latency stub [< 5 ms for each model], for the stub's
  own model, which litellm has no price for (as with a local server), and for a model it
  prices (as with a cloud provider): the target is held against both, since which one
  costs more depends on what litellm does per call (before the gateway skipped litellm's
  own per-call pricing, gateway/lean.py, the unpriced model was dearer; now the priced
  one is, mostly by the gateway's own `litellm.cost_per_token`); with the load average,
  since CPU time per call on a shared 2-core machine rises with the load; and, for the
  record, the median
  latency through the gateway against a direct call to the same stub (against a
  zero-latency stub, 12 concurrent clients queue on the gateway's one event loop, so that
  latency is CPU per call times the queue, not a per-call cost); the CPU is split into the
  event loop's thread and litellm's worker threads (it builds each request in a thread
  pool), and measured once more with `litellm.acompletion` answering instantly with a
  canned reply, which leaves the gateway's own share (HTTP, routing, limiter, accounting);
- the Python function calls per chat call in the gateway process (all threads), counted
  by a profile hook in a separate gateway: a figure that does not move with the load, to
  compare litellm settings, call parameters or versions by;
- with `--against CHECKOUT`, the same gateway overhead for another checkout's gateway
  (say main, before a change) in every run, and what this checkout saves per run: a
  paired difference, fairer than two separate runs of a machine whose load moves;
- 12 real member processes x 20 turns through one gateway (zero-latency stub): wall time
  and member-turns per second; litellm's import is paid once, by the gateway.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from horde_tui.store.store import HordeStore
from horde_tui.stubmodel import StubThread

ROOT = Path(__file__).resolve().parents[2]


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HORDE_")}
    env.update(extra)
    return env


def _prepare(workdir: Path) -> Path:
    horde = workdir / ".horde"
    HordeStore(horde, "parent").ensure_run("bench", "# Task\n\nbenchmark\n")
    return horde


def member_startup(samples: int = 7) -> tuple[float, float]:
    """Median seconds from Popen to first request, and the largest peak RSS in MB."""
    arrivals: list[float] = []

    def policy(member: str, body: dict[str, Any]) -> None:
        arrivals.append(time.time())
        return None

    delays, rss = [], []
    with StubThread(policy=policy) as stub, tempfile.TemporaryDirectory() as tmp:
        horde = _prepare(Path(tmp))
        for i in range(samples):
            env = _clean_env(
                HORDE_MEMBER=f"member-{i}",
                HORDE_DIR=str(horde),
                HORDE_RUN="bench",
                HORDE_GATEWAY_URL=stub.url,
                HORDE_GATEWAY_TOKEN="x",
                HORDE_PARENT_PID=str(os.getpid()),
            )
            before = len(arrivals)
            started = time.time()
            proc = subprocess.Popen(
                [sys.executable, "-m", "horde_tui.member"],
                env=env,
                cwd=tmp,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
            delays.append(arrivals[before] - started)
            rss.append(usage.ru_maxrss / 1024)
    return statistics.median(delays), max(rss)


def _start(cmd: list[str], env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("listening on "):
        proc.kill()
        raise SystemExit(f"{cmd[2]} did not start: {line!r}")
    return proc, line.split()[-1]


def _latencies(url: str, token: str, clients: int, calls: int) -> list[float]:
    host, port = url.replace("http://", "").split(":")
    body = json.dumps({"model": "stub", "messages": [{"role": "user", "content": "hi"}]})
    out: list[float] = []
    lock = threading.Lock()

    def client(n: int) -> None:
        conn = http.client.HTTPConnection(host, int(port), timeout=60)
        headers = {
            "Authorization": f"Bearer {token}",
            "X-Horde-Member": f"member-{n}",
            "Content-Type": "application/json",
        }
        mine = []
        for _ in range(calls):
            t0 = time.perf_counter()
            conn.request("POST", "/v1/chat/completions", body, headers)
            resp = conn.getresponse()
            resp.read()
            if resp.status != 200:
                raise SystemExit(f"call failed: {resp.status}")
            mine.append(time.perf_counter() - t0)
        with lock:
            out.extend(mine)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def _cpu_s(pid: int, thread: int | None = None) -> float:
    """User + system CPU seconds of a process, or of one of its threads, from /proc (Linux)."""
    stat = Path(f"/proc/{pid}/task/{thread}/stat" if thread else f"/proc/{pid}/stat")
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _measured(pid: int, url: str, clients: int, calls: int) -> tuple[list[float], float, float]:
    """Latencies of the calls, and the server's CPU per call in ms: the whole process's
    and its main (event loop) thread's."""
    process, loop = _cpu_s(pid), _cpu_s(pid, pid)
    latencies = _latencies(url, "bench-token", clients, calls)
    return (
        latencies,
        (_cpu_s(pid) - process) / len(latencies) * 1000,
        (_cpu_s(pid, pid) - loop) / len(latencies) * 1000,
    )


def serve_with_instant_litellm() -> None:
    """A gateway whose `litellm.acompletion` answers at once with a canned reply.

    Run as a child process (`--serve-instant`) by `own_share`: what it spends per call is
    the gateway's own code (HTTP, auth, routing, limiter, pricing lookup, usage.jsonl and
    the reply), since litellm's request building, provider round trip and logging are gone.
    """
    from horde_tui.common.httpserve import serve
    from horde_tui.common.settings import GatewaySettings
    from horde_tui.gateway.app import Gateway, GatewayConfig
    from horde_tui.gateway.backend import LiteLLM

    async def main() -> None:
        litellm = LiteLLM()
        litellm.start_import()
        module = await litellm.module()
        canned = module.ModelResponse(
            model="stub",
            choices=[{"index": 0, "message": {"role": "assistant", "content": "ok"}}],
            usage={"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
        )

        async def instant(**_kwargs: Any) -> Any:
            return canned

        module.acompletion = instant
        usage = Path(tempfile.mkdtemp()) / "usage.jsonl"
        config = GatewayConfig(
            "bench-token",
            GatewaySettings(model="openai/stub", api_base="http://127.0.0.1:9/v1", api_key="x"),
            usage_path=usage,
        )
        server = await serve(Gateway(config, litellm).handle)
        print(f"listening on {server.url}", flush=True)
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        await stop.wait()
        await server.close()

    asyncio.run(main())


def own_share(clients: int = 12, calls: int = 200) -> float:
    """Gateway CPU per call (ms) with litellm answering instantly (see above).

    More calls than the real path gets: at about 0.2 ms a call, 480 calls would be a
    handful of the 10 ms clock ticks /proc counts CPU in.
    """
    gateway, url = _start(
        [sys.executable, str(Path(__file__).resolve()), "--serve-instant"], _clean_env()
    )
    try:
        _latencies(url, "bench-token", 1, 3)
        return _measured(gateway.pid, url, clients, calls)[1]
    finally:
        gateway.terminate()
        gateway.wait(10)


UNPRICED_MODEL = "openai/stub"
"""A model litellm has no price for, as with a local OpenAI-compatible server."""
PRICED_MODEL = "openai/gpt-4o-mini"
"""A model in litellm's price map, as with a cloud provider; the stub answers it alike."""


def _stub_and_gateway(
    tmp: Path,
    steps: list[dict[str, Any]],
    model: str = UNPRICED_MODEL,
    gateway_cmd: tuple[str, ...] = (sys.executable, "-m", "horde_tui.gateway"),
) -> tuple[subprocess.Popen[str], str, subprocess.Popen[str], str]:
    """A stub model process playing `steps` for every member, and a gateway in front."""
    script = tmp / "script.json"
    script.write_text(json.dumps({"*": steps}))
    stub, stub_url = _start(
        [sys.executable, "-m", "horde_tui.stubmodel", "--script", str(script)], _clean_env()
    )
    gw_env = _clean_env(
        HORDE_MODEL=model,
        HORDE_API_BASE=stub_url + "/v1",
        HORDE_API_KEY="x",
        HORDE_GATEWAY_TOKEN="bench-token",
        BENCH_CALLS_FILE=str(tmp / "calls"),
    )
    gateway, gw_url = _start([*gateway_cmd, "--run-dir", str(tmp)], gw_env)
    return stub, stub_url, gateway, gw_url


def gateway_from(tree: Path) -> tuple[str, ...]:
    """A gateway command importing horde_tui from another checkout `tree` (`--against`)."""
    code = f"import sys; sys.path.insert(0, {str(tree.resolve())!r})"
    code += "; import horde_tui.gateway.__main__ as m"
    return (sys.executable, "-c", code + "; m.main()")


def gateway_overhead(
    tmp: Path,
    model: str = UNPRICED_MODEL,
    clients: int = 12,
    calls: int = 40,
    gateway_cmd: tuple[str, ...] = (sys.executable, "-m", "horde_tui.gateway"),
) -> dict[str, float]:
    stub, stub_url, gateway, gw_url = _stub_and_gateway(
        tmp, [{"content": "ok", "repeat": 1_000_000}], model, gateway_cmd
    )
    try:
        _latencies(gw_url, "bench-token", 1, 3)  # waits for litellm's import; warms up
        _latencies(stub_url, "x", 1, 3)
        direct = _latencies(stub_url, "x", clients, calls)
        through, cpu_per_call_ms, loop_ms = _measured(gateway.pid, gw_url, clients, calls)
        conn = http.client.HTTPConnection(*gw_url.replace("http://", "").split(":"))
        conn.request("GET", "/v1/usage", headers={"Authorization": "Bearer bench-token"})
        import_s = json.loads(conn.getresponse().read())["litellm_import_s"]
    finally:
        gateway.terminate()
        stub.terminate()
        gateway.wait(10)
        stub.wait(10)
    return {
        "direct_ms": statistics.median(direct) * 1000,
        "gateway_ms": statistics.median(through) * 1000,
        "latency_overhead_ms": (statistics.median(through) - statistics.median(direct)) * 1000,
        "cpu_per_call_ms": cpu_per_call_ms,
        "loop_thread_ms": loop_ms,
        "worker_threads_ms": cpu_per_call_ms - loop_ms,
        "litellm_import_s": import_s,
    }


def serve_counting(argv: list[str]) -> None:
    """The real gateway, counting the Python function calls of all its threads.

    Run as a child (`--serve-counting`, then the gateway's own arguments) by
    `calls_per_chat_call`; SIGUSR1 writes the count so far to $BENCH_CALLS_FILE. Unlike
    CPU time, a call count does not move with the load of a shared machine, so it is the
    figure to compare litellm settings, call parameters or versions by. Counting slows
    the process several-fold, so its CPU time means nothing and is not read.
    """
    from horde_tui.gateway.__main__ import main as gateway_main

    calls = 0

    def count(frame: Any, event: str, arg: Any) -> None:
        nonlocal calls
        if event in ("call", "c_call"):
            calls += 1

    path = Path(os.environ["BENCH_CALLS_FILE"])

    def report(*_: Any) -> None:
        path.with_suffix(".part").write_text(str(calls))
        path.with_suffix(".part").replace(path)

    signal.signal(signal.SIGUSR1, report)
    threading.setprofile(count)
    sys.setprofile(count)
    gateway_main(argv)


def _calls_so_far(gateway: subprocess.Popen[str], path: Path) -> int:
    path.unlink(missing_ok=True)
    gateway.send_signal(signal.SIGUSR1)
    deadline = time.monotonic() + 30
    while not path.exists():
        if time.monotonic() > deadline:
            raise SystemExit("the counting gateway did not report its calls")
        time.sleep(0.01)
    return int(path.read_text())


def calls_per_chat_call(tmp: Path, model: str, clients: int = 12, calls: int = 10) -> float:
    """Python function calls (all threads of the gateway process) per chat call."""
    stub, _, gateway, gw_url = _stub_and_gateway(
        tmp,
        [{"content": "ok", "repeat": 1_000_000}],
        model,
        (sys.executable, str(Path(__file__).resolve()), "--serve-counting"),
    )
    try:
        _latencies(gw_url, "bench-token", 1, 3)  # waits for litellm's import; warms up
        before = _calls_so_far(gateway, tmp / "calls")
        served = len(_latencies(gw_url, "bench-token", clients, calls))
        return (_calls_so_far(gateway, tmp / "calls") - before) / served
    finally:
        gateway.terminate()
        stub.terminate()
        gateway.wait(10)
        stub.wait(10)


def members_through_gateway(tmp: Path, members: int = 12, turns: int = 20) -> dict[str, float]:
    workdir = tmp / "work"
    workdir.mkdir()
    horde = _prepare(workdir)
    steps = [
        {"tool_calls": [{"name": "horde", "arguments": {"action": "list"}}], "repeat": turns - 1},
        {"content": "done"},
    ]
    stub, _, gateway, gw_url = _stub_and_gateway(tmp, steps)
    try:
        _latencies(gw_url, "bench-token", 1, 1)  # litellm imported before the clock starts
        started = time.perf_counter()
        procs = []
        for i in range(members):
            env = _clean_env(
                HORDE_MEMBER=f"member-{i + 1}",
                HORDE_DIR=str(horde),
                HORDE_RUN="bench",
                HORDE_GATEWAY_URL=gw_url,
                HORDE_GATEWAY_TOKEN="bench-token",
                HORDE_REMIND_CALLS="0",
            )
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "horde_tui.member"],
                    env=env,
                    cwd=workdir,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    text=True,
                )
            )
        exits = []
        for proc in procs:
            out, _ = proc.communicate(timeout=600)
            exits.append(json.loads(out.strip().splitlines()[-1]))
        wall = time.perf_counter() - started
    finally:
        gateway.terminate()
        stub.terminate()
        gateway.wait(10)
        stub.wait(10)
    total_turns = sum(e["turns"] for e in exits)
    assert all(e["cause"] == "completed" for e in exits), exits
    return {
        "members": members,
        "turns": total_turns,
        "wall_s": wall,
        "turns_per_s": total_turns / wall,
    }


def _spread(values: list[float]) -> str:
    """Median and range, the way a figure from a shared, noisy machine is reported."""
    return f"{statistics.median(values):.2f} ms (runs: {min(values):.2f}-{max(values):.2f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="gateway overhead runs (median)")
    parser.add_argument(
        "--against",
        type=Path,
        metavar="CHECKOUT",
        help="also measure the gateway of another checkout (e.g. main) in each run: paired",
    )
    parser.add_argument("--serve-instant", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--serve-counting", action="store_true", help=argparse.SUPPRESS)
    args, gateway_args = parser.parse_known_args()
    if args.serve_instant:
        serve_with_instant_litellm()
        return 0
    if args.serve_counting:
        serve_counting(gateway_args)
        return 0
    if gateway_args:
        parser.error(f"unrecognized arguments: {' '.join(gateway_args)}")
    startup_s, rss_mb = member_startup()
    print(
        f"member start-up (median of 7, to first request): {startup_s * 1000:.0f} ms "
        f"(target < 500); peak RSS {rss_mb:.1f} MB (target < 60)"
    )
    runs: list[dict[str, float]] = []
    priced: list[float] = []
    own: list[float] = []
    other: dict[str, list[float]] = {UNPRICED_MODEL: [], PRICED_MODEL: []}
    load_before = os.getloadavg()[0]

    def measure_other(model: str) -> None:
        """Right after this checkout's run of `model`, so the pair shares the machine's load."""
        if args.against:
            with tempfile.TemporaryDirectory() as tmp:
                measured = gateway_overhead(
                    Path(tmp), model, gateway_cmd=gateway_from(args.against)
                )
            other[model].append(measured["cpu_per_call_ms"])

    for _ in range(args.runs):  # interleaved, so a burst of load elsewhere hits them all
        with tempfile.TemporaryDirectory() as tmp:
            runs.append(gateway_overhead(Path(tmp)))
        measure_other(UNPRICED_MODEL)
        with tempfile.TemporaryDirectory() as tmp:
            priced.append(gateway_overhead(Path(tmp), PRICED_MODEL)["cpu_per_call_ms"])
        measure_other(PRICED_MODEL)
        own.append(own_share())
    load_after = os.getloadavg()[0]
    counted = {}
    for model in (UNPRICED_MODEL, PRICED_MODEL):
        with tempfile.TemporaryDirectory() as tmp:
            counted[model] = calls_per_chat_call(Path(tmp), model)

    def series(key: str) -> list[float]:
        return [r[key] for r in runs]

    cpu = statistics.median(series("cpu_per_call_ms"))
    direct, via = statistics.median(series("direct_ms")), statistics.median(series("gateway_ms"))
    print(
        f"gateway CPU per chat call, 12 concurrent clients, median of {args.runs} runs "
        f"(load average {load_before:.1f} before, {load_after:.1f} after):\n"
        f"  model without a price ({UNPRICED_MODEL}): "
        f"{_spread(series('cpu_per_call_ms'))} (target < 5)\n"
        f"  event-loop thread {_spread(series('loop_thread_ms'))}, litellm's worker threads "
        f"{_spread(series('worker_threads_ms'))}\n"
        f"  model litellm prices ({PRICED_MODEL}): {_spread(priced)} (target < 5)\n"
        f"  with litellm.acompletion answering instantly (the gateway's own share): "
        f"{_spread(own)}\n"
        f"Python function calls per chat call in the gateway (all threads; load-independent): "
        f"{counted[UNPRICED_MODEL]:,.0f} without a price, {counted[PRICED_MODEL]:,.0f} priced\n"
        f"median latency: direct {direct:.2f} ms, via gateway {via:.2f} ms ({via / direct:.0f}x: "
        f"queueing on one event loop)\n"
        f"litellm import in the gateway {statistics.median(series('litellm_import_s')):.1f} s, "
        "once per run"
    )
    if args.against:
        this = {UNPRICED_MODEL: series("cpu_per_call_ms"), PRICED_MODEL: priced}
        for model, theirs in other.items():
            saved = [t - o for t, o in zip(theirs, this[model], strict=True)]
            print(
                f"  {model} from {args.against}: {_spread(theirs)}; "
                f"this checkout saves, paired by run: {_spread(saved)}"
            )
    with tempfile.TemporaryDirectory() as tmp:
        m = members_through_gateway(Path(tmp))
    print(
        f"{m['members']} members x 20 turns through one gateway: {m['turns']} turns in "
        f"{m['wall_s']:.1f} s ({m['turns_per_s']:.1f} member-turns/s)"
    )
    ok = startup_s < 0.5 and rss_mb < 60 and max(cpu, statistics.median(priced)) < 5
    print("targets met" if ok else "targets NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
