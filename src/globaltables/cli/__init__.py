"""The `globaltables` command line: argument parsing only; each subcommand calls into the package."""
