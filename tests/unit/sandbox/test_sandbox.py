"""Member commands inside bubblewrap, with real processes, files and /proc.

The refusal list is a courtesy; these tests are about the boundary the kernel enforces.
The destructive commands here are hidden in script files, which the refusal list cannot
read, so only the sandbox stands between them and the machine. Each sandboxed test
first checks (with the same policy) that the root is read-only inside, so a sandbox
that silently stopped working fails the test before anything destructive runs.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import PROBLEM, Horde, needs_bwrap
from support.cli import cli_argv

from horde_tui.member.tools import WorkspaceTools
from horde_tui.sandbox import netns
from horde_tui.sandbox.netns import resolv_conf
from horde_tui.sandbox.policy import (
    SandboxPolicy,
    bwrap_argv,
    bwrap_problem,
    network_problem,
    process_limit_problem,
    resolve,
    unshare_problem,
)
from horde_tui.sandbox.shell import command_env, run_command
from horde_tui.store.lock import HordeLock
from horde_tui.store.store import HordeStore

BWRAP = SandboxPolicy(mode="bwrap")


def _script(work: Path, name: str, text: str) -> str:
    """A command that runs `text` from a file, out of the refusal list's sight."""
    (work / name).write_text(text)
    return f"bash {name}"


@pytest.fixture
def work(horde: Horde) -> Path:
    """A project with a live `.horde/`: a ledger, a proposal awaiting validation, a
    gateway token in the run directory and a config file with a key."""
    horde.claimed("member-1", "Audit app/db/query.py")
    horde.claimed("member-2", "Audit app/auth/session.py")
    assert horde(
        "member-1",
        "finding",
        text="SQL injection",
        evidence="q.py:4",
        concern="sqli",
        concernDef="SQL built from input",
    ).ok
    assert horde("member-1", "solved", text="Injectable, see F1", cites=["F1"]).ok
    (horde.root / "runs" / "r1" / "gateway.token").write_text("tok-SECRET-gw\n")
    (horde.root / "config.toml").write_text('api_key = "sk-SECRET-cfg"\n')
    return horde.workdir


def _sandboxed(tools: WorkspaceTools) -> None:
    """Fail unless commands under `tools` really run sandboxed (read-only root)."""
    probe = tools.bash("touch /usr/horde-probe; echo status=$?")
    assert "Read-only file system" in probe.text and "status=1" in probe.text, probe.text


def _tools(work: Path, policy: SandboxPolicy = BWRAP, **env: str) -> WorkspaceTools:
    base = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root")}
    base.update(HORDE_MEMBER="member-1", HORDE_DIR=str(work / ".horde"), HORDE_RUN="r1")
    return WorkspaceTools(work, env={**base, **env}, sandbox=policy)


# -- the environment: an allow-list, with or without the sandbox ------------------------


LEAKY = {
    "DATABASE_URL": "postgres://app:pw-SECRET@db/app",
    "GITHUB_PAT": "ghp_SECRET",
    "OPENAI_API_KEY": "sk-SECRET",
    "HORDE_GATEWAY_TOKEN": "gw-SECRET",
    "HORDE_GATEWAY_URL": "http://127.0.0.1:9/SECRET",
    "SOME_RANDOM_THING": "x-SECRET",
}


def test_command_env_is_an_allow_list() -> None:
    given = {
        "PATH": "/usr/bin",
        "HOME": "/home/me",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TZ": "UTC",
        "USER": "me",
        "HORDE_MEMBER": "member-3",
        "HORDE_RUN": "r1",
        "HORDE_DIR": "/w/.horde",
        "PROJECT_DSN": "named by the user",
        **LEAKY,
    }
    env = command_env(given, ("PROJECT_DSN", "HORDE_GATEWAY_TOKEN"), Path("/w"))
    assert not any("SECRET" in value for value in env.values()), env
    assert env["PROJECT_DSN"] == "named by the user"
    assert (env["PATH"], env["LANG"], env["LC_ALL"], env["TZ"]) == (
        "/usr/bin",
        "C.UTF-8",
        "C.UTF-8",
        "UTC",
    )
    assert (env["HORDE_MEMBER"], env["HORDE_RUN"], env["PWD"]) == ("member-3", "r1", "/w")
    assert env["GIT_TERMINAL_PROMPT"] == "0"


@pytest.mark.parametrize("sandboxed", [False, True], ids=["no-sandbox", "bwrap"])
def test_secrets_in_the_environment_do_not_reach_commands(tmp_path: Path, sandboxed: bool) -> None:
    if sandboxed and PROBLEM:
        pytest.skip(f"no sandbox here: {PROBLEM}")
    policy = BWRAP if sandboxed else SandboxPolicy(mode="off")
    env = {"PATH": os.environ["PATH"], "HORDE_MEMBER": "member-1", **LEAKY}
    result = run_command("env", tmp_path, env=env, sandbox=policy)
    assert result.exit_code == 0, result.output
    assert "SECRET" not in result.output
    assert "HORDE_MEMBER=member-1" in result.output


# -- inside the sandbox ------------------------------------------------------------------


@needs_bwrap
def test_rm_rf_root_fails_harmlessly(work: Path) -> None:
    tools = _tools(work)
    _sandboxed(tools)
    ledger = (work / ".horde" / "ledger.jsonl").read_bytes()
    interpreter = Path(sys.executable).resolve()
    command = _script(work, "wipe.sh", "rm -rf --no-preserve-root / 2>&1 | tail -3\n")
    result = tools.bash(command, timeout=120)
    assert "Read-only file system" in result.text or "Device or resource busy" in result.text
    assert (work / ".horde" / "ledger.jsonl").read_bytes() == ledger
    assert interpreter.is_file() and Path("/usr/bin").is_dir()


@needs_bwrap
def test_ledgers_are_readable_but_not_writable(work: Path) -> None:
    tools = _tools(work)
    _sandboxed(tools)
    ledger = (work / ".horde" / "ledger.jsonl").read_bytes()
    assert tools.bash("cat .horde/IDEAS.md").text.startswith("# ")
    forged = '{"type":"finding","id":"F9"}'
    command = _script(work, "forge.sh", f"printf '%s\\n' '{forged}' >> .horde/ledger.jsonl\n")
    result = tools.bash(command)
    assert result.ok is False and "Read-only file system" in result.text
    assert (work / ".horde" / "ledger.jsonl").read_bytes() == ledger
    # The same file-borne forgery with no sandbox does write: the sandbox is what stops it.
    assert _tools(work, SandboxPolicy(mode="off")).bash(command).ok
    assert (work / ".horde" / "ledger.jsonl").read_bytes() != ledger


UNREAD = [
    "X=.horde; rm -rf $X",
    "rm -rf $(echo .horde)",
    "echo 'rm -rf .horde' | sh",
    "echo cm0gLXJmIC5ob3JkZQ== | base64 -d | sh",
    "sh <<< 'truncate -s0 .horde/ledger.jsonl'",
    "python3 -c \"open('.horde/ledger.jsonl', 'a').write('{}')\"",
    "flock /tmp/lab.lock -c 'rm -rf .horde'",
]
"""Forms the refusal list stopped reading (issue 31 item 5): a variable, a pipe or a
here-string into a shell, a one-line program, an exotic wrapper."""


@needs_bwrap
@pytest.mark.parametrize("command", UNREAD)
def test_what_the_refusal_list_does_not_read_the_kernel_stops(work: Path, command: str) -> None:
    tools = _tools(work)
    _sandboxed(tools)
    ledger = (work / ".horde" / "ledger.jsonl").read_bytes()
    result = tools.bash(command)
    assert "Read-only file system" in result.text, result.text
    assert (work / ".horde" / "ledger.jsonl").read_bytes() == ledger
    assert (work / ".horde" / "IDEAS.md").is_file()


@needs_bwrap
def test_impersonating_another_member_through_the_cli_writes_nothing(work: Path) -> None:
    tools = _tools(work)
    _sandboxed(tools)
    ledger = (work / ".horde" / "ledger.jsonl").read_bytes()
    events = (work / ".horde" / "runs" / "r1" / "events.jsonl").read_bytes()
    result = tools.bash(f"HORDE_MEMBER=member-2 {shlex.join(cli_argv('tool', 'confirm-solved'))}")
    assert not result.ok
    assert "read-only" in result.text.lower()
    assert "Traceback" not in result.text
    assert (work / ".horde" / "ledger.jsonl").read_bytes() == ledger
    assert (work / ".horde" / "runs" / "r1" / "events.jsonl").read_bytes() == events
    # Reads through the CLI still work inside the sandbox.
    listing = tools.bash(shlex.join(cli_argv("tool", "list")))
    assert listing.ok and "Audit app/db/query.py" in listing.text, listing.text


@needs_bwrap
def test_token_and_key_files_are_masked(work: Path) -> None:
    tools = _tools(work)
    _sandboxed(tools)
    result = tools.bash(
        "cat .horde/runs/r1/gateway.token .horde/config.toml; grep -r SECRET .horde; echo done"
    )
    assert "SECRET" not in result.text
    assert result.text.count("Permission denied") == 4, result.text
    assert "\ndone\n" in result.text
    write = tools.bash("echo x > .horde/runs/r1/gateway.token")
    assert not write.ok


@needs_bwrap
def test_other_processes_environments_are_out_of_sight(work: Path) -> None:
    secret = "provider-key-SECRET-" + os.urandom(4).hex()
    other = subprocess.Popen(["sleep", "60"], env={"OPENAI_API_KEY": secret})
    try:
        hunt = f"cat /proc/{other.pid}/environ /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n'"
        inside = _tools(work).bash(f"{hunt} | grep -c {secret}")
        assert inside.text.startswith("0\n"), inside.text
        outside = _tools(work, SandboxPolicy(mode="off")).bash(f"{hunt} | grep -c {secret}")
        assert not outside.text.startswith("0\n"), "the check itself must be able to fail"
        pids = _tools(work).bash("ls /proc | grep -c '^[0-9]'")
        assert int(pids.text.split()[0]) <= 4, pids.text  # bwrap, bash, ls, grep
    finally:
        other.kill()
        other.wait()


@needs_bwrap
def test_home_and_tmp_are_private_and_the_cwd_writable(
    work: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    tools = _tools(work)
    _sandboxed(tools)
    outside = tmp_path_factory.mktemp("outside") / "keep.txt"
    outside.write_text("keep")
    result = tools.bash(
        f"ls {outside.parent} 2>&1; echo made > built.txt; touch $HOME/h /tmp/t; "
        "ls -A $HOME; echo home=$HOME"
    )
    assert "No such file or directory" in result.text
    assert (work / "built.txt").read_text() == "made\n"
    assert "home=" in result.text and result.text.split("home=")[1].strip()
    assert outside.read_text() == "keep"


@needs_bwrap
def test_network_can_be_cut(work: Path) -> None:
    on = _tools(work).bash("cat /proc/net/dev | grep -c :")
    off = _tools(work, SandboxPolicy(mode="bwrap", network=False)).bash(
        "cat /proc/net/dev | grep -c :"
    )
    assert on.ok and off.ok
    assert int(off.text.split()[0]) == 1  # loopback only
    # On: loopback and slirp4netns's tap0 where it runs, else the host's own interfaces.
    host = sum(":" in line for line in Path("/proc/net/dev").read_text().splitlines())
    assert int(on.text.split()[0]) == (2 if network_problem() is None else host)


PEEK = """import socket, sys
listing = open("/proc/net/unix").read()
for name in sys.argv[1:3]:
    print(name, "listed" if name in listing else "unlisted")
def reach(family, address):
    s = socket.socket(family)
    s.settimeout(5)
    try:
        s.connect(address)
        return "reached"
    except OSError as exc:
        return f"out of reach ({exc})"
    finally:
        s.close()
print("abstract", reach(socket.AF_UNIX, "\\0" + sys.argv[2]))
port = int(sys.argv[3])
print("loopback", reach(socket.AF_INET, ("127.0.0.1", port)))
print("gateway", reach(socket.AF_INET, ("10.0.2.2", port)))
own = socket.socket()
own.bind(("127.0.0.1", 0))
own.listen()
print("own", reach(socket.AF_INET, own.getsockname()))
routes = open("/proc/net/route").read().splitlines()[1:]
print("default", [r.split()[0] for r in routes if r.split()[1] == "00000000"])
"""


@pytest.fixture
def host_listeners() -> Iterator[tuple[str, str, int, list[socket.socket]]]:
    """A listening unix socket at a path, an abstract one and a TCP listener on
    127.0.0.1, all on the host side: (path, abstract name, port, the sockets)."""
    folder = tempfile.mkdtemp(prefix="hs-")  # short: a socket path has 108 bytes
    path = os.path.join(folder, f"horde-{os.urandom(4).hex()}.sock")
    name = f"horde-abstract-{os.urandom(4).hex()}"
    made = []
    for family, address in ((socket.AF_UNIX, path), (socket.AF_UNIX, "\0" + name)):
        made.append(socket.socket(family))
        made[-1].bind(address)
    made.append(socket.socket())
    made[-1].bind(("127.0.0.1", 0))
    for sock in made:
        sock.listen()
        sock.setblocking(False)
    listing = Path("/proc/net/unix").read_text()
    assert path in listing and name in listing  # what a command on the host sees
    try:
        yield path, name, made[2].getsockname()[1], made
    finally:
        for sock in made:
            sock.close()
        shutil.rmtree(folder)


@needs_bwrap
def test_with_the_network_on_the_hosts_sockets_and_loopback_are_out_of_reach(
    work: Path, host_listeners: tuple[str, str, int, list[socket.socket]]
) -> None:
    """Issue 29 item 8: a command with the network on has a network namespace of its own
    (slirp4netns): the host's unix sockets are not listed, its abstract socket and its
    127.0.0.1 (the gateway, serve) are out of reach, also through slirp's 10.0.2.2, while
    the sandbox's own loopback, a tap device and a default route are there."""
    if (problem := network_problem()) is not None:
        pytest.skip(f"no network namespace of its own here: {problem}")
    path, name, port, sockets = host_listeners
    tools = _tools(work)
    _sandboxed(tools)
    (work / "peek.py").write_text(PEEK)
    result = tools.bash(f"python3 peek.py {path} {name} {port}")
    assert result.ok, result.text
    lines = dict(line.split(" ", 1) for line in result.text.splitlines()[:-1])
    assert lines[path] == "unlisted" and lines[name] == "unlisted", result.text
    for kind in ("abstract", "loopback", "gateway"):
        assert lines[kind].startswith("out of reach"), result.text
    assert lines["own"] == "reached", result.text
    assert lines["default"] == "['tap0']", result.text
    cleanup = BWRAP.for_cleanup((work / ".horde",))  # finalize's cleanups: the same rule
    again = run_command(f"python3 peek.py {path} {name} {port}", work, sandbox=cleanup)
    assert "loopback out of reach" in again.output, again.output
    for sock in sockets:  # nothing knocked on the host side either
        with pytest.raises(BlockingIOError):
            sock.accept()
    resolv = Path(os.path.realpath("/etc/resolv.conf"))
    if resolv.is_file():
        inside = tools.bash(f"grep ^nameserver {resolv}").text
        servers = [line.split()[1] for line in inside.splitlines() if line.startswith("nameserver")]
        assert servers and not any(s.startswith("127.") or s == "::1" for s in servers), inside


@needs_bwrap
def test_a_resolver_on_the_hosts_loopback_gives_way_to_slirps_forwarder(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With systemd-resolved's 127.0.0.53 in the host's resolv.conf, the sandbox sees one
    that names slirp4netns's forwarder instead (the host's loopback is not its own); the
    file is bound over the host's, which stays as it was."""
    if (problem := network_problem()) is not None:
        pytest.skip(f"no network namespace of its own here: {problem}")
    host = work / "resolv.conf"
    host.write_text("nameserver 127.0.0.53\noptions edns0\n")
    monkeypatch.setattr(netns, "_RESOLV", host)
    netns._resolv.cache_clear()
    try:
        result = _tools(work).bash(f"cat {host}")
    finally:
        netns._resolv.cache_clear()
    assert result.ok and "nameserver 10.0.2.3\noptions edns0" in result.text, result.text
    assert "127.0.0.53" not in result.text and "127.0.0.53" in host.read_text()


@needs_bwrap
def test_slirp4netns_failing_refuses_the_command_in_one_line(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A network namespace that cannot get its network ends the command before it runs
    (never run it on the host's network instead), with one line that says why."""
    if (problem := network_problem()) is not None:
        pytest.skip(f"no network namespace of its own here: {problem}")
    monkeypatch.setenv("HORDE_SLIRP4NETNS", "false")  # found, and fails at once
    result = run_command("touch ran.txt", work, env=_tools(work).env, sandbox=BWRAP)
    assert result.exit_code is None and not (work / "ran.txt").exists(), result.output
    assert result.output.startswith("could not start the command: slirp4netns could not"), (
        result.output
    )
    assert "\n" not in result.output


@needs_bwrap
def test_without_slirp4netns_the_run_says_commands_share_the_network(
    work: Path, no_slirp4netns: None, host_listeners: tuple[str, str, int, list[socket.socket]]
) -> None:
    """bwrap without slirp4netns: commands with the network on share the host's (what
    they reach is the same as before this item), and the run's note says so once;
    with the network off there is nothing to say."""
    mode, note = resolve("auto")
    assert mode == "bwrap"
    for gap in (
        "127.0.0.1",
        "abstract unix sockets",
        "/proc/net/unix",
        "apt-get install slirp4netns",
    ):
        assert gap in note, note
    assert resolve("auto", network=False) == ("bwrap", "")
    path, name, port, _ = host_listeners
    (work / "peek.py").write_text(PEEK)
    result = _tools(work).bash(f"python3 peek.py {path} {name} {port}")
    for seen in (f"{path} listed", f"{name} listed", "abstract reached", "loopback reached"):
        assert seen in result.text, result.text


@needs_bwrap
def test_timeout_kills_everything_inside(work: Path) -> None:
    tools = _tools(work)
    marker = "sleep-marker-" + os.urandom(4).hex()
    result = run_command(
        f"(exec -a {marker} sleep 300) & (exec -a {marker} sleep 300) & wait",
        work,
        timeout_s=1,
        env=tools.env,
        sandbox=tools.sandbox,
    )
    assert result.timed_out and result.exit_code is None
    assert result.output.endswith("[timed out after 1s; process group killed]")
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
    assert left.stdout == "", left.stdout


@needs_bwrap
def test_exit_codes_and_output_as_without_the_sandbox(work: Path) -> None:
    result = run_command("echo out; echo err >&2; exit 3", work, sandbox=BWRAP)
    assert result.exit_code == 3
    assert result.output.startswith("out\nerr\n[exit 3 in ")


@needs_bwrap
def test_background_processes_end_with_their_command(work: Path) -> None:
    result = run_command("(sleep 1; touch late.txt) & echo started", work, sandbox=BWRAP)
    assert result.exit_code == 0 and result.output.startswith("started\n")
    subprocess.run(["sleep", "2"], check=True)
    assert not (work / "late.txt").exists()


def test_bwrap_asked_for_but_missing_is_refused_not_run_bare(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    bwrap_problem.cache_clear()
    try:
        result = run_command("touch made", tmp_path, env={"PATH": "/usr/bin:/bin"}, sandbox=BWRAP)
    finally:
        bwrap_problem.cache_clear()
    assert result.refused is not None and "bwrap" in result.refused
    assert not (tmp_path / "made").exists()


def test_the_read_tool_refuses_token_and_key_files(work: Path) -> None:
    tools = WorkspaceTools(work)
    for path in (".horde/runs/r1/gateway.token", ".horde/config.toml"):
        result = tools.read(path)
        assert not result.ok and "SECRET" not in result.text
        assert result.text.startswith("refused: ") and "\n" not in result.text
    assert tools.read(".horde/IDEAS.md").ok


def test_home_is_private_also_when_the_project_lies_in_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "proj").mkdir(parents=True)
    argv = bwrap_argv(["true"], home / "proj", SandboxPolicy(mode="bwrap"), str(home))
    pairs = list(itertools.pairwise(argv))
    assert ("--tmpfs", str(home)) in pairs
    assert pairs.index(("--tmpfs", str(home))) < pairs.index(("--bind", str(home / "proj")))
    inside = bwrap_argv(["true"], home, SandboxPolicy(mode="bwrap"), str(home / "proj"))
    assert "--tmpfs" not in [a for a, b in itertools.pairwise(inside) if b == str(home / "proj")]


@needs_bwrap
def test_tools_installed_under_tmp_stay_usable_and_the_rest_of_tmp_private(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A PATH entry (a virtual environment, as CI's) under `/tmp` is bound back read-only
    over the private `/tmp`; its neighbours stay out of sight. Found in CI, whose venv lives
    under `/tmp`: `horde-tui tool` inside the sandbox had no interpreter."""
    from horde_tui.sandbox import policy as sandbox

    toolbox = Path(tempfile.mkdtemp(prefix="horde-toolbox-", dir="/tmp"))
    other = Path(tempfile.mkdtemp(prefix="horde-neighbour-", dir="/tmp"))
    try:
        (toolbox / "bin").mkdir()
        hello = toolbox / "bin" / "hello-horde"
        hello.write_text("#!/bin/sh\necho hello-from-the-toolbox\n")
        hello.chmod(0o755)
        (other / "note.txt").write_text("neighbour-SECRET\n")
        path = f"{toolbox / 'bin'}{os.pathsep}{os.environ['PATH']}"
        monkeypatch.setenv("PATH", path)
        sandbox._passthrough.cache_clear()
        tools = _tools(work, PATH=path)
        _sandboxed(tools)
        ran = tools.bash(f"hello-horde; touch {toolbox}/x; cat {other}/note.txt")
        assert "hello-from-the-toolbox" in ran.text, ran.text
        assert "Read-only file system" in ran.text, ran.text
        assert "neighbour-SECRET" not in ran.text and "No such file" in ran.text, ran.text
    finally:
        sandbox._passthrough.cache_clear()
        shutil.rmtree(toolbox, ignore_errors=True)
        shutil.rmtree(other, ignore_errors=True)


@needs_bwrap
def test_the_mcp_token_and_the_lock_files_are_out_of_reach(work: Path) -> None:
    """`runs/<id>/mcp-token` is masked like the gateway token, and `.horde/.lock` is
    not the horde's lock inside: a read-only file can still be `flock`ed, and a command
    holding it stalled every write of the horde until the command's timeout."""
    token = "mcp-SECRET-" + os.urandom(8).hex()
    (work / ".horde" / "runs" / "r1" / "mcp-token").write_text(token + "\n")
    tools = _tools(work)
    _sandboxed(tools)
    assert token not in tools.bash("cat .horde/runs/r1/mcp-token; grep -r SECRET .horde").text
    command = _script(work, "hold.sh", "flock .horde/.lock sleep 4 && echo held\n")
    holding = concurrent.futures.ThreadPoolExecutor(1).submit(tools.bash, command)
    time.sleep(1.5)  # the sandbox is up and the command holds whatever it could lock
    paths = HordeStore(work / ".horde", "member-1").paths
    with HordeLock(paths, "member-1").held(timeout=1):
        pass
    assert "held" in holding.result(30).text


def _repo(work: Path) -> None:
    """`work` as a git repository with one commit (`.horde/` ignored, as a project would)."""
    (work / ".gitignore").write_text(".horde/\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(work)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "first"], check=True)


@needs_bwrap
def test_git_is_read_only_inside_unless_the_run_opts_in(work: Path) -> None:
    """A hook or `core.fsmonitor` written into `.git/` would run outside the sandbox at
    the user's next `git status`; inside, `.git/` is read-only and git reads still work."""
    _repo(work)
    config = (work / ".git" / "config").read_bytes()
    tools = _tools(work)
    _sandboxed(tools)
    plant = _script(
        work,
        "plant.sh",
        'git config core.fsmonitor "touch RAN; false"\n'
        "printf '#!/bin/sh\\ntouch RAN\\n' > .git/hooks/post-checkout\n"
        "git log --oneline; git status --short; git diff --stat; echo reads-done\n",
    )
    result = tools.bash(plant)
    assert "first" in result.text and "reads-done" in result.text, result.text
    assert "fatal" not in result.text and "Read-only file system" in result.text, result.text
    assert (work / ".git" / "config").read_bytes() == config
    assert not (work / ".git" / "hooks" / "post-checkout").exists()
    commit = (
        "git -c user.name=m -c user.email=m@m commit -qam second --allow-empty; git log --oneline"
    )
    assert "second" not in tools.bash(commit).text
    opted = _tools(work, SandboxPolicy(mode="bwrap", git_write=True))
    assert "second" in opted.bash(commit).text


# -- without bubblewrap --------------------------------------------------------------------


def test_without_bwrap_a_command_gets_its_own_pid_namespace(work: Path, no_bwrap: None) -> None:
    """Where user namespaces work, a command without bwrap still runs in a PID namespace
    of its own with a private /proc: it cannot signal (`kill -9 -1` ended every process
    of the user) or read the environment of any process outside it. Probed with
    `kill -0`: never `kill -1` in a test, which without the namespace ends this machine's."""
    problem = unshare_problem()
    if problem:
        pytest.skip(f"no PID namespace without bwrap here: {problem}")
    mode, note = resolve("auto")
    assert mode == "namespace", (mode, note)
    other = subprocess.Popen(["sleep", "60"])
    try:
        probe = f"kill -0 {other.pid} && echo reached; ls /proc | grep -c '^[0-9]'; echo made > built.txt"
        result = run_command(probe, work, sandbox=SandboxPolicy(mode=mode))
    finally:
        other.kill()
        other.wait()
    assert "reached" not in result.output, result.output
    counts = [int(line) for line in result.output.splitlines() if line.isdigit()]
    assert counts and counts[0] <= 4, result.output  # unshare's child, bash, ls, grep
    assert (work / "built.txt").read_text() == "made\n"


def test_without_bwrap_the_warning_names_each_gap(no_bwrap: None) -> None:
    mode, note = resolve("auto", network=False)
    assert mode in ("namespace", "off")
    for gap in ("bwrap is not installed", "gateway token", ".horde/", "sandbox_network"):
        assert gap in note, note
    if mode == "off":
        assert "kill -9 -1" in note, note
    assert "\n" not in note


FORKER = """import os, time
made = failed = 0
for _ in range(60):
    try:
        pid = os.fork()
    except OSError:
        failed += 1
        continue
    if pid == 0:
        time.sleep(3)
        os._exit(0)
    made += 1
print(f"made={made} failed={failed}")
"""


@needs_bwrap
def test_a_command_cannot_start_processes_without_limit(work: Path) -> None:
    """A per-command process cap (a pids cgroup, or RLIMIT_NPROC inside the sandbox's
    user namespace): a fork loop stops at it instead of filling the machine."""
    problem = process_limit_problem(SandboxPolicy(mode="bwrap"))
    if problem:
        pytest.skip(f"no process limit here: {problem}")
    tools = _tools(work, SandboxPolicy(mode="bwrap", max_processes=20))
    _sandboxed(tools)
    (work / "forker.py").write_text(FORKER)
    result = tools.bash(f"{sys.executable} forker.py")
    made = int(result.text.split("made=")[1].split()[0])
    assert 1 <= made < 20 and "failed=" in result.text, result.text
    unlimited = _tools(work).bash(f"{sys.executable} forker.py")
    assert "made=60 failed=0" in unlimited.text, unlimited.text


@pytest.mark.parametrize(
    ("host", "inside", "forwarder"),
    [
        ("nameserver 10.255.255.53\n", None, False),
        (
            "search lan\nnameserver 127.0.0.53\noptions edns0\n",
            "nameserver 10.0.2.3\nsearch lan\noptions edns0\n",
            True,
        ),
        ("nameserver ::1\nnameserver 9.9.9.9\n", "nameserver 9.9.9.9\n", False),
        ("# no servers\n", None, False),
    ],
    ids=["reachable", "systemd-resolved", "mixed", "none"],
)
def test_the_sandbox_resolv_conf_names_no_loopback_server(
    host: str, inside: str | None, forwarder: bool
) -> None:
    """The host's loopback is not the sandbox's: a resolver there (systemd-resolved's
    127.0.0.53) gives way to slirp4netns's forwarder, which stays off when not needed
    (it is the one door left to a port on the host's loopback)."""
    assert resolv_conf(host) == (inside, forwarder)
