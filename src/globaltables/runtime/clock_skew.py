"""The clock faults an HLC must survive, as one model shared by the simulator's clocks and a region process's clock
(after TigerBeetle's simulated `Time`).

Theory of operation: a wall clock reads true time plus `offset_at(t)`, where t is the unskewed monotonic time and the
offset is the sum of:
  - a constant offset (`set_offset`; the topology's `clock_offset_ms` is the baseline restored by `heal`),
  - a linear drift in parts per million since it started (`set_drift`),
  - bumps: sudden jumps forward or back (`bump`), folded into the constant offset,
  - a strobe: flapping between +0 and +`delta` every `period` (`strobe`, as Jepsen's strobe-time nemesis).
The wall clock may therefore go backwards; only the monotonic clock promises not to, and timeouts and metrics read
that one, so clock faults never distort them.

Rules:
1. Changing a model never makes the wall clock jump by itself: `set_drift` first folds the drift accumulated so far
   into the constant offset. Only `set_offset`, `bump` and `strobe` jump, because that is their point.
2. `heal()` restores the baseline exactly (baseline offset, no drift, no strobe).
3. Strobe phases are counted in integer microseconds: float division at exact period boundaries,
   (20.2 - 20.0) / 0.1 = 1.999..., would flip a phase early or late.
"""

from __future__ import annotations

MICROSECONDS_PER_SECOND = 1_000_000


class ClockSkew:
    """The skew of one region's wall clock. Subclasses say what "now" is (`monotonic`, in seconds)."""

    def __init__(self, offset_s: float = 0.0) -> None:
        self.baseline_offset_s = offset_s
        self.heal()

    def monotonic(self) -> float:
        raise NotImplementedError

    def offset_at(self, now: float) -> float:
        """Seconds the wall clock is ahead of true time at monotonic time `now`."""
        offset = self.offset_s
        if self.drift_ppm:
            offset += (now - self.drift_since) * self.drift_ppm * 1e-6
        if self.strobe_delta_s:
            phase = (round(now * MICROSECONDS_PER_SECOND) - self.strobe_since_us) // self.strobe_period_us
            if phase & 1:
                offset += self.strobe_delta_s
        return offset

    def set_offset(self, offset_s: float) -> None:
        """Jump to a fixed offset from true time (drift keeps accruing from here if set)."""
        self._fold_drift()
        self.offset_s = offset_s

    def bump(self, delta_s: float) -> None:
        """A sudden jump of the wall clock by `delta_s` (negative: backwards)."""
        self.offset_s += delta_s

    def set_drift(self, ppm: float) -> None:
        """Run fast (positive) or slow (negative) by `ppm` parts per million from now on."""
        self._fold_drift()
        self.drift_ppm = ppm

    def strobe(self, delta_s: float, period_s: float) -> None:
        """Flap between the current offset and `delta_s` ahead of it, switching every `period_s`."""
        if period_s <= 0:
            raise ValueError("strobe period must be positive")
        self.strobe_delta_s = delta_s
        self.strobe_period_us = max(1, round(period_s * MICROSECONDS_PER_SECOND))
        self.strobe_since_us = round(self.monotonic() * MICROSECONDS_PER_SECOND)

    def stop_strobe(self) -> None:
        self.strobe_delta_s = 0.0

    def heal(self) -> None:
        """Back to the baseline offset, with no drift and no strobe."""
        self.offset_s = self.baseline_offset_s
        self.drift_ppm = 0.0
        self.drift_since = self.monotonic()
        self.strobe_delta_s = 0.0
        self.strobe_period_us = MICROSECONDS_PER_SECOND
        self.strobe_since_us = 0

    def _fold_drift(self) -> None:
        now = self.monotonic()
        if self.drift_ppm:
            self.offset_s += (now - self.drift_since) * self.drift_ppm * 1e-6
        self.drift_since = now

    def status(self) -> dict[str, float]:
        return {
            "offset_ms": round(self.offset_at(self.monotonic()) * 1000.0, 3),
            "drift_ppm": self.drift_ppm,
            "strobe_delta_ms": self.strobe_delta_s * 1000.0,
            "strobe_period_ms": self.strobe_period_us / 1000.0,
        }
