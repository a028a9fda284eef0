"""The Textual app shell: the app, hosting a run in it or headless, leaving and quitting,
and the replay entry. Screens and widgets draw; this package starts, hosts and ends them."""
