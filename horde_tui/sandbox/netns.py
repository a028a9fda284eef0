"""A network namespace of its own for a sandboxed command that keeps the network.

Without one, a command with `sandbox_network` on shares the host's network namespace: it
lists every unix socket of the machine in `/proc/net/unix`, connects to the host's
abstract unix sockets, and reaches every service on the host's 127.0.0.1 (the run's
gateway, `serve`). Here bwrap makes a new network namespace (`--unshare-net`) and
slirp4netns (user-mode networking, what rootless podman uses) joins it with a tap device
and a default route, with `--disable-host-loopback`, so the command still reaches the
internet through the host (NAT, as from another machine) while the host's loopback,
abstract sockets and socket list stay out of sight, and the sandbox keeps a loopback of
its own.

The dance: bwrap writes the sandbox's pid on `--info-fd`; a small shell inside says when
bwrap has set up the sandbox (its loopback included: slirp4netns configuring `lo` at the
same time makes bwrap fail, so `--block-fd`, read before that, is too early) and waits;
slirp4netns joins the network namespace (through its owning user namespace: bwrap nests
another one for `--dev`) and says so on `--ready-fd`; then the shell lets the command go,
with none of these pipes. slirp4netns ends when its `--exit-fd` closes: after the
command, or when the member dies. Stdlib only.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import functools
import ipaddress
import json
import os
import selectors
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO

INSTALL_HINT = "install slirp4netns (Debian/Ubuntu: apt-get install slirp4netns)"
SLIRP_DNS = "10.0.2.3"
"""slirp4netns's DNS forwarder, inside the sandbox (it asks the host's resolver)."""
_NS_GET_USERNS = 0xB701
"""ioctl(2) on a namespace file: the user namespace that owns it (linux/nsfs.h)."""
_RESOLV = Path("/etc/resolv.conf")
_LEFT: list[subprocess.Popen[bytes]] = []
"""slirp4netns processes told to exit, not yet reaped (reaped at the next command)."""


def slirp4netns() -> str | None:
    """The slirp4netns to run: `HORDE_SLIRP4NETNS` (a name or path; tests name a missing
    one to run as on a machine without it), else `slirp4netns` on PATH."""
    return shutil.which(os.environ.get("HORDE_SLIRP4NETNS", "").strip() or "slirp4netns")


def resolv_conf(text: str) -> tuple[str | None, bool]:
    """(the resolv.conf the sandbox needs, None when the host's `text` serves as is;
    whether it uses slirp4netns's DNS forwarder).

    A nameserver on the host's loopback (systemd-resolved's 127.0.0.53) is out of reach in
    the sandbox: such lines give way to the forwarder, or are dropped when another
    nameserver remains. The forwarder is off unless needed: it is the one way left to a
    port on the host's loopback (the resolver's)."""
    kept: list[str] = []
    servers = dropped = 0
    for line in text.splitlines():
        words = line.split()
        if len(words) >= 2 and words[0] == "nameserver":
            try:
                loopback = ipaddress.ip_address(words[1].split("%")[0]).is_loopback
            except ValueError:
                loopback = False
            if loopback:
                dropped += 1
                continue
            servers += 1
        kept.append(line)
    if not dropped:
        return None, False
    if servers:
        return "\n".join(kept) + "\n", False
    return "\n".join([f"nameserver {SLIRP_DNS}", *kept]) + "\n", True


@functools.cache
def _resolv() -> tuple[tuple[str, ...], bool]:
    """(bwrap options that bind the sandbox's resolv.conf over the host's, whether
    slirp4netns's DNS forwarder is needed); once per process, removed at exit."""
    try:
        real = os.path.realpath(_RESOLV)  # bwrap cannot mount over a symlink
        text = Path(real).read_text()
    except OSError:
        return (), False
    replaced, dns = resolv_conf(text)
    if replaced is None:
        return (), dns
    fd, path = tempfile.mkstemp(prefix="horde-resolv-", suffix=".conf")
    with os.fdopen(fd, "w") as out:
        out.write(replaced)
    os.chmod(path, 0o644)
    atexit.register(_unlink, path)
    return ("--ro-bind", path, real), dns


def _unlink(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


class Network:
    """The user-mode network of one sandboxed command: its pipes exist before bwrap starts
    (bwrap inherits `pass_fds`, is given `bwrap_args` and runs `inside(argv)`), `attach`
    joins slirp4netns to the sandbox once bwrap runs, `close` ends it after the command."""

    def __init__(self) -> None:
        _LEFT[:] = [proc for proc in _LEFT if proc.poll() is None]
        self._info_r, self._info_w = os.pipe()
        self._set_r, self._set_w = os.pipe()
        self._go_r, self._go_w = os.pipe()
        self._theirs = [self._info_w, self._set_w, self._go_r]
        """bwrap's ends, closed here once it has them (a closed number may be reused)."""
        self._exit_w: int | None = None
        self._slirp: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def pass_fds(self) -> tuple[int, int, int]:
        return self._info_w, self._set_w, self._go_r

    def bwrap_args(self) -> list[str]:
        """The options bwrap needs: a new network namespace, the pid pipe, the resolv.conf."""
        return ["--unshare-net", "--info-fd", str(self._info_w), *_resolv()[0]]

    def inside(self, argv: Sequence[str]) -> list[str]:
        """`argv` behind the shell that says the sandbox is set up and waits for its network
        (and ends, never runs `argv`, if none comes). bash: dash takes no fd above 9."""
        s, go = self._set_w, self._go_r
        script = f'echo >&{s} && read -r _ <&{go} && exec "$@" {s}>&- {go}<&-'
        return [shutil.which("bash") or "bash", "-c", script, "sh", *argv]

    def attach(self, deadline: float) -> str | None:
        """Once bwrap was started: give its sandbox slirp4netns's network and let the
        command go. None when it may run (also when bwrap failed before its sandbox
        existed: bwrap's own message says why), else why not; the caller then ends the
        sandbox, which still waits for it."""
        _close(*self._theirs)
        self._theirs.clear()
        slirp = slirp4netns()
        if slirp is None:
            return f"slirp4netns is not installed; {INSTALL_HINT}"
        info = _read_all(self._info_r, deadline)
        ready = _read_all(self._set_r, deadline, first=True) if info else b""
        if info is None or ready is None:
            return "bwrap did not set up its sandbox in time"
        if not ready:
            return None  # bwrap failed before the command: its message says why
        try:
            pid = int(json.loads(info)["child-pid"])
            net = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        except (ValueError, KeyError, TypeError, OSError) as exc:
            return f"could not find the sandbox's network namespace ({exc})"
        try:
            return self._start(slirp, net, deadline)
        finally:
            os.close(net)

    def _start(self, slirp: str, net: int, deadline: float) -> str | None:
        try:
            owner = fcntl.ioctl(net, _NS_GET_USERNS)
        except OSError as exc:  # Linux before 4.9
            return f"could not find the owner of the sandbox's network namespace ({exc})"
        ready_r, ready_w = os.pipe()
        exit_r, self._exit_w = os.pipe()
        argv = [slirp, "--configure", "--mtu=65520", "--disable-host-loopback"]
        argv += [f"--ready-fd={ready_w}", f"--exit-fd={exit_r}"]
        if not _resolv()[1]:
            argv.append("--disable-dns")
        if os.fstat(owner).st_ino != os.stat("/proc/self/ns/user").st_ino:
            argv.append(f"--userns-path=/proc/self/fd/{owner}")  # bwrap's, unless we are root
        argv += ["--netns-type=path", f"/proc/self/fd/{net}", "tap0"]
        self._log = tempfile.TemporaryFile()
        try:
            self._slirp = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=self._log,
                pass_fds=(ready_w, exit_r, net, owner),
            )
        except OSError as exc:
            return f"slirp4netns could not start ({exc})"
        finally:
            _close(ready_w, exit_r, owner)
        ready = _read_all(ready_r, deadline, first=True)
        os.close(ready_r)
        if ready != b"1":
            return f"slirp4netns could not give the sandbox its network ({self._said()})"
        with contextlib.suppress(BrokenPipeError):  # the sandbox is gone: its output says why
            os.write(self._go_w, b"\n")
        return None

    def _said(self) -> str:
        """slirp4netns's last line on stderr, once it has ended."""
        assert self._slirp is not None and self._log is not None
        try:
            self._slirp.wait(2)
        except subprocess.TimeoutExpired:
            self._slirp.kill()
            self._slirp.wait()
            return "no answer in time"
        self._log.seek(0)
        lines = self._log.read().decode(errors="replace").strip().splitlines()
        return lines[-1] if lines else f"exit {self._slirp.returncode}"

    def close(self, wait: bool = False) -> None:
        """End slirp4netns (it exits when its exit pipe closes) and every pipe; unless
        `wait`, it is reaped at a later command or when the member exits."""
        _close(self._info_r, self._set_r, self._go_w, *self._theirs)
        self._theirs.clear()
        if self._exit_w is not None:
            os.close(self._exit_w)
            self._exit_w = None
        if self._log is not None:
            self._log.close()
        if self._slirp is not None:
            _LEFT.append(self._slirp)
            self._slirp = None
        if wait:
            _reap()


def _close(*fds: int) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


def _read_all(fd: int, deadline: float, first: bool = False) -> bytes | None:
    """What `fd` gives until EOF (or its first byte with `first`), None past `deadline`.
    bwrap's JSON may come in pieces."""
    data = b""
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not selector.select(left):
                return None
            chunk = os.read(fd, 4096)
            data += chunk
            if not chunk or (first and data):
                return data


def probe(argv: Sequence[str]) -> str | None:
    """None when `argv` (a bwrap command line up to its mounts) runs `true` with a network
    of its own here, else why not (one phrase)."""
    if slirp4netns() is None:
        return f"slirp4netns is not installed; {INSTALL_HINT}"
    network = Network()
    try:
        proc = subprocess.Popen(
            [*argv, *network.bwrap_args(), "--", *network.inside(["true"])],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            pass_fds=network.pass_fds,
        )
    except OSError as exc:
        network.close()
        return f"bwrap cannot run here ({exc})"
    try:
        problem = network.attach(time.monotonic() + 30)
        if problem:
            proc.kill()
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        problem = "bwrap with slirp4netns did not finish in time"
    finally:
        network.close(wait=True)
    if problem is None and proc.returncode != 0:
        said = (err.decode(errors="replace").strip().splitlines() or ["no message"])[-1]
        problem = f"bwrap cannot run with a network of its own here ({said})"
    return problem


@atexit.register
def _reap() -> None:
    """slirp4netns ends when its exit pipe closes; wait for the last ones briefly."""
    for proc in _LEFT:
        try:
            proc.wait(1)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    _LEFT.clear()
