"""One handler per `horde` action, grouped by the ledger they write.

A write handler is `decide(ctx, params, state) -> Decision`: pure over the folded state,
called by the store under the lock. A read handler is `read(ctx, params, state) -> str`.
"""
