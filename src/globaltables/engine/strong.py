"""The engine's side of strong mode (MRSC, docs/mrsc.md): which tables are strong and what they refuse, and applying
a committed image to an item in one store transaction.

The protocol's durable state (pending proposals, votes, settled marks, witness images) and its formats (item ids,
proposal ids, commit versions) belong to replication/mrsc/ (store.py, records.py); the engine sees none of them.

Rules
1. `ImageCommits.commit` writes a committed image (None: a delete, which leaves a tombstone) with the version text
   and origin it is given, and the caller's side records (storage/records.py `SideChange`) in the same store
   transaction: a commit hook stages them, so indexes, the item and the protocol's state change together or not at
   all. The version is opaque here: it is kept in the item's `version` column (tombstones keep it across deletes).
2. Tables with local secondary indexes, a stream or TTL cannot be strong (facts §3): `unsupported` is the refusal.
3. Capacity (docs/capacity.md, decision 21): a member applying a commit another region coordinated charges it as a
   replicated write, what a local write of the same change would draw, without refusal: a commit a majority
   accepted cannot be deferred, so a member short of capacity goes into debt and throttles its own clients until
   the refill repays it. The coordinator charged the write when it admitted it (strong_requests.py, rule 5).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .capacity import item_write_charge
from .errors import ValidationException
from .storage.records import ItemWrite, SideChange
from .values import item_size

if TYPE_CHECKING:
    from .engine import Engine


def unsupported(what: str) -> ValidationException:
    """The refusal of a feature MRSC tables do not have (facts §3 "Not supported", §10.3)."""
    return ValidationException(f"{what} is not supported for tables with multi-Region strong consistency (MRSC)")


def refuse_if_strong(table: Any, what: str) -> None:
    if table.strong is not None:
        raise unsupported(what)


def make_strong(engine: Engine, name: str, replicas: list[str], witness: str | None) -> None:
    """Make table `name` a member of a strong-mode global table: `replicas` (this region among them) and at most
    one witness. Tables with local secondary indexes or a stream cannot be (facts §3)."""
    definition = engine.tables[name]
    if definition.lsis:
        raise unsupported("Local secondary indexes")
    if definition.stream_enabled:
        raise unsupported("DynamoDB Streams")
    definition.strong = {"replicas": sorted(set(replicas) | {engine.region}), "witness": witness}
    engine.save_table(definition)


class ImageCommits:
    """Applies committed images to one engine's items (rule 1), with the caller's side records in the same commit."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def commit(
        self, table: str, key: dict, image: dict | None, old: dict | None, version: str, origin: str,
        side: list[SideChange],
    ) -> None:  # fmt: skip
        """Write `image` over `old` (the item as stored) at `version`, with `side`, in one transaction."""
        engine = self.engine
        definition = engine.tables[table]
        pk, sk = definition.key.encode(key)
        size = item_size(image) if image is not None else 0
        throughput = engine.throughput
        if throughput is not None and origin != engine.region:  # rule 3: charged, never refused
            throughput.force(item_write_charge(definition, pk, old, image, size, sk=sk))
        write = ItemWrite(
            table, pk, sk, image, size, old,
            version=version, origin=origin, old_version=None,
            tombstone=image is None, had_tombstone=True, deleted_at=engine.clock.wall_time(),
        )  # fmt: skip
        engine.commit([write], side=side)
