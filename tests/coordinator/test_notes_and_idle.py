"""Pure parts of notes and idle pushes: a memory's note index (ranking, expiry, windows, other memories) and
the store of `when_idle` nudges pushed to idle agents."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from groove.coordinator.board.state import Board
from groove.coordinator.errors import Rejected
from groove.coordinator.net.idle import IdleNudges
from groove.coordinator.search.notes import NoteIndex
from groove.coordinator.store.records import vector_blob
from groove.protocol.boardrecords import MemoryNoteRequest
from groove.protocol.errors import ErrorCode
from groove.protocol.search import SearchRequest

M1, M2 = "01a209b1-e78b-71c4-b4bb-72379e7ea87f", "01a209b1-e78b-71c4-b4bb-72379e7ea880"


def note(nid: str, memory: str, content: str, created_at: int = 10, expires_at: int | None = None) -> dict[str, Any]:
    return {"id": nid, "memory_id": memory, "content": content, "created_at": created_at, "expires_at": expires_at}


def axis(i: int) -> list[float]:
    vector = np.zeros(384, dtype=np.float32)
    vector[i] = 1.0
    return vector.tolist()


def test_a_memorys_notes_rank_by_meaning_then_words_and_expire() -> None:
    index = NoteIndex()
    index.add("project:/x", [
        note("n1", M1, "retry the flaky socket test"),
        note("n2", M1, "the socket pool leaks", expires_at=100),
        note("n3", M1, "cache the MiniLM model", created_at=50),
        note("n4", M2, "socket trouble elsewhere"),
    ])  # fmt: skip
    index.store([("n1", vector_blob(axis(0))), ("n3", vector_blob(axis(1))), ("n4", vector_blob(axis(0)))])
    query = np.asarray(axis(0), dtype=np.float32)
    found = index.find(SearchRequest(text="socket", memory_id=M1), query, now=50)
    assert [h.note_id for h in found] == ["n1", "n2"]  # n1 by meaning and words; n2 (no vector) by words only
    assert found[0].reasoning() == "semantic 1.00, words +0.00 ('socket')"  # a word most notes hold: no weight
    assert found[1].reasoning() == "words +0.60 ('socket')"
    assert [h.note_id for h in index.find(SearchRequest(text="socket", memory_id=M1), query, now=100)] == ["n1"]
    assert len(index) == 3  # the expired note left the index when the search met it
    # found by a word that names something (far from the query by meaning): plain words alone would not lift it
    windowed = index.find(SearchRequest(text="MiniLM socket", memory_id=M1, since=40), query, now=0)
    assert [h.note_id for h in windowed] == ["n3"]
    keyword = index.find(SearchRequest(text="cache", memory_id=M1, mode="keyword"), None, now=0)
    assert [h.note_id for h in keyword] == ["n3"]
    assert index.find(SearchRequest(text="nothing here", memory_id=M2), None, now=0) == []


def test_a_note_that_has_expired_already_is_refused() -> None:
    board = Board([{"id": M1, "status": "active"}], [])
    body = MemoryNoteRequest(memory_id=M1, content="x", kind="context", expires_at=100)
    with pytest.raises(Rejected) as refused:
        board.apply(body, ["n1"], now=100)
    assert refused.value.code == ErrorCode.BAD_REQUEST
    assert board.records.take_noted() == []
    assert board.apply(body, ["n1"], now=99) == {"id": "n1"}
    assert [n["id"] for n in board.records.take_noted()] == ["n1"]
    assert board.records.take_noted() == []


def test_when_idle_nudges_are_pushed_once_to_each_agent_they_reach_until_acknowledged() -> None:
    idle = IdleNudges(limit=2)
    low = {"id": "n1", "target": "role:qa", "priority": "low", "created_at": 1}
    high = {"id": "n2", "target": "all", "priority": "high", "created_at": 2}
    idle.sent(low)
    idle.sent(high)
    assert [n["id"] for n in idle.take("a1", "qa")] == ["n2", "n1"]  # highest priority first
    assert idle.take("a1", "qa") == []  # once
    idle.acked("a2", ["n2"])
    assert idle.take("a2", "qa") == [low]  # acknowledged: never pushed to that agent
    assert idle.take("a3", "dev") == [high]  # not of the role
    idle.sent({"id": "n3", "target": "a4", "priority": "normal", "created_at": 3})
    assert len(idle) == 2  # bounded: the oldest is left to the agents' polls
    assert [n["id"] for n in idle.take("a4", "qa")] == ["n2", "n3"]
