"""The app's screens: run, member detail, report, home, and the modals."""
