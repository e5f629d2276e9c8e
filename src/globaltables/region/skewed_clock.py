"""A region process's physical clock, on real time, with the simulator's skew models (runtime/clock_skew.py).

`wall_time()` = `time.time() + offset(t)`, t the unskewed monotonic time. `monotonic()` is never skewed: timeouts and
metrics use it. Only the HLC and TTL read `wall_time()`, so clock faults move stamps and expiry only.
"""

from __future__ import annotations

import time

from ..runtime.clock_skew import ClockSkew


class SkewedClock(ClockSkew):
    # The machine's monotonic clock itself, not a method around it: the throughput model reads it per request.
    monotonic = staticmethod(time.monotonic)

    def wall_time(self) -> float:
        return time.time() + self.offset_at(time.monotonic())
