"""Faults on one outbound replication link of a region process: what `HttpTransport.send` does to each envelope.

Theory of operation: the transport keeps one `LinkFaultState` per peer and asks it, per logical message
(replication batches and acks alike), whether the message is lost, how long it waits above the link's latency
floor and how long the bandwidth cap holds it. The fault is a `runtime.link.LinkSettings` — the simulator's
vocabulary, so one chaos schedule means the same thing on either target — of which a region uses the fault fields
(`runtime.link.FAULT_FIELDS`); its latency floor and jitter scale are the link's delay (topology or override).
`stalled` is handled by the transport's writer: nothing is written while set; envelopes queue and drain on resume.
Randomness comes from the injected `random.Random`; time from the caller (the unskewed monotonic clock).
"""

from __future__ import annotations

import random

from ..runtime.link import LinkSettings, lose, sample_extra_ms

NO_FAULT = LinkSettings()


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

    def set(self, fault: LinkSettings) -> None:
        self.fault = fault
        self.bad = False
        self.busy_until = 0.0

    def extra_s(self, jitter_ms: float) -> float:
        """Seconds above the latency floor for one message on a link whose jitter scale is `jitter_ms`."""
        return sample_extra_ms(self.fault, self.rng, jitter_ms) / 1000.0

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
