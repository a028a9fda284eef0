"""The `horde` tool: one action per call, validated by pydantic, rules enforced here.

Plain synchronous Python over `horde_tui.store`; no Textual, no litellm, no asyncio, so
members, the supervisor and `horde-tui tool` all share exactly one implementation.
"""

from horde_tui.protocol.dispatch import ToolResult, UsageError, run_action

__all__ = ["ToolResult", "UsageError", "run_action"]
