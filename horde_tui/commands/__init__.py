"""The command line: `horde-tui`'s parser and each subcommand (run, doctor, init, fork,
completion, the settings reference). Commands call down into the app and the run layers."""
