"""One page of a Query or Scan: Limit and the 1 MB cap bound what is read; the filter runs after the read.

DynamoDB reads items in key order until it has read `Limit` items or 1 MB of data (the item that reaches 1 MB is
part of the page), then filters, then projects.
Count is the number of items that passed the filter, ScannedCount the number read. LastEvaluatedKey is returned
whenever the read stopped early (at Limit or at 1 MB), without looking ahead; a following page may then be empty.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .. import capacity
from ..errors import ValidationException
from ..expressions import evaluate_condition, legacy, parse_condition, parse_projection, project
from ..storage.records import StoredItem
from ..validation import Bool, Field, Int, Map, Str, TableNameField
from .read_modify_write import RETURN_CONSUMED_CAPACITY

MAX_PAGE_BYTES = 1024 * 1024

SELECT = Str(
    enum=("ALL_ATTRIBUTES", "ALL_PROJECTED_ATTRIBUTES", "SPECIFIC_ATTRIBUTES", "COUNT"),
    enum_order=("SPECIFIC_ATTRIBUTES", "COUNT", "ALL_ATTRIBUTES", "ALL_PROJECTED_ATTRIBUTES"),  # DynamoDB's order
)

READ_FIELDS: dict[str, Field] = {
    "TableName": TableNameField(),
    "IndexName": Str(min_length=3, max_length=255, pattern="[a-zA-Z0-9_.-]+"),
    "Select": SELECT,
    "Limit": Int(minimum=1),
    "ConsistentRead": Bool(),
    "ExclusiveStartKey": Map(Field(type="any")),
    "ProjectionExpression": Str(),
    "FilterExpression": Str(),
    "ExpressionAttributeNames": Map(Str()),
    "ExpressionAttributeValues": Map(Field(type="any")),
    "ReturnConsumedCapacity": RETURN_CONSUMED_CAPACITY,
}


@dataclass
class ReadPlan:
    """The parts of a Query/Scan request that decide what a page returns."""

    limit: int | None
    filter: Any
    projection: list | None
    select: str
    consistent: bool
    return_capacity: str | None


def check_select(select: str | None, request: dict) -> None:
    """Select against AttributesToGet/ProjectionExpression: a projection goes with SPECIFIC_ATTRIBUTES (or no
    Select) only, and SPECIFIC_ATTRIBUTES needs one. (ALL_PROJECTED_ATTRIBUTES without an index: index_reads.)"""
    given = [name for name in ("AttributesToGet", "ProjectionExpression") if request.get(name) is not None]
    if select == "SPECIFIC_ATTRIBUTES":
        if not given:
            raise ValidationException(
                "Must specify the AttributesToGet or ProjectionExpression when choosing to get SPECIFIC_ATTRIBUTES"
            )
    elif select is not None and given:
        raise ValidationException(
            f"Cannot specify the {given[0]} when choosing to get "
            + ("only the Count" if select == "COUNT" else select)
        )


def read_plan(request: dict, ctx, legacy_filter: str | None = None) -> ReadPlan:
    """The plan of a Query/Scan page; `legacy_filter` names the request's legacy filter ("QueryFilter"/"ScanFilter")."""
    select = request.get("Select")
    projection_text = request.get("ProjectionExpression")
    check_select(select, request)
    filter_ast = None
    if request.get("FilterExpression") is not None:
        filter_ast = parse_condition(request["FilterExpression"], ctx, "FilterExpression")
    elif legacy_filter is not None and request.get(legacy_filter) is not None:
        filter_ast = legacy.filter_condition(request[legacy_filter], request.get("ConditionalOperator"))
    if projection_text is not None:
        projection = parse_projection(projection_text, ctx)
    elif request.get("AttributesToGet") is not None:
        projection = legacy.projection(request["AttributesToGet"])
    else:
        projection = None
    return ReadPlan(
        limit=request.get("Limit"),
        filter=filter_ast,
        projection=projection,
        select=select or ("SPECIFIC_ATTRIBUTES" if projection is not None else "ALL_ATTRIBUTES"),
        consistent=bool(request.get("ConsistentRead", False)),
        return_capacity=request.get("ReturnConsumedCapacity"),
    )


def read_page(
    rows: Iterator[StoredItem],
    plan: ReadPlan,
    table_name: str,
    last_key: Callable[[StoredItem], dict],
    index: Any = None,
    throughput: Any = None,
    place: int | None = None,
    key: bytes | None = None,
) -> dict:
    """One page of `rows`; `index` (an `index_reads.IndexRead`) when they are a secondary index's entries.

    `throughput` is the engine's model (None: unlimited); the page's charge lands on partition hash `place` (a
    Query's partition key), or, for a Scan, where the page began (docs/capacity.md, decision 9). `key` is the
    Query's encoded partition key, which Contributor Insights counts the page against (a Scan's none)."""
    items: list[dict] = []
    scanned = 0
    read_bytes = 0
    last: StoredItem | None = None
    first: StoredItem | None = None
    stopped = False
    # The plan's parts as locals: this loop runs once per item read.
    condition, limit, keep = plan.filter, plan.limit, items.append
    for row in rows:
        if first is None:
            first = row
        scanned += 1
        read_bytes += row.size
        last = row
        if condition is None or evaluate_condition(condition, row.item):
            keep(row.item)
        if (limit is not None and scanned >= limit) or read_bytes >= MAX_PAGE_BYTES:
            stopped = True
            break
    close = getattr(rows, "close", None)
    if close is not None:
        close()
    response: dict = {"Count": len(items), "ScannedCount": scanned}
    if plan.select != "COUNT":
        if plan.projection is not None:
            response["Items"] = [project(item, plan.projection) for item in items]
        else:
            response["Items"] = items
    if stopped and last is not None:
        response["LastEvaluatedKey"] = last_key(last)
    if throughput is None and not capacity.wanted(plan.return_capacity):
        return response
    if place is None:
        place = first.h if first is not None else 0
    if index is not None:
        charge = index.charge(read_bytes, plan.consistent, place, key)
    else:
        charge = capacity.read_charge(table_name, place, read_bytes, plan.consistent, pk=key)
    if throughput is not None:
        throughput.charge(charge)  # throttled: the page is not returned
    consumed = charge.consumed(plan.return_capacity)
    if consumed:
        response["ConsumedCapacity"] = consumed
    return response


def within(sk: bytes, lower: tuple[bytes, bool] | None, upper: tuple[bytes, bool] | None) -> bool:
    """Whether an encoded sort key lies within optional (bound, inclusive) limits."""
    if lower is not None and (sk < lower[0] or (sk == lower[0] and not lower[1])):
        return False
    return not (upper is not None and (sk > upper[0] or (sk == upper[0] and not upper[1])))


def check_query_start(
    has_sort_condition: bool, pk: bytes, lower, upper, start_pk: bytes, start_sk: bytes
) -> None:
    """A Query's ExclusiveStartKey must lie in the queried partition and sort-key range (DynamoDB's texts)."""
    if not has_sort_condition:
        if start_pk != pk:
            raise ValidationException(
                "The provided starting key is outside query boundaries based on provided conditions"
            )
        return
    if not within(start_sk, lower, upper):
        raise ValidationException("The provided starting key does not match the range key predicate")
    if start_pk != pk:
        raise ValidationException("The query can return at most one row and cannot be restarted")
