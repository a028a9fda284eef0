"""A tiny user directory served over WSGI, standard library only.

Run it with `python app.py`, then open http://127.0.0.1:8000/users?name=alice.
"""

import json
import sqlite3
from urllib.parse import parse_qs
from wsgiref.simple_server import make_server

from auth import check_token, delete_user

SECRET_KEY = "userdir-pr0d-t0ken-2291"  # the admin token
DB_PATH = "users.db"


def connect():
    db = sqlite3.connect(DB_PATH)
    db.execute("CREATE TABLE IF NOT EXISTS users (name TEXT, email TEXT, admin INTEGER)")
    return db


def find_user(db, name):
    query = "SELECT name, email FROM users WHERE name = '" + name + "'"
    return db.execute(query).fetchall()


def application(environ, start_response):
    params = parse_qs(environ.get("QUERY_STRING", ""))
    db = connect()
    if environ.get("PATH_INFO") == "/users":
        rows = find_user(db, params.get("name", [""])[0])
        start_response("200 OK", [("Content-Type", "application/json")])
        return [json.dumps(rows).encode()]
    if environ.get("PATH_INFO") == "/delete":
        if not check_token(environ.get("HTTP_X_TOKEN", ""), SECRET_KEY):
            start_response("403 Forbidden", [("Content-Type", "text/plain")])
            return [b"bad token\n"]
        actor = params.get("actor", [""])[0]
        delete_user(db, actor, params.get("name", [""])[0])
        start_response("204 No Content", [])
        return []
    start_response("404 Not Found", [("Content-Type", "text/plain")])
    return [b"not found\n"]


if __name__ == "__main__":
    make_server("127.0.0.1", 8000, application).serve_forever()
