"""The engine's half of a client write on a strong-mode (MRSC) table: validate, evaluate, answer — never commit.

The commit protocol (replication/mrsc/) decides whether and when a write takes effect, and its region host awaits
that decision, so the engine cannot run these writes inline as it runs every other request. Instead:

Rule 1: `prepare` validates the request exactly as the ordinary operation does (the same `prepare` functions and
batch checks, in the same order, so the same errors), before anything is proposed; nothing here writes.
Rule 2: each item write becomes a `StrongWrite` whose `evaluate(old)` runs the condition and the update against a
committed image and checks the new item's size. It is pure: the coordinator re-runs it after a stale refusal.
Rule 3: once the protocol has committed every item write, `respond` builds the operation's response from the
(old, new) images the protocol reports, as the ordinary operation would have.
Rule 4: requests of a BatchWriteItem on tables that are not strong are left to the ordinary operation (`rest`).
Rule 5 (capacity, docs/capacity.md decision 21): `admit` charges each item write at the region the client called,
against its own buckets, before anything is proposed: the units a local write of the request would draw, reckoned
on the locally committed image. A refused single write raises the throttle (nothing proposed, nothing recorded,
the answer an MREC region gives); a refused request of a batch is left in UnprocessedItems, and the batch fails
only when every request was refused. ReturnConsumedCapacity reports the admitted charges, what the buckets drew.
The other members charge the commit when they apply it (strong.py `ImageCommits`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import capacity
from .errors import DynamoError, ValidationException
from .operations import batch_write_item
from .operations.batch_requests import check_request_items
from .operations.delete_item import DeleteRequest
from .operations.put_item import PutRequest
from .operations.read_modify_write import WriteRequest, write_capacity
from .operations.write_preparers import PREPARE
from .schema import TableDefinition, validate_item_size
from .strong_membership import refuse_writes_if_converting
from .values import item_size

WRITE_OPERATIONS = frozenset({*PREPARE, "BatchWriteItem"})


@dataclass
class StrongWrite:
    request: WriteRequest
    original: dict | None = None  # a batch's request entry, for UnprocessedItems
    charge: capacity.Charge | None = None  # what admission drew (rule 5); None when capacity is unlimited

    @property
    def table(self) -> str:
        return self.request.table.name

    @property
    def key(self) -> dict:
        return self.request.key

    def evaluate(self, old: dict | None) -> dict | None:
        request = self.request
        request.check_condition(old)
        new = request.apply(old)
        if new is not None:
            validate_item_size(new, request.size_error)
        return new


@dataclass
class StrongPlan:
    operation: str
    request: dict
    writes: list[StrongWrite]
    rest: dict | None = None  # BatchWriteItem: the request for the tables that are not strong
    unprocessed: dict[str, list[dict]] | None = None  # BatchWriteItem: requests refused by admission (rule 5)


def strong_table(engine: Any, name: Any) -> TableDefinition | None:
    table = engine.tables.get(name) if isinstance(name, str) else None
    return table if table is not None and table.strong is not None else None


def touches_strong(engine: Any, operation: str, request: Any) -> bool:
    """Whether a write request names a strong table (cheap: no validation)."""
    if not isinstance(request, dict):
        return False
    if operation == "BatchWriteItem":
        items = request.get("RequestItems")
        return isinstance(items, dict) and any(strong_table(engine, name) for name in items)
    return strong_table(engine, request.get("TableName")) is not None


def prepare(engine: Any, operation: str, request: dict) -> StrongPlan:
    if operation != "BatchWriteItem":
        write = PREPARE[operation](engine, request)
        refuse_writes_if_converting(write.table)
        return StrongPlan(operation, request, [StrongWrite(write)])
    # Batch: batch_write_item's own checks in its own order (rule 1), then one StrongWrite per strong request.
    bw = batch_write_item
    request_items = check_request_items(request, bw.FIELDS, bw.WRITE_REQUESTS, bw.MAX_WRITES)
    if sum(len(requests) for requests in request_items.values()) > bw.MAX_WRITES:
        raise ValidationException(bw.TOO_MANY)
    valued = [(name, bw._values(requests)) for name, requests in request_items.items()]
    writes: list[StrongWrite] = []
    rest: dict[str, list] = {}
    for name, requests in valued:
        table = engine.table(name)
        keyed = bw._keyed(table, requests)
        if table.strong is None:
            rest[name] = [original for *_ignored, original in keyed]
            continue
        refuse_writes_if_converting(table)
        for pk, sk, item, key, _size, original in keyed:
            if item is not None:
                writes.append(StrongWrite(PutRequest(table=table, pk=pk, sk=sk, key=key, item=item), original))
            else:
                writes.append(StrongWrite(DeleteRequest(table=table, pk=pk, sk=sk, key=key), original))
    rest_request = None
    if rest:
        rest_request = {k: v for k, v in request.items() if k != "RequestItems"}
        rest_request["RequestItems"] = rest
    return StrongPlan(operation, request, writes, rest_request)


def admit(engine: Any, plan: StrongPlan) -> None:
    """Rule 5: draw each write's charge from this region's buckets, or refuse it (a batch refused whole raises;
    one whose other tables answered, even with all their requests unprocessed, does not)."""
    throughput = engine.throughput
    if throughput is None or not plan.writes:
        return
    kept: list[StrongWrite] = []
    throttles = []
    for write in plan.writes:
        charge = _estimate(engine, write)
        throttle = throughput.try_charge(charge)
        if throttle is None:
            write.charge = charge
            kept.append(write)
        else:
            throttles.append(throttle)
            if plan.operation == "BatchWriteItem":
                if plan.unprocessed is None:
                    plan.unprocessed = {}
                plan.unprocessed.setdefault(write.table, []).append(write.original)
    if throttles and (plan.operation != "BatchWriteItem" or (not kept and plan.rest is None)):
        throughput.take_throttled(plan.operation)  # the request failed with a throttle: ThrottledRequests
        raise throttles[0].error()
    throughput.throttled.clear()  # some requests of a batch were left unprocessed, not the request
    plan.writes = kept


def _estimate(engine: Any, write: StrongWrite) -> capacity.Charge:
    """What a local write of `write` would draw here (rule 5): by the locally committed image, with its index
    writes; a write whose condition or update fails on it, as a failed conditional write (decision 7)."""
    request = write.request
    table = request.table
    old = engine.store.get(table.name, request.pk, request.sk)
    try:
        new = write.evaluate(old)
    except DynamoError:
        return capacity.failed_write_charge(table, request.pk, old, sk=request.sk)
    size = item_size(new) if new is not None else 0
    return capacity.item_write_charge(table, request.pk, old, new, size, sk=request.sk)


def respond(engine: Any, plan: StrongPlan, images: list[tuple[dict | None, dict | None]], rest: dict | None) -> dict:
    """The response once every write of `plan` committed with (old, new) `images`; `rest`: the ordinary
    operation's response for a batch's other tables."""
    mode = plan.request.get("ReturnConsumedCapacity", "NONE")
    if plan.operation != "BatchWriteItem":
        request = plan.writes[0].request
        old, new = images[0]
        response = request.response(old, new)
        if capacity.wanted(mode):
            charge = plan.writes[0].charge
            if charge is not None:  # capacity modelled: what admission drew (rule 5)
                response["ConsumedCapacity"] = charge.consumed(mode)
            else:
                size = item_size(new) if new is not None else 0
                response["ConsumedCapacity"] = write_capacity(mode, request.table, old, new, size)
        return response
    response = {"UnprocessedItems": dict((rest or {}).get("UnprocessedItems", {}))}
    for name, refused in (plan.unprocessed or {}).items():
        response["UnprocessedItems"][name] = [*response["UnprocessedItems"].get(name, []), *refused]
    if capacity.wanted(mode):
        per_table: dict[str, tuple[TableDefinition, list]] = {}
        charged: dict[str, capacity.Charge] = {}
        for write, (old, new) in zip(plan.writes, images, strict=True):
            if write.charge is not None:
                charged.setdefault(write.table, capacity.Charge(write.table, "write")).add(write.charge)
                continue
            size = item_size(new) if new is not None else 0
            entry = per_table.setdefault(write.table, (write.request.table, []))
            entry[1].append((old, new, size, write.key, write.request.pk))
        consumed = [bw_capacity(mode, table, applied) for table, applied in per_table.values()]
        consumed += [charge.consumed(mode) for charge in charged.values()]
        response["ConsumedCapacity"] = consumed + list((rest or {}).get("ConsumedCapacity", []))
    if rest and rest.get("ItemCollectionMetrics"):
        response["ItemCollectionMetrics"] = rest["ItemCollectionMetrics"]
    return response


bw_capacity: Callable[..., dict] = batch_write_item._capacity
