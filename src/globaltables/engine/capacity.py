"""Consumed capacity, with DynamoDB's unit arithmetic, so users can estimate cost from the testbed.

Units
- A read unit covers a strongly consistent read of up to 4 KB; an eventually consistent read costs half.
- A write unit covers a write of up to 1 KB; a write is sized by the larger of the old and new item.
- Every item operation costs at least one unit (a read of a missing item, a delete of a missing item).
- Query and Scan are sized by the total of the items they read (before any filter), rounded up once.
- BatchGetItem and BatchWriteItem cost what their single-item requests would, summed per table.
- Transactions cost double.
- A write also writes every secondary index whose entry it creates, changes or removes: one write sized by the
  index entry, two when the index key changes (the old entry is deleted, the new one put).

One accounting (a `Charge`)
- Every request's units are computed once, as a `Charge`: the units of the table and of each secondary index, and
  where they land (the partition hash of the table's or the global index's partition key). ReturnConsumedCapacity
  reports `Charge.consumed`, and the throughput model (throughput.py) draws exactly those units from its buckets,
  so what a client is told it consumed is what it was throttled by.
- A failed conditional write consumes the size of the existing item, or 1 unit if there is none (docs/capacity.md,
  decision 7); it writes no index.

The response structure (`ConsumedCapacity`)
- TOTAL: {"TableName": t, "CapacityUnits": total}; the total includes the indexes' units.
- INDEXES: the same plus "Table": {"CapacityUnits": u} and, for each index touched, "GlobalSecondaryIndexes" /
  "LocalSecondaryIndexes": {name: {"CapacityUnits": u}}.
- Only transactions add "ReadCapacityUnits"/"WriteCapacityUnits" beside "CapacityUnits" (at every level), as
  DynamoDB's transaction responses do; the single-item, batch, Query and Scan responses carry "CapacityUnits" alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .indexes import index_key, project_item, projected_names
from .storage.records import partition_hash
from .values import item_size

READ_UNIT_BYTES = 4096
WRITE_UNIT_BYTES = 1024
CAPACITY_MODES = frozenset({"TOTAL", "INDEXES"})


def read_units(size: int, consistent: bool, transactional: bool = False) -> float:
    units = max(1, math.ceil(size / READ_UNIT_BYTES))
    if transactional:
        return units * 2.0
    return float(units) if consistent else units / 2


def write_units(size: int, transactional: bool = False) -> float:
    units = max(1, math.ceil(size / WRITE_UNIT_BYTES))
    return float(units * 2 if transactional else units)


def wanted(mode: str | None) -> bool:
    """Whether the request asked for ConsumedCapacity (so the work of computing it is worth doing)."""
    return mode in CAPACITY_MODES


def consumed(
    mode: str | None,
    table: str,
    units: float,
    kind: str,
    index_units: dict[str, float] | None = None,
    local_index_units: dict[str, float] | None = None,
    transactional: bool = False,
) -> dict | None:
    """The ConsumedCapacity structure for one table; `kind` is "read" or "write".

    `units` are the table's own units; `index_units` / `local_index_units` map global / local secondary index names
    to theirs.
    """
    if mode not in CAPACITY_MODES:
        return None
    split = ("ReadCapacityUnits" if kind == "read" else "WriteCapacityUnits") if transactional else None
    total = units
    if index_units:
        total += sum(index_units.values())
    if local_index_units:
        total += sum(local_index_units.values())
    out: dict = {"TableName": table, "CapacityUnits": total}
    if split:
        out[split] = total
    if mode == "INDEXES":
        out["Table"] = _capacity(units, split)
        if local_index_units:
            out["LocalSecondaryIndexes"] = {name: _capacity(u, split) for name, u in local_index_units.items()}
        if index_units:
            out["GlobalSecondaryIndexes"] = {name: _capacity(u, split) for name, u in index_units.items()}
    return out


def _capacity(units: float, split: str | None) -> dict:
    return {"CapacityUnits": units, split: units} if split else {"CapacityUnits": units}


# ------------------------------------------------------------------------------------------------ index writes


def index_write_units(table, old: dict | None, new: dict | None) -> tuple[dict[str, float], dict[str, float]]:
    """Write units a change of one item costs on each secondary index: (global, local), by index name.

    An item belongs to an index when it holds every attribute of the index's key. Putting an entry or deleting one
    costs one write of the entry's size; changing the index key costs both; changing only projected attributes
    costs one write of the larger entry; a change the index does not see costs nothing.
    """
    gsi: dict[str, float] = {}
    lsi: dict[str, float] = {}
    for indexes, out in ((table.gsis, gsi), (table.lsis, lsi)):
        for index in indexes:
            units = sum(u for _key, u in _index_parts(table, index, old, new))
            if units:
                out[index.name] = units
    return gsi, lsi


def _index_parts(table, index, old: dict | None, new: dict | None) -> list[tuple[tuple[bytes, bytes], float]]:
    """(index key (partition, sort), units) of each entry a change of one item writes in an index: none, one, or
    two (the old entry deleted and the new one put when the index key changes)."""
    old_key = index_key(index, old, strict=False)
    new_key = index_key(index, new, strict=False)
    if old_key is None and new_key is None:
        return []
    names = projected_names(table, index)
    before = project_item(old, names) if old_key is not None else None
    after = project_item(new, names) if new_key is not None else None
    if before is None:
        return [(new_key, write_units(item_size(after)))]
    if after is None:
        return [(old_key, write_units(item_size(before)))]
    if old_key != new_key:
        return [(old_key, write_units(item_size(before))), (new_key, write_units(item_size(after)))]
    if before == after:
        return []
    return [(new_key, write_units(max(item_size(before), item_size(after))))]


# ---------------------------------------------------------------------------------------------------- charges


@dataclass(slots=True)
class Charge:
    """What one request consumed on one table, and where: the single source of ReturnConsumedCapacity and of the
    units the throughput model draws.

    `places` lists (global index name, or None for the table, partition hash, units, encoded partition key,
    encoded sort key): every unit of `units`, `gsi` and `lsi` appears there exactly once; local index units land
    on the table's partition (an LSI shares the table's partitions and capacity). The keys are what Contributor
    Insights counts (contributor_insights.py); a partition key None is a charge no key is blamed for (a Scan page),
    a sort key None one with no sort key to blame (a Query page, a table without a sort key).
    """

    table: str
    kind: str  # "read" or "write"
    units: float = 0.0
    gsi: dict[str, float] = field(default_factory=dict)
    lsi: dict[str, float] = field(default_factory=dict)
    transactional: bool = False
    places: list[tuple[str | None, int, float, bytes | None, bytes | None]] = field(default_factory=list)

    @property
    def total(self) -> float:
        total = self.units
        if self.gsi:
            total += sum(self.gsi.values())
        if self.lsi:
            total += sum(self.lsi.values())
        return total

    def consumed(self, mode: str | None) -> dict | None:
        return consumed(
            mode, self.table, self.units, self.kind, self.gsi or None, self.lsi or None, self.transactional
        )

    def add(self, other: Charge) -> None:
        """Another charge of the same table and kind, summed into this one (a batch's items)."""
        self.units += other.units
        for mine, theirs in ((self.gsi, other.gsi), (self.lsi, other.lsi)):
            for name, u in theirs.items():
                mine[name] = mine.get(name, 0.0) + u
        self.places.extend(other.places)


def item_write_charge(
    table,
    pk: bytes,
    old: dict | None,
    new: dict | None,
    size: int,
    transactional: bool = False,
    sk: bytes | None = None,
    old_size: int | None = None,
) -> Charge:
    """One item write (`size`: the new item's, 0 for a delete): the larger of the old and new item, plus each
    secondary index the change writes; doubled in a transaction. `old_size` is the old item's stored size when
    the caller has it (else it is measured); `sk` the item's encoded sort key, for Contributor Insights."""
    factor = 2.0 if transactional else 1.0
    if old_size is None:
        old_size = 0 if old is None else item_size(old)
    units = write_units(max(size, old_size), transactional)
    h = partition_hash(pk)
    charge = Charge(table.name, "write", units, transactional=transactional)
    on_table = units
    for index in table.lsis:
        u = sum(part for _key, part in _index_parts(table, index, old, new)) * factor
        if u:
            charge.lsi[index.name] = u
            on_table += u
    charge.places.append((None, h, on_table, pk, sk or None))
    for index in table.gsis:
        parts = _index_parts(table, index, old, new)
        if parts:
            charge.gsi[index.name] = sum(u for _key, u in parts) * factor
            charge.places.extend(
                (index.name, partition_hash(ipk), u * factor, ipk, isk or None) for (ipk, isk), u in parts
            )
    return charge


def failed_write_charge(
    table, pk: bytes, old: dict | None, transactional: bool = False, sk: bytes | None = None
) -> Charge:
    """A conditional write whose condition failed: the existing item's size (the minimum without one)."""
    units = write_units(0 if old is None else item_size(old), transactional)
    places = [(None, partition_hash(pk), units, pk, sk or None)]
    return Charge(table.name, "write", units, transactional=transactional, places=places)


def read_charge(
    table_name: str,
    h: int,
    size: int,
    consistent: bool,
    transactional: bool = False,
    index=None,
    fetched: int | None = None,
    pk: bytes | None = None,
    sk: bytes | None = None,
) -> Charge:
    """A read of `size` bytes at partition hash `h`: of the table, or of `index` (a GSI on its own capacity, an LSI
    on the table's, plus `fetched` bytes of table items an LSI read fetched). `pk` / `sk`: the encoded key read,
    for Contributor Insights."""
    units = read_units(size, consistent, transactional)
    sk = sk or None
    if index is None:
        return Charge(table_name, "read", units, transactional=transactional, places=[(None, h, units, pk, sk)])
    table_units = read_units(fetched, consistent) if fetched is not None else 0.0
    if index.kind == "GSI":
        places = [(index.name, h, units, pk, sk)]
        return Charge(table_name, "read", table_units, gsi={index.name: units}, places=places)
    places = [(None, h, table_units + units, pk, sk)]
    return Charge(table_name, "read", table_units, lsi={index.name: units}, places=places)


def add_up(structures: list[dict | None]) -> list[dict]:
    """ConsumedCapacity structures summed per table (first-seen order), every unit field at every level added: what
    a PartiQL statement run as several item operations consumed in all."""
    by_table: dict[str, dict] = {}
    for structure in structures:
        if not structure:
            continue
        into = by_table.setdefault(structure["TableName"], {})
        _add_into(into, structure)
    return list(by_table.values())


def _add_into(into: dict, structure: dict) -> None:
    for name, value in structure.items():
        if isinstance(value, dict):
            _add_into(into.setdefault(name, {}), value)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            into[name] = into.get(name, 0.0) + value
        else:
            into[name] = value
