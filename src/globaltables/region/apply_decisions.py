"""What this region decided about every replicated write it was shipped: applied, or lost to a newer version.

The engine's replica port tells the host of each decision after its transaction committed (engine/replica.py, rule
4); this log times them on the machine's monotonic clock, unskewed — the clock the experiment's history records on,
so a decision can be placed among the client operations. Local writes stamped behind the stored version under
`conflict_clock: wall` are decisions too (origin = this region, lost). `GET /control/apply-decisions` serves the
log; `globaltables run` reads it from every region after the load and builds the lost-write ledger from it and the
history (experiment/ledger.py).

Rules: the log lives in memory and starts empty with the process, like the receiver's counters it agrees with
(`received.applied_records - received.won` = the lost entries from other regions); it keeps at most `capacity`
entries and counts the ones it had to drop, so a reader knows when it is incomplete.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

DEFAULT_CAPACITY = 500_000


class ApplyDecisions:
    __slots__ = ("_now", "capacity", "dropped", "entries")

    def __init__(self, capacity: int = DEFAULT_CAPACITY, now: Callable[[], float] = time.monotonic) -> None:
        self.capacity = capacity
        self._now = now
        self.entries: list[tuple[float, str, str, dict, str, str | None]] = []
        self.dropped = 0

    def record(self, origin: str, table: str, decisions: list[tuple[dict, str, str | None]]) -> None:
        """The decisions of one commit ((key, version, lost_to) each, engine/replica.py `DecisionObserver`), timed
        together: they were told at the same instant, once their transaction committed."""
        room = self.capacity - len(self.entries)
        if len(decisions) > room:
            self.dropped += len(decisions) - max(room, 0)
            decisions = decisions[: max(room, 0)]
        if decisions:
            at = self._now()
            self.entries += [(at, origin, table, key, version, lost_to) for key, version, lost_to in decisions]

    def to_dict(self, region: str) -> dict[str, Any]:
        return {
            "region": region,
            "dropped": self.dropped,
            "decisions": [
                {"at_mono": at, "origin": origin, "table": table, "key": key, "version": version, "lost_to": lost_to}
                for at, origin, table, key, version, lost_to in self.entries
            ],
        }
