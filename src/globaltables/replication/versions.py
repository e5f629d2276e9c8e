"""The engine's `VersionSource` (engine/replica.py) over a region's hybrid logical clock.

`stamp(existing)` gives a local write the version `"<hlc>/<region>"`, its stamp above the replaced version's under
`conflict_clock: hlc` (HybridLogicalClock.next_stamp_above); `observe(version)` runs the HLC receive rule for a
replicated record. Versions cross this seam as their order-preserving strings, so the engine compares them as text.
"""

from __future__ import annotations

from .hlc import HybridLogicalClock, Version


class HlcVersionSource:
    __slots__ = ("hlc", "region")

    def __init__(self, hlc: HybridLogicalClock, region: str) -> None:
        self.hlc = hlc
        self.region = region

    def stamp(self, existing: str | None) -> str:
        hlc = self.hlc
        stamp = hlc.next_stamp_above(Version.parse(existing) if existing is not None else None)
        return hlc.encode(stamp) + "/" + self.region  # Version(stamp, region).encode(), without building the tuple

    def observe(self, version: str) -> None:
        self.hlc.update(Version.parse(version).stamp)

    def observe_floor(self, version: str) -> None:
        self.hlc.observe_floor(Version.parse(version).stamp)
