"""MRSC knobs (milliseconds, as in topology files)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class MrscConfig:
    retransmit_ms: float = 200.0  # re-send unanswered Propose/Status/Sync after this long
    resolve_ms: float = 1000.0  # mrsc_resolve_ms: a proposal unresolved this long is resolved by any member holding it
    write_timeout_ms: float = 2000.0  # the client's bounded wait for a write: then 500 (in doubt)
    read_timeout_ms: float = 2000.0  # the same for a strong read (and a condition's confirmation)
    sync_retry_ms: float = 20.0  # a strong read that found a pending proposal syncs again after this long
    max_retries: int = 5  # stale rejections re-evaluated and retried at most this many times
    # After a commit on an item another Region proposed for within `resolve_ms`, this region's next queued write on
    # it starts this much later, so the other Regions' writes can reach the free item (docs/mrsc.md, decision 3).
    yield_ms: float = 20.0
