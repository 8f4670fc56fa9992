"""Human tables and JSON for the CLI, and the one-line error every command ends with on failure."""

from __future__ import annotations

import json
import sys
import unicodedata
from collections.abc import Sequence
from typing import Any, NoReturn

import click


def emit_json(value: Any) -> None:
    """Print `value` as one JSON document."""
    click.echo(json.dumps(value, indent=2, sort_keys=True, default=str))


def width(text: str) -> int:
    """Columns `text` takes in a terminal: East Asian wide and fullwidth characters (CJK, most emoji) take
    two, combining marks and zero-width characters none."""
    return sum(_char_width(ch) for ch in text)


def _char_width(ch: str) -> int:
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def _cut(text: str, max_width: int) -> str:
    if width(text) <= max_width:
        return text
    kept, used = [], 0
    for ch in text:
        used += _char_width(ch)
        if used > max_width - 1:
            break
        kept.append(ch)
    return "".join(kept) + "…"


def _pad(text: str, columns: int) -> str:
    return text + " " * (columns - width(text))


def human(value: Any) -> str:
    """A value as a person reads it, never a Python repr: nothing is `-`, a map `key value, ...` (a source
    `{"type": "transcript", "session_id": "s-1"}` reads `transcript, session_id s-1`), a list its items."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        return ", ".join(human(v) if k == "type" else f"{k} {human(v)}" for k, v in value.items()) or "-"
    if isinstance(value, list | tuple | set | frozenset):
        return ", ".join(human(v) for v in value) or "-"
    return str(value)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], max_width: int = 60) -> str:
    """A plain-text table with columns sized to their contents as a terminal shows them (cells cut at
    `max_width` columns)."""

    def cell(value: Any) -> str:
        text = "" if value is None else human(value)
        return _cut(text.replace("\n", " "), max_width)

    cells = [[cell(v) for v in row] for row in rows]
    widths = [max([width(h)] + [width(r[i]) for r in cells]) for i, h in enumerate(headers)]
    lines = ["  ".join(_pad(h, w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(_pad(v, w) for v, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    return "\n".join(lines)


def pairs(items: Sequence[tuple[str, Any]]) -> str:
    """`key  value` lines, keys aligned."""
    key_width = max(len(k) for k, _ in items)
    return "\n".join(f"{k.ljust(key_width)}  {human(v)}" for k, v in items)


def fail(message: str, code: int = 1) -> NoReturn:
    """Print `groove: error: message` to stderr and exit; no traceback."""
    click.echo(f"groove: error: {message}", err=True)
    sys.exit(code)


def memory_line(parts: dict[str, float], budget_mb: int, tiers: Sequence[Any]) -> str:
    """`stats`' memory line: the budget, the parts from the largest down, and the tiers released while idle."""
    shown = ", ".join(f"{name.replace('_', ' ')} {mb:.0f}" for name, mb in sorted(parts.items(), key=lambda p: -p[1]))
    released = sum(1 for tier in tiers if tier.released)
    return f"budget {budget_mb} MB; {shown} MB; {released} of {len(tiers)} open tiers released while idle"
