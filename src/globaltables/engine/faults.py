"""Injected faults: the only way a single region ever reports a transaction conflict.

A region runs its engine on one event loop, one operation at a time, so no two writes ever overlap and a real
transaction conflict cannot happen inside one region. Users still need to see how their code copes with
TransactionConflict, so a test (later through a secret-protected control endpoint) can mark items as "held by an
in-flight transaction", until released or for a duration on the engine's clock. While an item is held:
- PutItem, UpdateItem and DeleteItem on it fail with TransactionConflictException;
- TransactWriteItems and TransactGetItems touching it are cancelled with the reason TransactionConflict.
Reads (GetItem, Query, Scan) are not affected, as in DynamoDB: they see the last committed version.

Cost when no fault is set: the write path tests `faults.held` (an empty dict) and moves on.
"""

from __future__ import annotations

from typing import Any

from ..runtime.clock import Clock
from .errors import TransactionConflictException

# The message DynamoDB uses both for TransactionConflictException and for the cancellation reason.
TRANSACTION_CONFLICT_MESSAGE = "Transaction is ongoing for the item"

ItemId = tuple[str, bytes, bytes]  # (table name, encoded partition key, encoded sort key)


class Faults:
    """Faults injected into one engine. Empty unless a test asks for something."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        # Items held by a pretend in-flight transaction -> monotonic deadline, or None (held until released).
        self.held: dict[ItemId, float | None] = {}

    # -------------------------------------------------------------------------------------------------- controls

    def hold_item(self, table: Any, key: dict, duration_s: float | None = None) -> ItemId:
        """Hold the item with primary key `key` (wire form) of `table` (a TableDefinition); returns its id.

        `duration_s` None holds it until `release_item`/`release_all`; otherwise it is released by itself once the
        engine's monotonic clock has moved on by `duration_s` seconds.
        """
        pk, sk, _key = table.key.key_from_request(key)
        item = (table.name, pk, sk)
        self.held[item] = None if duration_s is None else self.clock.monotonic() + duration_s
        return item

    def release_item(self, table: Any, key: dict) -> bool:
        """Release one held item; False if it was not held."""
        pk, sk, _key = table.key.key_from_request(key)
        item = (table.name, pk, sk)
        if item not in self.held:
            return False
        del self.held[item]
        return True

    def release_all(self) -> None:
        self.held.clear()

    # ---------------------------------------------------------------------------------------------------- checks

    def is_held(self, table: str, pk: bytes, sk: bytes) -> bool:
        """Whether the item is held now (an expired hold is dropped on the way)."""
        item = (table, pk, sk)
        if item not in self.held:
            return False
        deadline = self.held[item]
        if deadline is not None and self.clock.monotonic() >= deadline:
            del self.held[item]
            return False
        return True

    def check_write(self, table: str, pk: bytes, sk: bytes) -> None:
        """For single-item writes: TransactionConflictException if the item is held. Call only when `held`."""
        if self.is_held(table, pk, sk):
            raise TransactionConflictException(TRANSACTION_CONFLICT_MESSAGE)
