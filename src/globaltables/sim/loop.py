"""A discrete-event scheduler: virtual time that jumps from one event to the next.

Theory of operation: events sit in a binary heap ordered by (time, seq). `seq` is one global counter, so events due
at the same instant run in the order they were scheduled — ties never depend on hashing, object ids or the heap's
internal layout. Running an event advances `now_us` to its time and calls it; whatever it schedules joins the heap.

Rules:
1. Time is an integer count of microseconds (`now_us`), so equal delays give equal times exactly and traces print
   without floating-point noise. The seconds-based methods (`time`, `call_later`, `call_at`, `run_until`) mirror
   asyncio's names and convert at the edge.
2. Time never goes back: scheduling in the past runs the event "now" (after everything already due now).
3. Every loop and queue is bounded: `max_pending` caps the heap and `run_until_idle(max_events)` caps a run; hitting
   a bound raises, because an unbounded simulation is a bug (a retry storm, a timer that re-arms itself at once).
4. Exceptions from callbacks propagate to whoever is running the loop; nothing is swallowed.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any

MICROSECONDS_PER_SECOND = 1_000_000


def to_us(seconds: float) -> int:
    return round(seconds * MICROSECONDS_PER_SECOND)


class SchedulerBoundExceeded(RuntimeError):
    """The simulation exceeded one of its explicit bounds (pending events or events per run)."""


class Scheduler:
    """Runs callbacks in virtual time. Handles returned by `call_*` can be passed to `cancel`."""

    def __init__(self, max_pending: int = 5_000_000) -> None:
        # Heap entries are lists [when_us, seq, callback, args]: comparing lists compares (when, seq), which are
        # unique, so callbacks are never compared; cancelling sets the callback slot to None in place.
        self._heap: list[list[Any]] = []
        self._seq = 0
        self.now_us = 0
        self.max_pending = max_pending
        self.events_run = 0

    # -- time ---------------------------------------------------------------------------------------------------

    def time(self) -> float:
        """Virtual seconds since the simulation started."""
        return self.now_us / MICROSECONDS_PER_SECOND

    # -- scheduling ---------------------------------------------------------------------------------------------

    def call_at_us(self, when_us: int, callback: Callable[..., Any], *args: Any) -> list[Any]:
        when_us = max(when_us, self.now_us)
        heap = self._heap
        if len(heap) >= self.max_pending:
            raise SchedulerBoundExceeded(f"more than {self.max_pending} pending events")
        self._seq += 1
        entry = [when_us, self._seq, callback, args]
        heapq.heappush(heap, entry)
        return entry

    def call_at(self, when: float, callback: Callable[..., Any], *args: Any) -> list[Any]:
        return self.call_at_us(to_us(when), callback, *args)

    def call_later(self, delay: float, callback: Callable[..., Any], *args: Any) -> list[Any]:
        return self.call_at_us(self.now_us + to_us(delay), callback, *args)

    def call_soon(self, callback: Callable[..., Any], *args: Any) -> list[Any]:
        return self.call_at_us(self.now_us, callback, *args)

    @staticmethod
    def cancel(handle: list[Any]) -> None:
        """Forget a scheduled event; cancelling twice or after it ran is harmless."""
        handle[2] = None

    # -- running ------------------------------------------------------------------------------------------------

    def pending(self) -> int:
        """Events still queued (cancelled ones included until they surface)."""
        return len(self._heap)

    def next_event_us(self) -> int | None:
        return self._heap[0][0] if self._heap else None

    def run_until_us(self, when_us: int, max_events: int | None = None) -> int:
        """Run every event due at or before `when_us`, then set the clock to `when_us`. Returns events run."""
        heap = self._heap
        pop = heapq.heappop
        ran = 0
        limit = max_events if max_events is not None else -1
        while heap and heap[0][0] <= when_us:
            if ran == limit:
                raise SchedulerBoundExceeded(f"more than {max_events} events before t={when_us}us")
            entry = pop(heap)
            callback = entry[2]
            if callback is None:
                continue
            self.now_us = entry[0]
            ran += 1
            callback(*entry[3])
        self.now_us = max(self.now_us, when_us)
        self.events_run += ran
        return ran

    def run_until(self, when: float, max_events: int | None = None) -> int:
        return self.run_until_us(to_us(when), max_events)

    def run_for(self, duration: float, max_events: int | None = None) -> int:
        return self.run_until_us(self.now_us + to_us(duration), max_events)

    def run_until_idle(self, max_events: int = 10_000_000) -> int:
        """Run until nothing is scheduled; raises SchedulerBoundExceeded after `max_events` (a livelock)."""
        heap = self._heap
        pop = heapq.heappop
        ran = 0
        while heap:
            entry = pop(heap)
            callback = entry[2]
            if callback is None:
                continue
            if ran == max_events:
                heapq.heappush(heap, entry)
                self.events_run += ran
                raise SchedulerBoundExceeded(f"still busy after {max_events} events (t={self.now_us}us)")
            self.now_us = entry[0]
            ran += 1
            callback(*entry[3])
        self.events_run += ran
        return ran

    def step(self) -> bool:
        """Run the next live event, if any; True when one ran."""
        heap = self._heap
        while heap:
            entry = heapq.heappop(heap)
            if entry[2] is None:
                continue
            self.now_us = entry[0]
            self.events_run += 1
            entry[2](*entry[3])
            return True
        return False
