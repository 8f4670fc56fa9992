"""`python -m cli ...` is `groove ...` (how spawned workers and coordinators are started)."""

from cli.entry import main

main()
