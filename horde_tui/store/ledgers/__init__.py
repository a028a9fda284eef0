"""One module per `.horde/` ledger: how its records fold into state and how it renders.

Each module exports `OPS` (record op -> fold function) and `render(state) -> str`.
"""
