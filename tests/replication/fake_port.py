"""An in-memory engine port that follows the `ReplicaPort` contract of docs/replication.md exactly, for testing the
replication core without SQLite: LWW by version string comparison, tombstones, per-lane local logs with shared
per-table positions, applied positions updated together with the items, acked positions, and trimming."""

from __future__ import annotations

import bisect
import zlib
from types import SimpleNamespace
from typing import Any

from globaltables.chaos.history import key_id
from globaltables.engine.mutation import Mutation
from globaltables.replication.hlc import HybridLogicalClock, Version

_LOCAL_COMMIT = SimpleNamespace(originated_here=True)  # what a listener reads of engine/commit.py's CommitResult


class FakePort:
    def __init__(
        self,
        region: str,
        hlc: HybridLogicalClock,
        peers: tuple[str, ...] = (),
        tables: tuple[str, ...] = ("T",),
        lanes: int = 4,
    ):
        self.region = region
        self.peer_regions = [peer for peer in peers if peer != region]
        self.hlc = hlc
        self.lanes_count = lanes
        self.tables = list(tables)
        self.items: dict[str, dict[str, tuple[str, dict | None]]] = {t: {} for t in tables}  # key -> (version, image)
        self.seq: dict[str, int] = {t: 0 for t in tables}
        self.logs: dict[tuple[str, int], list[Mutation]] = {}
        self.positions: dict[tuple[str, int], list[int]] = {}
        self.trimmed: dict[tuple[str, int], int] = {}
        self.applied: dict[tuple[str, str, int], int] = {}
        self.acked: dict[tuple[str, str, int], int] = {}
        self.stream: list[tuple[str, str, str]] = []  # (table, key, version) of every change that took effect
        self.listeners: list = []  # after-commit listeners, as the engine has (replication/hosted.py)

    def add_commit_listener(self, listener) -> None:
        self.listeners.append(listener)

    def remove_commit_listener(self, listener) -> None:
        self.listeners.remove(listener)

    # ------------------------------------------------------------------------------------------- local writes

    def lane_of(self, table: str, pk: bytes) -> int:
        return zlib.crc32(pk) % self.lanes_count

    def write(self, table: str, key: dict, image: dict | None) -> str:
        """A client put (image) or delete (None) in this region; the version it wrote."""
        kid = key_id(key)
        current = self.items[table].get(kid)
        stamp = self.hlc.next_stamp_above(Version.parse(current[0]) if current else None)
        version = Version(stamp, self.region).encode()
        if current is None or version > current[0]:
            self.items[table][kid] = (version, image)  # (wall mode may lose to the stored version, by design)
        self.seq[table] += 1
        pos = self.seq[table]
        lane = self.lane_of(table, kid.encode())
        self.logs.setdefault((table, lane), []).append(Mutation(pos, key, version, image, stamp.physical_ms))
        self.positions.setdefault((table, lane), []).append(pos)
        self.stream.append((table, kid, version))
        for listener in list(self.listeners):
            listener(_LOCAL_COMMIT)
        return version

    def trim(self, table: str, lane: int, through: int) -> None:
        """Drop the lane's records at or below `through` (whatever the peers acknowledged: tests plant this)."""
        positions = self.positions.get((table, lane), [])
        cut = bisect.bisect_right(positions, through)
        del positions[:cut]
        del self.logs.get((table, lane), [])[:cut]
        self.trimmed[(table, lane)] = max(self.trimmed.get((table, lane), 0), through)

    def state(self, table: str) -> dict[str, Any]:
        return {kid: image for kid, (_, image) in sorted(self.items[table].items()) if image is not None}

    # ----------------------------------------------------------------------------------------------- the port

    def global_tables(self) -> list[str]:
        return self.tables

    def peers(self, table: str) -> list[str]:
        return self.peer_regions

    def lanes(self, table: str) -> int:
        return self.lanes_count

    def local_records(self, table: str, lane: int, after_pos: int, limit: int) -> list[Mutation]:
        positions = self.positions.get((table, lane), [])
        start = bisect.bisect_right(positions, after_pos)
        return self.logs[(table, lane)][start : start + limit] if positions else []

    def log_end(self, table: str, lane: int) -> int:
        positions = self.positions.get((table, lane))
        return positions[-1] if positions else self.trimmed.get((table, lane), 0)

    def log_start(self, table: str, lane: int) -> int:
        return self.trimmed.get((table, lane), 0) + 1

    def apply_replicated(self, origin: str, table: str, lane: int, records) -> tuple[int, list[str]]:
        applied = self.applied.get((origin, table, lane), 0)
        won = []
        items = self.items[table]
        for record in records:
            if record.pos <= applied:
                continue
            applied = record.pos
            self.hlc.update(Version.parse(record.version).stamp)
            kid = key_id(record.key)
            current = items.get(kid)
            if current is None or record.version > current[0]:
                items[kid] = (record.version, record.image)
                won.append(record.version)
                self.stream.append((table, kid, record.version))
        self.applied[(origin, table, lane)] = applied
        return applied, won

    def applied_position(self, origin: str, table: str, lane: int) -> int:
        return self.applied.get((origin, table, lane), 0)

    def acked_position(self, peer: str, table: str, lane: int) -> int:
        return self.acked.get((peer, table, lane), 0)

    def save_acked(self, peer: str, table: str, lane: int, pos: int) -> None:
        self.acked[(peer, table, lane)] = pos
