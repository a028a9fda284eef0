"""Helpers for the store tests: scripts the tests run as subprocesses, plus shared checks.

The scripts (`writer.py`, `lock_holder.py`) are run by path with the test's Python, so
each is a real, separate process taking the real `.horde/.lock`.
"""
