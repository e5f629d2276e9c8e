"""Clocks are injected, never read globally, so the same code runs on real and simulated time."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def wall_time(self) -> float:
        """Seconds since the Unix epoch, as this region believes it (may be skewed on purpose)."""

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back; used for timeouts and measurements."""


class SystemClock:
    """The machine's clocks, optionally offset (a skewed region's wall clock)."""

    def __init__(self, offset_s: float = 0.0) -> None:
        self.offset_s = offset_s

    def wall_time(self) -> float:
        return time.time() + self.offset_s

    # The machine's monotonic clock itself, not a method around it: the throughput model reads it per request.
    monotonic = staticmethod(time.monotonic)


class ManualClock:
    """A clock that moves only when told to; for tests and the simulator."""

    def __init__(self, wall_time: float = 1_700_000_000.0, monotonic: float = 0.0) -> None:
        self._wall = wall_time
        self._mono = monotonic

    def wall_time(self) -> float:
        return self._wall

    def monotonic(self) -> float:
        return self._mono

    def advance(self, seconds: float) -> None:
        self._wall += seconds
        self._mono += seconds
