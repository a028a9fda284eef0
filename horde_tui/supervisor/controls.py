"""Controls from another shell: requests and answers through the run's `control/` folder.

`horde-tui stop-clean member-3` (in any shell) writes `control/req-<id>.json`; the live
supervisor picks it up within half a second, acts, and answers in `control/resp-<id>.json`.
Files, not sockets: nothing to bind, it works over SSH, and a person can see what was
asked. Which run is live (its `.live` marker) is `store.runs`'s to say.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from horde_tui.inputs import loads
from horde_tui.store.paths import atomic_write_text

ACTIONS = ("status", "stop-hard", "stop-clean", "pause", "resume", "reset")
CONFIRM_ACTIONS = ("confirm", "approve", "refuse", "allow-all")
"""Confirm mode's requests (`supervisor/confirm.py` serves them): a member's `confirm`
(a command waiting for a person, its request file kept until decided) and a person's
decisions from another shell."""


@dataclass(frozen=True)
class ControlRequest:
    id: str
    action: str
    target: str = "all"
    grace_s: float | None = None
    postmortem: bool = False
    command: str | None = None
    """A `confirm` request's command line, its working directory and the asking
    member's pid (a request of a session that ended is dropped)."""
    cwd: str | None = None
    pid: int | None = None


def submit(run_dir: Path, request: ControlRequest) -> Path:
    folder = run_dir / "control"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"req-{request.id}.json"
    atomic_write_text(path, json.dumps(request.__dict__) + "\n")
    return folder / f"resp-{request.id}.json"


def new_request(
    action: str, target: str = "all", grace_s: float | None = None, postmortem: bool = False
) -> ControlRequest:
    return ControlRequest(
        f"{time.time():.6f}-{secrets.token_hex(3)}", action, target, grace_s, postmortem
    )


ANSWER_TIMEOUT_S = 15.0
"""How long a control request waits for the supervisor's answer."""


def wait_response(path: Path, timeout_s: float = ANSWER_TIMEOUT_S) -> dict[str, Any] | None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            return loads(path.read_text())
        except (OSError, ValueError):
            time.sleep(0.05)
    return None


def pending_requests(run_dir: Path) -> list[tuple[Path, ControlRequest | str]]:
    """Requests waiting in `control/`, oldest first; a malformed one comes back as text."""
    folder = run_dir / "control"
    out: list[tuple[Path, ControlRequest | str]] = []
    if not folder.is_dir():
        return out
    for path in sorted(folder.glob("req-*.json")):
        try:
            data = loads(path.read_text())
            req = ControlRequest(**data)
        except (OSError, ValueError, TypeError) as exc:
            out.append((path, f"malformed control request {path.name}: {exc}"))
            continue
        out.append((path, req))
    return out


def answer(
    run_dir: Path, request_path: Path, request_id: str, ok: bool, text: str, **extra: Any
) -> None:
    """Write the response (`extra`: more fields, a confirm's `decision`), then drop the request."""
    atomic_write_text(
        run_dir / "control" / f"resp-{request_id}.json",
        json.dumps({"ok": ok, "text": text, **extra}) + "\n",
    )
    request_path.unlink(missing_ok=True)


def ask(
    folder: Path,
    request: ControlRequest,
    timeout_s: float = ANSWER_TIMEOUT_S,
    cancelled: Callable[[], bool] = lambda: False,
) -> dict[str, Any] | None:
    """Leave `request` in `folder/control/` and wait for the answer (None: none came).

    Blocks up to `timeout_s`: call it from a thread, never the UI loop. The wait is cut
    into short slices so `cancelled` (the app quitting) never waits out a request.
    """
    path = submit(folder, request)
    deadline = time.monotonic() + timeout_s
    while not cancelled():
        left = deadline - time.monotonic()
        if left <= 0:
            break
        answer = wait_response(path, min(0.2, left))
        if answer is not None:
            return answer
    return None
