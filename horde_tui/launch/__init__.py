"""Starting a run: options checked into settings, a supervisor built to host, or the run
started detached in the background. The CLI, the app's launch form and eval all start here."""
