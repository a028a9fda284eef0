"""The store server (`protocol/server.py`, `store/client.py`): real server processes, real
`horde-tui tool` processes, real sockets and signals.

What it must keep: every call is judged as its caller (the kernel names the caller, not
the request), a write is recorded once even when the server dies mid-call, and without a
server (none, or a dead one's socket left behind) everything is written directly.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.cli import cli, host_env
from support.processes import wait_until
from support.store_server import SERVER, start_server, stop_server

from horde_tui.protocol.server import ALREADY, LISTENING
from horde_tui.store import identity
from horde_tui.store.client import socket_path
from horde_tui.store.store import HordeStore


@pytest.fixture
def server(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    root = tmp_path / ".horde"
    root.mkdir()
    proc = start_server(root)
    yield proc
    stop_server(proc)


def records(tmp_path: Path) -> list[dict[str, object]]:
    ledger = tmp_path / ".horde" / "ledger.jsonl"
    return [json.loads(line) for line in ledger.read_text().splitlines()]


def test_a_tool_call_goes_through_the_server_as_its_caller(
    tmp_path: Path, server: subprocess.Popen[str]
) -> None:
    r = cli(tmp_path, "tool", "idea", "text=Check src/a.py for SQL injection", member="ext-1")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok #1 added (open); claim it to work it"
    (rec,) = [x for x in records(tmp_path) if x["op"] == "idea.add"]
    assert rec["actor"] == "ext-1"
    assert str(rec["requestId"]).startswith("auto-")  # given by the client: it was routed
    writer = rec["writer"]
    assert isinstance(writer, dict)
    assert writer["pid"] != server.pid and writer["via"] == "outside"
    # Refusals and usage errors come back as they do without a server.
    assert cli(tmp_path, "tool", "claim", "id=1", member="ext-1").returncode == 0
    r = cli(tmp_path, "tool", "claim", "id=1", member="ext-2")
    assert r.returncode == 1 and "claimed by ext-1" in r.stdout, r.stdout
    r = cli(tmp_path, "tool", "claim", member="ext-1")
    assert r.returncode == 2 and "field 'id' is required" in r.stderr
    r = cli(tmp_path, "tool", "list", "--output", "json", member="ext-1")
    assert json.loads(r.stdout)["ok"] is True and "#1 Check src/a.py" in r.stdout


def test_a_routed_tool_call_imports_no_pydantic(
    tmp_path: Path, server: subprocess.Popen[str]
) -> None:
    """The fast path is what makes a cold call cheap: nothing of the protocol is loaded."""
    script = (
        "import sys\nfrom horde_tui.commands.cli import main\n"
        "rc = main(['tool', 'post', 'text=hello'])\n"
        "print('loaded:', 'pydantic' in sys.modules, 'horde_tui.store.state' in sys.modules)\n"
        "sys.exit(rc)\n"
    )
    env = host_env(HORDE_DIR=str(tmp_path / ".horde"), HORDE_RUN="r1")
    r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["ok: posted to BOARD.md", "loaded: False False"]


def test_without_a_server_or_with_a_dead_ones_socket_calls_write_directly(
    tmp_path: Path,
) -> None:
    root = tmp_path / ".horde"
    root.mkdir()
    r = cli(tmp_path, "tool", "post", "text=no server yet", member="ext-1")
    assert r.returncode == 0, r.stderr
    proc = start_server(root)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert socket_path(root).exists()  # left behind: nobody listens on it
    r = cli(tmp_path, "tool", "post", "text=after the server died", member="ext-1")
    assert r.returncode == 0, r.stderr
    posts = [x for x in records(tmp_path) if x["op"] == "board.post"]
    assert [p["text"] for p in posts] == ["no server yet", "after the server died"]
    assert all("requestId" not in p for p in posts)  # neither was sent to a server
    # A new server takes the dead one's place.
    proc = start_server(root)
    try:
        r = cli(tmp_path, "tool", "post", "text=the new server", member="ext-1")
        assert r.returncode == 0, r.stderr
        assert str(records(tmp_path)[-1].get("requestId", "")).startswith("auto-")
    finally:
        stop_server(proc)


@pytest.mark.parametrize(
    "given",
    [[], ["--json", '{"requestId": null}'], ["requestId="]],
    ids=["no-id", "null-id", "blank-id"],
)
def test_a_server_that_dies_after_recording_a_write_does_not_double_it(
    tmp_path: Path, given: list[str]
) -> None:
    """Also when the call names a null or blank `requestId` (which the tool ignores): it
    is given one like a call without."""
    root = tmp_path / ".horde"
    root.mkdir()
    die_after_append = (
        "import os\nfrom horde_tui.store.store import HordeStore\n"
        "append = HordeStore._append_records\n"
        "def dying(self, records, run):\n"
        "    append(self, records, run)\n"
        "    if any(r.get('text') == 'pay the invoice once' for r in records):\n"
        "        os._exit(9)\n"
        "HordeStore._append_records = dying\n"
    )
    proc = start_server(root, code=die_after_append)
    r = cli(tmp_path, "tool", "post", "text=pay the invoice once", *given, member="ext-1")
    proc.wait(timeout=10)
    assert proc.returncode == 9  # it died between the append and its answer
    assert r.returncode == 0, r.stderr
    # The caller retried directly with the id the server had been sent: answered from
    # the ledger, not written again.
    assert r.stdout.strip() == "ok: posted to BOARD.md (replayed: same requestId)"
    posts = [x for x in records(tmp_path) if x.get("text") == "pay the invoice once"]
    assert len(posts) == 1
    board = (root / "BOARD.md").read_text()
    assert board.count("pay the invoice once") == 1


def test_one_server_per_horde_directory(tmp_path: Path, server: subprocess.Popen[str]) -> None:
    second = subprocess.run(
        [*SERVER, str(tmp_path / ".horde")], env=host_env(), capture_output=True, text=True
    )
    assert second.returncode == 0
    assert second.stdout.startswith(ALREADY)
    r = cli(tmp_path, "tool", "post", "text=still served", member="ext-1")
    assert r.returncode == 0 and server.poll() is None


def test_the_identity_rule_judges_the_caller_not_the_request(
    tmp_path: Path, server: subprocess.Popen[str]
) -> None:
    """A process in a live member's tree is refused acting as another member through the
    server exactly as when it writes itself: the kernel names the caller, not the call."""
    root = tmp_path / ".horde"
    HordeStore(root, "parent").ensure_run("r1")
    # A stand-in member-1 (recorded by this process, its supervisor) that runs, once told
    # to, `HORDE_MEMBER=member-2 horde-tui tool post` from its own tree.
    member_code = (
        "import os, subprocess, sys\n"
        "sys.stdin.readline()\n"
        "env = dict(os.environ, HORDE_MEMBER='member-2')\n"
        "cmd = [sys.executable, '-m', 'horde_tui', 'tool', 'post', 'text=forged']\n"
        "r = subprocess.run(cmd, env=env, capture_output=True, text=True)\n"
        "print(r.stdout + r.stderr, end='')\n"
    )
    env = host_env(HORDE_DIR=str(root), HORDE_RUN="r1", HORDE_MEMBER="member-1")
    member = subprocess.Popen(
        [sys.executable, "-c", member_code],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    identity.record_processes(
        root / "runs" / "r1", {"member-1": identity.proc_of(member.pid), "member-2": None}
    )
    out, _ = member.communicate("go\n", timeout=60)
    assert "refused: this process runs under member-1's shell" in out, out
    assert not [x for x in records(tmp_path) if x.get("text") == "forged"]
    events = (root / "runs" / "r1" / "events.jsonl").read_text()
    assert '"requestId":"auto-' in events  # it was the server that refused it


def test_the_server_ends_when_the_process_that_started_it_is_gone(tmp_path: Path) -> None:
    root = tmp_path / ".horde"
    root.mkdir()
    starter = (
        "import subprocess, sys, os, time\n"
        f"p = subprocess.Popen({SERVER!r} + [{str(root)!r}, '--parent-pid', str(os.getpid())],"
        " stdout=subprocess.PIPE, text=True)\n"
        "print(p.pid, p.stdout.readline().strip(), flush=True)\n"
        "time.sleep(600)\n"
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", starter], env=host_env(), stdout=subprocess.PIPE, text=True
    )
    assert parent.stdout is not None
    pid_text, listening = parent.stdout.readline().split(" ", 1)
    assert listening.startswith(LISTENING)
    server_pid = int(pid_text)
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    assert wait_until(lambda: not _running(server_pid), 10), "the server outlived its starter"
    assert not socket_path(root).exists()


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ")[1][0] != "Z"
    except OSError:
        return False


def routed_writer(root: Path, posts: int, after_each: str) -> str:
    """A writer process's script: `posts` posts as `argv[1]` through the store server of
    `root` (written directly when there is none), each asserted ok, then `after_each`."""
    return (
        "import sys\nfrom pathlib import Path\n"
        "from horde_tui.protocol import run_action\n"
        "from horde_tui.store.store import HordeStore\n"
        "name = sys.argv[1]\n"
        f"store = HordeStore(Path({str(root)!r}), name, routed=True)\n"
        f"for i in range({posts}):\n"
        "    r = run_action(store, {'action': 'post', 'text': f'{name} post {i}'}, run='r1')\n"
        "    assert r.ok, r.text\n" + after_each
    )


def test_concurrent_writers_through_the_server_each_write_once(
    tmp_path: Path, server: subprocess.Popen[str]
) -> None:
    root = tmp_path / ".horde"
    # Each answer comes after its batch was rendered: the receipt means it is in the
    # markdown.
    writer = routed_writer(
        root, 15, "    assert f'{name} post {i}' in (store.paths.root / 'BOARD.md').read_text()\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", writer, f"ext-{n}"], env=host_env())
        for n in range(4)
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    texts = [str(x.get("text")) for x in records(tmp_path) if x["op"] == "board.post"]
    assert sorted(texts) == sorted(f"ext-{n} post {i}" for n in range(4) for i in range(15))
    assert all(str(x.get("requestId", "")).startswith("auto-") for x in records(tmp_path)[2:])


def test_killing_the_server_mid_stream_loses_and_doubles_nothing(tmp_path: Path) -> None:
    """Writers keep writing while their server is SIGKILLed and started again: each call
    in flight when it dies is retried directly with its id; every write lands once."""
    root = tmp_path / ".horde"
    root.mkdir()
    writer = routed_writer(root, 40, "    print(i, flush=True)\n")
    server = start_server(root)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", writer, f"ext-{n}"],
            env=host_env(),
            stdout=subprocess.PIPE,
            text=True,
        )
        for n in range(4)
    ]
    first = procs[0].stdout
    assert first is not None
    for _ in range(2):  # kill it twice while the writers are under way
        for _ in range(8):
            first.readline()
        server.send_signal(signal.SIGKILL)
        server.wait()
        server = start_server(root)
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    stop_server(server)
    texts = [str(x.get("text")) for x in records(tmp_path) if x["op"] == "board.post"]
    assert sorted(texts) == sorted(f"ext-{n} post {i}" for n in range(4) for i in range(40))


def test_a_call_that_fails_in_the_server_is_written_directly_and_the_server_refolds(
    tmp_path: Path,
) -> None:
    """A call that raises midway (after its append) leaves the server's fold in doubt:
    the caller writes directly with its id, and the server folds anew from the files."""
    root = tmp_path / ".horde"
    root.mkdir()
    fail_after_append = (
        "from horde_tui.store.store import HordeStore\n"
        "append = HordeStore._append_records\n"
        "def failing(self, records, run):\n"
        "    append(self, records, run)\n"
        "    if any(r.get('text') == 'boom' for r in records):\n"
        "        self.state.seq -= 1  # the fold no longer matches the ledger\n"
        "        raise RuntimeError('a bug')\n"
        "HordeStore._append_records = failing\n"
    )
    proc = start_server(root, code=fail_after_append)
    try:
        r = cli(tmp_path, "tool", "post", "text=boom", member="ext-1")
        assert r.returncode == 0 and "replayed" in r.stdout, r.stdout + r.stderr
        r = cli(tmp_path, "tool", "post", "text=after the bug", member="ext-1")
        assert r.returncode == 0, r.stderr
        assert proc.poll() is None  # still serving
    finally:
        stop_server(proc)
    recs = records(tmp_path)
    assert [x["text"] for x in recs if x["op"] == "board.post"] == ["boom", "after the bug"]
    assert str(recs[-1]["requestId"]).startswith("auto-")  # the server wrote it
    seqs = [x["seq"] for x in recs]
    assert len(seqs) == len(set(seqs))  # no seq handed out twice


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")
def test_a_caller_in_another_pid_namespace_is_not_served(
    tmp_path: Path, server: subprocess.Popen[str]
) -> None:
    """A member's commands run in bubblewrap's own pid namespace: even where the socket
    is reachable, the server does not take their calls (here `.horde/` is writable, so
    the call is written directly)."""
    root = tmp_path / ".horde"
    sandbox = ["bwrap", "--unshare-pid", "--ro-bind", "/", "/", "--dev", "/dev"]
    sandbox += ["--proc", "/proc", "--bind", str(tmp_path), str(tmp_path)]
    cmd = [*sandbox, sys.executable, "-m", "horde_tui", "tool", "post", "text=from inside"]
    env = host_env(HORDE_DIR=str(root), HORDE_MEMBER="ext-1")
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    if r.returncode != 0 and "bwrap" in r.stderr:
        pytest.skip(f"bubblewrap cannot run here: {r.stderr.strip()}")
    assert r.returncode == 0, r.stderr
    (post,) = [x for x in records(tmp_path) if x.get("text") == "from inside"]
    # Written by the process itself: its `writer` pid is its pid inside the namespace,
    # the one in its request id; the server would have stamped its pid as seen outside.
    writer = post["writer"]
    assert isinstance(writer, dict)
    assert writer["pid"] == int(str(post["requestId"]).split("-")[1])


_LATE_CALLER = """
import socket, sys, time
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.connect(sys.argv[1])
time.sleep(0.5)  # well after the server took the connection
try:
    sock.sendall(b'{"v":1}\\n')
    print(sock.makefile("rb").readline().decode().strip() or "closed")
except OSError as exc:
    print(type(exc).__name__)
"""


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")
def test_a_refused_caller_is_told_so_however_late_it_sends(
    tmp_path: Path, server: subprocess.Popen[str]
) -> None:
    """A caller the server does not serve gets one answer saying so, whenever its request
    comes: a refusal that only closed the socket told a caller that sent first "the
    server died" and one that sent later "nothing listens" (the flaky KeyError of the
    test above: a direct call without the request id it was sent with)."""
    sandbox = ["bwrap", "--unshare-pid", "--ro-bind", "/", "/", "--dev", "/dev"]
    sandbox += ["--proc", "/proc", "--bind", str(tmp_path), str(tmp_path)]
    path = str(socket_path(tmp_path / ".horde"))
    r = subprocess.run(
        [*sandbox, sys.executable, "-c", _LATE_CALLER, path],
        env=host_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    if r.returncode != 0 and "bwrap" in r.stderr:
        pytest.skip(f"bubblewrap cannot run here: {r.stderr.strip()}")
    assert r.returncode == 0, r.stderr
    answer = json.loads(r.stdout)
    assert "another pid namespace" in answer["error"], answer


def test_no_server_under_a_shared_directory_that_is_not_private(
    tmp_path: Path, short_tmp: Path
) -> None:
    """A horde path too long for a socket puts it under `$TMPDIR/horde-<uid>/`; a
    directory there that others may write is refused, not used."""
    root = tmp_path / ("d" * 120) / ".horde"
    root.mkdir(parents=True)
    tmpdir = short_tmp
    shared = tmpdir / f"horde-{os.getuid()}"
    shared.mkdir(parents=True)
    shared.chmod(0o777)
    env = host_env(TMPDIR=str(tmpdir))
    r = subprocess.run([*SERVER, str(root)], env=env, capture_output=True, text=True)
    assert r.returncode == 0
    assert r.stdout.startswith("store server not started:"), r.stdout
    assert "not a private directory" in r.stdout
    shared.chmod(0o700)
    proc = subprocess.Popen([*SERVER, str(root)], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith(LISTENING)
        assert list(shared.iterdir())  # its socket
    finally:
        stop_server(proc)
