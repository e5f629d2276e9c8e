"""Point-in-time recovery: the restorable window of a table and its exact items at any instant of it.

Why exact: an operator restores "to a second before the bad deploy", and the restored table must hold what the
source held at that instant, including items that were later overwritten or deleted, whether by a local write, a
TTL deletion or a write replicated from another region.

Theory of operation
- A table with point-in-time recovery is always logged (change_log.py): every effective change to its items, local
  or replicated, appends a record with the full old and new images and the engine clock's time, in the same store
  transaction as the change. Retention keeps every record from the earliest restorable time on.
- The items at instant T are the current items with every record stamped later than T undone, newest first: a
  record's old image is put back (or, for an insert, the item removed). Undoing walks back from the present, so no
  snapshot is needed and the answer is exact for any T the log covers.
- "Later than T" is a suffix of the log: from the first record stamped after T (a region's clock can be stepped
  back by chaos; the log's order, which is commit order, is what counts).
- The window (DescribeContinuousBackups, RestoreTableToPointInTime): from max(the time recovery was enabled, now
  minus the recovery period) to now. DynamoDB documents LatestRestorableDateTime as typically five minutes before
  the current time; here the log is written with the items, so the latest restorable time is the present.

Sources: RestoreTableToPointInTime in the DynamoDB API reference ("Restores the specified table to the specified
point in time within EarliestRestorableDateTime and LatestRestorableDateTime"; recovery period 1 to 35 days);
"Point-in-time recovery for DynamoDB" in the developer guide.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .schema import TableDefinition

if TYPE_CHECKING:
    from .engine import Engine

READ_CHUNK = 5000


def earliest_restorable(pitr: dict, now: float) -> float:
    """The earliest instant a restore can reach: recovery enabled since `Since`, for `RecoveryPeriodInDays`."""
    return max(pitr["Since"], now - pitr["RecoveryPeriodInDays"] * 86400)


def latest_restorable(pitr: dict, now: float) -> float:
    return max(earliest_restorable(pitr, now), now)


def items_at(engine: Engine, table: TableDefinition, moment: float) -> list[dict]:
    """The table's items as they were at `moment` (within the restorable window), in no particular order."""
    store = engine.store
    state: dict[tuple[bytes, bytes], dict] = {
        (pk, sk): item for pk, sk, item, _version in store.table_records(table.name)
    }
    tid = store.table_id(table.name)
    log = engine.change_log.store
    later = []
    first = log.trimmed(tid) + 1
    while True:
        chunk = list(log.read(tid, first, None, READ_CHUNK))
        for record in chunk:
            if later or record.created > moment:
                later.append(record)
        if len(chunk) < READ_CHUNK:
            break
        first = chunk[-1].seq + 1
    key = table.key
    for record in reversed(later):
        image = record.new if record.new is not None else record.old
        at = key.encode(image)
        if record.old is None:
            state.pop(at, None)
        else:
            state[at] = record.old
    return list(state.values())
