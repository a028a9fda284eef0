"""The `horde` tool: one action per call, validated by pydantic, rules enforced here; and
the other files a run's processes exchange: control requests (`controls`), their
targets (`targets`) and how a run ended (`outcome`).

Plain Python over `horde_tui.store`; no Textual, no litellm, so members, the supervisor,
the views and `horde-tui tool` all share exactly one implementation (`controls` alone
holds coroutines: the answering side a supervisor awaits).

`run_action` and its types load the tool's pydantic models on first use, not on import
of the package: a member asking for a confirm or the CLI parsing a target pays only for
the module it imports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from horde_tui.protocol.dispatch import ToolResult, UsageError, run_action

__all__ = ["ToolResult", "UsageError", "run_action"]


def __getattr__(name: str) -> object:
    """`from horde_tui.protocol import run_action` imports the dispatcher then."""
    if name in __all__:
        from horde_tui.protocol import dispatch

        return getattr(dispatch, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
