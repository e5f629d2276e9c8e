"""Virtual clocks per region, with the skew models an HLC must survive (runtime/clock_skew.py).

Every region reads the one `Scheduler`'s virtual time. `monotonic()` is that time, unskewed, identical in every
region (timeouts and metrics use it, so clock faults never distort them). `wall_time()` is
`epoch + monotonic + offset(t)`; the offset models (constant, drift, bump, strobe) and their rules are ClockSkew's.
"""

from __future__ import annotations

from ..runtime.clock_skew import ClockSkew
from .loop import MICROSECONDS_PER_SECOND, Scheduler

DEFAULT_EPOCH = 1_700_000_000.0


class SimClock(ClockSkew):
    """One region's clock over a shared Scheduler; implements `globaltables.runtime.clock.Clock`."""

    def __init__(self, scheduler: Scheduler, *, epoch: float = DEFAULT_EPOCH, offset_s: float = 0.0) -> None:
        self._scheduler = scheduler
        self.epoch = epoch
        super().__init__(offset_s)

    def monotonic(self) -> float:
        return self._scheduler.now_us / MICROSECONDS_PER_SECOND

    def wall_time(self) -> float:
        now = self._scheduler.now_us / MICROSECONDS_PER_SECOND
        return self.epoch + now + self.offset_at(now)
