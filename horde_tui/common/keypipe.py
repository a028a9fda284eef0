"""Provider keys handed to the gateway on a pipe, never in its environment.

A process's initial environment stays readable in `/proc/<pid>/environ` for as long as it
runs, by every process of the user: without the sandbox, a member's command among them.
So the supervisor gives the gateway a plain environment and writes the secret variables
(those `member.shell.scrubbed_env` keeps from members: provider keys, tokens) into a pipe
whose read end the gateway inherits (`HORDE_SECRETS_FD`); the gateway reads it once at
start into its own `os.environ`, where litellm looks for them, and which `/proc` does not
show. Stdlib only.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

SECRETS_FD_ENV = "HORDE_SECRETS_FD"
_PIPE_ROOM = 60_000
"""Bytes written to the pipe before the child reads: under Linux's 64 KiB pipe buffer, so
the write never blocks. Secrets beyond it (never seen) stay in the environment."""


def hand_over(
    env: Mapping[str, str], plain: Mapping[str, str]
) -> tuple[dict[str, str], int | None]:
    """The child's environment (`plain`'s names only, plus the pipe's number) and the read
    end to pass it (None: nothing secret). The caller closes the read end after spawning."""
    secret = {k: v for k, v in env.items() if k not in plain}
    kept = {k: v for k, v in env.items() if k in plain}
    data = json.dumps(secret).encode()
    if not secret or len(data) > _PIPE_ROOM:
        return dict(env), None
    read, write = os.pipe()
    try:
        os.write(write, data)
    finally:
        os.close(write)
    kept[SECRETS_FD_ENV] = str(read)
    return kept, read


def take_over() -> None:
    """In the child, first thing: the secrets from the pipe into `os.environ`."""
    fd = os.environ.pop(SECRETS_FD_ENV, "")
    if not fd.isdigit():
        return
    try:
        with os.fdopen(int(fd), "rb") as pipe:
            os.environ.update(json.loads(pipe.read() or b"{}"))
    except (OSError, ValueError):
        pass  # no secrets came: the gateway then says which key it misses, as without them
