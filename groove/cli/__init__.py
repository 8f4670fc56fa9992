"""The `groove` command line: `serve` runs the coordinator, everything else is a client of one."""
