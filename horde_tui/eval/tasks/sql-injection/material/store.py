"""Data access for the shop's catalogue and accounts (sqlite3)."""

import sqlite3


def connect(path: str) -> sqlite3.Connection:
    return sqlite3.connect(path)


def find_user(db: sqlite3.Connection, email: str) -> list[tuple]:
    """The account with this e-mail address (the login form's lookup)."""
    query = "SELECT id, email, role FROM users WHERE email = '" + email + "'"
    return db.execute(query).fetchall()


def list_orders(db: sqlite3.Connection, user_id: int) -> list[tuple]:
    """A user's orders, newest first."""
    return db.execute(
        "SELECT id, total FROM orders WHERE user_id = ? ORDER BY id DESC", (user_id,)
    ).fetchall()


def search_products(db: sqlite3.Connection, term: str, limit: int = 20) -> list[tuple]:
    """Products whose name contains the search box's term."""
    sql = f"SELECT id, name FROM products WHERE name LIKE '%{term}%' LIMIT ?"
    return db.execute(sql, (limit,)).fetchall()


def count_products(db: sqlite3.Connection) -> int:
    return db.execute("SELECT COUNT(*) FROM products").fetchone()[0]
