"""Secondary index entries of a `MemoryStore` (the contract of storage/index_store.py).

Per index id, one `SortedTable` keyed (index partition hash, index partition key, index sort key, base partition key,
base sort key), holding (projected item as orjson bytes, size): a Query of an index partition is one `irange`, a Scan
walks the entries in hash order. Ids are never reused.
"""

from __future__ import annotations

from collections.abc import Iterator

import orjson

from .memory_store import MemoryStore, MemoryTransaction, kept, partition_bounds
from .records import HASH_SPACE, IndexRow
from .sorted_table import SortedTable


class MemoryIndexStore:
    def __init__(self, store: MemoryStore) -> None:
        self.state = store

    # ------------------------------------------------------------------------------------------------- index ids

    def live_ids(self) -> dict[tuple[str, str], int]:
        return {(uuid, name): iid for iid, (uuid, name, dropped) in self.state.index_ids.items() if not dropped}

    def create_id(self, table_uuid: str, name: str) -> int:
        if (table_uuid, name) in self.live_ids():
            raise KeyError(f"index {name} of table {table_uuid} already has an id")  # SQLite's unique index
        iid = self.state.next_iid
        self.state.next_iid += 1
        self.state.index_ids[iid] = (table_uuid, name, False)
        self.state.index_entries[iid] = SortedTable()
        return iid

    def drop_id(self, iid: int) -> None:
        uuid, name, _dropped = self.state.index_ids[iid]
        self.state.index_ids[iid] = (uuid, name, True)

    def dropped_ids(self) -> list[int]:
        return sorted(iid for iid, (_uuid, _name, dropped) in self.state.index_ids.items() if dropped)

    def purge(self, iid: int, limit: int) -> int:
        entries = self.state.index_entries.get(iid)
        doomed = entries.first(limit) if entries is not None else []
        for key in doomed:
            del entries[key]
        if len(doomed) < limit and self.state.index_ids.get(iid, ("", "", False))[2]:
            del self.state.index_ids[iid]
            self.state.index_entries.pop(iid, None)
        return len(doomed)

    # ---------------------------------------------------------------------------------------------------- writes

    def put(self, tx: MemoryTransaction, iid: int, key: tuple, item: dict, size: int) -> None:
        """Insert or replace an entry; `key` is (h, pk, sk, bpk, bsk)."""
        tx.set(self.state.index_entries[iid], key, (kept(orjson.dumps(item)), size))

    def delete(self, tx: MemoryTransaction, iid: int, key: tuple) -> None:
        tx.delete(self.state.index_entries[iid], key)

    def put_many(self, rows: list[tuple]) -> None:
        """Insert or replace (iid, h, pk, sk, bpk, bsk, item bytes, size) rows (backfill)."""
        for iid, h, pk, sk, bpk, bsk, blob, size in rows:
            self.state.index_entries[iid][(h, pk, sk, bpk, bsk)] = (kept(blob), size)

    # ----------------------------------------------------------------------------------------------------- reads

    def query(
        self,
        iid: int,
        h: int,
        pk: bytes,
        lower: tuple[bytes, bool] | None = None,
        upper: tuple[bytes, bool] | None = None,
        forward: bool = True,
        start_after: tuple[bytes, bytes, bytes] | None = None,
    ) -> Iterator[IndexRow]:
        """Entries of one index partition in (index sort key, base key) order, within optional sort-key bounds,
        resuming strictly after `start_after` = (index sort key, base partition key, base sort key)."""
        entries = self.state.index_entries[iid]
        low, high, (low_inclusive, high_inclusive) = partition_bounds(h, pk, lower, upper)
        if start_after is not None:
            after = (h, pk, *start_after)
            if forward and after >= low:
                low, low_inclusive = after, False
            elif not forward and after <= high:
                high, high_inclusive = after, False
        loads = orjson.loads
        for key in list(entries.irange(low, high, (low_inclusive, high_inclusive), reverse=not forward)):
            blob, size = entries[key]
            yield IndexRow(h, pk, key[2], key[3], key[4], loads(blob), size)

    def scan(
        self,
        iid: int,
        hash_range: tuple[int, int] = (0, HASH_SPACE),
        start_after: tuple[int, bytes, bytes, bytes, bytes] | None = None,
    ) -> Iterator[IndexRow]:
        lo, hi = hash_range
        entries = self.state.index_entries[iid]
        if start_after is None or tuple(start_after) < (lo,):
            low, low_inclusive = (lo,), True
        else:
            low, low_inclusive = tuple(start_after), False
        loads = orjson.loads
        for key in entries.irange(low, (hi,), (low_inclusive, False)):
            blob, size = entries[key]
            yield IndexRow(key[0], key[1], key[2], key[3], key[4], loads(blob), size)

    def stats(self, iid: int) -> tuple[int, int]:
        entries = self.state.index_entries.get(iid, {})
        return len(entries), sum(size for _blob, size in entries.values())

    def partition_stats(self, iid: int, h: int, pk: bytes) -> tuple[int, int]:
        entries = self.state.index_entries[iid]
        low, high, inclusive = partition_bounds(h, pk, None, None)
        sizes = [entries[key][1] for key in entries.irange(low, high, inclusive)]
        return len(sizes), sum(sizes)
