"""Allow `python -m horde_tui` as an alias of the `horde-tui` console script."""

from __future__ import annotations

from horde_tui.commands.cli import main

raise SystemExit(main())
