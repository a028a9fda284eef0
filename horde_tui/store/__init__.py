"""The `.horde/` store: plain synchronous Python, no Textual, no litellm, no asyncio.

Every process (member, supervisor, `horde-tui tool`, the app) reads and writes the
ledgers through this package, so the on-disk rules live in one place.
"""
