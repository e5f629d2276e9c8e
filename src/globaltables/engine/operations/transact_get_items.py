"""TransactGetItems: up to 100 Gets on distinct items, read as one consistent snapshot.

The snapshot is trivial here: the region runs the engine on one event loop and this handler never yields, so no
write can land between two of its reads (serializable relative to every write; see engine/transactions.py).
Responses come in request order, `{}` for an item that does not exist. A read of an item held by an injected
in-flight transaction (faults.py) cancels the whole request with the reason TransactionConflict.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .. import capacity, transactions
from ..errors import TransactionCanceledException
from ..expressions import parse_projection, project
from ..schema import TableDefinition
from ..storage.records import partition_hash
from ..strong import refuse_if_strong
from ..validation import AnyValue, List, Map, Str, Struct, TableNameField, check_request
from ..values import item_size
from .read_modify_write import RETURN_CONSUMED_CAPACITY, expression_context

GET = {
    "Key": Map(AnyValue(), required=True),
    "TableName": TableNameField(),
    "ProjectionExpression": Str(),
    "ExpressionAttributeNames": Map(Str()),
}
FIELDS = {
    "TransactItems": List(
        Struct({"Get": Struct(GET, required=True)}),
        required=True,
        min_length=1,
        max_length=transactions.MAX_ACTIONS,
    ),
    "ReturnConsumedCapacity": RETURN_CONSUMED_CAPACITY,
}


@dataclass(slots=True)
class Get:
    table: TableDefinition
    pk: bytes
    sk: bytes
    paths: Any  # a parsed ProjectionExpression, or None for the whole item


def prepare_get(engine, get: dict) -> Get:
    table = engine.table(get["TableName"])
    pk, sk, _key = table.key.key_from_request(get["Key"])
    request = {name: get[name] for name in GET if name in get}
    ctx = expression_context(request, "ProjectionExpression")
    paths = None
    if request.get("ProjectionExpression") is not None:
        paths = parse_projection(request["ProjectionExpression"], ctx)
    ctx.check_unused()
    return Get(table, pk, sk, paths)


def handle(engine, request: dict) -> dict:
    check_request(request, FIELDS)
    gets = [prepare_get(engine, transact_item["Get"]) for transact_item in request["TransactItems"]]
    for g in gets:
        refuse_if_strong(g.table, "TransactGetItems")
    transactions.check_distinct([(g.table.name, g.pk, g.sk) for g in gets])

    faults = engine.faults
    if faults.held:
        held = [faults.is_held(g.table.name, g.pk, g.sk) for g in gets]
        if any(held):
            raise TransactionCanceledException(
                [transactions.conflict_reason() if h else transactions.no_error() for h in held]
            )

    get = engine.store.get
    responses: list[dict] = []
    tally = transactions.CapacityTally()
    charges = []
    read_bytes = 0
    for g in gets:
        item = get(g.table.name, g.pk, g.sk)
        size = item_size(item) if item is not None else 0
        read_bytes += size
        charge = capacity.read_charge(
            g.table.name, partition_hash(g.pk), size, True, transactional=True, pk=g.pk, sk=g.sk
        )
        charges.append(charge)
        tally.add_charge(charge)
        if item is None:
            responses.append({})
        else:
            responses.append({"Item": project(item, g.paths) if g.paths is not None else item})
    transactions.check_total_size(read_bytes)
    throughput = engine.throughput
    if throughput is not None:  # one throttled read cancels them all (throughput.py)
        throttles = throughput.charge_all(charges)
        if throttles:
            raise TransactionCanceledException(transactions.throttled_reasons(throttles))

    response: dict = {"Responses": responses}
    mode = request.get("ReturnConsumedCapacity")
    if capacity.wanted(mode):
        response["ConsumedCapacity"] = tally.consumed(mode, "read")
    return response
