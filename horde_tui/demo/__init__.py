"""`horde-tui demo`: a full run with no provider key, over a bundled sample project.

`run.prepare_demo` sets a demo up for any host; `run.run_demo` hosts it headless;
`policy` is the scripted demo model; `sample/` is the project it reviews.
"""
