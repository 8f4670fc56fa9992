"""`python -m cli ...` is `groove ...` (how spawned workers and coordinators are started)."""

from cli.main import main

main()
