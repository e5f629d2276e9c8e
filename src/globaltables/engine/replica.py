"""The engine's side of global tables: versions, tombstones, the replication log and LWW apply (docs/replication.md).

Rules
1. A `VersionSource` is injected (the region's hybrid logical clock); the engine never reads a clock of its own for
   versions. `stamp(existing)` gives a local write its version; `observe(version)` runs the HLC receive rule for every
   replicated record applied.
2. Local writes are stamped in `Engine.commit` (`stamp_local_writes`), the single write path, so every writer (item
   operations, batches, transactions, TTL) gets versions, tombstones and the LWW rules alike.
3. `apply_replicated` merges a lane's records in one store transaction together with the new applied position:
   either all of it happens or none, and a record at or below the applied position is never applied twice.
4. A record that loses (its version is not greater than the stored one, item or tombstone) leaves no trace in the
   store. The host may listen (`on_decision`) to every apply decision — a replicated record applied or lost, a local
   write stamped behind the stored version — after its transaction committed; the lost-write ledger of an
   experiment (experiment/ledger.py) is built from them. The engine reads no clock for it: the host times them.
5. Replicated writes consume write capacity here (rWCU: the units a local write of the same change would draw, its
   GSI updates included) when the engine models capacity. A record the region lacks the capacity for is deferred,
   with every record after it: `apply_replicated` applies the batch's prefix and reports the applied position of
   that prefix, and the sender ships the rest again later (replication/link.py). Nothing is dropped or reordered;
   a record that loses LWW writes nothing and consumes nothing (docs/capacity.md, decision 16).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

import orjson

from .capacity import item_write_charge
from .change_log import items_equal
from .errors import ResourceNotFoundException
from .mutation import Mutation
from .storage.records import UNKNOWN, ItemWrite, partition_hash
from .table_description import stream_label
from .values import item_size

if TYPE_CHECKING:
    from .engine import Engine


# Stored records read at a time by `apply_replicated` when capacity is modelled (the store's batched read's chunk):
# a region short of write units reads only about as far as it can afford to apply.
READ_AHEAD = 256

# (origin, table, decisions): the decisions of one commit, each (key, version, lost_to), in the order they were made;
# `lost_to` is the stored version that beat `version`, None when it applied. One call per commit, not per record: a
# replicated batch of thousands is told in one.
DecisionObserver = Callable[[str, str, "list[tuple[dict, str, str | None]]"], None]


class VersionSource(Protocol):
    def stamp(self, existing: str | None) -> str:
        """A version for a local write replacing `existing` (None: nothing stored)."""

    def observe(self, version: str) -> None:
        """A version arrived from another region (the HLC receive rule)."""

    def observe_floor(self, version: str) -> None:
        """After a restart: stamps must start above this version, the greatest the store holds."""


def items_unchanged(old: dict | None, new: dict | None) -> bool:
    if old is None or new is None:
        return old is new
    return items_equal(old, new)


class ReplicaPort:
    """What replication (replication/node.py) needs from one region's engine."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.on_decision: DecisionObserver | None = None  # told of every apply decision (rule 4)

    # ------------------------------------------------------------------------------------------------ stamping

    def stamp_local_writes(self, writes: list[ItemWrite]) -> list[ItemWrite]:
        """Give local writes their versions; return the writes that take effect.

        A write that would leave a global table's item unchanged keeps the stored version and is not committed (it
        would otherwise carry a new version that no other region ever hears of). Under `conflict_clock: wall` a
        stamp may not exceed the stored version: that write is acknowledged but loses, here as everywhere.
        """
        engine = self.engine
        versions = engine.versions
        store = engine.store
        kept = []
        now = None
        for write in writes:
            if write.origin is not None:
                kept.append(write)
                continue
            if write.old_version is UNKNOWN:
                _item, write.old_version, write.had_tombstone = store.get_record(write.table, write.pk, write.sk)
            old_version = write.old_version
            table = engine.tables[write.table]
            if table.replicas and not write.reassert and items_unchanged(write.old, write.item):
                write.version = old_version
                continue
            version = versions.stamp(old_version)
            write.version = version
            if old_version is not None and version <= old_version:
                # A wall-clock stamp behind the stored version: this write loses. (Told before the commit: a
                # losing write commits nothing of its own.)
                if self.on_decision is not None and table.replicas:
                    image = write.item if write.item is not None else write.old
                    if image is not None:
                        self.on_decision(engine.region, write.table, [(table.key.key_of(image), version, old_version)])
                continue
            if table.replicas and write.item is None:
                if now is None:
                    now = engine.clock.wall_time()
                write.tombstone = True
                write.deleted_at = now
            kept.append(write)
        return kept

    # ---------------------------------------------------------------------------------------------- the port

    def global_tables(self) -> list[str]:
        return sorted(name for name, table in self.engine.tables.items() if table.replicas)

    def peers(self, table: str) -> list[str]:
        """The other ACTIVE replicas: a replica still CREATING (loading its snapshot) or DELETING is not shipped to,
        nor heard from (engine/replica_membership.py)."""
        definition = self.engine.tables[table]
        status = definition.replica_status
        return [region for region in definition.replicas if region != self.engine.region and region not in status]

    def lanes(self, table: str) -> int:
        return self.engine.tables[table].replication_lanes

    def lane_of(self, table: str, pk: bytes) -> int:
        return partition_hash(pk) % self.lanes(table)

    def local_records(self, table: str, lane: int, after_pos: int, limit: int) -> list[Mutation]:
        """This region's own changes in a lane, after `after_pos`, in log order, ready for the codec: images as the
        stored JSON, keys only for deletes (engine/mutation.py)."""
        definition = self.engine.tables[table]
        tid = self.engine.store.table_id(table)
        records = []
        key_of = definition.key.key_of
        fragment = orjson.Fragment
        for seq, created, new, old, version, service, size in self.engine.change_log.store.local_lane_records(
            tid, lane, after_pos, limit
        ):
            if new is not None:
                image, key = fragment(new), None
            else:
                image, key = None, key_of(orjson.loads(old))
            # Rounded, not truncated: truncating would overstate every lag by half a millisecond on average.
            records.append(Mutation(seq, key, version, image, round(created * 1000), bool(service), size))
        return records

    def pending_count(self, table: str, lane: int, after_pos: int) -> int:
        """How many of this region's records in a lane lie after `after_pos` (a peer's acknowledged position)."""
        tid = self.engine.store.table_id(table)
        return self.engine.change_log.store.local_lane_count(tid, lane, after_pos)

    def log_end(self, table: str, lane: int) -> int:
        return self.engine.change_log.lane_end(self.engine.store.table_id(table), lane)

    def log_start(self, table: str, lane: int) -> int:
        """The lowest position the log may still hold: everything at or below `log_start - 1` was trimmed."""
        return self.engine.change_log.trimmed(self.engine.store.table_id(table)) + 1

    def applied_position(self, origin: str, table: str, lane: int) -> int:
        return self.engine.store.position("applied", origin, table, lane)

    def acked_position(self, peer: str, table: str, lane: int) -> int:
        return self.engine.store.position("acked", peer, table, lane)

    def save_acked(self, peer: str, table: str, lane: int, pos: int) -> None:
        self.engine.store.save_position("acked", peer, table, lane, pos)

    def apply_replicated(self, origin: str, table: str, lane: int, records: list[Mutation]) -> tuple[int, list[str]]:
        """LWW-merge a lane's records after the applied position, in one transaction with the new position.

        Returns (applied position, versions that won); short of write capacity (rule 5), the applied position is
        that of the prefix applied, before the Ship's last record. The stored versions of the batch's keys are read
        in one batched read (the store's `get_records`), not one or two per record; the HLC receive rule runs once, on
        the batch's greatest version (the records' versions are order-preserving strings): the clock ends above
        every version of the batch, as the rule requires, at the cost of one parse instead of one per record.
        """
        engine = self.engine
        definition = engine.tables.get(table)
        if definition is None or origin not in definition.replicas:
            raise ResourceNotFoundException(f"Requested resource not found: Table: {table} not found")
        store = engine.store
        applied = store.position("applied", origin, table, lane)
        fresh = [record for record in records if record.pos > applied]
        throughput = engine.throughput
        writes: list[ItemWrite] = []
        won: list[str] = []
        decisions: list[tuple[dict, str, str | None]] = []
        observe = self.on_decision
        if fresh:
            engine.versions.observe(max([record.version for record in fresh]))
            schema = definition.key
            # Keys straight from the images (they hold the key attributes); the key maps only for the decision log.
            maps = [record.key if record.key is not None else record.image for record in fresh]
            keys = schema.encode_all(maps)
            if observe is not None:
                wire_keys = schema.keys_of(maps)
            else:
                wire_keys = [None] * len(fresh)
            # (item, version, tombstone, item row's size) per key: as stored, then as left by the batch's earlier
            # records (the size is what the store's item totals need, `ItemWrite.old_size`). Read a chunk at a time,
            # ahead of the records that need it: a region short of capacity stops at the first record it cannot
            # afford, and reads nothing for the records after it (they are shipped again).
            latest: dict[tuple[bytes, bytes], tuple[dict | None, str | None, bool, object]] = {}
            read = 0
            count = len(fresh)
            now = engine.clock.wall_time()
            absent = (None, None, False, None)
            for index, (record, pair, key) in enumerate(zip(fresh, keys, wire_keys, strict=True)):
                pk, sk = pair  # `pair` itself keys `latest` (no tuple built again per record)
                # The record's fields at once (a field read by name is a call each, and a record has several).
                pos, _key, version, image, _commit_ms, service, size = record
                if index == read:
                    read = min(count, index + READ_AHEAD if throughput is not None else count)
                    # Keys the batch has not read or written yet (a key written by an earlier record keeps that).
                    unread = [k for k in dict.fromkeys(keys[index:read]) if k not in latest]
                    latest.update(store.get_records(table, unread))
                item, stored, tombstone, stored_size = latest.get(pair, absent)
                if stored is not None and version <= stored:
                    if observe is not None:
                        decisions.append((key, version, stored))
                    applied = pos
                    continue  # an older version: it loses and leaves no trace
                if service and item is not None and not engine.ttl.expired(definition, item):
                    # A TTL deletion of an item that, here, has since been given a later expiry (or none): it does
                    # not apply, and the item is written again above the deletion's version, so it replaces the
                    # tombstone in every region (the origin included) and all regions converge on the unexpired
                    # item.
                    writes.append(
                        ItemWrite(table, pk, sk, item, item_size(item), item, old_version=version, reassert=True)
                    )
                    # Its row's size is the store's to read (the write may yet lose its stamp and not be made).
                    latest[pair] = (item, stored, tombstone, UNKNOWN)
                    applied = pos
                    continue
                if image is None:
                    size = 0
                elif size is None:
                    size = item_size(image)
                if throughput is not None:
                    charge = item_write_charge(definition, pk, item, image, size)
                    if throughput.try_replicated(charge) is not None:
                        break  # rule 5: this record and every one after it wait for capacity
                applied = pos
                deleted = image is None
                # Positional (the fields in order: table, pk, sk, item, size, old, service, version, origin,
                # old_version, tombstone, had_tombstone, deleted_at, old_size): one is built per record applied, and
                # keywords cost more.
                writes.append(
                    ItemWrite(table, pk, sk, image, size, item, False, version, origin, stored, deleted, tombstone,
                              now, stored_size)
                )  # fmt: skip
                latest[pair] = (image, version, deleted, None if deleted else size)
                won.append(version)
                if observe is not None:
                    decisions.append((key, version, None))
        engine.commit(writes, positions=[("applied", origin, table, lane, applied)])
        if observe is not None and decisions:
            # In a group commit: once the group committed, never if it failed.
            engine.after_commit(lambda: observe(origin, table, decisions))
        return applied, won

    # ---------------------------------------------------------------------------------------------- retention

    def trim_ceilings(self) -> dict[int, int]:
        """Per global table id, the highest sequence number the change log may trim: a lane's records stay until
        every peer has acknowledged them (lanes with nothing pending do not hold the log back)."""
        ceilings = {}
        for table in self.global_tables():
            tid = self.engine.store.table_id(table)
            peers = self.peers(table)
            ceiling = None
            for lane in range(self.lanes(table)):
                end = self.log_end(table, lane)
                acked = min((self.acked_position(peer, table, lane) for peer in peers), default=end)
                if acked < end:
                    ceiling = acked if ceiling is None else min(ceiling, acked)
            if ceiling is not None:
                ceilings[tid] = ceiling
        return ceilings

    # -------------------------------------------------------------------------------------------- membership

    def make_global(self, table: str, replicas: list[str], lanes: int = 4) -> None:
        """Make a table a replica of a global table spanning `replicas` (this region among them). Its stream is on
        (NEW_AND_OLD_IMAGES unless one is already enabled), as on every MREC replica."""
        definition = self.engine.tables[table]
        definition.replicas = sorted(set(replicas) | {self.engine.region})
        definition.replication_lanes = lanes
        if not definition.stream_enabled:
            definition.stream = {
                "StreamEnabled": True,
                "StreamViewType": "NEW_AND_OLD_IMAGES",
                "LatestStreamLabel": stream_label(self.engine.clock.wall_time()),
            }
        self.engine.save_table(definition)
