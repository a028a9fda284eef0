"""horde-tui: run a small swarm of LLM agents that coordinate through `.horde/` ledgers."""

from __future__ import annotations

__version__ = "0.1.0"
