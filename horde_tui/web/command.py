"""`horde-tui export` and `horde-tui serve`: their parsers, registered by `cli`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from horde_tui.store.paths import default_horde_dir


def _export(args: argparse.Namespace) -> int:
    from horde_tui.web.export import cmd_export

    out = Path(args.out) if args.out else None
    return cmd_export(default_horde_dir(), args.target, out, args.zip)


def _serve(args: argparse.Namespace) -> int:
    from horde_tui.common.settings import SettingsError, load_settings
    from horde_tui.web.serve import cmd_serve

    horde_dir = default_horde_dir()
    port = args.port
    if port is None:  # HORDE_DASHBOARD_PORT, else serve_port in .horde/config.toml
        config = horde_dir / "config.toml"
        try:
            port = load_settings(config if config.is_file() else None).serve.serve_port
        except SettingsError as exc:
            print(f"horde-tui serve: refused: {exc}", file=sys.stderr)
            return 1
    return cmd_serve(horde_dir, port)


def add_web_commands(sub: Any) -> None:
    p = sub.add_parser(
        "export",
        help="write runs as a static HTML folder (or zip) that opens from disk",
        description="Export runs and swarms of ./.horde (or $HORDE_DIR) as static pages: "
        "horde-export-<id>/index.html opens from disk, with no script and no network.",
    )
    p.add_argument("target", nargs="?", default="all", help="a run id, a swarm id, or `all`")
    p.add_argument("--zip", action="store_true", help="one .zip instead of a folder")
    p.add_argument("--out", metavar="PATH", help="where to put it (default: here)")
    p.set_defaults(func=_export)
    s = sub.add_parser(
        "serve",
        help="serve the same pages live and read-only on 127.0.0.1",
        description="Serve every run and swarm of ./.horde read-only on 127.0.0.1 (GET and "
        "HEAD only); live pages reload every 3 s (?refresh=0 stops it); /api/<page> is the "
        "page's JSON.",
    )
    s.add_argument(
        "--port",
        type=int,
        default=None,
        help="default: HORDE_DASHBOARD_PORT, else serve_port in .horde/config.toml, else its "
        "default (`horde-tui config` lists it)",
    )
    s.set_defaults(func=_serve)
