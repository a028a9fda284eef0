"""The one model gateway of an eval, which every run of it joins.

Started once (`python -m horde_tui.gateway --shared`) with the eval's model, endpoint,
key and budget, it answers every run's members: each run joins it with its own token
and run directory (`supervisor.processes.join_gateway`), so a run's usage, cost and
budget stay its own, while all runs' calls wait on one provider limit (`--parallel`
cannot multiply it) and litellm's import (seconds) is paid once per eval, not per run.
Its log and `gateway.json` are kept in the eval's `OUT/gateway/`; its own token (which
joins runs) is never written to disk: runs get it in their environment.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from horde_tui.common.settings import SettingsError, load_settings
from horde_tui.supervisor.processes import (
    SHARED_GATEWAY_TOKEN_ENV,
    SHARED_GATEWAY_URL_ENV,
    GatewayStartError,
    end_gateway,
    launch_gateway,
)
from horde_tui.supervisor.run import gateway_env

START_TIMEOUT_S = 120.0
"""Its `listening on` line comes before litellm is imported, unless a budget makes it
price the model first."""
STOP_GRACE_S = 10.0


@dataclass
class SharedGateway:
    """The eval's gateway process, its address, and the token with which runs join it."""

    proc: subprocess.Popen[bytes]
    url: str
    token: str
    folder: Path

    def run_env(self) -> dict[str, str]:
        """What a run needs to join it instead of starting its own."""
        return {SHARED_GATEWAY_URL_ENV: self.url, SHARED_GATEWAY_TOKEN_ENV: self.token}

    def stop(self) -> None:
        """SIGTERM, SIGKILL after `STOP_GRACE_S`, reaped: it never outlives the eval."""
        end_gateway(self.proc, STOP_GRACE_S)


def start_shared_gateway(
    environ: dict[str, str],
    overrides: dict[str, Any],
    folder: Path,
    timeout_s: float = START_TIMEOUT_S,
) -> SharedGateway:
    """Start the gateway with the settings each run would give its own (`environ` read
    as a run reads it, with the eval's `overrides`: model, endpoint, key, budget), and
    wait for its `listening on URL` line (`supervisor.processes.launch_gateway`, the one
    starter). `GatewayStartError` carries its own line."""
    try:
        settings = load_settings(environ=environ, overrides=overrides)
    except SettingsError as exc:
        raise GatewayStartError(f"refused: {exc}") from None
    env = {**environ, **gateway_env(settings)}
    # Priced (or refused, one line) before the first run starts, when there is a budget.
    proc, url = launch_gateway(folder, env, settings.gateway.max_cost_usd, shared=True, timeout_s=timeout_s)
    return SharedGateway(proc, url, env["HORDE_GATEWAY_TOKEN"], folder)
