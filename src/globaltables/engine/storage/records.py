"""The records every store speaks in, whatever keeps them (storage/sqlite_store.py on disk or in SQLite's memory,
storage/memory_store.py in plain Python structures): item writes, stored items, change-log records, streams and
index entries, and the partition hash that orders a table the way DynamoDB's hash partitioning does.

A store is the contract the engine writes against: `ItemStore` for items, tombstones, positions, tokens and side
records (`SideChange`), `ChangeLogStore` for the change log and the stream registry, `IndexStore` for index entries.
Both implementations are held to it by the same tests (tests/engine/test_store_contract.py, and the engine tests
run on each).

Raw reads: `get`, `get_sized`, `get_record`, `get_record_sized` and `query` take `raw=True` to hand out an item as
its stored JSON bytes (orjson's serialisation of the normalised item) instead of a fresh dict, for a caller that only
serialises what it read into an answer (engine.py, `Engine.execute(encoded=True)`): decoding and encoding it again
would give back the same bytes, at a cost per item larger than the rest of a read.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

HASH_SPACE = 1 << 32


# A fresh 4-byte BLAKE2b, copied for each key: a copy costs a quarter less than making one (no parameters to parse
# and no parameter block to set up), and the hash is the same. It is never updated itself, only copied.
_BLAKE2B_4 = hashlib.blake2b(digest_size=4)


@functools.lru_cache(maxsize=1 << 14)  # a write hashes its key twice (read, then write); blake2b costs more than a hit
def partition_hash(pk: bytes) -> int:
    """A stable 32-bit hash of an encoded partition key (not Python's `hash`, which is salted per process): its
    4-byte BLAKE2b digest, read big-endian."""
    digest = _BLAKE2B_4.copy()
    digest.update(pk)
    return int.from_bytes(digest.digest(), "big")


UNKNOWN = object()  # ItemWrite.old_version when the writer did not read it; Engine.commit looks it up


@dataclass(slots=True)
class ItemWrite:
    """One item change inside a `write` batch: `item` None deletes the key; `old` is the item it replaces.

    The version fields matter for global tables only (docs/replication.md): `version` is the new version ("<hlc>/
    <region>"), stamped by `Engine.commit` for local writes and carried by replicated ones; `origin` is the region
    the write came from (None: this one); `old_version` is the version it replaces, item or tombstone, when the
    writer read it; `tombstone` makes a delete leave a tombstone; `had_tombstone` says a tombstone must go.
    """

    table: str
    pk: bytes
    sk: bytes
    item: dict | None
    size: int = 0
    old: dict | None = None
    service: bool = False  # made by DynamoDB itself (a TTL deletion): streams show it with a service identity
    version: str | None = None
    origin: str | None = None
    old_version: object = UNKNOWN
    tombstone: bool = False
    had_tombstone: bool = False
    deleted_at: float = 0.0  # wall time of a tombstoning delete (tombstones are purged after a retention)
    # The stored size of the item row this write replaces, when the writer read it in this transaction (None: no
    # item row), so the SQLite store need not read it again for its item totals; UNKNOWN: the store reads it.
    old_size: object = UNKNOWN
    reassert: bool = False  # an unchanged item written again to outrank a version elsewhere: stamped and logged
    # `item` serialised, set by the store's `write` so the commit hooks need not redo it (the SQLite store's is a
    # bytearray, which its driver binds more cheaply: sqlite_store.py `_PUT_ITEM_NO_SK`)
    blob: bytes | bytearray | None = None


@dataclass(frozen=True, slots=True)
class TokenRecord:
    """A client request token to record with a batch; records that expired by `now` are purged on the way."""

    token: str
    fingerprint: bytes
    now: float
    expires: float


# A commit hook runs inside the write transaction, after the item rows are written, with the store's open
# transaction handle and the batch; index maintenance and the change log are hooks, so they commit (or roll back)
# with the items. The handle is opaque to the hook: it passes it to its own part of the same store
# (`ChangeLogStore.append`, `IndexStore.put` / `delete`).
CommitHook = Callable[[Any, list["ItemWrite"]], None]

# One change to a side record, (space, key, value): a layer's own durable state kept beside the items (the strong
# mode's proposals and votes, replication/mrsc/store.py), opaque bytes to the store; value None deletes the record.
# Both stores list a space in key order (str order, which is UTF-8 byte order) and carry side records wherever they
# carry items: the same transactions, the same snapshot.
SideChange = tuple[str, str, bytes | None]


class StoredItem(NamedTuple):
    """One item a Query or Scan reads. A named tuple, not a frozen dataclass: a page builds one per item read, and
    a frozen dataclass's `__init__` (one `object.__setattr__` per field) cost more than the rest of the row."""

    h: int
    pk: bytes
    sk: bytes
    item: dict
    size: int


@dataclass(frozen=True, slots=True)
class LogRecord:
    """One change as stored: images are None when absent (no old image for an insert, no new one for a delete)."""

    seq: int
    created: float
    old: dict | None
    new: dict | None
    service: bool


@dataclass(slots=True)
class StreamRow:
    arn: str
    tid: int
    table_name: str
    label: str
    view_type: str
    key_schema: list[dict]
    created: float
    start_seq: int
    end_seq: int | None
    disabled: float | None

    @property
    def enabled(self) -> bool:
        return self.end_seq is None


@dataclass(frozen=True, slots=True)
class IndexRow:
    """One index entry as read back: its full key, the projected item and the projected item's size."""

    h: int
    pk: bytes
    sk: bytes
    bpk: bytes
    bsk: bytes
    item: dict
    size: int


NO_END = 1 << 62  # above every change-log sequence number


def trim_cut(
    tid: int,
    oldest: Iterable[tuple[int, float]],
    before: float,
    ceilings: dict[int, int] | None,
    horizons: dict[int, float] | None,
) -> int:
    """The greatest sequence number retention may delete from table `tid`'s change log (0: none), given its oldest
    records as (seq, created) in sequence order.

    Records are appended in clock order, so the expired ones are a prefix of the log: those created before `before`,
    or before the table's horizon in `horizons` if that is earlier (point-in-time recovery's window keeps every
    record created since), and none above the table's ceiling in `ceilings` (a global table keeps its records until
    every peer has acknowledged them, whatever their age).
    """
    oldest_kept = min(before, horizons[tid]) if horizons and tid in horizons else before
    cut = 0
    for seq, created in oldest:
        if created >= oldest_kept:
            break
        cut = seq
    if ceilings is not None and tid in ceilings:
        cut = min(cut, ceilings[tid])
    return cut
