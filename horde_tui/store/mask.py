"""What no text may carry off this machine: secrets and the machine's own paths.

The one masker. `serve` and `export` apply it to every page as its last step (`Site.html`,
`Site.json`, a plain-text page), so whatever a transcript, a log or a tool's output holds,
the pages show `[masked]` for every token file on the one list (`store/secretfiles.py`),
a configured `api_key`, the password of a URL (`scheme://user:pass@`), a key-like
environment value or anything shaped like a provider key, and `[project]` / `~` for the
project's and the home directory's absolute paths. `share` (`store/share.py`) masks for a
public issue (`public=True`): also every other absolute path on this machine, the user
and host names, and long hex or base64 values; it lists what was masked by kind and count
(`Masker.counts`), never the value.
"""

from __future__ import annotations

import getpass
import math
import os
import re
import socket
from collections import Counter
from pathlib import Path

from horde_tui.store.secretfiles import mask_url_credentials, masked_files, secret_variable

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
_LONG_HEX = re.compile(r"(?<![0-9A-Za-z])[0-9a-fA-F]{32,}(?![0-9A-Za-z])")
"""32 hex digits or more: a secret, a session id or a digest; none is worth a reader's risk."""
_LONG_B64 = re.compile(r"(?<![\w+/=-])[A-Za-z0-9+/_-]{32,}={0,2}")
_B64_ENTROPY = 4.3
"""Bits per character above which a 32+ character run of base64 letters is taken for a
secret: `secrets.token_urlsafe(32)` scores 4.4 to 5.0, a long identifier or relative path
(`src/components/UserProfileSettings2`, `test_the_masker_hides_keys`) 3.5 to 4.2."""

TOKEN_FILE_KINDS = {"gateway.token": "gateway token", "mcp-token": "MCP token"}
"""How a secret read from a file on the list is named in `counts` (others: `key file`)."""


def _entropy(text: str) -> float:
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values())


def _key_kind(value: str) -> str:
    if value.startswith("sk-"):
        return "API key (sk-)"
    if value.startswith("AKIA"):
        return "AWS access key id"
    return "provider key"


def _machine_roots() -> list[str]:
    """The top-level folders of this machine (`/tmp`, `/home`, `/work`): a rooted path
    under one is a path here; `/users` or `/api/delete` (a route) is not."""
    try:
        return sorted(e for e in os.listdir("/") if re.fullmatch(r"[\w.@+-]+", e))
    except OSError:
        return ["tmp", "home", "root"]


GENERIC_NAMES = frozenset({"root", "user", "admin", "ubuntu", "runner", "localhost"})
"""User and host names that name nobody (the superuser, cloud images' and CI's default
user): masking them would turn "the root cause" into noise and hide nothing."""


def _names() -> dict[str, str]:
    """This machine's user and host names (and the host's short name), each with its kind."""
    host = socket.gethostname()
    names = {host: "host name", host.split(".")[0]: "host name"}
    try:
        names[getpass.getuser()] = "user name"
    except (OSError, KeyError):
        pass
    return {n: kind for n, kind in names.items() if len(n) >= 2 and n not in GENERIC_NAMES}


class Masker:
    """Hides secrets and this machine's paths in text about to leave the machine: the
    gateway tokens and configured `api_key`s under the horde directory, key-like
    environment values, anything shaped like a provider key, and the absolute paths of
    the project and the home directory. With `public` (a paste to an issue) also every
    absolute path under this machine's top folders, the user and host names, and long hex
    or high-entropy base64 values. `counts` tallies each kind masked, over every call."""

    def __init__(self, horde_dir: Path, *, public: bool = False) -> None:
        horde_dir = Path(horde_dir)
        found: dict[str, str] = {}
        for path in masked_files(horde_dir, locks=False):
            if path.name == "config.toml":
                continue  # its `api_key`s are read below
            try:
                value = path.read_text(encoding="utf-8").strip()
            except (OSError, UnicodeDecodeError):
                continue
            found.setdefault(value, TOKEN_FILE_KINDS.get(path.name, "key file"))
        try:
            config = (horde_dir / "config.toml").read_text(encoding="utf-8")
            for key in re.findall(r"""api_key\s*=\s*["']([^"']+)["']""", config):
                found.setdefault(key, "configured api_key")
        except (OSError, UnicodeDecodeError):
            pass
        for name, value in os.environ.items():
            if secret_variable(name):
                found.setdefault(value, "key-like environment value")
        self.secrets = sorted(
            ((s, kind) for s, kind in found.items() if len(s) >= 12),
            key=lambda sk: len(sk[0]),
            reverse=True,
        )
        places: dict[str, str] = {}
        home = Path.home()
        for path in {horde_dir.absolute().parent, horde_dir.resolve().parent}:
            if len(str(path)) > 1:  # a project at `/` would mask every slash
                places[str(path)] = "[project]"
        for path in {home, home.resolve()}:
            if len(str(path)) > 1:
                places.setdefault(str(path), "~")
        self.places = sorted(places.items(), key=lambda kv: len(kv[0]), reverse=True)
        self.public = public
        self.counts: Counter[str] = Counter()
        roots = "|".join(re.escape(r) for r in _machine_roots()) if public else ""
        self._rooted = re.compile(rf"(?<![\w.~\]/-])/(?:{roots})(?:/[\w.@+-]+)*/?(?![\w.@+-])")
        self._names = (
            [
                (re.compile(rf"(?<![\w-]){re.escape(name)}(?![\w-])"), kind)
                for name, kind in sorted(_names().items(), key=lambda nk: -len(nk[0]))
            ]
            if public
            else []
        )

    def _sub(self, pattern: re.Pattern[str], text: str, shown: str, kind: str) -> str:
        text, n = pattern.subn(shown, text)
        self.counts[kind] += n
        return text

    def _keys(self, match: re.Match[str]) -> str:
        self.counts[_key_kind(match[0])] += 1
        return MASK

    def _base64(self, match: re.Match[str]) -> str:
        value = match[0]
        classes = sum(bool(re.search(c, value)) for c in ("[a-z]", "[A-Z]", "[0-9]"))
        if classes < 3 or _entropy(value) < _B64_ENTROPY:
            return value
        self.counts["long base64 value"] += 1
        return MASK

    def __call__(self, text: str) -> str:
        for secret, kind in self.secrets:
            self.counts[kind] += text.count(secret)
            text = text.replace(secret, MASK)
        text = _KEY_PATTERNS.sub(self._keys, text)
        text = self._sub(_BEARER, text, rf"\1{MASK}", "bearer token")
        masked = mask_url_credentials(text, MASK)
        self.counts["URL credentials"] += masked.count(f"{MASK}@") - text.count(f"{MASK}@")
        text = masked
        for path, shown in self.places:
            self.counts["absolute path"] += text.count(path)
            text = text.replace(path, shown)
        if not self.public:
            return text
        text = self._sub(self._rooted, text, "[path]", "absolute path")
        for pattern, kind in self._names:
            text = self._sub(pattern, text, f"[{kind}]", kind)
        text = self._sub(_LONG_HEX, text, MASK, "long hex value")
        return _LONG_B64.sub(self._base64, text)
