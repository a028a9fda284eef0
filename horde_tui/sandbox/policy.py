"""Members' shell commands inside bubblewrap: a boundary the kernel enforces.

The refusal list (`refusal.py`) is a courtesy that catches the obvious; a command can
hide anything from it (a script file, a variable). Inside `bwrap` the root filesystem
is read-only, the working directory writable, its `.git/` and `.horde/` read-only, the
secret and lock files of `.horde/` masked (`store/secretfiles.py`, the one list), `/tmp`
and `$HOME` private, and the command sees only its own processes (a new PID namespace:
no `/proc/<supervisor>/environ`), so a command can neither forge a ledger record, nor
read the run's secrets, nor plant a git hook, whatever it is. With the network on, it gets
a network namespace of its own with user-mode networking where slirp4netns runs
(`netns.py`): the internet, not the host's loopback or unix sockets. Every command,
sandboxed or not, is capped in processes where the kernel lets us (`process_cap`). Stdlib
only.

`auto` uses bwrap when it can run here; otherwise a PID namespace of its own where
`unshare` can make one (mode `namespace`), else nothing; the run says once what a
command can then still do (header and REPORT.md). `bwrap` refuses to start without it.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from horde_tui.sandbox import netns
from horde_tui.store.secretfiles import masked_files

INSTALL_HINT = "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap)"

_HOME_CREDENTIALS = ("credentials", "credentials.toml", ".credentials.json", "hosts.yml")
"""Credential files masked inside home directories that stay readable (`~/.cargo`)."""
_HOME_CONFIG = (".gitconfig", ".config/git/config")
"""Home files kept readable so `git commit` still knows who the user is."""


@dataclass(frozen=True)
class SandboxPolicy:
    """How a member's commands are confined.

    `mode` is `auto`, `bwrap` or `off`; `network` False cuts the network (loopback
    only); `env_names` are extra variables the user lets through to commands;
    `readonly` are the `.horde/` directories a command may read but never write;
    `git_write` lets commands write `.git/`; `workdir_write` False makes the working
    directory read-only too (`for_cleanup`).
    """

    mode: str = "off"
    network: bool = True
    env_names: tuple[str, ...] = ()
    readonly: tuple[Path, ...] = ()
    git_write: bool = False
    """Whether commands may write the working directory's `.git/` (commits). Off by
    default: a hook or `core.fsmonitor` written there runs outside the sandbox, as the
    user, at their next `git status` (`sandbox_git_write`)."""
    max_processes: int = 512
    """Processes one command may have at once (`limit_processes`); a fork loop stops here."""
    workdir_write: bool = True

    def for_cleanup(self, horde_dirs: tuple[Path, ...]) -> SandboxPolicy:
        """This policy for resource cleanup, which never changes files: bwrap whatever
        the run's mode, with the working directory and `horde_dirs` read-only."""
        return replace(
            self, mode="bwrap", readonly=horde_dirs, git_write=False, workdir_write=False
        )

    def as_env(self) -> dict[str, str]:
        """The `HORDE_SANDBOX*` variables that give a member this policy."""
        return {
            "HORDE_SANDBOX": self.mode,
            "HORDE_SANDBOX_NETWORK": "on" if self.network else "off",
            "HORDE_SANDBOX_ENV": ",".join(self.env_names),
            "HORDE_SANDBOX_GIT_WRITE": "on" if self.git_write else "off",
        }


NEVER_PASSED = frozenset({"HORDE_GATEWAY_URL", "HORDE_GATEWAY_TOKEN", "HORDE_API_KEY"})
"""Never given to a command, even when the user names them in `sandbox_env`."""


def passed_through(environ: Mapping[str, str], names: Iterable[str]) -> dict[str, str]:
    """The variables the user named in `sandbox_env`, as set in `environ`: the member's
    own environment is scrubbed of secrets by name, so these are put back for it to
    hand to its commands."""
    return {n: environ[n] for n in names if n in environ and n not in NEVER_PASSED}


def _bwrap() -> str | None:
    """The bwrap to run: `HORDE_BWRAP` (a name or path; tests name a missing one to run
    as on a machine without it), else `bwrap` on PATH."""
    return shutil.which(os.environ.get("HORDE_BWRAP", "").strip() or "bwrap")


@functools.cache
def bwrap_problem() -> str | None:
    """None when bwrap can run a command here, else why not (one phrase).

    Probed once per process with the options commands use: a bwrap that is installed
    but cannot make namespaces (some containers) must count as missing.
    """
    if _bwrap() is None:
        return f"bwrap is not installed; {INSTALL_HINT}"
    return _probe([*_bwrap_head(), *_ROOT], "bwrap")


def _bwrap_head() -> list[str]:
    """bwrap with the options every command gets, up to its first mount."""
    return [_bwrap() or "bwrap", *_BASE, *_caps()]


_ROOT = ("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc")
"""The first mounts: the host's root read-only, a fresh /dev and the sandbox's /proc."""


@functools.cache
def network_problem() -> str | None:
    """None when a command with the network on gets a network namespace of its own here
    (bwrap and slirp4netns both run), else why not (one phrase). Probed once per process."""
    if (problem := bwrap_problem()) is not None:
        return problem
    return netns.probe([*_bwrap_head(), *_ROOT])


def private_network(policy: SandboxPolicy, mode: str) -> bool:
    """Whether a command under `policy`, run in `mode`, gets slirp4netns's network."""
    return mode == "bwrap" and policy.network and network_problem() is None


def _probe(argv: list[str], what: str) -> str | None:
    """None when `argv -- true` runs, else why not."""
    try:
        done = subprocess.run(
            [*argv, "--", "true"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{what} cannot run here ({exc})"
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or ["no message"])[-1]
        return f"{what} cannot run here ({said})"
    return None


@functools.cache
def _namespace_base() -> tuple[list[str], str | None]:
    """The `unshare` prefix that gives a command its own PID namespace and `/proc` without
    bwrap, and None, or why there is none. A user namespace first where not root (mapped
    to the user, so files keep their owner and exec drops the namespace's capabilities:
    the command cannot unmount its `/proc`); under `setpriv --pdeathsig KILL` when
    setpriv is there, so the namespace dies with its member as bwrap's does."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return [], "unshare is not installed"
    setpriv = shutil.which("setpriv")
    head = [setpriv, "--pdeathsig", "KILL"] if setpriv else []
    ns = ["--pid", "--fork", "--mount-proc", "--kill-child"]
    users = [[]] if os.geteuid() == 0 else [["--user", "--map-current-user"], ["--user", "-r"]]
    problem: str | None = "unshare is not installed"
    for user in users:
        argv = [*head, unshare, *user, *ns]
        problem = _probe(argv, "unshare")
        if problem is None:
            return argv, None
    return [], problem


def unshare_problem() -> str | None:
    """None when a command can get its own PID namespace without bwrap, else why not."""
    return _namespace_base()[1]


def namespace_argv(argv: Sequence[str]) -> list[str]:
    """`argv` in a PID namespace of its own with a private `/proc` (mode `namespace`):
    no signal reaches a process outside it (`kill -9 -1` ends only its own), no other
    process's `/proc/<pid>/environ` is in sight, and what it leaves running ends with it.
    Nothing else is confined: files, `.horde/` and the network are the user's."""
    return [*_namespace_base()[0], "--", *argv]


def _gaps(network: bool, namespace: bool) -> str:
    """What a command can still do without bwrap, for the run's one warning."""
    parts = [
        "a command can read the gateway token and spend the run's budget",
        "write .horde/ by hand",
        "reach every file and network service you can",
    ]
    if not namespace:
        parts.append("and end every process of yours (kill -9 -1 in a script)")
    text = ", ".join(parts)
    if namespace:
        text += "; each command has its own PID namespace, so it cannot signal or read your other processes"
    if not network:
        text += "; sandbox_network = off has no effect without bwrap"
    return text


def resolve(mode: str, network: bool = True) -> tuple[str, str]:
    """(`bwrap`, `namespace` or `off`, the note to show when commands run without bwrap:
    why, and each thing a command can then still do).

    `auto` becomes `bwrap` when it can run, else `namespace` where a PID namespace can be
    had without it, else `off`; `bwrap` stays `bwrap` (commands are then refused if it
    cannot run, never run bare); `off` is the user's choice.
    """
    if mode == "off":
        return (
            "off",
            f"member commands run without a sandbox (sandbox set to off): {_gaps(network, False)}",
        )
    problem = bwrap_problem()
    if mode == "bwrap" or (problem is None and mode != "namespace"):
        return "bwrap", _shared_network(network)
    namespace = unshare_problem() is None
    why = problem or "the run chose a PID namespace only"
    return (
        "namespace" if namespace else "off",
        f"member commands run without a sandbox: {why}; {_gaps(network, namespace)}",
    )


def _shared_network(network: bool) -> str:
    """The run's note when bwrap runs but a command with the network on shares the host's
    (no slirp4netns here), else ""."""
    if not network or bwrap_problem() is not None or (problem := network_problem()) is None:
        return ""
    return (
        "with sandbox_network on, member commands share this machine's network: they can "
        "reach every service on 127.0.0.1 (the run's gateway, serve) and the abstract unix "
        f"sockets, and list every unix socket in /proc/net/unix; {problem}"
    )


_BASE = ("--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts")
"""A PID namespace (only the command's own processes in /proc), and the sandbox dies
with the member. No `--new-session`: commands already run in their own session with no
terminal (so no TIOCSTI), and a second session would put them out of reach of the
process-group signals that time them out and pause them."""


def _caps() -> list[str]:
    """Root keeps every capability inside bwrap unless told: drop them, or a root
    command could simply remount the read-only binds writable."""
    return ["--cap-drop", "ALL"] if os.geteuid() == 0 else []


def bwrap_argv(
    argv: Sequence[str],
    cwd: Path,
    policy: SandboxPolicy,
    home: str | None,
    network: netns.Network | None = None,
) -> list[str]:
    """`argv` wrapped in bwrap under `policy`, run in `cwd`; with `network`, in a network
    namespace of its own that `network` joins to slirp4netns.

    Mount order matters (a later mount wins): private `/tmp` and `$HOME` first, then
    the working directory (it may lie under either), read-write unless
    `policy.workdir_write` is off, then its `.git/` and `.horde/` read-only inside it,
    then masks over the secret and lock files, then the network's resolv.conf.
    """
    args = _bwrap_head()
    if not policy.network:
        args.append("--unshare-net")
    args += _ROOT
    cwd = Path(os.path.realpath(cwd))
    tmp = Path(os.path.realpath("/tmp"))
    layers: list[tuple[Path, list[str]]] = [
        (tmp, ["--tmpfs", str(tmp), *_passthrough(tmp, cwd, config=False)])
    ]
    home_dir = Path(os.path.realpath(home)) if home else None
    private_home = (
        home_dir is not None and home_dir.is_dir() and not _within(home_dir, cwd, strict=False)
    )
    if home_dir is not None and private_home:
        passthrough = _passthrough(home_dir, cwd, config=True)  # cached: PATH does not change
        layers.append((home_dir, ["--tmpfs", str(home_dir), *passthrough]))
    layers.append((cwd, ["--bind" if policy.workdir_write else "--ro-bind", str(cwd), str(cwd)]))
    for _path, words in sorted(layers, key=lambda layer: len(layer[0].parts)):
        args += words
    git = cwd / ".git"
    if not policy.git_write and git.exists() and not git.is_symlink():
        args += ["--ro-bind", str(git), str(git)]  # reads work; hooks and config stay as they were
    for ro in _outermost(Path(os.path.realpath(p)) for p in policy.readonly):
        if ro.is_dir():
            args += ["--ro-bind", str(ro), str(ro)]
            secrets = masked_files(ro, locks=False)
            for secret in secrets:
                args += ["--ro-bind", "/dev/null", str(secret)]
            stand_in = _empty_file(ro)
            for lock in sorted(set(masked_files(ro, locks=True)) - set(secrets)):
                args += ["--ro-bind", str(stand_in), str(lock)]
    if network is not None:
        args += network.bwrap_args()  # last: its resolv.conf wins over every bind
    return [*args, "--chdir", str(cwd), "--", *argv]


def _empty_file(horde_dir: Path) -> Path:
    """An empty file bound read-only over the lock files inside the sandbox: locking it
    holds nothing of the horde's, and writing through the store there fails as
    read-only (EROFS), which the `horde-tui tool` refusal explains; `/dev/null` would
    answer "permission denied" instead. `/dev/null` when the file cannot be made."""
    path = horde_dir / ".masked"
    with contextlib.suppress(FileExistsError, OSError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
    try:
        st = os.lstat(path)
    except OSError:
        return Path("/dev/null")
    return path if stat.S_ISREG(st.st_mode) and st.st_size == 0 else Path("/dev/null")


@functools.lru_cache(maxsize=8)
def _passthrough(private: Path, cwd: Path, *, config: bool) -> list[str]:
    """Read-only binds that keep the user's toolchains working under a private home or
    `/tmp`: the top directory under `private` of every PATH entry, of this interpreter and
    of horde-tui itself (`~/.pyenv`, `~/.cargo`, a virtual environment under `/tmp`), so
    `python`, `git` and `horde-tui tool` reads still run; credential files in them stay
    masked. A top that holds the working directory is not bound whole: only the entry
    itself is. With `config`, git's identity too."""
    binds: set[Path] = set()
    candidates = [*os.environ.get("PATH", "").split(os.pathsep), sys.prefix, sys.base_prefix]
    candidates += [os.path.realpath(sys.executable), str(Path(__file__).parents[2])]
    for entry in candidates:
        real = Path(os.path.realpath(entry)) if entry else None
        if real is None or not _within(real, private, strict=True) or not real.exists():
            continue
        top = private / real.relative_to(private).parts[0]
        if not _within(cwd, top, strict=False) and not _within(top, cwd, strict=False):
            binds.add(top)
        elif not _within(real, cwd, strict=False) and not _within(cwd, real, strict=False):
            binds.add(real)
    args: list[str] = []
    for bind in _outermost(binds):
        args += ["--ro-bind", str(bind), str(bind)]
        for name in _HOME_CREDENTIALS:
            if (bind / name).is_file():
                args += ["--ro-bind", "/dev/null", str(bind / name)]
    if config:
        for name in _HOME_CONFIG:
            if (private / name).is_file():
                args += ["--ro-bind", str(private / name), str(private / name)]
    return args


def _outermost(paths: Iterable[Path]) -> list[Path]:
    """`paths` without those inside another (one bind covers them)."""
    unique = sorted(set(paths), key=lambda p: len(p.parts))
    kept: list[Path] = []
    for path in unique:
        if not any(_within(path, k, strict=False) for k in kept):
            kept.append(path)
    return kept


def _within(path: Path, root: Path, *, strict: bool) -> bool:
    """Whether `path` lies under `root` (or is it, unless `strict`)."""
    return (path == root and not strict) or root in path.parents


# -- a process cap per command -----------------------------------------------------------

_CGROUP_PREFIX = "horde-cmd-"
_LEFT: set[Path] = set()
"""Command cgroups not yet removed (a process outlived its command): retried each time."""


@functools.cache
def _pids_cgroup() -> tuple[Path | None, str]:
    """A pids-controller cgroup directory this process may make children in (cgroup v1
    `pids`, or a v2 cgroup that delegates `pids` to its children), or None and why not.
    Root and delegated containers usually may; a desktop user's session usually not."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None, "no /proc/self/cgroup"
    candidates = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "pids" in controllers.split(","):
            candidates.append(Path("/sys/fs/cgroup/pids") / path.lstrip("/"))
        elif controllers == "":
            for top in (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified")):
                here = top / path.lstrip("/")
                try:
                    if "pids" in (here / "cgroup.subtree_control").read_text().split():
                        candidates.append(here)
                except OSError:
                    continue
    for base in candidates:
        probe = base / f"{_CGROUP_PREFIX}{os.getpid()}-probe"
        try:
            probe.mkdir()
            ok = (probe / "pids.max").exists()
            probe.rmdir()
        except OSError:
            continue
        if ok:
            _sweep(base)
            return base, ""
    return None, "no pids cgroup this user may create"


def _sweep(base: Path) -> None:
    """Remove the empty command cgroups of members that are gone (a command's background
    process outlived it, then its member ended before it could remove the cgroup)."""
    for group in base.glob(f"{_CGROUP_PREFIX}*"):
        pid = group.name.removeprefix(_CGROUP_PREFIX).split("-")[0]
        if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            with contextlib.suppress(OSError):
                group.rmdir()  # fails while a process is still in it: left for later


def _in_user_namespace(mode: str) -> bool:
    """Whether the command runs in a user namespace of its own, where RLIMIT_NPROC counts
    only its processes (outside one it counts every process of the user)."""
    return os.geteuid() != 0 and mode in ("bwrap", "namespace")


def process_limit_problem(policy: SandboxPolicy) -> str | None:
    """None when commands under `policy` get a process cap here, else why not."""
    mode = resolve(policy.mode, policy.network)[0]
    if _pids_cgroup()[0] is not None:
        return None
    if _in_user_namespace(mode) and shutil.which("prlimit"):
        return None
    return _pids_cgroup()[1] + (
        "" if os.geteuid() == 0 else ", and RLIMIT_NPROC would count all your processes"
    )


def process_cap(policy: SandboxPolicy, mode: str) -> tuple[list[str], list[str], Path | None]:
    """(a prefix for the whole command line, a prefix for the command inside the sandbox,
    a cgroup to remove after it): the cap of `policy.max_processes` processes.

    A pids cgroup when one can be made: the line joins it before it execs (`sh -c 'echo
    $$ > cgroup.procs; exec ...'`), so every process the command starts counts. Else,
    inside a user namespace, `prlimit --nproc` on the command. Else no cap (the run's
    warning says so)."""
    for left in list(_LEFT):
        with contextlib.suppress(OSError):
            left.rmdir()
            _LEFT.discard(left)
    base = _pids_cgroup()[0]
    if base is not None:
        group = base / f"{_CGROUP_PREFIX}{os.getpid()}-{os.urandom(4).hex()}"
        try:
            group.mkdir()
            (group / "pids.max").write_text(str(policy.max_processes))
        except OSError:
            with contextlib.suppress(OSError):
                group.rmdir()
        else:
            join = 'echo $$ > "$0" && exec "$@"'
            return ["/bin/sh", "-c", join, str(group / "cgroup.procs")], [], group
    prlimit = shutil.which("prlimit")
    if prlimit and _in_user_namespace(mode):
        cap = f"--nproc={policy.max_processes}:{policy.max_processes}"
        return [], [prlimit, cap, "--"], None
    return [], [], None


def release_limit(group: Path | None) -> None:
    """Remove a command's cgroup once its last processes are gone (a sandbox's may still
    be exiting for a few ms after the command returned); one still busy after 100 ms is
    tried again at a later command and when the member exits."""
    if group is None:
        return
    deadline = time.monotonic() + 0.1
    while True:
        try:
            group.rmdir()
            return
        except OSError:
            if time.monotonic() >= deadline:
                _LEFT.add(group)
                return
            time.sleep(0.002)


@atexit.register
def _remove_left() -> None:
    for group in list(_LEFT):
        with contextlib.suppress(OSError):
            group.rmdir()
