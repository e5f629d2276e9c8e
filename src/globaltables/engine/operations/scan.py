"""Scan: every item of a table in partition-hash order; Segment/TotalSegments split the hash space for a parallel
scan, so every item belongs to exactly one segment."""

from __future__ import annotations

from ..errors import ValidationException
from ..expressions import legacy
from ..storage.records import HASH_SPACE, partition_hash
from ..validation import Int, check_request
from .index_reads import index_for_read
from .paging import READ_FIELDS, read_page, read_plan
from .query import _start_key
from .read_modify_write import expression_context

FIELDS = {
    **READ_FIELDS,
    "Segment": Int(minimum=0, maximum=999999),
    "TotalSegments": Int(minimum=1, maximum=1000000),
}


def segment_range(segment: int | None, total: int | None) -> tuple[int, int]:
    if segment is None and total is None:
        return 0, HASH_SPACE
    if total is None:
        raise ValidationException(
            "The TotalSegments parameter is required but was not present in the request when Segment parameter is present"
        )
    if segment is None:
        raise ValidationException(
            "The Segment parameter is required but was not present in the request when parameter TotalSegments is present"
        )
    if segment >= total:
        raise ValidationException(
            "The Segment parameter is zero-based and must be less than parameter TotalSegments: "
            f"Segment: {segment} is not less than TotalSegments: {total}"
        )
    return segment * HASH_SPACE // total, (segment + 1) * HASH_SPACE // total


def handle(engine, request: dict) -> dict:
    check_request(request, FIELDS)
    legacy.check_fields(request, legacy.SCAN_FIELDS)
    table = engine.table(request["TableName"])
    index = index_for_read(engine, table, request, "Scan")  # None: the table itself
    segment, total = request.get("Segment"), request.get("TotalSegments")
    hash_range = segment_range(segment, total)
    # Parameter order as DynamoDB lists them in its messages.
    ctx = expression_context(request, "ProjectionExpression", "FilterExpression", legacy=("AttributesToGet", "ScanFilter", "ConditionalOperator"))
    legacy.check_conditional_operator(request, "ScanFilter")
    plan = read_plan(request, ctx, "ScanFilter")
    ctx.check_unused()
    if index is not None:
        index.bind(plan, request)
        start = index.scan_start(request.get("ExclusiveStartKey"), hash_range, segment, total)
        return read_page(index.scan(hash_range, start), plan, table.name, index.last_key, index, engine.throughput)
    start_after = None
    if request.get("ExclusiveStartKey") is not None:
        start_pk, start_sk, _ = _start_key(table, request["ExclusiveStartKey"])
        h = partition_hash(start_pk)
        if not hash_range[0] <= h < hash_range[1]:
            raise ValidationException(
                "The provided starting key is invalid: Invalid ExclusiveStartKey. Please use ExclusiveStartKey with "
                f"correct Segment. TotalSegments: {total} Segment: {segment}"
            )
        start_after = (h, start_pk, start_sk)
    rows = engine.store.scan(table.name, hash_range, start_after)
    return read_page(rows, plan, table.name, lambda row: table.key.key_of(row.item), None, engine.throughput)
