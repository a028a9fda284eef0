"""Read-side models the app renders: plain Python over `.horde/`, no Textual.

Everything here reads files another process writes, incrementally: a refresh costs what
was appended since the last one, never the length of the file (see `linefile`). The app
wraps these in widgets and drives `refresh()` from `coalesce.watch_dir` notifications,
at most ~10 times a second (`coalesce.Coalescer`).
"""
