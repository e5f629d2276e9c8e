"""Faults on one outbound replication link of a region process: what `HttpTransport.send` does to each envelope.

Theory of operation: the transport asks `LinkFaultState.fate(size)` once per logical message (replication batches
and acks alike) before queueing it. The answer is `None` (lost) or a list of (extra delay seconds, in_lane_order)
copies: one normally, two when duplicated. The vocabulary is the simulator's (`sim.network.LinkSettings`), so one
chaos schedule means the same thing on either target:
- delay extra over the link's latency floor, from `distribution` with scale `jitter_ms`: constant, uniform U(0, j),
  normal |N(0, j)|, exponential (mean j), pareto j * (Pareto(alpha) - 1);
- `loss`: the long-run fraction of messages lost. `loss_burst` > 1 makes losses bursty (Gilbert-Elliott: a bad state
  that loses everything, left with probability 1 / loss_burst, entered so that the long-run rate stays `loss`);
- `duplicate`: probability of a second copy, with its own delay and outside the lane order;
- `reorder`: probability the message is held back `reorder_ms` outside the lane order, so later ones overtake it;
- `bandwidth_kbps`: kilobytes per second the link can carry; a message waits for the ones before it to be
  "transmitted" (size / bandwidth each), so a backlog builds under load;
- `stalled` (handled by the transport's writer): nothing is written while set; envelopes queue and drain on resume.
Randomness comes from the injected `random.Random`; time from the caller (the unskewed monotonic clock).
"""

from __future__ import annotations

import dataclasses
import math
import random
from typing import Any

from ..runtime.bursty_loss import lose

DISTRIBUTIONS = ("constant", "uniform", "normal", "exponential", "pareto")
FIELDS = (
    "distribution", "pareto_alpha", "loss", "loss_burst", "duplicate", "reorder", "reorder_ms", "bandwidth_kbps",
    "stalled",
)  # fmt: skip


@dataclasses.dataclass(frozen=True)
class LinkFault:
    distribution: str = "uniform"
    pareto_alpha: float = 2.0
    loss: float = 0.0
    loss_burst: float = 1.0
    duplicate: float = 0.0
    reorder: float = 0.0
    reorder_ms: float = 0.0
    bandwidth_kbps: float = 0.0  # 0: unlimited
    stalled: bool = False

    def __post_init__(self) -> None:
        if self.distribution not in DISTRIBUTIONS:
            raise ValueError(f"distribution: {self.distribution!r} is not one of {', '.join(DISTRIBUTIONS)}")
        for name in ("loss", "duplicate", "reorder"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and 0.0 <= value <= 1.0):
                raise ValueError(f"{name}: must be a probability in [0, 1], got {value!r}")
        for name in ("reorder_ms", "bandwidth_kbps"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise ValueError(f"{name}: must be a number >= 0, got {value!r}")
        if not (isinstance(self.loss_burst, (int, float)) and self.loss_burst >= 1):
            raise ValueError(f"loss_burst: must be >= 1 (mean burst length in messages), got {self.loss_burst!r}")
        if self.loss >= 1.0 and self.loss_burst > 1:
            raise ValueError("loss_burst: a loss of 1 is not bursty")
        if not (isinstance(self.pareto_alpha, (int, float)) and self.pareto_alpha > 0):
            raise ValueError(f"pareto_alpha: must be > 0, got {self.pareto_alpha!r}")
        if not isinstance(self.stalled, bool):
            raise ValueError(f"stalled: expected true or false, got {self.stalled!r}")  # noqa: TRY004

    @classmethod
    def from_dict(cls, fields: dict[str, Any], what: str = "link") -> LinkFault:
        unknown = sorted(set(fields) - set(FIELDS))
        if unknown:
            raise ValueError(f"{what}: unknown field(s) {', '.join(unknown)}; use {', '.join(FIELDS)}")
        try:
            return cls(**fields)
        except (TypeError, ValueError) as error:
            raise ValueError(f"{what}.{error}") from None

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


NO_FAULT = LinkFault()


class LinkFaultState:
    """A link's fault settings plus what they remember between messages (burst state, transmission queue)."""

    __slots__ = ("bad", "busy_until", "duplicated", "fault", "lost", "reordered", "rng")

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.fault = NO_FAULT
        self.bad = False
        self.busy_until = 0.0
        self.lost = 0
        self.duplicated = 0
        self.reordered = 0

    def set(self, fault: LinkFault) -> None:
        self.fault = fault
        self.bad = False
        self.busy_until = 0.0

    def extra_s(self, jitter_ms: float) -> float:
        fault, rng = self.fault, self.rng
        if not jitter_ms or fault.distribution == "constant":
            return 0.0
        if fault.distribution == "uniform":
            extra = rng.uniform(0.0, jitter_ms)
        elif fault.distribution == "exponential":
            extra = rng.expovariate(1.0 / jitter_ms)
        elif fault.distribution == "normal":
            extra = abs(rng.normalvariate(0.0, jitter_ms))
        else:
            extra = jitter_ms * (rng.paretovariate(fault.pareto_alpha) - 1.0)
        return extra / 1000.0

    def lose(self) -> bool:
        lost, self.bad = lose(self.rng, self.fault.loss, self.fault.loss_burst, self.bad)
        return lost

    def transmission_s(self, now: float, size: int) -> float:
        """Seconds until a message of `size` bytes queued at `now` has gone through the bandwidth cap."""
        bandwidth = self.fault.bandwidth_kbps
        if not bandwidth:
            return 0.0
        start = max(now, self.busy_until)
        self.busy_until = start + size / (bandwidth * 1000.0)
        return self.busy_until - now
