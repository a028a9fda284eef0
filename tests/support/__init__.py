"""Shared fixtures and helpers for the test modules: the one place they import from.

Test modules import only from here, `conftest.py` and the `tests/helpers/` scripts, never
from one another (`test_suite_layout.py` checks). The suite puts `tests/` on `sys.path`,
so a module reads `from support.rundir import RunDir`.

- `processes`: bounded waits (`wait_until`), liveness of a pid, a pid surely dead, a run's
  processes found through /proc.
- `cli`: the `horde-tui` command line as a real process (`cli_argv`, the one way a test
  spells it; `cli`, `headless`, `start`, `wait_for_line`), and the shared run stopped
  clean from another shell.
- `plans`: the scripted model's plans and how a test starts a whole run in-process.
- `member`: one real member process against a real gateway.
- `gateway`: litellm's price map entries (the gateway process itself is conftest's).
- `rundir`: run directories written the way the supervisor writes them, without a run.
- `app`: the app tests' fake supervisor, fake remote control and pilot waits.
- `snapshots`: the snapshot sizes, where SVGs live, the six-member scene.
- `ledger_scene`, `swarm_scene`: ledgers and swarms written to disk for views and screens.
- `projection`: the plain-rendering oracle for the ledger projections.

Fixtures a test asks for by name live in `conftest.py` (`horde`, `gateway`, `no_horde_env`,
`in_dir`, `stopped_clean`); the scripts run as child processes live in `tests/helpers/`.
"""
