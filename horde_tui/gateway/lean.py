"""Skip two pieces of litellm's per-call bookkeeping that nothing in the gateway reads.

On every call, litellm 1.110.2 does work for its own logging that has no setting to
turn it off (tried: `no-log`, `litellm.logging = False`, `disable_streaming_logging`,
`turn_off_message_logging`, `disable_end_user_cost_tracking` and more; see backend.py):

- it prices the response (`Logging.response_cost_calculator`, called from
  `ResponseMetadata.set_hidden_params`, the stream builder and the success handlers).
  For a model without a price (a local server, the stub) it tries every fallback
  spelling of the model name (`completion_cost`, `_FallbackGeneralizations`), fails,
  then searches again for its zero-cost diagnostic. py-spy put this at 0.94 ms of the
  4.54 ms of CPU per call to the stub (12 clients), and about half that for a priced
  model;
- its success handler builds the standard logging payload
  (`Logging._build_standard_logging_payload`), 0.41 ms per call, for callbacks that
  are not there.

Both are redundant for the gateway: it prices every call itself (backend.price, from
litellm's map, with the model's "unknown" cached) and registers no litellm callback.
What litellm's price fed: `_hidden_params["response_cost"]`, which the gateway does not
read, and `usage.cost` on the last chunk of a stream, which members do not read either
(they read `horde_cost_usd`; a non-streamed reply never carried `usage.cost`). Usage
tokens, streamed usage chunks, errors and retries do not depend on either result.

So, once litellm is imported in the gateway process, `apply` replaces the two methods
on litellm's `Logging` class: the price is recorded as not computed (None, which
litellm already records for a model it cannot price; never 0), and the payload is not
built. Each replacement runs litellm's original whenever anyone could read the result:
a callback registered with litellm (global or per call, e.g. a user's) or litellm's
`LITELLM_PRINT_STANDARD_LOGGING_PAYLOAD` debug print. Measured with
`tests/benchmarks/bench_members.py` (12 clients, the stub; 2026-11-30): Python calls
per chat call in the gateway fell from about 12,500 to 8,700 for an unpriced model and
from 11,600 to 9,550 for a priced one; CPU per call, paired with the gateway without
this module, fell by 1.2-1.5 ms (unpriced) and 1.0-1.5 ms (priced), to about 3.7-4.3 ms.

These are litellm internals. `apply` checks each one exists with the signature read
in 1.110.2 and otherwise changes nothing (the gateway works, only slower) and says so;
tests/unit/gateway/test_gateway_lean.py fails when they no longer match. When the litellm pin in
pyproject.toml moves, re-read the new version's callers of these two methods before
updating the expected signatures below.
"""

from __future__ import annotations

import importlib
import inspect
import os
from typing import Any

LOGGING_MODULE = "litellm.litellm_core_utils.litellm_logging"

_EMPTY = inspect.Parameter.empty
_POSITIONAL = inspect.Parameter.POSITIONAL_OR_KEYWORD
EXPECTED_SIGNATURES: dict[str, tuple[tuple[str, Any], ...]] = {
    "response_cost_calculator": (
        ("self", _EMPTY),
        ("result", _EMPTY),
        ("cache_hit", None),
        ("litellm_model_name", None),
        ("router_model_id", None),
        ("ignore_stamped_cost", False),
    ),
    "_build_standard_logging_payload": (
        ("self", _EMPTY),
        ("init_response_obj", _EMPTY),
        ("start_time", _EMPTY),
        ("end_time", _EMPTY),
        ("isolate_call_details", False),
    ),
}
"""`Logging` methods replaced, with their parameters (name, default) in litellm 1.110.2."""

GLOBAL_CALLBACK_LISTS = (
    "callbacks",
    "input_callback",
    "success_callback",
    "failure_callback",
    "service_callback",
    "audit_log_callbacks",
    "_async_input_callback",
    "_async_success_callback",
    "_async_failure_callback",
)
"""litellm's module-level callback lists; any entry means someone may read the payload."""

CALL_CALLBACK_LISTS = (
    "dynamic_input_callbacks",
    "dynamic_success_callbacks",
    "dynamic_async_success_callbacks",
    "dynamic_failure_callbacks",
    "dynamic_async_failure_callbacks",
)
"""A `Logging` object's per-call callbacks (`callbacks=` passed to one call)."""

PRINT_PAYLOAD_ENV = "LITELLM_PRINT_STANDARD_LOGGING_PAYLOAD"


def mismatches(litellm: Any) -> list[str]:
    """What in this litellm differs from what `apply` was written against (empty: it fits)."""
    try:
        logging_class = importlib.import_module(LOGGING_MODULE).Logging
    except (ImportError, AttributeError) as exc:
        return [f"{LOGGING_MODULE}.Logging: {exc}"]
    found = []
    for name, expected in EXPECTED_SIGNATURES.items():
        method = getattr(logging_class, name, None)
        if not inspect.isfunction(method):
            found.append(f"Logging.{name} is missing")
            continue
        params = tuple(inspect.signature(method).parameters.values())
        if any(p.kind is not _POSITIONAL for p in params) or [
            (p.name, p.default) for p in params
        ] != list(expected):
            found.append(f"Logging.{name}{inspect.signature(method)} changed")
    found += [
        f"litellm.{name} is not a list"
        for name in GLOBAL_CALLBACK_LISTS
        if not isinstance(getattr(litellm, name, None), list)
    ]
    return found


def apply(litellm: Any) -> str | None:
    """Replace the two methods (see the module docstring); None when done, else why not.

    All or nothing: on any mismatch nothing is replaced, so litellm never runs half
    patched. Calling it again once applied changes nothing.
    """
    problems = mismatches(litellm)
    if problems:
        return "; ".join(problems)
    logging_class = importlib.import_module(LOGGING_MODULE).Logging
    price_for_logging = logging_class.response_cost_calculator
    build_payload = logging_class._build_standard_logging_payload
    if price_for_logging.__module__ == __name__:
        return None  # applied already

    def someone_listens(logging_obj: Any) -> bool:
        """Whether a litellm callback, or its payload debug print, may read the results."""
        return (
            any(getattr(litellm, name) for name in GLOBAL_CALLBACK_LISTS)
            or any(getattr(logging_obj, name, None) for name in CALL_CALLBACK_LISTS)
            or bool(os.environ.get(PRINT_PAYLOAD_ENV))
        )

    def response_cost_calculator(
        self: Any,
        result: object,
        cache_hit: bool | None = None,
        litellm_model_name: str | None = None,
        router_model_id: str | None = None,
        ignore_stamped_cost: bool = False,
    ) -> float | None:
        if someone_listens(self):
            return price_for_logging(
                self, result, cache_hit, litellm_model_name, router_model_id, ignore_stamped_cost
            )
        return None  # not computed: unknown, never $0

    def _build_standard_logging_payload(
        self: Any,
        init_response_obj: object,
        start_time: Any,
        end_time: Any,
        isolate_call_details: bool = False,
    ) -> Any:
        if someone_listens(self):
            return build_payload(
                self, init_response_obj, start_time, end_time, isolate_call_details
            )
        return None

    logging_class.response_cost_calculator = response_cost_calculator
    logging_class._build_standard_logging_payload = _build_standard_logging_payload
    return None
