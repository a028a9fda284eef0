"""What no page may carry off this machine: secrets and the machine's own paths.

Applied to every page as its last step (`Site.html`, `Site.json`, a plain-text page), so
whatever a transcript, a log or a tool's output holds, the export and the server show
`[masked]` for every token file on the one list (`store/secretfiles.py`), a
configured `api_key`, the password of a URL (`scheme://user:pass@`), a key-like environment value
or anything shaped like a provider key, and `[project]` / `~` for the project's and the
home directory's absolute paths.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from horde_tui.store.secretfiles import mask_url_credentials, masked_files

MASK = "[masked]"
_KEY_PATTERNS = re.compile(
    r"sk-[A-Za-z0-9_-]{20,}|AIza[0-9A-Za-z_-]{35}|gh[pousr]_[A-Za-z0-9]{30,}"
    r"|hf_[A-Za-z0-9]{30,}|gsk_[A-Za-z0-9]{30,}|xox[abprs]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}"
)
"""Values that look like provider keys (OpenAI/Anthropic `sk-`, Google, GitHub, Hugging
Face, Groq, Slack, AWS). Every branch starts with a literal, so the engine scans for
their first characters (a lookbehind branch made it 4x slower on a page)."""
_BEARER = re.compile(r"(Bearer )[A-Za-z0-9._~+/=-]{20,}")
"""A bearer credential in a logged header."""
_SECRET_ENV = re.compile(r"(API_KEY|TOKEN|SECRET)$")


class Masker:
    """Hides secrets and this machine's paths in text about to leave the machine: the
    gateway tokens and configured `api_key`s under the horde directory, key-like
    environment values, anything shaped like a provider key, and the absolute paths of
    the project and the home directory."""

    def __init__(self, horde_dir: Path) -> None:
        horde_dir = Path(horde_dir)
        found: set[str] = set()
        for path in masked_files(horde_dir, locks=False):
            if path.name == "config.toml":
                continue  # its `api_key`s are read below
            try:
                found.add(path.read_text(encoding="utf-8").strip())
            except (OSError, UnicodeDecodeError):
                continue
        try:
            config = (horde_dir / "config.toml").read_text(encoding="utf-8")
            found.update(re.findall(r"""api_key\s*=\s*["']([^"']+)["']""", config))
        except (OSError, UnicodeDecodeError):
            pass
        found.update(v for k, v in os.environ.items() if _SECRET_ENV.search(k))
        self.secrets = sorted((s for s in found if len(s) >= 12), key=len, reverse=True)
        places: dict[str, str] = {}
        home = Path.home()
        for path in {horde_dir.absolute().parent, horde_dir.resolve().parent}:
            if len(str(path)) > 1:  # a project at `/` would mask every slash
                places[str(path)] = "[project]"
        for path in {home, home.resolve()}:
            if len(str(path)) > 1:
                places.setdefault(str(path), "~")
        self.places = sorted(places.items(), key=lambda kv: len(kv[0]), reverse=True)

    def __call__(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, MASK)
        text = _BEARER.sub(rf"\1{MASK}", _KEY_PATTERNS.sub(MASK, text))
        text = mask_url_credentials(text, MASK)
        for path, shown in self.places:
            text = text.replace(path, shown)
        return text
