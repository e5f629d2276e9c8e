"""What TransactWriteItems and TransactGetItems share: limits, cancellation reasons, client request tokens.

Serializability. The region runs its engine on one event loop and a transaction handler never yields, so a
transaction reads and writes every item with nothing in between: transactions are serializable by construction, in
the order the region received them. For the same reason no real TransactionConflict can arise inside one region;
one is reported only where faults.py injects it.

Idempotency (TransactWriteItems' ClientRequestToken, which boto3 fills in by itself when the caller does not).
- A token is recorded when its transaction commits, in the same store transaction as the items
  (`Engine.commit(writes, token)`), so the record exists exactly when the writes do and survives a restart.
- It is valid for 10 minutes on the engine's clock. Within that window the same token with the same TransactItems
  returns success without applying anything again; with different TransactItems, IdempotentParameterMismatch.
- A cancelled transaction records nothing: retrying its token runs the transaction afresh.
- The fingerprint covers TransactItems only: DynamoDB documents that a retry may differ in ReturnConsumedCapacity
  (it says so when it describes the retry's response), and the other top-level members change no effect.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from . import capacity
from .errors import ValidationException
from .faults import TRANSACTION_CONFLICT_MESSAGE
from .storage.records import TokenRecord

MAX_ACTIONS = 100
MAX_TRANSACTION_BYTES = 4 * 1024 * 1024
TOKEN_LIFETIME_S = 600.0

DUPLICATE_ITEM_MESSAGE = "Transaction request cannot include multiple operations on one item"
TOO_LARGE_MESSAGE = "Transaction request size has exceeded the maximum allowed size of 4 MB"
PAYLOAD_TOO_LARGE_MESSAGE = "Transaction request payload size cannot exceed 4 MB"
IDEMPOTENT_MISMATCH_MESSAGE = (
    "DynamoDB rejected the request because you retried a request with a different payload but with an "
    "idempotent token that was already used."
)


def no_error() -> dict:
    return {"Code": "None"}


def conflict_reason() -> dict:
    return {"Code": "TransactionConflict", "Message": TRANSACTION_CONFLICT_MESSAGE}


def condition_failed_reason(message: str, item: dict | None) -> dict:
    reason = {"Code": "ConditionalCheckFailed", "Message": message}
    if item is not None:
        reason["Item"] = item
    return reason


def validation_reason(message: str) -> dict:
    return {"Code": "ValidationError", "Message": message}


def throttled_reasons(throttles: list) -> list[dict]:
    """Cancellation reasons of a transaction some of whose actions were throttled (throttling.Throttle or None)."""
    return [no_error() if t is None else t.cancellation_reason() for t in throttles]


def check_distinct(items: list[tuple[str, bytes, bytes]]) -> None:
    """No two actions of a transaction may target one item (same table and primary key)."""
    if len(set(items)) != len(items):
        raise ValidationException(DUPLICATE_ITEM_MESSAGE)


def check_total_size(total: int) -> None:
    if total > MAX_TRANSACTION_BYTES:
        raise ValidationException(TOO_LARGE_MESSAGE)


def check_payload_size(transact_items: Any) -> None:
    """TransactWriteItems' 4 MB limit is on what the request carries (its TransactItems as JSON), not on the items
    it changes: a small request may delete or rewrite more than 4 MB of stored items."""
    if len(orjson.dumps(transact_items)) > MAX_TRANSACTION_BYTES:
        raise ValidationException(PAYLOAD_TOO_LARGE_MESSAGE)


# ------------------------------------------------------------------------------------------- client request tokens


def fingerprint(transact_items: Any) -> bytes:
    """A digest of the request's TransactItems exactly as sent (key order does not matter)."""
    return hashlib.blake2b(orjson.dumps(transact_items, option=orjson.OPT_SORT_KEYS), digest_size=16).digest()


def recorded_fingerprint(engine, token: str) -> bytes | None:
    """The fingerprint of the transaction that committed with `token` in the last 10 minutes, or None."""
    return engine.store.transaction_token(token, engine.clock.wall_time())


def token_record(engine, token: str, digest: bytes) -> TokenRecord:
    now = engine.clock.wall_time()
    return TokenRecord(token=token, fingerprint=digest, now=now, expires=now + TOKEN_LIFETIME_S)


# ------------------------------------------------------------------------------------------------ consumed capacity


class CapacityTally:
    """Units a transaction consumed, per table and per secondary index, in order of first appearance."""

    def __init__(self) -> None:
        self.tables: dict[str, list] = {}  # table -> [units, {gsi: units}, {lsi: units}]

    def add(self, table: str, units: float, gsi: dict | None = None, lsi: dict | None = None) -> None:
        entry = self.tables.get(table)
        if entry is None:
            entry = self.tables[table] = [0.0, {}, {}]
        entry[0] += units
        for extra, into in ((gsi, entry[1]), (lsi, entry[2])):
            if extra:
                for name, u in extra.items():
                    into[name] = into.get(name, 0.0) + u

    def add_charge(self, charge: capacity.Charge) -> None:
        self.add(charge.table, charge.units, charge.gsi, charge.lsi)

    def consumed(self, mode: str, kind: str) -> list[dict]:
        """The ConsumedCapacity list (one structure per table); `kind` is "read" or "write"."""
        return [
            capacity.consumed(mode, table, units, kind, gsi, lsi, transactional=True)
            for table, (units, gsi, lsi) in self.tables.items()
        ]
