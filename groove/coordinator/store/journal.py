"""A tier's derived log: which learnings each commit may have changed for its derived data, so that saved indexes
need not be rebuilt after a crash.

Every commit that puts, edits or removes a learning, or stores or drops its vector, adds one entry to
`derived_log` in its own transaction: its sequence number, the ids it touched and how many learnings it added less
those it removed. A checkpoint (`search/saved.py`) saves each derived index with a token and the last entry it
holds for certain (`through`), and records both in `derived_saved`; entries up to the lowest `through` go then.
At the next start, crash or not, an index is loaded from its folder and the learnings of the entries past its
`through` are read again from the tier: what the index holds of each is made what the tier holds now.

An index may hold changes past its `through` too (a checkpoint saves while writes go on): reading a learning again
is idempotent, so it only costs the read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from groove.coordinator.store.relations import DERIVED_LOG, DERIVED_SAVED

Saved = dict[str, tuple[str, int]]  # index name -> (token of its folder, last log entry it holds)
Run = Callable[[str, dict[str, Any]], list[list[Any]]]  # a tier's `run`


def held_tokens(run: Run) -> Saved:
    """What the last checkpoint recorded in the tier."""
    rows = run(f"?[name, token, through] := *{DERIVED_SAVED.name}{{name, token, through}}", {})
    return {name: (token, int(through)) for name, token, through in rows}


def last_seq(run: Run, saved: Saved) -> int:
    """The highest sequence number the tier's log has used: its last entry's, or the highest a checkpoint held
    (the entries it held are gone)."""
    rows = run(f"?[seq] := *{DERIVED_LOG.name}{{seq}} :order -seq :limit 1", {})
    used = [int(rows[0][0])] if rows else []
    return max(used + [through for _, through in saved.values()], default=0)


def since(run: Run, through: int) -> tuple[list[str], int]:
    """The learnings the entries past `through` touched (each once), and their added less removed."""
    rows = run(
        f"?[seq, ids_json, delta] := *{DERIVED_LOG.name}{{seq, ids_json, delta}}, seq > $through",
        {"through": through},
    )
    ids: dict[str, None] = {}
    delta = 0
    for _, ids_json, added in sorted(rows):
        ids.update(dict.fromkeys(orjson.loads(ids_json)))
        delta += int(added)
    return list(ids), delta


def entry(seq: int, ids: list[str], delta: int, now: int) -> list[object]:
    """One commit's row of `derived_log`."""
    return [seq, orjson.dumps(ids).decode(), delta, now]


def record(run: Run, recorded: Saved, saved: Saved, now: int) -> Saved:
    """Record a checkpoint's tokens in the tier that `recorded` says holds these (each replacing the one of its
    name; names not saved this time keep theirs), and drop the log entries that every index recorded holds: what
    the tier holds now. Call with the tier's writer held."""
    held = {**recorded, **saved}
    if not saved:
        return held
    lowest = min(through for _, through in held.values())
    run(
        DERIVED_SAVED.put("rows") + "\n{"
        f"?[seq] := *{DERIVED_LOG.name}{{seq}}, seq <= $through :rm {DERIVED_LOG.name} {{seq}}" + "}",
        {"rows": [[name, token, through, now] for name, (token, through) in saved.items()], "through": lowest},
    )
    return held
