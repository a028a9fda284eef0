"""Invoice API handlers. `user` is the authenticated caller (a dict from the session)."""

INVOICES: dict[int, dict] = {}
USERS: dict[str, dict] = {}


def get_invoice(user: dict, invoice_id: int) -> dict:
    """GET /invoices/<id>: one of the caller's invoices."""
    invoice = INVOICES[invoice_id]
    return invoice


def delete_invoice(user: dict, invoice_id: int) -> None:
    """DELETE /invoices/<id>: admins only."""
    if user.get("role") != "admin":
        raise PermissionError("admins only")
    del INVOICES[invoice_id]


def update_profile(user: dict, changes: dict) -> dict:
    """PATCH /me: the caller edits their own display name and e-mail."""
    record = USERS[user["name"]]
    record.update(changes)
    return record
