"""GetItem: one item by key. A single region is always consistent; ConsistentRead matters once replication lands."""

from __future__ import annotations

import orjson

from .. import capacity
from ..answer import Answer
from ..capacity import READ_UNIT_BYTES
from ..expressions import legacy, parse_projection, project
from ..validation import Bool, Field, Map, Str, TableNameField, check_request
from ..values import item_size
from .read_modify_write import RETURN_CONSUMED_CAPACITY, expression_context

FIELDS = {
    "TableName": TableNameField(),
    "Key": Map(Field(type="any"), required=True),
    "ProjectionExpression": Str(),
    "ExpressionAttributeNames": Map(Str()),
    "ConsistentRead": Bool(),
    "ReturnConsumedCapacity": RETURN_CONSUMED_CAPACITY,
}


# The parameters a read's projection and its placeholders can come from: a request with none of them (most reads)
# reads the whole item, and the expression rules have nothing to check in it.
PROJECTION_PARAMETERS = ("ProjectionExpression", "AttributesToGet", "ExpressionAttributeNames", "ExpressionAttributeValues")


def check(engine, request: dict) -> tuple:
    """Every check of a GetItem, without reading: (table, pk, sk, key, projection paths or None). A strong read
    checks first and reads once its Sync is done (region/mrsc_requests.py)."""
    check_request(request, FIELDS)
    legacy.check_fields(request, legacy.GET_FIELDS)
    table = engine.table(request["TableName"])
    pk, sk, key = table.key.key_from_request(request["Key"])
    for name in PROJECTION_PARAMETERS:
        if name in request:
            break
    else:  # no projection and no placeholders (most reads): nothing for the expression rules to check
        return table, pk, sk, key, None
    ctx = expression_context(request, "ProjectionExpression", legacy=("AttributesToGet",))
    paths = None
    if request.get("ProjectionExpression") is not None:
        paths = parse_projection(request["ProjectionExpression"], ctx)
    elif request.get("AttributesToGet") is not None:
        paths = legacy.projection(request["AttributesToGet"])
    ctx.check_unused()
    return table, pk, sk, key, paths


def handle(engine, request: dict, encoded: bool = False) -> Answer:
    """`encoded`: the caller only serialises the answer (engine.py `Engine.execute`), so a whole item may be
    answered as its stored JSON (storage/records.py, raw reads)."""
    return read(engine, request, check(engine, request), encoded)


def read(engine, request: dict, checked: tuple, encoded: bool = False) -> Answer:
    """The read of a GetItem `check` passed (`checked`: what it returned): the item, charged to the table."""
    table, pk, sk, _key, paths = checked
    version = None
    throughput = engine.throughput
    size = -1  # not known yet
    # Projected, or measured for ConsumedCapacity below: the item is needed as a dict.
    raw = encoded and paths is None and not capacity.wanted(request.get("ReturnConsumedCapacity"))
    if engine.versions is None:
        if throughput is None:
            item = engine.store.get(table.name, pk, sk, raw)
        else:  # the stored size and the key's hash: nothing to measure or hash again
            item, size, h = engine.store.get_sized(table.name, pk, sk, raw)
    else:
        if throughput is None:
            item, version, tombstone = engine.store.get_record(table.name, pk, sk, raw)
        else:
            item, version, tombstone, size, h = engine.store.get_record_sized(table.name, pk, sk, raw)
        if tombstone:
            version = None
    consistent = bool(request.get("ConsistentRead", False))
    if throughput is not None:  # throttled: the item is not returned
        units = -(-size // READ_UNIT_BYTES) or 1  # capacity.read_units, inlined
        throughput.charge_one(table.name, "read", h, units if consistent else units / 2, pk, sk)
    response: dict = {}
    if item is not None:
        if raw:
            response["Item"] = orjson.Fragment(item)
        else:
            response["Item"] = project(item, paths) if paths is not None else item
    mode = request.get("ReturnConsumedCapacity")
    if capacity.wanted(mode):
        if size < 0:
            size = item_size(item) if item else 0
        response["ConsumedCapacity"] = capacity.read_charge(table.name, 0, size, consistent).consumed(mode)
    return Answer(response, version)
