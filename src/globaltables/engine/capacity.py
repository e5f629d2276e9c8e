"""Consumed capacity, with DynamoDB's unit arithmetic, so users can estimate cost from the testbed.

- A read unit covers a strongly consistent read of up to 4 KB; an eventually consistent read costs half.
- A write unit covers a write of up to 1 KB; a write is sized by the larger of the old and new item.
- Query and Scan are sized by the total of the items they read (before any filter), rounded up once.
- Transactions cost double.
"""

from __future__ import annotations

import math

READ_UNIT_BYTES = 4096
WRITE_UNIT_BYTES = 1024


def read_units(size: int, consistent: bool, transactional: bool = False) -> float:
    units = max(1, math.ceil(size / READ_UNIT_BYTES))
    if transactional:
        return units * 2.0
    return float(units) if consistent else units / 2


def write_units(size: int, transactional: bool = False) -> float:
    units = max(1, math.ceil(size / WRITE_UNIT_BYTES))
    return float(units * 2 if transactional else units)


def consumed(
    mode: str | None, table: str, units: float, kind: str, index_units: dict[str, float] | None = None
) -> dict | None:
    """The ConsumedCapacity structure for one table; `kind` is "read" or "write"."""
    if mode not in ("TOTAL", "INDEXES"):
        return None
    key = "ReadCapacityUnits" if kind == "read" else "WriteCapacityUnits"
    total = units + sum((index_units or {}).values())
    out: dict = {"TableName": table, "CapacityUnits": total, key: total}
    if mode == "INDEXES":
        out["Table"] = {"CapacityUnits": units, key: units}
        gsis = {name: {"CapacityUnits": u, key: u} for name, u in (index_units or {}).items()}
        if gsis:
            out["GlobalSecondaryIndexes"] = gsis
    return out
