"""Query: the items of one item collection, in sort-key order, narrowed by a key condition on the sort key.

A multi-attribute GSI sort key is stored as a tuple encoding (values.encode_key_tuple): equalities on its leading
attributes fix a byte prefix, and the last condition bounds the next component within it, so every valid key
condition is still one contiguous range of one index partition.
"""

from __future__ import annotations

import orjson

from ..errors import ValidationException
from ..expressions import condition_paths, legacy, parse_key_condition
from ..storage.records import partition_hash
from ..validation import Bool, Str, check_request
from ..values import encode_key_tuple, encode_key_value, escape_key_bytes
from .index_reads import index_for_read
from .paging import READ_FIELDS, check_query_start, read_page, read_plan
from .read_modify_write import expression_context

FIELDS = {**READ_FIELDS, "KeyConditionExpression": Str(), "ScanIndexForward": Bool()}


def prefix_successor(prefix: bytes) -> bytes | None:
    """The smallest byte string greater than every string starting with `prefix` (None: no such bound)."""
    trimmed = prefix.rstrip(b"\xff")
    if not trimmed:
        return None
    return trimmed[:-1] + bytes((trimmed[-1] + 1,))


def sort_bounds(op: str | None, values: list[dict]):
    """(lower, upper) bounds as (encoded value, inclusive) pairs for a sort-key condition."""
    if op is None:
        return None, None
    encoded = [encode_key_value(v) for v in values]
    if op == "=":
        return (encoded[0], True), (encoded[0], True)
    if op == "<":
        return None, (encoded[0], False)
    if op == "<=":
        return None, (encoded[0], True)
    if op == ">":
        return (encoded[0], False), None
    if op == ">=":
        return (encoded[0], True), None
    if op == "BETWEEN":
        return (encoded[0], True), (encoded[1], True)
    if op == "BEGINS_WITH":
        successor = prefix_successor(encoded[0])
        return (encoded[0], True), (None if successor is None else (successor, False))
    raise ValidationException("Query key condition not supported")


HASH_ONLY_START_KEY = "The provided exclusive start key is invalid: the table has no sort key to resume a Query after"


def _above(prefix: bytes) -> tuple[bytes, bool] | None:
    """An exclusive upper bound past every key starting with `prefix` (None: unbounded)."""
    successor = prefix_successor(prefix)
    return None if successor is None else (successor, False)


def tuple_sort_bounds(prefix_values: tuple, op: str | None, values: list[dict]):
    """(lower, upper) bounds of a multi-attribute sort key: equalities on `prefix_values`, then `op` on the next
    component (or nothing)."""
    prefix = encode_key_tuple(prefix_values)
    inside = ((prefix, True) if prefix else None), (_above(prefix) if prefix else None)  # the whole prefix
    if op is None:
        return inside
    if op == "BEGINS_WITH":
        start = prefix + escape_key_bytes(encode_key_value(values[0]))  # a component's bytes start with the prefix's
        return (start, True), _above(start)
    first = prefix + encode_key_tuple(values[:1])
    if op == "=":
        return (first, True), _above(first)
    if op == "<":
        return inside[0], (first, False)
    if op == "<=":
        return inside[0], _above(first)
    if op == ">":
        after = _above(first)
        return (None if after is None else (after[0], True)), inside[1]
    if op == ">=":
        return (first, True), inside[1]
    if op == "BETWEEN":
        return (first, True), _above(prefix + encode_key_tuple(values[1:2]))
    raise ValidationException("Query key condition not supported")


def key_bounds(key_schema, condition) -> tuple[bytes, tuple[bytes, bool] | None, tuple[bytes, bool] | None]:
    """The encoded partition key a key condition reads and the (lower, upper) bounds of its sort keys."""
    if not key_schema.multi_attribute:
        return key_schema.encode_partition(condition.hash_value), *sort_bounds(condition.sort_op, condition.sort_values)
    names = [name for name, _kind in key_schema.hash_parts]
    pk = key_schema.encode_hash(dict(zip(names, condition.hash_values, strict=True)))
    if not key_schema.more_range:
        return pk, *sort_bounds(condition.sort_op, condition.sort_values)
    return pk, *tuple_sort_bounds(condition.sort_prefix, condition.sort_op, condition.sort_values)


def handle(engine, request: dict, encoded: bool = False) -> dict:
    """`encoded`: the caller only serialises the answer (engine.py `Engine.execute`), so whole items may be
    answered as their stored JSON (storage/records.py, raw reads)."""
    return read(engine, request, check(engine, request), encoded)


def check(engine, request: dict) -> tuple:
    """Every check of a Query, without reading: what `read` needs (the phases of engine/phased.py)."""
    check_request(request, FIELDS)
    legacy.check_fields(request, legacy.QUERY_FIELDS)
    table = engine.table(request["TableName"])
    index = index_for_read(engine, table, request, "Query")  # None: the table itself
    key_schema = table.key if index is None else index.key
    text = request.get("KeyConditionExpression")
    # Parameter order as DynamoDB lists them in its messages.
    ctx = expression_context(request, "ProjectionExpression", "FilterExpression", "KeyConditionExpression", legacy=("AttributesToGet", "QueryFilter", "ConditionalOperator", "KeyConditions"))
    legacy.check_conditional_operator(request, "QueryFilter")
    if text is None and request.get("KeyConditions") is None:
        raise ValidationException("Either the KeyConditions or KeyConditionExpression parameter must be specified in the request.")
    if text is not None:
        condition = parse_key_condition(text, ctx, key_schema)
    else:
        condition = legacy.key_condition(request["KeyConditions"], key_schema)
    plan = read_plan(request, ctx, "QueryFilter")
    ctx.check_unused()
    if plan.filter is not None:
        check_filter_not_on_key(request, plan.filter, key_schema)
    if index is not None:
        index.bind(plan, request)

    pk, lower, upper = key_bounds(key_schema, condition)
    forward = request.get("ScanIndexForward", True)
    if index is not None:
        start = index.query_start(request.get("ExclusiveStartKey"), condition, pk, lower, upper)
        return table, index, plan, pk, lower, upper, forward, start
    start_after = None
    if request.get("ExclusiveStartKey") is not None:
        start_pk, start_sk, _ = _start_key(table, request["ExclusiveStartKey"])
        if table.key.range_name is None:
            # A Query of a hash-only table reads at most one item: it has no page to resume after.
            raise ValidationException(HASH_ONLY_START_KEY)
        check_query_start(condition.sort_op is not None, pk, lower, upper, start_pk, start_sk)
        start_after = start_sk
    return table, None, plan, pk, lower, upper, forward, start_after


def read(engine, request: dict, checked: tuple, encoded: bool = False) -> dict:
    """The page of a Query `check` passed (`checked`: what it returned), charged to the table or index."""
    table, index, plan, pk, lower, upper, forward, start = checked
    if index is not None:
        rows = index.query(pk, lower, upper, forward, start)
        return read_page(rows, plan, table.name, index.last_key, index, engine.throughput, partition_hash(pk), pk)
    # Items that are neither filtered nor projected are only serialised: read as stored, never decoded.
    raw = encoded and plan.filter is None and plan.projection is None
    rows = engine.store.query(table.name, pk, lower, upper, forward, start, raw)
    key_of = table.key.key_of
    last_key = (lambda row: key_of(orjson.loads(row.item))) if raw else (lambda row: key_of(row.item))
    page = read_page(rows, plan, table.name, last_key, None, engine.throughput, partition_hash(pk), pk)
    if raw and "Items" in page:
        page["Items"] = list(map(orjson.Fragment, page["Items"]))
    if table.key.range_name is None:
        page.pop("LastEvaluatedKey", None)  # the one item a hash-only Query can read leaves nothing to resume
    return page


def partition_of(engine, request: dict) -> dict:
    """The partition key value ({name: value}) a Query on the base table reads, for a request `handle` accepted
    (strong reads in strong mode sync this item collection first, region/mrsc_host.py)."""
    table = engine.table(request["TableName"])
    ctx = expression_context(request, "ProjectionExpression", "FilterExpression", "KeyConditionExpression", legacy=("AttributesToGet", "QueryFilter", "ConditionalOperator", "KeyConditions"))
    if request.get("KeyConditionExpression") is not None:
        condition = parse_key_condition(request["KeyConditionExpression"], ctx, table.key)
    else:
        condition = legacy.key_condition(request["KeyConditions"], table.key)
    return {table.key.hash_name: condition.hash_value}


def check_filter_not_on_key(request: dict, filter_ast, key_schema) -> None:
    """A Query's filter may not test the queried key's attributes (the key condition does that)."""
    if request.get("FilterExpression") is not None:
        names = {path.root for path in condition_paths(filter_ast)}
        legacy.check_filter_not_on_key(names, key_schema.names, "Filter Expression")
    else:
        legacy.check_filter_not_on_key(request.get("QueryFilter") or {}, key_schema.names, "QueryFilter")


def _start_key(table, key):
    try:
        return table.key.key_from_request(key)
    except ValidationException as error:
        raise ValidationException(f"The provided starting key is invalid: {error.message}") from None
