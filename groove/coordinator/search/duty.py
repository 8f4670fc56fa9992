"""How much of the time the embedding workers may spend on the backlog: all of it, or a tenth while clients write
on a machine with no core to spare.

On a machine with a core or more idle, the backlog runs flat out beside the writes (16 cores: the writes 1.04 x
with the embedder on). On 2 vCPUs it cannot: every time one of the coordinator's or the agents' threads wakes, it
must first take the core back from the worker, and their caches come back cold. Measured (`benchmarks.load
--agents 16 --in-flight 4 --duration 15 --peers ""`, 2 vCPUs, one sitting): with MiniLM on, 0.71-0.76 x the writes
and p99 1.4-1.6 x; an idle-class busy loop beside the same load, 0.90 x and p99 2 x; the workers stopped nine
tenths of each 3 s (SIGSTOP), 0.96-1.01 x and p99 1.07-1.15 x. A lower scheduling class does not do it; rests do.

So the pool watches the machine: while clients write (the writer's busy signal) and the machine, apart from the
workers, leaves less than `SPARE_CORES` idle, it tells the workers to run at `BUSY_DUTY`, as long as the oldest text
waiting has waited less than `LAG_BOUND_S`; past that the backlog runs flat out until it is back under. Each
worker's bulk thread then rests before each forward pass for nine times as long as the previous one took, up to
`MAX_REST_S`. The backlog still moves (a tenth of the time, more where a pass takes over a second), and runs flat
out again once the writes stop, cores come free, or its oldest text has waited `LAG_BOUND_S`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping

import psutil

BUSY_DUTY = 0.1  # the share of the time the backlog gets while clients write on a machine with no core spare
# The oldest text's wait past which the backlog runs flat out however busy the machine: without it, a steady
# write rate below the model's capacity left learnings unfindable by meaning for as long as the load lasted
# (a 20-minute soak at about 50 learnings/s, 2 vCPUs: the oldest had waited 838 s, the backlog 35,647).
LAG_BOUND_S = 5.0
# Past this wait with the backlog flat out, learnings arrive faster than the model embeds them: `stats` says so.
OVER_CAPACITY_S = 4 * LAG_BOUND_S
SPARE_CORES = 1.0  # cores idle beside the workers: with at least this many, the backlog runs flat out
SAMPLE_S = 1.0  # how often the pool looks at the machine's CPU
MAX_REST_S = 10.0  # the longest rest before a forward pass (64 texts: 0.4 s on 2 idle vCPUs, seconds beside a flood)


def duty_for(busy: bool, spare: float, oldest_s: float = 0.0) -> float:
    """The bulk duty for the writer's busy signal, the cores the machine leaves idle beside the workers, and how
    long the oldest text has waited for its embedding."""
    if oldest_s > LAG_BOUND_S:
        return 1.0
    return BUSY_DUTY if busy and spare < SPARE_CORES else 1.0


def machine_busy_s() -> float:
    """The machine's CPU seconds not idle, over all cores since boot (time stolen by a hypervisor counts as busy:
    it was not ours to use)."""
    t = psutil.cpu_times()
    return sum(getattr(t, name, 0.0) for name in ("user", "nice", "system", "irq", "softirq", "steal"))


def processes_s(pids: Iterable[int]) -> dict[int, float]:
    """CPU seconds (user and system) of each of these processes still running, by pid."""
    out: dict[int, float] = {}
    for pid in pids:
        try:
            t = psutil.Process(pid).cpu_times()
        except psutil.Error:  # gone since: left out, as `SpareCores.update` expects
            continue
        out[pid] = t.user + t.system
    return out


class SpareCores:
    """The cores the machine leaves idle apart from the embedding workers, from two samples of CPU time."""

    def __init__(self, cores: int) -> None:
        self.cores = cores
        self.spare = float(cores)  # until two samples say otherwise
        self._last: tuple[float, float, dict[int, float]] | None = None

    def update(self, now: float, machine_busy_s: float, workers_s: Mapping[int, float]) -> float:
        """Take a sample: `machine_busy_s` the machine's CPU seconds not idle (all cores, since boot), `workers_s`
        each worker's CPU seconds by pid. A worker seen in only one of the two samples (started or gone between
        them) is left out of both, so a restart never reads as a burst of work."""
        if self._last is not None and now > self._last[0]:
            then, busy_then, workers_then = self._last
            theirs = sum(s - workers_then[pid] for pid, s in workers_s.items() if pid in workers_then)
            others = max(0.0, machine_busy_s - busy_then - max(0.0, theirs)) / (now - then)
            self.spare = max(0.0, self.cores - others)
        self._last = (now, machine_busy_s, dict(workers_s))
        return self.spare

    def sample(self, now: float, workers: Iterable[int]) -> float:
        """`update` from this machine's counters, the workers given by pid."""
        return self.update(now, machine_busy_s(), processes_s(workers))


class Pace:
    """The bulk thread's side: a rest before each forward pass, so that passes take `duty` of the time."""

    def __init__(self) -> None:
        self.duty = 1.0
        self._owed = 0.0
        self._changes = 0
        self._changed = threading.Condition()

    def set(self, duty: float) -> None:
        """A new duty (from the pool's message): a rest in progress ends at once."""
        with self._changed:
            self.duty = min(1.0, max(BUSY_DUTY / 10, duty))
            self._changes += 1
            self._changed.notify_all()

    def ran(self, seconds: float) -> None:
        """A forward pass took `seconds`: the rest owed before the next one."""
        self._owed = seconds * (1.0 / self.duty - 1.0)

    def rest(self) -> float:
        """Rest what the last pass left owed (at most MAX_REST_S; less if the duty changes meanwhile); the seconds
        it was meant to be."""
        owed, self._owed = min(self._owed, MAX_REST_S), 0.0
        if owed > 0.0:
            with self._changed:
                changes = self._changes
                self._changed.wait_for(lambda: self._changes != changes, owed)
        return owed
