"""Query: the items of one item collection, in sort-key order, narrowed by a key condition on the sort key."""

from __future__ import annotations

from ..errors import ValidationException
from ..expressions import parse_key_condition
from ..validation import Bool, Str, check_request
from ..values import encode_key_value
from .paging import READ_FIELDS, read_page, read_plan
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


def within(sk: bytes, lower, upper) -> bool:
    if lower is not None and (sk < lower[0] or (sk == lower[0] and not lower[1])):
        return False
    if upper is not None and (sk > upper[0] or (sk == upper[0] and not upper[1])):
        return False
    return True


def handle(engine, request: dict) -> dict:
    check_request(request, FIELDS)
    table = engine.table(request["TableName"])
    if request.get("IndexName") is not None:
        index = table.index(request["IndexName"])
        if index is None:
            raise ValidationException(f"The table does not have the specified index: {request['IndexName']}")
        raise ValidationException("Queries on secondary indexes are not supported yet")
    text = request.get("KeyConditionExpression")
    if text is None:
        raise ValidationException("Either the KeyConditions or KeyConditionExpression parameter must be specified in the request.")
    ctx = expression_context(request, "KeyConditionExpression", "FilterExpression", "ProjectionExpression", legacy=("KeyConditions", "QueryFilter", "AttributesToGet", "ConditionalOperator"))
    condition = parse_key_condition(text, ctx, table.key)
    plan = read_plan(request, ctx)
    ctx.check_unused()

    pk = table.key.encode_partition(condition.hash_value)
    lower, upper = sort_bounds(condition.sort_op, condition.sort_values)
    forward = request.get("ScanIndexForward", True)
    start_after = None
    if request.get("ExclusiveStartKey") is not None:
        start_pk, start_sk, _ = _start_key(table, request["ExclusiveStartKey"])
        if condition.sort_op is None:
            if start_pk != pk:
                raise ValidationException(
                    "The provided starting key is outside query boundaries based on provided conditions"
                )
        else:
            if not within(start_sk, lower, upper):
                raise ValidationException("The provided starting key does not match the range key predicate")
            if start_pk != pk:
                raise ValidationException("The query can return at most one row and cannot be restarted")
        start_after = start_sk
    rows = engine.store.query(table.name, pk, lower, upper, forward, start_after)
    return read_page(rows, plan, table.name, lambda row: table.key.key_of(row.item))


def _start_key(table, key):
    try:
        return table.key.key_from_request(key)
    except ValidationException as error:
        raise ValidationException(f"The provided starting key is invalid: {error.message}") from None
