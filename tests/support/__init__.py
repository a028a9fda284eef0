"""Shared fixtures and helpers for the test modules: the one place they import from.

Test modules import only from here, `conftest.py` and the `tests/helpers/` scripts, never
from one another (`test_suite_layout.py` checks). The suite puts `tests/` on `sys.path`,
so a module reads `from support.rundir import RunDir`.

- `processes`: bounded waits, liveness of a pid, a pid that is surely dead.
- `rundir`: a run directory written the way the supervisor writes one.
- `cli`: the `horde-tui` command line run as a real process (one-shot or headless).
- `plans`: the scripted model's plans and the settings a real run uses.
- `member`: one real member process against a real gateway.
- `app`: the app tests' fake supervisor, pilot waits and fake remote control.
- `scenes`: ledger and swarm scenes written to disk for the view and app tests.
"""
