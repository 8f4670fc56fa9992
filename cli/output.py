"""Human tables and JSON for the CLI, and the one-line error every command ends with on failure."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

import click


def emit_json(value: Any) -> None:
    """Print `value` as one JSON document."""
    click.echo(json.dumps(value, indent=2, sort_keys=True, default=str))


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], max_width: int = 60) -> str:
    """A plain-text table with columns sized to their contents (cells cut at `max_width`)."""

    def cell(value: Any) -> str:
        text = "" if value is None else str(value)
        text = text.replace("\n", " ")
        return text if len(text) <= max_width else text[: max_width - 1] + "…"

    cells = [[cell(v) for v in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    return "\n".join(lines)


def pairs(items: Sequence[tuple[str, Any]]) -> str:
    """`key  value` lines, keys aligned."""
    width = max(len(k) for k, _ in items)
    return "\n".join(f"{k.ljust(width)}  {v}" for k, v in items)


def fail(message: str, code: int = 1) -> NoReturn:
    """Print `groove: error: message` to stderr and exit; no traceback."""
    click.echo(f"groove: error: {message}", err=True)
    sys.exit(code)
