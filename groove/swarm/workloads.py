"""What a worker does once connected: the synthetic mix, vector searches, or a script of requests.

- `synthetic`: a seeded mix of learn (`learning.put` of a corpus learning), outcome (`outcome.record`:
  closing an injection this agent received, with attributions to its learnings and whether the session
  succeeded, or attributions to learnings it wrote), search (`search` with a text query in a project's
  context) and inject (`inject.prepare` for a task in a project). Requests go `in_flight` at a time, or
  one at a time paced at `rate` per second. At the end it reads back every learning it was acked.
- `search`: vector searches with random unit vectors (the search benchmark; no model needed anywhere).
- a JSON-lines script: one `{"op": name, "body": {...}, "expect"?: "ok" | error code}` per line, or
  `{"sleep": seconds}`; a reply other than the expected one counts as a mismatch.
"""

from __future__ import annotations

import itertools
import json
import random
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from groove.client.client import GrooveClient
from groove.client.errors import CoordinatorAbsent, GrooveError, RemoteError, Stopped
from groove.client.transport import Result
from groove.protocol import constants as C
from groove.swarm.corpus import load

LEARN, OUTCOME, SEARCH, INJECT = "learn", "outcome", "search", "inject"
KINDS = (LEARN, OUTCOME, SEARCH, INJECT)
DEFAULT_MIX = "learn=50,outcome=30,search=10,inject=10"
OPS = {  # the operation each kind sends
    LEARN: C.OP_LEARNING_PUT,
    OUTCOME: C.OP_OUTCOME_RECORD,
    SEARCH: C.OP_SEARCH,
    INJECT: C.OP_INJECT_PREPARE,
}
_OUTCOME_WEIGHTS = ((C.OUTCOME_HELPFUL, 6), (C.OUTCOME_IGNORED, 3), (C.OUTCOME_CONTRADICTED, 1))
_READ_BACK_CHUNK = 256  # read-back requests between two looks at `stopping`


def parse_mix(text: str) -> dict[str, float]:
    """`learn=60,outcome=30,search=10` as weights by kind; raises ValueError saying what is wrong."""
    mix: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        kind, sep, weight = part.partition("=")
        if not sep or kind not in KINDS:
            raise ValueError(f"mix entry {part!r}: expected KIND=WEIGHT with KIND one of {', '.join(KINDS)}")
        try:
            mix[kind] = float(weight)
        except ValueError:
            raise ValueError(f"mix entry {part!r}: weight {weight!r} is not a number") from None
        if mix[kind] < 0:
            raise ValueError(f"mix entry {part!r}: weights must not be negative")
    if sum(mix.values()) <= 0:
        raise ValueError(f"mix {text!r} has no positive weight")
    return mix


@dataclass
class Report:
    """What one worker did: acked requests and errors by kind, and the read-back check."""

    agent_id: str
    workload: str
    ops: dict[str, int] = field(default_factory=dict)
    errors: int = 0
    error_kinds: dict[str, int] = field(default_factory=dict)
    created: int = 0  # learnings acked as new (the rest were reinforced duplicates)
    attributions: int = 0
    mismatches: int = 0
    verified: int = 0
    unverified: int = 0  # acked but not read back: the read-back was cut short (a second signal, the time to
    # finish ran out, the coordinator silent a whole deadline); `unverified_why` says which
    unverified_why: str = ""
    restarts: int = 0  # how often the coordinator forgot this agent (it said hello again)
    elapsed_s: float = 0.0  # the workload itself
    verify_s: float = 0.0  # reading back everything acked, after the workload
    error_samples: list[str] = field(default_factory=list)
    sessions: list[dict[str, Any]] = field(default_factory=list)  # a real agent's tasks (agents.agentwork.Session)

    def ok(self, kind: str) -> None:
        """Count one acked request of `kind`."""
        self.ops[kind] = self.ops.get(kind, 0) + 1

    def error(self, kind: str, exc: Exception) -> None:
        """Count an error, keeping the first few messages."""
        self.errors += 1
        self.error_kinds[kind] = self.error_kinds.get(kind, 0) + 1
        if len(self.error_samples) < 5:
            self.error_samples.append(f"{kind}: {exc}")


@dataclass
class Evidence:
    """What the coordinator acked, for loss checks: learnings (id -> description) and usage increments."""

    written: dict[str, str] = field(default_factory=dict)
    injected: dict[str, int] = field(default_factory=dict)  # learning id -> acked times_injected increments
    latencies: dict[str, list[float]] = field(default_factory=dict)  # kind -> seconds

    def latency(self, kind: str, seconds: float) -> None:
        """Keep one acked request's latency."""
        self.latencies.setdefault(kind, []).append(seconds)

    def count_injected(self, ids: list[str]) -> None:
        """The coordinator acked one more injection (or unattached attribution) of each of `ids`."""
        for lid in ids:
            self.injected[lid] = self.injected.get(lid, 0) + 1


class Workload:
    """One workload's state while it runs; `more(done)` says whether to go on."""

    def __init__(
        self, client: GrooveClient, report: Report, seed: int, more: Callable[[int], bool], agent_id: str
    ) -> None:
        self.client = client
        self.report = report
        self.seed = seed
        self.rng = random.Random(seed)
        self.more = more
        self.agent_id = agent_id
        self.evidence = Evidence()

    def _done(self) -> int:
        return sum(self.report.ops.values()) + self.report.errors

    def run(self) -> None:
        """Make requests until `more` says stop."""
        raise NotImplementedError

    def _read_back(
        self, calls: list[tuple[str, dict[str, Any]]], stopping: Callable[[], bool]
    ) -> Iterator[tuple[int, dict[str, Any]]]:
        """The read-back's requests, 16 in flight, in chunks until done or `stopping()` (a second signal):
        (index, reply body) for each answered one; each error counts as a verify error. Cut short, what was not
        read back is counted in `report.unverified`, with why."""
        for at in range(0, len(calls), _READ_BACK_CHUNK):
            if stopping():
                self._unverified(len(calls) - at, "stopped before the read-back ended (a second signal)")
                return
            if self.client.transport.silence.absent:  # silent a whole deadline already: each chunk would wait one more
                self._unverified(len(calls) - at, "the coordinator said nothing for a whole deadline")
                return
            for index, result in enumerate(self.client.call_many(calls[at : at + _READ_BACK_CHUNK], 16), at):
                if isinstance(result.error, CoordinatorAbsent | Stopped):
                    self._unverified(1, str(result.error))
                elif result.error is not None:
                    self.report.error("verify", result.error)
                else:
                    assert result.body is not None
                    yield index, result.body

    def _unverified(self, count: int, why: str) -> None:
        if count > 0:
            self.report.unverified += count
            self.report.unverified_why = self.report.unverified_why or why


class Synthetic(Workload):
    """The seeded learn / outcome / search / inject mix over the bundled corpus."""

    def __init__(
        self,
        *args: Any,
        mix: dict[str, float],
        in_flight: int,
        rate: float | None,
        projects: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.corpus = load() if projects is None else load().only(projects)
        self.kinds, self.weights = zip(*mix.items(), strict=True)
        self.in_flight = in_flight
        self.rate = rate
        # kinds come from their own generator, so a learn-only mix writes exactly corpus.learning's sequence
        self.kind_rng = random.Random(f"kinds:{self.seed}")
        self.open_injections: deque[tuple[str, list[str]]] = deque(maxlen=64)
        self.sessions = itertools.count()

    def run(self) -> None:
        """Requests until the limits run out."""
        began = time.monotonic()
        chunk = 1 if self.rate else self.in_flight * 2  # the limits are checked between chunks
        while self.more(done := self._done()):
            if self.rate:
                time.sleep(max(0.0, began + done / self.rate - time.monotonic()))
            planned = [self._plan(kind) for kind in self.kind_rng.choices(self.kinds, self.weights, k=chunk)]
            calls = [(OPS[kind], body) for kind, body, _ in planned]
            for (kind, body, then), result in zip(planned, self.client.call_many(calls, self.in_flight), strict=True):
                self._settle(kind, body, then, result)

    def _plan(self, kind: str) -> tuple[str, dict[str, Any], Any]:
        """(kind, request body, what to remember for when it is acked)."""
        rng = self.rng
        if kind == OUTCOME and self.open_injections:
            injection_id, ids = self.open_injections.popleft()
            attributed = rng.sample(ids, k=rng.randint(0, len(ids)))
            attributions = [{"learning_id": lid, "outcome": self._outcome()} for lid in attributed]
            body = {"injection_id": injection_id, "success": rng.random() < 0.7, "attributions": attributions}
            return kind, body, []  # the injection already counted these learnings as injected
        if kind == OUTCOME and self.evidence.written:
            ids = rng.sample(list(self.evidence.written), k=min(3, len(self.evidence.written)))
            attributions = [{"learning_id": lid, "outcome": self._outcome()} for lid in ids]
            return kind, {"attributions": attributions, "session_id": f"{self.agent_id}-{next(self.sessions)}"}, ids
        if kind == SEARCH:
            project = rng.choice(self.corpus.projects)
            context = {"project": self.corpus.project_root(project)}
            return kind, {"text": self.corpus.query(rng), "limit": 10, "context": context}, None
        if kind == INJECT:
            project, task = self.corpus.task(rng)
            context = {"project": self.corpus.project_root(project)}
            body = {"session_id": f"{self.agent_id}-{next(self.sessions)}", "task": task, "context": context}
            return kind, body, None
        learning = self.corpus.learning(rng, noted_by=self.agent_id)
        return LEARN, {"learnings": [learning]}, learning["description"]

    def _outcome(self) -> str:
        return self.rng.choices([o for o, _ in _OUTCOME_WEIGHTS], [w for _, w in _OUTCOME_WEIGHTS])[0]

    def _settle(self, kind: str, body: dict[str, Any], then: Any, result: Result) -> None:
        report, evidence = self.report, self.evidence
        if result.error is not None:
            report.error(kind, result.error)
            return
        assert result.body is not None
        report.ok(kind)
        evidence.latency(kind, result.latency_s)
        if kind == LEARN:
            lid = result.body["ids"][0]
            evidence.written[lid] = then
            report.created += bool(result.body["created"][0])
        elif kind == OUTCOME:
            report.attributions += result.body["applied"]
            evidence.count_injected(then)
        elif kind == INJECT:
            ids = [x["learning"]["id"] for x in result.body["learnings"]]
            evidence.count_injected(ids)
            if ids:
                self.open_injections.append((result.body["injection_id"], ids))

    def verify(self, stopping: Callable[[], bool]) -> None:
        """Read back every learning acked, checking its content, in chunks until done or `stopping()`."""
        report, started = self.report, time.monotonic()
        written = list(self.evidence.written.items())
        for index, body in self._read_back([(C.OP_LEARNING_GET, {"id": lid}) for lid, _ in written], stopping):
            if body["learning"]["description"] == written[index][1]:
                report.verified += 1
            else:
                report.mismatches += 1
        report.verify_s = time.monotonic() - started


class VectorSearch(Workload):
    """Vector searches with random unit query vectors, `in_flight` at a time."""

    def __init__(self, *args: Any, in_flight: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.in_flight = in_flight

    def run(self) -> None:
        """Searches until the limits run out."""
        # drawn up front: making 384 Gaussians per query in Python would cost this process more than the search
        queries = itertools.cycle([self._random_unit() for _ in range(256)])
        while self.more(self._done()):
            calls = [(C.OP_SEARCH, {"vector": next(queries), "limit": 10}) for _ in range(self.in_flight * 8)]
            for result in self.client.call_many(calls, window=self.in_flight):
                if result.error is not None:
                    self.report.error(SEARCH, result.error)
                else:
                    self.report.ok(SEARCH)
                    self.evidence.latency(SEARCH, result.latency_s)

    def _random_unit(self) -> list[float]:
        v = [self.rng.gauss(0.0, 1.0) for _ in range(C.EMBEDDING_DIM)]
        norm = sum(x * x for x in v) ** 0.5
        return [x / norm for x in v]


class Script(Workload):
    """Requests read from a JSON-lines file, one at a time, in order."""

    def __init__(self, *args: Any, path: Path, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.steps = parse_script(path)

    def run(self) -> None:
        """Each step once, in order, until the limits run out."""
        for step in self.steps:
            if not self.more(self._done()):
                return
            if "sleep" in step:
                time.sleep(step["sleep"])
                continue
            op, expect = step["op"], step.get("expect", "ok")
            result = self.client.call_many([(op, step.get("body", {}))], window=1)[0]
            got = "ok" if result.error is None else _code(result.error)
            if result.error is None:
                self.report.ok(op)
                self.evidence.latency(op, result.latency_s)
                if op == C.OP_LEARNING_PUT and result.body is not None:
                    self.report.created += sum(result.body["created"])
            elif expect == "ok":
                self.report.error(op, result.error)
            if got != expect:
                self.report.mismatches += 1
                if len(self.report.error_samples) < 5:
                    self.report.error_samples.append(f"{op}: expected {expect}, got {got}")


def _code(error: GrooveError) -> str:
    return error.code if isinstance(error, RemoteError) else "timeout"


def parse_script(path: Path) -> list[dict[str, Any]]:
    """The steps of a JSON-lines script; raises ValueError naming the line at fault."""
    steps = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            step = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{number}: not JSON ({exc.msg})") from None
        if not isinstance(step, dict):
            raise ValueError(f"{path}:{number}: expected an object, got {type(step).__name__}")
        if "sleep" in step:
            if not isinstance(step["sleep"], int | float) or step["sleep"] < 0 or set(step) != {"sleep"}:
                raise ValueError(f'{path}:{number}: a sleep step is {{"sleep": seconds}}')
        elif not isinstance(step.get("op"), str) or not isinstance(step.get("body", {}), dict):
            raise ValueError(f'{path}:{number}: expected {{"op": name, "body": {{...}}}} or {{"sleep": s}}')
        elif set(step) - {"op", "body", "expect"}:
            raise ValueError(
                f"{path}:{number}: unknown key(s) {', '.join(sorted(set(step) - {'op', 'body', 'expect'}))}"
            )
        steps.append(step)
    return steps
