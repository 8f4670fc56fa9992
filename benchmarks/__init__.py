"""Benchmarks: each script prints a table and, last, one JSON line."""
