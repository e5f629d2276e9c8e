"""Query and Scan with IndexName: which index, whether it may be read, its start keys, and what its pages return.

DynamoDB's rules, in the order it applies them:
- An unknown index: "The table does not have the specified index: <name>".
- ConsistentRead on a GSI is refused (GSIs are eventually consistent); LSIs take strongly consistent reads.
- A GSI still being created (backfilled) cannot be read.
- Without Select and ProjectionExpression an index returns ALL_PROJECTED_ATTRIBUTES (a table: ALL_ATTRIBUTES, and
  ALL_PROJECTED_ATTRIBUTES is refused on a table). Select ALL_ATTRIBUTES on a GSI that does not project all
  attributes is refused; on an LSI, DynamoDB fetches each item from the table, as it does when a projection or a
  filter needs an attribute the LSI does not hold (and charges the table reads). A GSI never fetches: attributes it
  does not project cannot be asked for (ProjectionExpression or AttributesToGet naming one is refused).
- ExclusiveStartKey/LastEvaluatedKey of an index hold the table's key and the index's key attributes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from .. import capacity
from ..errors import ValidationException, invalid_parameter
from ..expressions import Path, Projection, condition_paths
from ..expressions.paths import build_tree
from ..indexes import projected_names
from ..schema import KEY_MISMATCH, IndexDefinition, KeySchema, TableDefinition
from ..storage.records import IndexRow, partition_hash
from ..values import item_size, normalize_value
from .paging import check_query_start

GSI_CONSISTENT_READ = "Consistent reads are not supported on global secondary indexes"
STARTING_KEY_INVALID = "The provided starting key is invalid"


def index_for_read(engine, table: TableDefinition, request: dict, operation: str) -> IndexRead | None:
    """The index a Query/Scan reads (None: the table itself), after DynamoDB's checks on IndexName."""
    name = request.get("IndexName")
    if name is None:
        if request.get("Select") == "ALL_PROJECTED_ATTRIBUTES":
            verb = "Querying" if operation == "Query" else "Scanning"
            raise ValidationException(f"ALL_PROJECTED_ATTRIBUTES can be used only when {verb} using an IndexName")
        return None
    index = table.index(name)
    if index is None:
        raise ValidationException(f"The table does not have the specified index: {name}")
    if index.kind == "GSI" and request.get("ConsistentRead"):
        raise ValidationException(GSI_CONSISTENT_READ)
    if index.status == "CREATING":
        raise ValidationException(f"Cannot read from backfilling global secondary index: {name}")
    return IndexRead(engine, table, index, engine.indexes.iid(table, index), projected_names(table, index))


@dataclass
class IndexRead:
    """One Query/Scan of an index: where its rows come from and how its page is keyed and charged."""

    engine: object
    table: TableDefinition
    index: IndexDefinition
    iid: int
    names: tuple[str, ...] | None  # projected attributes; None: all
    fetch: bool = False  # LSI: read each item from the table
    fetched_bytes: int = 0
    start_key_names: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        self.start_key_names = tuple(dict.fromkeys((*self.table.key.names, *self.index.key.names)))

    @property
    def key(self) -> KeySchema:
        return self.index.key

    # --------------------------------------------------------------------------------------------- what to return

    def bind(self, plan, request: dict) -> None:
        """Apply the Select/projection rules to a read plan (after `paging.read_plan`)."""
        if self.names is None:
            return
        projected = set(self.names)
        if request.get("Select") == "ALL_ATTRIBUTES":
            if self.index.kind == "GSI":
                raise invalid_parameter(
                    f"Select type ALL_ATTRIBUTES is not supported for global secondary index {self.index.name} "
                    "because its projection type is not ALL"
                )
            self.fetch = True
            return
        wanted = {path.root for path in plan.projection} if plan.projection is not None else set()
        if self.index.kind != "LSI":
            # A GSI cannot fetch from the table: asking it for an attribute it does not hold is an error.
            missing = sorted(wanted - projected)
            if missing:
                raise invalid_parameter(
                    f"Attributes requested are not projected into global secondary index {self.index.name}: "
                    f"[{', '.join(missing)}]"
                )
            return
        if wanted - projected:
            self.fetch = True
        if plan.filter is not None and {path.root for path in condition_paths(plan.filter)} - projected:
            self.fetch = True
            if plan.projection is None:
                # The filter needs the table's item; the page still returns the projected attributes only.
                paths = tuple(Path((name,)) for name in self.names)
                plan.projection = Projection(paths, build_tree(paths))

    # ----------------------------------------------------------------------------------------------------- rows

    def query(self, pk: bytes, lower, upper, forward: bool, start_after) -> Iterator:
        rows = self.engine.indexes.store.query(self.iid, partition_hash(pk), pk, lower, upper, forward, start_after)
        return self._fetched(rows) if self.fetch else rows

    def scan(self, hash_range: tuple[int, int], start_after) -> Iterator:
        rows = self.engine.indexes.store.scan(self.iid, hash_range, start_after)
        return self._fetched(rows) if self.fetch else rows

    def _fetched(self, rows: Iterator[IndexRow]) -> Iterator[IndexRow]:
        """Rows carrying the table's item in place of the index entry (the page is still sized by the entries)."""
        get = self.engine.store.get
        name = self.table.name
        try:
            for row in rows:
                item = get(name, row.bpk, row.bsk) or row.item
                self.fetched_bytes += item_size(item)
                yield IndexRow(row.h, row.pk, row.sk, row.bpk, row.bsk, item, row.size)
        finally:
            close = getattr(rows, "close", None)
            if close is not None:
                close()

    def last_key(self, row: IndexRow) -> dict:
        item = row.item
        return {name: item[name] for name in self.start_key_names}

    # ----------------------------------------------------------------------------------------------- start keys

    def _start_key(self, start: dict) -> tuple[bytes, bytes, bytes, bytes]:
        """(index partition, index sort, table partition, table sort) of an ExclusiveStartKey, validated the way
        DynamoDB validates an index's starting key."""
        if not isinstance(start, dict) or len(start) != len(self.start_key_names):
            raise ValidationException(STARTING_KEY_INVALID)
        key = self.index.key
        values = {}
        for name, kind in (*key.hash_parts, *key.range_parts):
            if name not in start:
                raise ValidationException(STARTING_KEY_INVALID)
            try:
                value = normalize_value(start[name])
            except ValidationException as error:
                raise ValidationException(f"{STARTING_KEY_INVALID}: {error.message}") from None
            if next(iter(value)) != kind:
                raise ValidationException(KEY_MISMATCH)
            values[name] = value
        encoded = key.encode(values)  # DynamoDB's emptiness and size checks, one or several attributes a side
        try:
            bpk, bsk, _ = self.table.key.key_from_request({name: start.get(name) for name in self.table.key.names})
        except ValidationException as error:
            raise ValidationException(f"{STARTING_KEY_INVALID}: {error.message}") from None
        return encoded[0], encoded[1], bpk, bsk

    def query_start(self, start: dict | None, condition, pk: bytes, lower, upper) -> tuple | None:
        """Where a Query resumes: (index sort key, table partition key, table sort key), or None."""
        if start is None:
            return None
        start_pk, start_sk, bpk, bsk = self._start_key(start)
        check_query_start(condition.sort_op is not None, pk, lower, upper, start_pk, start_sk)
        return start_sk, bpk, bsk

    def scan_start(self, start: dict | None, hash_range: tuple[int, int], segment, total) -> tuple | None:
        """Where a Scan resumes: the full entry key after which to continue, or None."""
        if start is None:
            return None
        start_pk, start_sk, bpk, bsk = self._start_key(start)
        h = partition_hash(start_pk)
        if not hash_range[0] <= h < hash_range[1]:
            raise ValidationException(
                f"{STARTING_KEY_INVALID}: Invalid ExclusiveStartKey. Please use ExclusiveStartKey with "
                f"correct Segment. TotalSegments: {total} Segment: {segment}"
            )
        return h, start_pk, start_sk, bpk, bsk

    # ------------------------------------------------------------------------------------------------- capacity

    def charge(self, read_bytes: int, consistent: bool, h: int, pk: bytes | None = None) -> capacity.Charge:
        """Read capacity of a page: the index entries read, plus the table items an LSI read fetched."""
        fetched = self.fetched_bytes if self.fetch else None
        return capacity.read_charge(
            self.table.name, h, read_bytes, consistent, index=self.index, fetched=fetched, pk=pk
        )
