"""Parsing what people and models type: whole numbers, on/off words and JSON.

`str.isdigit()` is True for '²' and '①', which `int()` refuses, and `int()` reads
'٣' as 3 and refuses more than 4300 digits; `json.loads` raises RecursionError (not
ValueError) on deeply nested input. These helpers turn each into a plain "not valid"
answer, so no input reaches a traceback.
"""

from __future__ import annotations

import json
import re
from typing import Any

DIGITS = "[0-9]"
"""ASCII digits for a regex: `\\d` also matches '٣' and the like."""

MAX_DIGITS = 18
"""The longest whole number read: more is no id, port or revision, just a bigger int."""

_WHOLE = re.compile(f"{DIGITS}{{1,{MAX_DIGITS}}}")

JSON_DEPTH_HINT = "nested too deeply"


def whole_number(text: str) -> int | None:
    """`text` as a non-negative int when it is 1 to `MAX_DIGITS` ASCII digits, else None."""
    return int(text) if _WHOLE.fullmatch(text) else None


def loads(text: str | bytes) -> Any:
    """`json.loads`, with nesting too deep for the parser refused as a `JSONDecodeError`
    (a `ValueError`), which callers already answer with one "not valid JSON" line."""
    try:
        return json.loads(text)
    except RecursionError:
        raise json.JSONDecodeError(f"arrays or objects {JSON_DEPTH_HINT}", "", 0) from None


BOOL_WORDS = "on or off (yes/no, true/false, 1/0)"
