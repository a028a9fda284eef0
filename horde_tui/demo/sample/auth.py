"""Token checks and user administration for app.py."""


def check_token(given, expected):
    """True when the caller's token is the server's admin token."""
    return given == expected


def is_admin(db, name):
    row = db.execute("SELECT admin FROM users WHERE name = ?", (name,)).fetchone()
    return bool(row and row[0])


def delete_user(db, actor, name):
    """Remove user `name`. Only admins may delete users: `actor` must be one."""
    db.execute("DELETE FROM users WHERE name = ?", (name,))
    db.commit()
