"""`horde-tui doctor`: checks of the machine, the settings and the model before a run,
each printed as one PASS, WARN or FAIL line with what to do."""
