"""Secondary index maintenance: every item write becomes index deltas, inside the write's own transaction.

Theory of operation
- `IndexManager.on_commit` is a step of the engine's commit pipeline (`Engine.commit`), run as a store commit hook:
  for each item write (old image -> new image) on a table with indexes it deletes the entry the old image had and
  puts the entry the new image has, in every index, before the transaction commits. Writes that change nothing an index holds (same index key, same projected attributes)
  do not touch it. Writers must fill `ItemWrite.old` on tables with indexes: the hook runs after the item rows are
  replaced and cannot read the previous version any more.
- Sparse: an item lacking an index key attribute has no entry in that index. A multi-attribute GSI key (up to four
  HASH and four RANGE attributes) needs every one of its attributes; lacking any one leaves the item out. Its entry
  keys are the tuple encodings `schema.KeySchema` describes, so the store holds and orders them like any key.
- An item whose index key attribute has the wrong type, or an empty string/binary value, is refused with DynamoDB's
  ValidationException (the hook raises, the transaction rolls back, nothing changes) when the index is ACTIVE.
  While a GSI is being created such items are skipped instead, as DynamoDB's backfill skips index key violations.
- GSIs are eventually consistent in DynamoDB: the base write is acknowledged before the index is updated. Here they
  are updated in the same transaction. That is one allowed outcome of eventual consistency (a reader can never
  observe a GSI ahead of its table, and "lag zero" is a lag), it keeps the index exact across crashes without a
  replay log, and it costs one or two SQL statements per index per write. The contract clients can rely on is
  kept: ConsistentRead on a GSI is refused (see `operations/index_reads.py`).
- LSIs share the table's partition key, so every partition's items plus their LSI entries form an item collection,
  which may not grow beyond `item_collection_limit` (10 GB; an attribute so tests can lower it).
- GSIs created by UpdateTable start CREATING. Their backfill runs in chunks from `step()`, which the region server
  calls from a background task between requests (and engine tests call directly): the first chunk sets
  Backfilling, the last one makes the index ACTIVE. Entries of deleted indexes (and of dropped tables) are purged
  the same way, so neither UpdateTable nor DeleteTable blocks the event loop on a large table.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from .errors import ItemCollectionSizeLimitExceededException, ValidationException, invalid_parameter
from .schema import (
    HASH_KEY_TOO_LONG,
    MAX_PARTITION_KEY_BYTES,
    MAX_SORT_KEY_BYTES,
    RANGE_KEY_TOO_LONG,
    IndexDefinition,
    TableDefinition,
)
from .storage.records import HASH_SPACE, ItemWrite, partition_hash
from .values import encode_key_value, item_size, join_key_bytes

ITEM_COLLECTION_LIMIT_BYTES = 10 * 1024**3
# DynamoDB counts 100 bytes of overhead per index entry in index and item-collection sizes.
INDEX_ENTRY_OVERHEAD = 100
BACKFILL_CHUNK = 500  # base items per background step: a few milliseconds of work
PURGE_CHUNK = 2000  # index entries deleted per background step
GIB = float(1024**3)

COLLECTION_SIZE_EXCEEDED = "Collection size exceeded."


# ------------------------------------------------------------------------------------------------- index entries


def projected_names(table: TableDefinition, index: IndexDefinition) -> tuple[str, ...] | None:
    """The attributes an index projects; None when it projects them all."""
    if index.projection_type == "ALL":
        return None
    names = dict.fromkeys((*table.key.names, *index.key.names))
    if index.projection_type == "INCLUDE":
        names.update(dict.fromkeys(index.non_key_attributes))
    return tuple(names)


def project_item(item: dict, names: tuple[str, ...] | None) -> dict:
    if names is None:
        return item
    return {name: item[name] for name in names if name in item}


def index_key(index: IndexDefinition, item: dict | None, strict: bool) -> tuple[bytes, bytes] | None:
    """The encoded (partition, sort) key of `item` in `index`; None when the item is not in the index.

    `strict` raises DynamoDB's ValidationException for a value that cannot be an index key (wrong type, empty,
    too long); otherwise such an item is simply left out, as a backfill leaves out index key violations.
    """
    if item is None:
        return None
    key = index.key
    if key.more_hash or key.more_range:
        return _multi_attribute_key(index, item, strict)
    hash_value = item.get(key.hash_name)
    if hash_value is None:
        return None
    range_value = None
    if key.range_name is not None:
        range_value = item.get(key.range_name)
        if range_value is None:
            return None
    if next(iter(hash_value)) != key.hash_type or (
        range_value is not None and next(iter(range_value)) != key.range_type
    ):
        if not strict:
            return None
        check_types(index, item)
    pk = _encoded(index, key.hash_name, hash_value, MAX_PARTITION_KEY_BYTES, strict)
    if pk is None:
        return None
    if range_value is None:
        return pk, b""
    sk = _encoded(index, key.range_name, range_value, MAX_SORT_KEY_BYTES, strict)
    return None if sk is None else (pk, sk)


def _multi_attribute_key(index: IndexDefinition, item: dict, strict: bool) -> tuple[bytes, bytes] | None:
    """`index_key` of a multi-attribute key. Every component present is checked (type, emptiness) before a missing
    one leaves the item out, so a bad value is refused even while the item is not yet in the index."""
    key = index.key
    sides = []
    for parts, limit in ((key.hash_parts, MAX_PARTITION_KEY_BYTES), (key.range_parts, MAX_SORT_KEY_BYTES)):
        raws: list[bytes | None] = []
        for name, expected in parts:
            value = item.get(name)
            if value is None:
                raws.append(None)
                continue
            if next(iter(value)) != expected:
                if not strict:
                    return None
                check_types(index, item)
            raw = _encoded(index, name, value, None, strict)
            if raw is None:
                return None
            raws.append(raw)
        sides.append((parts, raws, limit))
    encoded = []
    for parts, raws, limit in sides:
        if None in raws:
            return None
        size = sum(len(raw) for (_name, kind), raw in zip(parts, raws, strict=True) if kind != "N")
        if size > limit:
            if not strict:
                return None
            raise invalid_parameter(HASH_KEY_TOO_LONG if limit == MAX_PARTITION_KEY_BYTES else RANGE_KEY_TOO_LONG)
        encoded.append(raws[0] if len(raws) == 1 else join_key_bytes(raws))  # no sort key: b""
    return encoded[0], encoded[1]


def check_types(index: IndexDefinition, item: dict) -> None:
    for name, expected in (*index.key.hash_parts, *index.key.range_parts):
        value = item.get(name)
        if value is not None and next(iter(value)) != expected:
            raise invalid_parameter(
                f"Type mismatch for Index Key {name} Expected: {expected} Actual: {next(iter(value))} "
                f"IndexName: {index.name}"
            )


def _encoded(index: IndexDefinition, name: str, value: dict, limit: int | None, strict: bool) -> bytes | None:
    """An index key value's bytes, after the emptiness check and (unless `limit` is None) the size check."""
    kind, inner = next(iter(value.items()))
    if kind in ("S", "B") and inner == "":
        if not strict:
            return None
        type_word = "string" if kind == "S" else "binary"
        raise ValidationException(
            "One or more parameter values are not valid. A value specified for a secondary index key is not "
            f"supported. The AttributeValue for a key attribute cannot contain an empty {type_word} value. "
            f"IndexName: {index.name}, IndexKey: {name}"
        )
    encoded = encode_key_value(value)
    if limit is not None and kind != "N" and len(encoded) > limit:
        if not strict:
            return None
        raise invalid_parameter(HASH_KEY_TOO_LONG if limit == MAX_PARTITION_KEY_BYTES else RANGE_KEY_TOO_LONG)
    return encoded


# --------------------------------------------------------------------------------------------------- the manager


class IndexManager:
    """The index state of one engine: index ids, the commit hook, backfills and purges."""

    def __init__(
        self, store: Any, tables: Mapping[str, TableDefinition], save_table: Callable[[TableDefinition], None]
    ) -> None:
        """`store`: the engine's store (the index entries live in its `index_store()`); `tables`: the engine's
        table registry (read live); `save_table`: how a backfill's end (the index ACTIVE) is saved, the engine's."""
        self._items = store
        self._tables = tables
        self._save_table = save_table
        self.store = store.index_store()
        self.item_collection_limit = ITEM_COLLECTION_LIMIT_BYTES
        self.backfill_chunk = BACKFILL_CHUNK
        self.purge_chunk = PURGE_CHUNK
        self._ids = self.store.live_ids()
        # (table uuid, index name) -> projected attribute names (None: ALL), so writes need not rebuild them.
        self._projections: dict[tuple[str, str], tuple[str, ...] | None] = {}
        self._purges = self.store.dropped_ids()
        # (table name, index name) -> resume point (h, pk, sk) of the backfill scan; None: from the start. After a
        # restart a backfill starts over: re-putting an entry is idempotent.
        self._backfills: dict[tuple[str, str], tuple | None] = {}
        self._indexed: set[str] = set()  # names of tables with at least one index: the hook skips the others
        for table in tables.values():
            self._register(table)
            for index in table.gsis:
                if index.status == "CREATING":
                    self._backfills[(table.name, index.name)] = None

    # --------------------------------------------------------------------------------------- table lifecycle

    def table_saved(self, previous: TableDefinition | None, definition: TableDefinition) -> None:
        """Called before a definition is stored: new GSIs of an existing table start CREATING (to be
        backfilled); removed indexes are retired and purged."""
        if previous is not None:
            before = {index.name for index in (*previous.gsis, *previous.lsis)}
            after = {index.name for index in (*definition.gsis, *definition.lsis)}
            for index in definition.gsis:
                if index.name not in before:
                    index.status = "CREATING"
                    index.backfilling = False
                    self._backfills[(definition.name, index.name)] = None
            for name in before - after:
                self._retire(definition.table_id, name)
                self._backfills.pop((definition.name, name), None)
        self._register(definition)

    def table_dropped(self, definition: TableDefinition) -> None:
        for index in (*definition.gsis, *definition.lsis):
            self._retire(definition.table_id, index.name)
            self._backfills.pop((definition.name, index.name), None)
        self._indexed.discard(definition.name)

    def _register(self, table: TableDefinition) -> None:
        indexes = (*table.gsis, *table.lsis)
        for index in indexes:
            key = (table.table_id, index.name)
            if key not in self._ids:
                self._ids[key] = self.store.create_id(table.table_id, index.name)
            self._projections[key] = projected_names(table, index)
        if indexes:
            self._indexed.add(table.name)
        else:
            self._indexed.discard(table.name)

    def _retire(self, table_uuid: str, name: str) -> None:
        self._projections.pop((table_uuid, name), None)
        iid = self._ids.pop((table_uuid, name), None)
        if iid is not None:
            self.store.drop_id(iid)
            self._purges.append(iid)

    def iid(self, table: TableDefinition, index: IndexDefinition) -> int:
        return self._ids[(table.table_id, index.name)]

    # ------------------------------------------------------------------------------------------------ write path

    def may_refuse(self, writes: list[ItemWrite]) -> bool:
        """Whether `on_commit` may refuse this batch (an index key's check, an item collection's limit): only a
        write to a table with an index can be refused."""
        indexed = self._indexed
        if indexed:
            for write in writes:
                if write.table in indexed:
                    return True
        return False

    def on_commit(self, tx: Any, writes: list[ItemWrite]) -> None:
        indexed = self._indexed
        tables = self._tables
        for write in writes:
            if write.table in indexed:
                self._maintain(tx, tables[write.table], write)

    def _maintain(self, tx: Any, table: TableDefinition, write: ItemWrite) -> None:
        old, new = write.old, write.item
        bpk, bsk = write.pk, write.sk
        ids, projections = self._ids, self._projections
        for index in (*table.gsis, *table.lsis):
            key = (table.table_id, index.name)
            iid = ids[key]
            old_key = index_key(index, old, strict=False)
            new_key = index_key(index, new, strict=index.status == "ACTIVE")
            if old_key is not None and old_key != new_key:
                self.store.delete(tx, iid, (partition_hash(old_key[0]), *old_key, bpk, bsk))
            if new_key is None:
                continue
            names = projections[key]
            entry = project_item(new, names)
            if old_key == new_key and project_item(old, names) == entry:
                continue  # nothing this index holds changed
            size = write.size if names is None else item_size(entry)
            self.store.put(tx, iid, (partition_hash(new_key[0]), *new_key, bpk, bsk), entry, size)
        if table.lsis and new is not None and (old is None or write.size > item_size(old)):
            self._check_collection(table, bpk)

    def _check_collection(self, table: TableDefinition, pk: bytes) -> None:
        """Refuse a write that grew an item collection beyond the limit (writes that shrink one stay allowed)."""
        if self.collection_bytes(table, pk) > self.item_collection_limit:
            raise ItemCollectionSizeLimitExceededException(COLLECTION_SIZE_EXCEEDED)

    # ------------------------------------------------------------------------------------------------ statistics

    def stats(self, table: TableDefinition, index: IndexDefinition) -> tuple[int, int]:
        """(item count, bytes) of an index, as DescribeTable reports them (entries plus per-entry overhead)."""
        iid = self._ids.get((table.table_id, index.name))
        if iid is None:
            return 0, 0
        count, size = self.store.stats(iid)
        return count, size + count * INDEX_ENTRY_OVERHEAD

    def collection_bytes(self, table: TableDefinition, pk: bytes) -> int:
        """Size of an item collection: its items plus their entries in every LSI."""
        total = self._items.partition_bytes(table.name, pk)
        h = partition_hash(pk)
        for index in table.lsis:
            count, size = self.store.partition_stats(self.iid(table, index), h, pk)
            total += size + count * INDEX_ENTRY_OVERHEAD
        return total

    def collection_metrics(self, table: TableDefinition, key: dict, pk: bytes) -> dict:
        """ItemCollectionMetrics of the collection holding `key`: its partition key and a 1 GB wide estimate."""
        gigabytes = self.collection_bytes(table, pk) / GIB
        lower = float(math.floor(gigabytes))
        return {
            "ItemCollectionKey": {table.key.hash_name: key[table.key.hash_name]},
            "SizeEstimateRangeGB": [lower, lower + 1.0],
        }

    # ----------------------------------------------------------------------------------------- background work

    @property
    def pending_work(self) -> bool:
        return bool(self._purges or self._backfills)

    def backfill_progress(self, table_name: str, index_name: str) -> float | None:
        """How far a GSI's backfill is, 0 to 100 (OnlineIndexPercentageProgress), or None when none runs: the
        partition-hash position it resumes from, out of the hash space it scans in order (hashes are uniform)."""
        if (table_name, index_name) not in self._backfills:
            return None
        resume = self._backfills[(table_name, index_name)]
        return 0.0 if resume is None else resume[0] * 100.0 / HASH_SPACE

    def step(self) -> bool:
        """Do one bounded chunk of background work (purge or backfill); whether work remains."""
        if self._purges:
            iid = self._purges[0]
            if self.store.purge(iid, self.purge_chunk) < self.purge_chunk:
                self._purges.pop(0)
        elif self._backfills:
            self._backfill_chunk()
        return self.pending_work

    def _backfill_chunk(self) -> None:
        (table_name, index_name), resume = next(iter(self._backfills.items()))
        table = self._tables.get(table_name)
        index = table.index(index_name) if table is not None else None
        if index is None or index.status != "CREATING":
            del self._backfills[(table_name, index_name)]
            return
        if not index.backfilling:
            index.backfilling = True
            self._save_table(table)
        iid = self.iid(table, index)
        names = projected_names(table, index)
        rows = []
        read = 0
        last = resume
        scan = self._items.scan(table_name, start_after=resume)
        try:
            for stored in scan:
                read += 1
                last = (stored.h, stored.pk, stored.sk)
                key = index_key(index, stored.item, strict=False)
                if key is not None:
                    entry = project_item(stored.item, names)
                    size = stored.size if names is None else item_size(entry)
                    rows.append((iid, partition_hash(key[0]), *key, stored.pk, stored.sk, orjson.dumps(entry), size))
                if read >= self.backfill_chunk:
                    break
        finally:
            scan.close()
        if rows:
            self.store.put_many(rows)
        if read < self.backfill_chunk:
            index.status = "ACTIVE"
            index.backfilling = False
            self._save_table(table)
            del self._backfills[(table_name, index_name)]
        else:
            self._backfills[(table_name, index_name)] = last
