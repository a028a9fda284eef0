"""`python -m horde_tui.gateway.resolve`: what litellm makes of a run's model strings.

`horde-tui doctor` asks before a run starts: is the provider known, is its key there, does
litellm price the model and does it know it lacks tool calls. Only the gateway process may
import litellm (seconds), so doctor runs this helper as its own process, overlapped with
its other checks. Takes one JSON object as its argument (`models`, `api_base`,
`key_given`: never a key) and prints one JSON object. Key values are never read out: litellm's `validate_environment`
names the variables it looked for, and a given key is passed as a placeholder.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

from horde_tui.gateway import backend

KEY_PLACEHOLDER = "set"
"""Stands for a key given through the `api_key` setting: only its presence matters here."""


def first_line(exc: BaseException) -> str:
    """An exception as one line (`backend.one_line`), at most 300 characters."""
    return backend.one_line(exc)[:300]


def resolve(litellm: Any, model: str, api_base: str | None, key_given: bool) -> dict[str, Any]:
    """One model: its provider (or why litellm knows none), the variables it misses,
    and what litellm's local map says of its price and tool calls."""
    out: dict[str, Any] = {
        "model": model,
        "provider": None,
        "error": None,
        "missing": [],
        "known": False,
        "priced": False,
        "no_tools": False,
    }
    try:
        out["provider"] = litellm.get_llm_provider(model, api_base=api_base)[1]
    except Exception as exc:
        out["error"] = first_line(exc)
        return out
    try:
        env = litellm.validate_environment(
            model=model, api_key=KEY_PLACEHOLDER if key_given else None, api_base=api_base
        )
        out["missing"] = [str(k) for k in env.get("missing_keys") or []]
    except Exception as exc:
        out["error"] = first_line(exc)
    out["known"] = backend.known_model(litellm, model)
    out["priced"] = backend.price(litellm, model, 1000, 1000) is not None
    out["no_tools"] = backend.knows_no_tools(litellm, model)
    return out


def main() -> int:
    request = json.loads(sys.argv[1] if len(sys.argv) > 1 else "{}")
    started = time.perf_counter()
    lite = backend.LiteLLM()
    lite.start_import()
    try:
        litellm = asyncio.run(lite.module())
    except backend.ProviderError as exc:
        print(json.dumps({"error": exc.message}))
        return 1
    import_s = time.perf_counter() - started
    models = [
        resolve(litellm, str(m), request.get("api_base"), bool(request.get("key_given")))
        for m in request.get("models") or []
    ]
    print(json.dumps({"import_s": round(import_s, 2), "models": models}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
