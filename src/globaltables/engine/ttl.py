"""Time to live: the sweeper that deletes expired items of tables with TTL enabled.

Theory of operation
- An item is expired when its TTL attribute is a Number (epoch seconds) not after the engine clock's now. Any other
  type (a string, a set, a map) is never expired, as in DynamoDB; nor is a value more than five years in the past
  (DynamoDB skips those, so that a TTL attribute holding, say, a small counter does not wipe a table).
- Deletion is not instant: `sweep` is a bounded step (at most `scan_budget` items examined and `limit` deleted)
  that the region server runs every `--ttl-sweep-interval` seconds, repeating it until a pass over every TTL table
  is complete (`pass_complete`), yielding to requests between steps. Until then readers may still see expired
  items, as in DynamoDB.
- A TTL deletion consumes no capacity and goes through the single write path (`Engine.commit`) marked as a
  service deletion (`ItemWrite.service`): the change log records it as a REMOVE by DynamoDB itself, which streams
  show with the service identity, and indexes drop the item like any delete.
- The decision and the delete happen in one synchronous step on the engine's thread, so the item deleted is the
  item that was found expired. (Under replication a TTL delete arriving from another region must re-check the
  stored item's TTL when it is applied; that is the replication applier's job.)
- An item held by an injected in-flight transaction (engine.faults) is left for a later pass.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from .storage.records import ItemWrite

if TYPE_CHECKING:
    from ..runtime.clock import Clock
    from .faults import Faults
    from .schema import TableDefinition

SCAN_BUDGET = 1000  # items examined per sweep step: a few milliseconds
MAX_AGE_S = 5 * 365 * 24 * 3600  # TTL values further in the past than this are ignored


def expired(value: dict | None, now: float) -> bool:
    """Whether a TTL attribute value (wire form) is an epoch-seconds Number in the past (and not ancient)."""
    if value is None:
        return False
    text = value.get("N")
    if text is None:
        return False
    try:
        seconds = Decimal(text)
    except InvalidOperation:
        return False
    return now - MAX_AGE_S <= seconds <= now  # exact Decimal/float comparison


class TtlSweeper:
    """Walks the tables with TTL enabled in bounded steps, deleting expired items."""

    def __init__(
        self,
        store: Any,
        clock: Clock,
        tables: Mapping[str, TableDefinition],
        faults: Faults,
        commit: Callable[[list[ItemWrite]], object],
    ) -> None:
        """`tables`: the engine's table registry (read live); `commit`: the engine's commit pipeline, through which
        every deletion goes (stamped, logged and replicated like any write)."""
        self._store = store
        self._clock = clock
        self._tables = tables
        self._faults = faults
        self._commit = commit
        self.scan_budget = SCAN_BUDGET
        self.pass_complete = True  # whether the last step finished a pass over every TTL table
        self._table: str | None = None  # the table the current pass is in (None: start a new pass)
        self._resume: tuple[int, bytes, bytes] | None = None  # the last item examined in that table

    def expired(self, definition: TableDefinition, item: dict) -> bool:
        """Whether the item has expired by this region's clock under the table's TTL setting. A replicated TTL
        deletion applies only where this holds (each replica sweeps; a later update that extended the
        expiry must not be undone by a deletion made for the old one)."""
        ttl = definition.ttl
        if not ttl or ttl.get("TimeToLiveStatus") != "ENABLED":
            return False
        return expired(item.get(ttl["AttributeName"]), self._clock.wall_time())

    def _ttl_tables(self) -> list[tuple[str, str]]:
        """(table name, TTL attribute name) of every table with TTL enabled, in name order."""
        return sorted(
            (definition.name, definition.ttl["AttributeName"])
            for definition in self._tables.values()
            if definition.ttl and definition.ttl.get("TimeToLiveStatus") == "ENABLED"
        )

    def sweep(self, limit: int) -> int:
        """One bounded step of the sweep; how many items it deleted. Sets `pass_complete` when the step finished
        a pass over every TTL table (the next step starts a new pass)."""
        now = self._clock.wall_time()
        attributes = dict(self._ttl_tables())
        names = sorted(attributes)
        if self._table not in attributes:
            # Start a pass at the first table, or, when the table being swept lost its TTL or was deleted,
            # carry on with the next one.
            current = self._table
            self._table = names[0] if current is None and names else _after(names, current)
            self._resume = None
        budget = self.scan_budget
        deleted = 0
        faults = self._faults if self._faults.held else None
        while self._table is not None and budget > 0 and deleted < limit:
            name = self._table
            attribute = attributes[name]
            expired_items = []
            finished = True
            scan = self._store.scan(name, start_after=self._resume)
            try:
                for stored in scan:
                    budget -= 1
                    self._resume = (stored.h, stored.pk, stored.sk)
                    if expired(stored.item.get(attribute), now) and (
                        faults is None or not faults.is_held(name, stored.pk, stored.sk)
                    ):
                        expired_items.append(stored)
                    if budget <= 0 or deleted + len(expired_items) >= limit:
                        finished = False
                        break
            finally:
                scan.close()
            if expired_items:
                self._commit([ItemWrite(name, s.pk, s.sk, None, 0, s.item, service=True) for s in expired_items])
                deleted += len(expired_items)
            if finished:
                self._table = _after(names, name)
                self._resume = None
        self.pass_complete = self._table is None
        return deleted


def _after(names: list[str], name: str | None) -> str | None:
    """The first of the (sorted) names after `name`; None at the end of the pass."""
    if name is None:
        return None
    return next((other for other in names if other > name), None)
