"""A region process's physical clock with the simulator's skew models (sim.clock.SimClock), on real time.

`wall_time()` = `time.time() + offset(t)`, t the unskewed monotonic time; the offset is a constant (`offset_s`, the
topology's `clock_offset_ms` is the baseline `heal` restores), plus a linear drift in ppm since it was set, plus a
strobe flapping between +0 and +delta every period. `bump` jumps the constant. `monotonic()` is never skewed:
timeouts and metrics use it. Only the HLC and TTL read `wall_time()`, so clock faults move stamps and expiry only.
Same rules as SimClock: changing the drift folds what accrued into the constant, so only offset/bump/strobe jump.
"""

from __future__ import annotations

import time


class SkewedClock:
    def __init__(self, offset_s: float = 0.0) -> None:
        self.baseline_offset_s = offset_s
        self.heal()

    def monotonic(self) -> float:
        return time.monotonic()

    def wall_time(self) -> float:
        return time.time() + self.offset_at(time.monotonic())

    def offset_at(self, now: float) -> float:
        offset = self.offset_s
        if self.drift_ppm:
            offset += (now - self.drift_since) * self.drift_ppm * 1e-6
        if self.strobe_delta_s and int((now - self.strobe_since) / self.strobe_period_s) & 1:
            offset += self.strobe_delta_s
        return offset

    def set_offset(self, offset_s: float) -> None:
        self._fold_drift()
        self.offset_s = offset_s

    def bump(self, delta_s: float) -> None:
        self.offset_s += delta_s

    def set_drift(self, ppm: float) -> None:
        self._fold_drift()
        self.drift_ppm = ppm

    def strobe(self, delta_s: float, period_s: float) -> None:
        if period_s <= 0:
            raise ValueError("strobe period must be positive")
        self.strobe_delta_s = delta_s
        self.strobe_period_s = period_s
        self.strobe_since = time.monotonic()

    def heal(self) -> None:
        self.offset_s = self.baseline_offset_s
        self.drift_ppm = 0.0
        self.drift_since = time.monotonic()
        self.strobe_delta_s = 0.0
        self.strobe_period_s = 1.0
        self.strobe_since = 0.0

    def _fold_drift(self) -> None:
        now = time.monotonic()
        if self.drift_ppm:
            self.offset_s += (now - self.drift_since) * self.drift_ppm * 1e-6
        self.drift_since = now

    def status(self) -> dict[str, float]:
        return {
            "offset_ms": round(self.offset_at(time.monotonic()) * 1000.0, 3),
            "drift_ppm": self.drift_ppm,
            "strobe_delta_ms": self.strobe_delta_s * 1000.0,
            "strobe_period_ms": self.strobe_period_s * 1000.0,
        }
