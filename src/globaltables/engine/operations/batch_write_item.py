"""BatchWriteItem: up to 25 puts and deletes across tables, without conditions, applied together.

Rules
1. Everything is validated before anything is read or written: the request's shape and constraints, the number
   of requests, each request's values and item size (no table needed), then, table by table in request order,
   that the table exists, each key against its schema, and that no key appears twice in one table's list. One
   bad request refuses the whole batch and nothing changes.
2. The writes commit through ONE `Engine.commit`, so the batch is atomic in the store. DynamoDB promises atomicity
   per item only; all-or-nothing is one of the outcomes it allows and the easiest to reason about. Commit hooks
   (index maintenance) can still refuse the batch (an index key of the wrong type): then nothing changes either.
3. UnprocessedItems is {} unless a request hits an item held by an injected in-flight transaction (faults.py)
   or is throttled (throughput.py): DynamoDB leaves such requests unprocessed rather than failing the batch, and
   the rest is applied. Only when every request was throttled does the batch fail, with the first throttle's
   error (ProvisionedThroughputExceededException, or ThrottlingException for other throttling).
4. A put whose item lacks a key attribute, or has one of the wrong type, is "The provided key element does not
   match the schema" here (PutItem words it differently).
"""

from __future__ import annotations

from .. import capacity
from ..errors import ValidationException
from ..schema import KEY_MISMATCH, validate_item_size
from ..storage.records import ItemWrite
from ..validation import Field, List, Map, Struct
from ..values import normalize_item, normalize_value
from .batch_requests import check_request_items
from .read_modify_write import RETURN_CONSUMED_CAPACITY, RETURN_ITEM_COLLECTION_METRICS

MAX_WRITES = 25
DUPLICATE_KEYS = "Provided list of item keys contains duplicates"
TOO_MANY = "Too many items requested for the BatchWriteItem call"
ONE_REQUEST_TYPE = (
    "Supplied AttributeValue has more than one datatypes set, must contain exactly one of the supported datatypes"
)

FIELDS = {
    "ReturnConsumedCapacity": RETURN_CONSUMED_CAPACITY,
    "ReturnItemCollectionMetrics": RETURN_ITEM_COLLECTION_METRICS,
}
WRITE_REQUESTS = List(
    Struct(
        {
            "PutRequest": Struct({"Item": Map(Field(type="any"), required=True)}),
            "DeleteRequest": Struct({"Key": Map(Field(type="any"), required=True)}),
        }
    )
)


def _values(requests: list[dict]) -> list[tuple[dict | None, dict | None, int, dict]]:
    """(item, key, item size, original request) per request: values normalised, item sizes checked."""
    out = []
    for request in requests:
        put, delete = request.get("PutRequest"), request.get("DeleteRequest")
        if (put is None) == (delete is None):
            raise ValidationException(ONE_REQUEST_TYPE)
        if put is not None:
            item = normalize_item(put["Item"])
            out.append((item, None, validate_item_size(item), request))
        else:
            key = {name: normalize_value(value) for name, value in delete["Key"].items()}
            out.append((None, key, 0, request))
    return out


def _keyed(table, requests: list) -> list[tuple[bytes, bytes, dict | None, dict, int, dict]]:
    """(pk, sk, item, key, size, request) per request, keys checked against the table's schema, no duplicates."""
    seen: set[tuple[bytes, bytes]] = set()
    out = []
    for item, key, size, request in requests:
        if item is not None:
            try:
                pk, sk = table.key.key_from_item(item)
            except ValidationException as error:
                if "Missing the key" in error.message or "Type mismatch for key" in error.message:
                    raise ValidationException(KEY_MISMATCH) from None
                raise
            key = table.key.key_of(item)
        else:
            pk, sk, key = table.key.key_from_request(key)
        if (pk, sk) in seen:
            raise ValidationException(DUPLICATE_KEYS)
        seen.add((pk, sk))
        out.append((pk, sk, item, key, size, request))
    return out


def handle(engine, request: dict) -> dict:
    request_items = check_request_items(request, FIELDS, WRITE_REQUESTS, MAX_WRITES)
    if sum(len(requests) for requests in request_items.values()) > MAX_WRITES:
        raise ValidationException(TOO_MANY)
    valued = [(name, _values(requests)) for name, requests in request_items.items()]
    planned = []
    for name, requests in valued:
        table = engine.table(name)
        planned.append((table, _keyed(table, requests)))

    mode = request.get("ReturnConsumedCapacity")
    want_capacity = capacity.wanted(mode)
    faults = engine.faults if engine.faults.held else None
    get = engine.store.get
    writes: list[ItemWrite] = []
    unprocessed: dict[str, list[dict]] = {}
    done = []  # (table, [(old, new, size, key, pk)])
    throughput = engine.throughput
    throttles = []  # requests left unprocessed for lack of throughput (throughput.py)
    for table, requests in planned:
        applied = []
        for pk, sk, item, key, size, original in requests:
            if faults is not None and faults.is_held(table.name, pk, sk):
                unprocessed.setdefault(table.name, []).append(original)
                continue
            old = get(table.name, pk, sk)
            if throughput is not None:
                throttle = throughput.try_charge(capacity.item_write_charge(table, pk, old, item, size, sk=sk))
                if throttle is not None:
                    throttles.append(throttle)
                    unprocessed.setdefault(table.name, []).append(original)
                    continue
            if item is not None or old is not None:
                writes.append(ItemWrite(table.name, pk, sk, item, size, old))
            applied.append((old, item, size, key, pk))
        done.append((table, applied))
    if throttles and len(throttles) == sum(len(requests) for _table, requests in planned):
        raise throttles[0].error()  # nothing could be written for lack of throughput: the batch fails
    if writes:
        engine.commit(writes)

    response: dict = {"UnprocessedItems": unprocessed}
    if want_capacity:
        response["ConsumedCapacity"] = [_capacity(mode, table, applied) for table, applied in done]
    if request.get("ReturnItemCollectionMetrics") == "SIZE":
        metrics = _collection_metrics(engine, done)
        if metrics:
            response["ItemCollectionMetrics"] = metrics
    return response


def _capacity(mode: str, table, applied: list) -> dict:
    """ConsumedCapacity of one table's applied requests: their item-write charges summed."""
    total = capacity.Charge(table.name, "write")
    for old, new, size, _key, pk in applied:
        total.add(capacity.item_write_charge(table, pk, old, new, size))
    return total.consumed(mode)


def _collection_metrics(engine, done: list) -> dict:
    """ItemCollectionMetrics per table with local secondary indexes: one entry per item collection written."""
    out: dict[str, list[dict]] = {}
    for table, applied in done:
        if not table.lsis or not applied:
            continue
        seen: set[bytes] = set()
        metrics = []
        for _old, _new, _size, key, pk in applied:
            if pk not in seen:
                seen.add(pk)
                metrics.append(engine.indexes.collection_metrics(table, key, pk))
        out[table.name] = metrics
    return out
