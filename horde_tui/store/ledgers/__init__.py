"""One module per `.horde/` ledger: how its records fold into state and how it renders.

Each module exports `OPS` (record op -> fold function) and `render(state) -> str`. A fold
function calls `state.touch(kind, entry)` on every entry it creates, and before it
changes one: projections re-render only touched entries (`horde_tui.store.projection`).
"""
