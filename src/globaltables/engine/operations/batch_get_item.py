"""BatchGetItem: up to 100 items by key, from one or more tables, each table with its own projection and
consistency.

Rules
1. Validation comes first and is complete: the request's shape and constraints; per table (in request order) the
   expression parameters, the projection, and each key's values, no key twice in one table's list and at most 100
   keys in all; then that every table exists and every key matches its schema.
2. Responses holds a list for every table asked for, items in the order their keys were given (DynamoDB promises
   no order); keys of missing items contribute nothing.
3. A response carries at most 16 MB of items. The key whose item would cross that line, and every key after it,
   are returned in UnprocessedKeys, in the form of RequestItems (with the table's projection and ConsistentRead),
   ready to be sent again. UnprocessedKeys is {} when everything was read.
4. Capacity: each key costs what a GetItem of it costs (by the whole item's size, before projection; a missing
   item costs the minimum); unprocessed keys cost nothing. ConsumedCapacity is a list, one entry per table.
5. A key whose read is throttled (throughput.py) is returned in UnprocessedKeys; only when every key was
   throttled does the request fail, with the first throttle's error.
"""

from __future__ import annotations

from .. import capacity
from ..errors import ValidationException
from ..expressions import ExpressionContext, check_expression_parameters, legacy, parse_projection, project
from ..storage.records import partition_hash
from ..validation import Bool, Field, List, Map, Str, Struct
from ..values import item_size, normalize_value
from .batch_requests import check_request_items
from .read_modify_write import RETURN_CONSUMED_CAPACITY

MAX_KEYS = 100
MAX_RESPONSE_BYTES = 16 * 1024 * 1024
TOO_MANY = "Too many items requested for the BatchGetItem call"
DUPLICATE_KEYS = "Provided list of item keys contains duplicates"

FIELDS = {"ReturnConsumedCapacity": RETURN_CONSUMED_CAPACITY}
KEYS_AND_ATTRIBUTES = Struct(
    {
        "Keys": List(Map(Field(type="any")), required=True, min_length=1, max_length=MAX_KEYS),
        "AttributesToGet": legacy.ATTRIBUTES_TO_GET,
        "ConsistentRead": Bool(),
        "ProjectionExpression": Str(),
        "ExpressionAttributeNames": Map(Str()),
    }
)
# What UnprocessedKeys repeats of a table's request besides its keys.
_REQUEST_SETTINGS = ("ProjectionExpression", "ExpressionAttributeNames", "AttributesToGet", "ConsistentRead")


def _projection(entry: dict):
    """The table's projection (None: whole items), after DynamoDB's request-level checks of its parameters."""
    check_expression_parameters(entry, ("ProjectionExpression",), ("AttributesToGet",))
    if entry.get("AttributesToGet") is not None:
        return legacy.projection(entry["AttributesToGet"])
    ctx = ExpressionContext(entry.get("ExpressionAttributeNames"))
    paths = (
        parse_projection(entry["ProjectionExpression"], ctx) if entry.get("ProjectionExpression") is not None else None
    )
    ctx.check_unused()
    return paths


def _key_identity(key: dict) -> tuple:
    return tuple(sorted((name, repr(value)) for name, value in key.items()))


def handle(engine, request: dict) -> dict:
    request_items = check_request_items(request, FIELDS, KEYS_AND_ATTRIBUTES)
    planned = []
    count = 0
    for name, entry in request_items.items():
        projection = _projection(entry)
        seen: set[tuple] = set()
        keys = []
        for raw in entry["Keys"]:
            key = {attribute: normalize_value(value) for attribute, value in raw.items()}
            identity = _key_identity(key)
            if identity in seen:
                raise ValidationException(DUPLICATE_KEYS)
            seen.add(identity)
            count += 1
            if count > MAX_KEYS:
                raise ValidationException(TOO_MANY)
            keys.append((raw, key))
        planned.append((name, entry, projection, keys))
    tables = []
    for name, entry, projection, keys in planned:
        table = engine.table(name)
        tables.append((table, entry, projection, [(raw, *table.key.key_from_request(key)) for raw, key in keys]))

    mode = request.get("ReturnConsumedCapacity")
    want_capacity = capacity.wanted(mode)
    throughput = engine.throughput
    throttles = []  # keys left unprocessed for lack of throughput (throughput.py)
    get = engine.store.get
    responses: dict[str, list[dict]] = {}
    unprocessed: dict[str, dict] = {}
    consumed = []
    response_bytes = 0
    full = False
    for table, entry, projection, keys in tables:
        found = responses[table.name] = []
        consistent = bool(entry.get("ConsistentRead", False))
        units = 0.0
        left: list[dict] = []
        for raw, pk, sk, _key in keys:
            if full:
                left.append(raw)
                continue
            item = get(table.name, pk, sk)
            whole = size = 0
            if item is not None:
                whole = item_size(item)
                returned = project(item, projection) if projection is not None else item
                size = whole if projection is None else item_size(returned)
                if response_bytes + size > MAX_RESPONSE_BYTES:
                    full = True
                    left.append(raw)
                    continue
            if throughput is not None or want_capacity:
                charge = capacity.read_charge(table.name, partition_hash(pk), whole, consistent, pk=pk, sk=sk)
                if throughput is not None:
                    throttle = throughput.try_charge(charge)
                    if throttle is not None:
                        throttles.append(throttle)
                        left.append(raw)
                        continue
                units += charge.units
            if item is not None:
                response_bytes += size
                found.append(returned)
        if left:
            unprocessed[table.name] = {
                "Keys": left,
                **{setting: entry[setting] for setting in _REQUEST_SETTINGS if entry.get(setting) is not None},
            }
        if want_capacity:
            consumed.append(capacity.consumed(mode, table.name, units, "read"))
    if throttles and len(throttles) == sum(len(keys) for *_rest, keys in tables):
        raise throttles[0].error()  # no item could be read for lack of throughput
    response: dict = {"Responses": responses, "UnprocessedKeys": unprocessed}
    if want_capacity:
        response["ConsumedCapacity"] = consumed
    return response
