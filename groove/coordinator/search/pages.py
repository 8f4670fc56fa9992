"""Reading a whole relation of a tier a page at a time, as a tier's derived data is rebuilt or requeued."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from groove.coordinator.search.embedder import embedding_text
from groove.coordinator.store.tiers import Tier

_PAGE = 5000  # rows read per query


def learning_texts(tier: Tier) -> Iterator[list[tuple[str, str]]]:
    """Every learning of a tier as (id, the text it is embedded and indexed by), a page at a time."""
    for page in pages(tier, "?[id, description, insight] := *learning{id, description, insight}"):
        yield [(lid, embedding_text(d, i)) for lid, d, i in page]


def pages(tier: Tier, script: str) -> Iterator[list[list[Any]]]:
    """A whole relation, _PAGE rows at a time, so a large tier's vectors never sit in memory as lists at once.

    `script` is a rule whose first column is its relation's first key, named `id`. Pages follow that key
    (keyset paging): `:order ... :offset` would sort the whole relation again for every page, which made
    loading 100k vectors take minutes. A stored relation is scanned in key order, so a page without
    `:order` holds the smallest ids past the cursor.
    """
    after: str | None = None
    while True:
        if after is None:
            rows = tier.run(f"{script} :limit {_PAGE}")
        else:
            rows = tier.run(f"{script}, id > $after :limit {_PAGE}", {"after": after})
        if rows:
            yield rows
        if len(rows) < _PAGE:
            return
        after = max(row[0] for row in rows)
