"""Tuning of the replication core; every knob has a default that suits both the simulator and real processes."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_LANES = 4


@dataclass(frozen=True, slots=True)
class ReplicationConfig:
    lanes: int = DEFAULT_LANES  # ordered lanes per (table, peer) link; an item's lane is a hash of its partition key
    batch_records: int = 500  # records per Ship at most
    batch_bytes: int = 1_000_000  # encoded Ship size at most (a single larger record still ships, alone)
    window_records: int = 5_000  # records shipped but not yet acknowledged, per link, at most
    # Nagle without a timer (replication/link.py): a Ship that is not full goes at once while fewer than this many
    # Ships of its link are unacknowledged, else it waits for an ack. 1 is Nagle's rule; a few let a link at a
    # moderate write rate ship every commit at once (at 200 writes/s over 40 ms links some four Ships per link are
    # out at a time), while a busy link still sends at most this many Ships per round trip beyond full ones.
    eager_ships: int = 8
    # Received Ships of a lane that arrived together are applied in one store transaction, up to this many records
    # (a backlog drains in fewer, larger commits; the cap bounds how long one apply holds the host's loop).
    apply_records: int = 2_000
    retransmit_after: float = 1.0  # seconds without ack progress before a link goes back to its acked position
    # The retransmit interval doubles per fruitless retry, up to this multiple. Retries are cheap (a timed-out link
    # probes with one Ship, not a window), so the cap is low: a healed partition resumes within 2 s.
    max_backoff: int = 2
    # Seconds a link waits after the peer deferred records for lack of write capacity before shipping them again
    # (back-pressure, link.py): short, so a receiver whose capacity refills continuously drains at its full rate.
    defer_retry: float = 0.1

    def __post_init__(self) -> None:
        counts = ("lanes", "batch_records", "batch_bytes", "window_records", "eager_ships", "apply_records")
        for name in (*counts, "max_backoff"):
            if getattr(self, name) < 1:
                raise ValueError(f"replication {name} must be >= 1, not {getattr(self, name)!r}")
        if self.retransmit_after <= 0 or self.defer_retry <= 0:
            raise ValueError("replication retransmit_after and defer_retry must be > 0")
