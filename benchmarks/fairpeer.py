"""The fair SQLite peer: agents writing straight into one SQLite file (WAL), each write doing what groove does for
it, at the same mix as groove's agents.

The bare peer (`peers.py`, `sqlite`) writes one row per learning and stays as a floor. This one, per request, in
one transaction (`BEGIN IMMEDIATE`, `synchronous=NORMAL` like groove's default durability):

- `learn`: the content-hash check (a learning of the same content in the same scope is reinforced, not stored
  again), then the `learning`, `usage_stats`, `learning_hashes` and FTS5 rows, and the request id as a UNIQUE row
  with its reply: what one groove learning write stores, hashed by groove's own `content_hash`;
- `outcome`: one of its own learnings rated (its usage row, an outcome-log row) and the request id;
- `search`: the learnings whose words match a corpus question's (FTS5, BM25 order, the best 10, rows read);
- `inject`: the same search for a task, the best 5 counted as injected, and the request id.

Each agent is `python -m benchmarks.fairpeer --db FILE ...`, with the options every peer client takes
(`peers.client_options`); it prints one JSON line and writes its latencies to a file, as the others do.
"""

from __future__ import annotations

import json
import random
import re
import sqlite3
import time
from pathlib import Path
from typing import Any

import click

from benchmarks.peers import client_options, finish, payloads
from groove.coordinator.store.records import content_hash
from groove.protocol import constants as C
from groove.protocol.ids import uuid7
from groove.swarm.corpus import load
from groove.swarm.workloads import INJECT, LEARN, OUTCOME, SEARCH, parse_mix

# made by `peers.create_sqlite` before the agents start
SCHEMA = """
CREATE TABLE IF NOT EXISTS learning (id TEXT PRIMARY KEY, scope TEXT NOT NULL, category TEXT NOT NULL,
    description TEXT NOT NULL, pattern_json TEXT NOT NULL, insight TEXT NOT NULL, confidence REAL NOT NULL,
    created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, source_type TEXT NOT NULL, source_json TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS usage_stats (learning_id TEXT PRIMARY KEY, times_injected INTEGER NOT NULL,
    times_helpful INTEGER NOT NULL, times_ignored INTEGER NOT NULL, times_contradicted INTEGER NOT NULL,
    last_used INTEGER, confidence_alpha REAL NOT NULL, confidence_beta REAL NOT NULL);
CREATE TABLE IF NOT EXISTS learning_hashes (learning_id TEXT PRIMARY KEY, scope TEXT NOT NULL, hash TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS by_hash ON learning_hashes (hash, scope);
CREATE TABLE IF NOT EXISTS applied_requests (request_id TEXT PRIMARY KEY, op TEXT NOT NULL, reply_json TEXT NOT NULL,
    applied_at INTEGER NOT NULL, digest TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS outcome_log (learning_id TEXT NOT NULL, at INTEGER NOT NULL, outcome TEXT NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS learning_fts USING fts5(lid UNINDEXED, body, tokenize='porter unicode61');
"""
_WORD_RE = re.compile(r"\w+")


class FairPeer:
    """One agent's connection and what it has written."""

    def __init__(self, db: Path, agent_id: str, seed: int) -> None:
        self.conn = sqlite3.connect(db, timeout=30.0, isolation_level=None)
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.source = payloads(agent_id, seed)
        self.rng = random.Random(seed)
        self.corpus = load()
        self.mine: list[str] = []

    def _applied(self, op: str, reply: dict[str, Any]) -> None:
        now = int(time.time() * 1000)
        self.conn.execute(
            "INSERT INTO applied_requests VALUES (?, ?, ?, ?, ?)", (uuid7(), op, json.dumps(reply), now, "")
        )

    def learn(self) -> None:
        learning, now = next(self.source), int(time.time() * 1000)
        digest = content_hash(learning["description"], learning["insight"])
        self.conn.execute("BEGIN IMMEDIATE")
        owner = self.conn.execute(
            "SELECT learning_id FROM learning_hashes WHERE hash = ? AND scope = ?", (digest, learning["scope"])
        ).fetchone()
        if owner is not None:
            lid = owner[0]
            self.conn.execute(
                "UPDATE usage_stats SET confidence_alpha = confidence_alpha + ? WHERE learning_id = ?",
                (C.REINFORCE_ALPHA_STEP, lid),
            )
        else:
            lid, confidence = uuid7(), learning["confidence"]
            source = learning["source"]
            self.conn.execute(
                "INSERT INTO learning VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (lid, learning["scope"], learning["category"], learning["description"],
                 json.dumps(learning.get("pattern")), learning["insight"], confidence, now, now, source["type"],
                 json.dumps(source)),
            )  # fmt: skip
            self.conn.execute(
                "INSERT INTO usage_stats VALUES (?, 0, 0, 0, 0, NULL, ?, ?)",
                (lid, C.PRIOR_STRENGTH * confidence, C.PRIOR_STRENGTH * (1 - confidence)),
            )
            self.conn.execute("INSERT INTO learning_hashes VALUES (?, ?, ?)", (lid, learning["scope"], digest))
            text = f"{learning['description']}\n{learning['insight']}"
            self.conn.execute("INSERT INTO learning_fts (lid, body) VALUES (?, ?)", (lid, text))
            self.mine.append(lid)
        self._applied(C.OP_LEARNING_PUT, {"ids": [lid], "created": [owner is None]})
        self.conn.execute("COMMIT")

    def outcome(self) -> None:
        if not self.mine:
            self.learn()
            return
        lid, now = self.rng.choice(self.mine), int(time.time() * 1000)
        self.conn.execute("BEGIN IMMEDIATE")
        self.conn.execute(
            "UPDATE usage_stats SET times_helpful = times_helpful + 1, times_injected = times_injected + 1, "
            "last_used = ?, confidence_alpha = confidence_alpha + ? WHERE learning_id = ?",
            (now, C.HELPFUL_ALPHA_STEP, lid),
        )
        self.conn.execute("INSERT INTO outcome_log VALUES (?, ?, ?)", (lid, now, C.OUTCOME_HELPFUL))
        self._applied(C.OP_OUTCOME_RECORD, {"applied": 1})
        self.conn.execute("COMMIT")

    def _found(self, k: int) -> list[str]:
        question = self.corpus.learning(self.rng, noted_by="q")["description"]
        words = " OR ".join(f'"{w}"' for w in dict.fromkeys(_WORD_RE.findall(question.lower())))
        rows = self.conn.execute(
            "SELECT l.id, l.description, l.insight, u.confidence_alpha FROM learning_fts f "
            "JOIN learning l ON l.id = f.lid JOIN usage_stats u ON u.learning_id = l.id "
            "WHERE learning_fts MATCH ? ORDER BY f.rank LIMIT ?",
            (words, k),
        ).fetchall()
        return [row[0] for row in rows]

    def search(self) -> None:
        self._found(10)

    def inject(self) -> None:
        found, now = self._found(5), int(time.time() * 1000)
        self.conn.execute("BEGIN IMMEDIATE")
        self.conn.executemany(
            "UPDATE usage_stats SET times_injected = times_injected + 1, last_used = ? WHERE learning_id = ?",
            [(now, lid) for lid in found],
        )
        self._applied(C.OP_INJECT_PREPARE, {"learnings": found})
        self.conn.execute("COMMIT")


@click.command()
@click.option("--db", type=click.Path(path_type=Path), required=True)
@click.option("--mix", default="learn=1", show_default=True, help="The agents' mix, as groove's (KIND=WEIGHT,...).")
@click.option("--kinds-file", type=click.Path(path_type=Path), help="Where to write the requests done by kind.")
@client_options
def main(
    db: Path, mix: str, kinds_file: Path | None, agent_id: str, seed: int, duration: float, start_at: float,
    latencies_file: Path,
) -> None:  # fmt: skip
    """One agent of the fair SQLite peer: the mix's requests, one at a time, for `duration` seconds."""
    peer, weights = FairPeer(db, agent_id, seed), parse_mix(mix)
    steps = {LEARN: peer.learn, OUTCOME: peer.outcome, SEARCH: peer.search, INJECT: peer.inject}
    kinds, chances = list(weights), list(weights.values())
    done = dict.fromkeys(kinds, 0)
    time.sleep(max(0.0, start_at - time.time()))
    began, latencies = time.monotonic(), []
    while time.monotonic() - began < duration:
        kind = peer.rng.choices(kinds, chances)[0]
        t0 = time.monotonic()
        steps[kind]()
        latencies.append(time.monotonic() - t0)
        done[kind] += 1
    if kinds_file is not None:
        kinds_file.write_text(json.dumps(done))
    finish(latencies_file, len(latencies), time.monotonic() - began, latencies)


if __name__ == "__main__":
    main()
