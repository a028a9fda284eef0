"""The supervisor: one run's lifecycle, pure asyncio, no Textual.

The app and headless mode both observe the same `Supervisor` through its event sink.
"""
