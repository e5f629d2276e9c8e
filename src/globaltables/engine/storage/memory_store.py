"""A store held in plain Python structures: the simulator's store, where a region's "disk" is this object.

It keeps the contract of `SqliteStore` (storage/records.py; tests/engine/test_store_contract.py holds both to it):
the same records, orders and atomicity, without SQL. It trades durability for speed: a simulated cluster commits
each client write three times (origin and two replicas), and SQLite's statements alone would cap it far below the
rates the simulator is asked for (bench/sim_throughput.py).

Rules
1. Keys are the same order-preserving byte strings; a table's items live in one `SortedTable` (sorted_table.py)
   keyed (partition hash, partition key, sort key), so a Query is one `irange` of a partition and a Scan walks the table in
   hash order with segments as hash ranges, exactly as the SQLite store's primary key orders them.
2. Items and change-log images are kept as orjson bytes, as the SQLite store keeps them: every read hands out a
   fresh dict, so nothing a caller does to an item it read can change what is stored. Bytes that are kept are
   copied to their exact size first (`kept`).
3. `write` is all-or-nothing: changes are applied as they are made (so the commit hooks, and checks inside them such
   as the item-collection limit, see the batch's own writes, as inside an SQLite transaction) and recorded in a
   `MemoryTransaction`'s undo log, which is replayed backwards if anything raises.
4. `snapshot` copies the committed state (the simulator's crash: what a restarted region finds); hooks stay behind.
5. Side records (records.py `SideChange`) live in one `SortedTable` per space, so a prefix is one `irange`; they
   are written through the same undo log as items (inside a write, by a commit hook's `side_stage`) and copied by
   `snapshot` with everything else, so a simulated crash keeps exactly what the SQLite store would.
6. Group commit (`begin_group` ... `commit_group`, sqlite_store.py rule 5) is only a bracket here: each `write` is
   applied, all or nothing, when it returns, and there is nothing to make durable, so a write that fails inside a
   group rolls back alone (as a savepoint does) and `commit_group` cannot fail. The region's committer
   (region/group_commit.py) drives an in-memory region exactly as a durable one. A group opened without savepoints
   (the replication inbox's, group_commit.py rule 5) is the same bracket: a write failing there leaves the writes
   before it applied, which for the inbox is what the durable store's rollback comes to once the senders retransmit
   (each apply saves its lane's applied position with its items, so what stood is acknowledged as a duplicate).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import orjson

from .records import HASH_SPACE, CommitHook, ItemWrite, SideChange, StoredItem, TokenRecord, partition_hash
from .sorted_table import SortedTable

MISSING = object()


def kept(blob: bytes) -> bytes:
    """A copy of `blob` of exactly its size, for a store that keeps it. orjson's output holds on to the buffer it was
    written into (kilobytes for a 200-byte item, left behind by the shrinking realloc): kept as it is, a million items
    would take gigabytes, spread thin enough to slow every allocation after them."""
    return bytes(memoryview(blob))


class MemoryTransaction:
    """The undo log of one `MemoryStore.write`: each change records how to take it back."""

    __slots__ = ("undo",)

    def __init__(self) -> None:
        # (container, key, previous value or MISSING), or (callable,) for changes that are not a key's value.
        self.undo: list[tuple] = []

    def set(self, container: Any, key: Any, value: Any) -> None:
        self.undo.append((container, key, container.get(key, MISSING)))
        container[key] = value

    def delete(self, container: Any, key: Any) -> None:
        old = container.pop(key, MISSING)
        if old is not MISSING:
            self.undo.append((container, key, old))

    def on_undo(self, action: Any) -> None:
        self.undo.append((action,))

    def rollback(self) -> None:
        for entry in reversed(self.undo):
            if len(entry) == 1:
                entry[0]()
                continue
            container, key, old = entry
            if old is MISSING:
                container.pop(key, None)
            else:
                container[key] = old
        self.undo.clear()


def partition_bounds(
    h: int, pk: bytes, lower: tuple[bytes, bool] | None, upper: tuple[bytes, bool] | None
) -> tuple[tuple, tuple, tuple[bool, bool]]:
    """`irange` bounds over (h, pk, sk, ...) keys for one partition within optional (bound, inclusive) sort-key
    limits. A tuple prefix sorts before every longer tuple it starts, and `pk + b"\\x00"` is the least partition key
    above `pk`, so (h, pk) .. (h, pk + 0x00) spans exactly the partition."""
    if lower is None:
        low, low_inclusive = (h, pk), True
    else:
        low, low_inclusive = (h, pk, lower[0]), lower[1]
        if not low_inclusive:
            # Keys of index entries extend (h, pk, sk) with the base key: skip every entry of sort key `sk`.
            low, low_inclusive = (h, pk, lower[0] + b"\x00"), True
    if upper is None:
        high, high_inclusive = (h, pk + b"\x00"), False
    elif upper[1]:
        high, high_inclusive = (h, pk, upper[0] + b"\x00"), False  # every entry of sort key `upper[0]`
    else:
        high, high_inclusive = (h, pk, upper[0]), False
    return low, high, (low_inclusive, high_inclusive)


def tighter(bound: tuple[bytes, bool] | None, after: bytes, forward: bool) -> tuple[bytes, bool]:
    """A sort-key bound narrowed to "strictly after `after` in the direction of travel" (ExclusiveStartKey)."""
    if bound is None or ((after >= bound[0]) if forward else (after <= bound[0])):
        return after, False
    return bound


class MemoryStore:
    """Items, table definitions, tombstones, replication positions and request tokens of one region, in memory;
    the change log and index entries are views over the same object (`change_log_store`, `index_store`)."""

    path = ":memory:"

    def __init__(self) -> None:
        self.commit_hooks: list[CommitHook] = []
        self.grouped = False  # a group commit is open (rule 6)
        self._tids: dict[str, int] = {}
        self._definitions: dict[str, bytes] = {}
        self._next_tid = 1
        # tid -> SortedTable[(h, pk, sk)] = (item bytes, size, version)
        self.items: dict[int, SortedTable] = {}
        # tid -> (item count, total item bytes)
        self.stats: dict[int, tuple[int, int]] = {}
        # tid -> {(pk, sk): (version, deleted_at)}
        self.tombstones: dict[int, dict[tuple[bytes, bytes], tuple[str, float]]] = {}
        self.positions: dict[tuple[str, str, int, int], int] = {}
        self.tokens: dict[str, tuple[bytes, float]] = {}
        self.settings: dict[str, str] = {}
        # The change log (memory_change_log_store.py): tid -> {seq: row}, with the order of seqs and of each lane's
        # local records as ascending lists; streams by ARN; trim floors; tables registered for retention.
        self.log_rows: dict[int, dict[int, tuple]] = {}
        self.log_seqs: dict[int, list[int]] = {}
        self.lane_seqs: dict[tuple[int, int], list[int]] = {}
        self.trimmed: dict[int, int] = {}
        self.logged_tids: set[int] = set()
        self.streams: dict[str, tuple] = {}
        # Index entries (memory_index_store.py): iid -> SortedTable[(h, pk, sk, bpk, bsk)] = (item bytes, size).
        self.index_entries: dict[int, SortedTable] = {}
        self.index_ids: dict[int, tuple[str, str, bool]] = {}  # iid -> (table uuid, name, dropped)
        self.next_iid = 1
        # On-demand backups (memory_backup_store.py): ARN -> (created, record bytes, [item bytes]).
        self.backups: dict[str, tuple[float, bytes, list[bytes]]] = {}
        # Side records (rule 5): space -> SortedTable[key] = value bytes.
        self.side: dict[str, SortedTable] = {}

    def change_log_store(self):
        from .memory_change_log_store import MemoryChangeLogStore

        return MemoryChangeLogStore(self)

    def index_store(self):
        from .memory_index_store import MemoryIndexStore

        return MemoryIndexStore(self)

    def backup_store(self):
        from .memory_backup_store import MemoryBackupStore

        return MemoryBackupStore(self)

    def begin_group(self, savepoints: bool = True) -> None:  # noqa: ARG002 - every write is whole here (rule 6)
        """Open a group commit (rule 6)."""
        assert not self.grouped, "a group commit is already open"
        self.grouped = True

    def commit_group(self) -> None:
        """Close the open group: its writes were applied as they were made (rule 6)."""
        self.grouped = False

    def snapshot(self) -> MemoryStore:
        """A new store holding exactly this store's committed data; hooks stay with this object."""
        fresh = MemoryStore()
        state = {name: value for name, value in vars(self).items() if name != "commit_hooks"}
        for name, value in copy.deepcopy(state).items():  # bytes and tuples are shared, containers copied
            setattr(fresh, name, value)
        return fresh

    def purge_tombstones(self, before: float, limit: int) -> int:
        purged = 0
        for tombstones in self.tombstones.values():
            old = [key for key, (_version, deleted_at) in tombstones.items() if deleted_at < before][: limit - purged]
            for key in old:
                del tombstones[key]
            purged += len(old)
            if purged >= limit:
                break
        return purged

    def highest_version(self) -> str | None:
        found = [version for table in self.items.values() for (_b, _s, version) in table.values() if version]
        found += [version for table in self.tombstones.values() for (version, _at) in table.values()]
        return max(found) if found else None

    def close(self) -> None:
        pass

    def setting(self, key: str) -> str | None:
        return self.settings.get(key)

    def save_setting(self, key: str, value: str) -> None:
        self.settings[key] = value

    # ------------------------------------------------------------------------------------------- table definitions

    def load_tables(self) -> dict[str, dict]:
        return {name: orjson.loads(blob) for name, blob in self._definitions.items()}

    def save_table(self, name: str, definition: dict) -> None:
        self._definitions[name] = orjson.dumps(definition)
        if name not in self._tids:
            tid = self._next_tid  # never reused: rows of a dropped table can never show up under a new one
            self._next_tid += 1
            self._tids[name] = tid
            self.items[tid] = SortedTable()
            self.stats[tid] = (0, 0)
            self.tombstones[tid] = {}

    def drop_table(self, name: str) -> None:
        tid = self._tids.pop(name)
        del self._definitions[name]
        del self.items[tid], self.stats[tid], self.tombstones[tid]
        for key in [key for key in self.positions if key[2] == tid]:
            del self.positions[key]

    def table_id(self, table: str) -> int:
        return self._tids[table]

    # ------------------------------------------------------------------------------------------------------ items

    def get(self, table: str, pk: bytes, sk: bytes, raw: bool = False) -> dict | None:
        """The item, or None; `raw`: as its stored JSON bytes (records.py rule on raw reads)."""
        row = self.items[self._tids[table]].get((partition_hash(pk), pk, sk))
        if row is None:
            return None
        return row[0] if raw else orjson.loads(row[0])

    def get_sized(self, table: str, pk: bytes, sk: bytes, raw: bool = False) -> tuple[dict | None, int, int]:
        """`get` with the item's stored size (0 without one) and the key's partition hash: what the throughput
        model charges, and where, with nothing measured or hashed again."""
        h = partition_hash(pk)
        row = self.items[self._tids[table]].get((h, pk, sk))
        if row is None:
            return None, 0, h
        return (row[0] if raw else orjson.loads(row[0])), row[1], h

    def get_record_sized(
        self, table: str, pk: bytes, sk: bytes, raw: bool = False
    ) -> tuple[dict | None, str | None, bool, int, int]:
        """`get_record` with the live item's stored size (0 without one) and the key's partition hash."""
        tid = self._tids[table]
        h = partition_hash(pk)
        row = self.items[tid].get((h, pk, sk))
        if row is not None:
            return (row[0] if raw else orjson.loads(row[0])), row[2], False, row[1], h
        tombstone = self.tombstones[tid].get((pk, sk))
        return (None, tombstone[0], True, 0, h) if tombstone is not None else (None, None, False, 0, h)

    def get_record(
        self, table: str, pk: bytes, sk: bytes, raw: bool = False
    ) -> tuple[dict | None, str | None, bool]:
        tid = self._tids[table]
        row = self.items[tid].get((partition_hash(pk), pk, sk))
        if row is not None:
            return (row[0] if raw else orjson.loads(row[0])), row[2], False
        tombstone = self.tombstones[tid].get((pk, sk))
        return (None, tombstone[0], True) if tombstone is not None else (None, None, False)

    def get_records(
        self, table: str, keys: list[tuple[bytes, bytes]]
    ) -> dict[tuple[bytes, bytes], tuple[dict | None, str | None, bool, int | None]]:
        tid = self._tids[table]
        items, tombstones = self.items[tid], self.tombstones[tid]
        found = {}
        loads = orjson.loads
        for key in keys:
            pk, sk = key
            row = items.get((partition_hash(pk), pk, sk))
            if row is not None:
                found[key] = (loads(row[0]), row[2], False, row[1])
            else:
                tombstone = tombstones.get(key)
                if tombstone is not None:
                    found[key] = (None, tombstone[0], True, None)
        return found

    def position(self, kind: str, region: str, table: str, lane: int) -> int:
        return self.positions.get((kind, region, self._tids[table], lane), 0)

    def save_position(self, kind: str, region: str, table: str, lane: int, pos: int) -> None:
        self.positions[(kind, region, self._tids[table], lane)] = pos

    def delete_positions(self, table: str, region: str) -> None:
        tid = self._tids[table]
        for key in [key for key in self.positions if key[1] == region and key[2] == tid]:
            del self.positions[key]

    def table_records(self, table: str, pk: bytes | None = None) -> Iterator[tuple[bytes, bytes, dict, str | None]]:
        items = self.items[self._tids[table]]
        if pk is None:
            rows = list(items.items())
        else:
            low, high, inclusive = partition_bounds(partition_hash(pk), pk, None, None)
            rows = [(key, items[key]) for key in list(items.irange(low, high, inclusive))]
        for (_h, pk_, sk), (blob, _size, version) in rows:
            yield pk_, sk, orjson.loads(blob), version

    def table_tombstones(self, table: str, pk: bytes | None = None) -> Iterator[tuple[bytes, bytes, str, float]]:
        for (pk_, sk), (version, deleted_at) in list(self.tombstones[self._tids[table]].items()):
            if pk is None or pk_ == pk:
                yield pk_, sk, version, deleted_at

    # ----------------------------------------------------------------------------------------------- side records

    def side_get(self, space: str, key: str) -> bytes | None:
        records = self.side.get(space)
        return records.get(key) if records is not None else None

    def side_scan(self, space: str, prefix: str = "") -> list[tuple[str, bytes]]:
        records = self.side.get(space)
        out: list[tuple[str, bytes]] = []
        if records is None:
            return out
        for key in records.irange(prefix, None):
            if not key.startswith(prefix):
                break
            out.append((key, records[key]))
        return out

    def side_write(self, changes: list[SideChange]) -> None:
        tx = MemoryTransaction()
        try:
            self.side_stage(tx, changes)
        except BaseException:
            tx.rollback()
            raise

    def side_stage(self, tx: MemoryTransaction, changes: list[SideChange]) -> None:
        for space, key, value in changes:
            records = self.side.get(space)
            if records is None:
                records = self.side[space] = SortedTable()  # an empty space left behind reads as no records
            if value is None:
                tx.delete(records, key)
            else:
                tx.set(records, key, kept(value))

    def write(
        self,
        writes: list[ItemWrite],
        token: TokenRecord | None = None,
        positions: list[tuple[str, str, str, int, int]] | None = None,
        refusable: bool = True,  # noqa: ARG002 - every write rolls back alone here (rule 6)
    ) -> None:
        """Apply a batch of item writes and what the commit hooks add to it, all or nothing (rule 3)."""
        tx = MemoryTransaction()
        undo = tx.undo  # appended to inline: this loop runs for every write the simulator makes
        tids, tables, stats = self._tids, self.items, self.stats
        dumps = orjson.dumps
        try:
            for w in writes:
                tid = tids[w.table]
                items = tables[tid]
                key = (partition_hash(w.pk), w.pk, w.sk)
                count, size = stats[tid]
                undo.append((stats, tid, (count, size)))
                if w.item is not None:
                    w.blob = blob = kept(dumps(w.item))
                    previous = items.put(key, (blob, w.size, w.version))
                    count, size = count + 1, size + w.size
                    if w.had_tombstone:
                        tx.delete(self.tombstones[tid], (w.pk, w.sk))
                else:
                    previous = items.pop(key, None)
                    if w.tombstone:
                        tx.set(self.tombstones[tid], (w.pk, w.sk), (w.version, w.deleted_at))
                if previous is None:
                    undo.append((items, key, MISSING))
                else:
                    undo.append((items, key, previous))
                    count, size = count - 1, size - previous[1]
                stats[tid] = (count, size)
            for kind, region, table, lane, pos in positions or ():
                tx.set(self.positions, (kind, region, tids[table], lane), pos)
            if writes:
                for hook in self.commit_hooks:
                    hook(tx, writes)
            if token is not None:
                for name in [name for name, (_f, expires) in self.tokens.items() if expires <= token.now]:
                    tx.delete(self.tokens, name)
                tx.set(self.tokens, token.token, (token.fingerprint, token.expires))
        except BaseException:
            tx.rollback()
            raise

    def transaction_token(self, token: str, now: float) -> bytes | None:
        record = self.tokens.get(token)
        return record[0] if record is not None and record[1] > now else None

    def query(
        self,
        table: str,
        pk: bytes,
        lower: tuple[bytes, bool] | None = None,
        upper: tuple[bytes, bool] | None = None,
        forward: bool = True,
        start_after: bytes | None = None,
        raw: bool = False,
    ) -> Iterator[StoredItem]:
        """Items of one partition in sort-key order, within optional (bound, inclusive) limits, resuming strictly
        after `start_after` in the direction of travel. `raw`: items as their stored JSON bytes."""
        if start_after is not None:
            if forward:
                lower = tighter(lower, start_after, True)
            else:
                upper = tighter(upper, start_after, False)
        h = partition_hash(pk)
        items = self.items[self._tids[table]]
        low, high, inclusive = partition_bounds(h, pk, lower, upper)
        keys = list(items.irange(low, high, inclusive, reverse=not forward))
        rows = items.rows  # a dict: read directly, not through SortedTable's __getitem__, once per item of a page
        if raw:
            for key in keys:
                blob, size, _version = rows[key]
                yield StoredItem(h, pk, key[2], blob, size)
            return
        loads = orjson.loads
        for key in keys:
            blob, size, _version = rows[key]
            yield StoredItem(h, pk, key[2], loads(blob), size)

    def scan(
        self,
        table: str,
        hash_range: tuple[int, int] = (0, HASH_SPACE),
        start_after: tuple[int, bytes, bytes] | None = None,
    ) -> Iterator[StoredItem]:
        """Items in (hash, partition key, sort key) order, hashes in [lo, hi), resuming after `start_after`."""
        lo, hi = hash_range
        items = self.items[self._tids[table]]
        low, low_inclusive = (
            ((lo,), True) if start_after is None or tuple(start_after) < (lo,) else (tuple(start_after), False)
        )
        loads = orjson.loads
        # Lazy, so a page that stops at 1 MB reads no further; every caller closes its scan before it writes.
        for key in items.irange(low, (hi,), (low_inclusive, False)):
            blob, size, _version = items[key]
            yield StoredItem(key[0], key[1], key[2], loads(blob), size)

    def table_stats(self, table: str) -> tuple[int, int]:
        return self.stats[self._tids[table]]

    def partition_bytes(self, table: str, pk: bytes) -> int:
        items = self.items[self._tids[table]]
        low, high, inclusive = partition_bounds(partition_hash(pk), pk, None, None)
        return sum(items[key][1] for key in items.irange(low, high, inclusive))
