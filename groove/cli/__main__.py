"""`python -m groove.cli ...` is `groove ...` (how spawned workers and coordinators are started)."""

from groove.cli.entry import main

main()
