"""Shared low-level helpers every layer may use: settings, input parsing, process and
signal handling, prompts, shell refusals, the HTTP server base. They import nothing above."""
