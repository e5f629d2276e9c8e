"""ListTagsOfResource: a table's tags, sorted by key. A table carries at most 50, so one page holds them all."""

from __future__ import annotations

from ..validation import Str, check_request
from .tagging import check_arn, check_table_arn, not_found_message, table_of

FIELDS = {"ResourceArn": Str(max_length=1283), "NextToken": Str()}


def handle(engine, request: dict) -> dict:
    check_request(request, FIELDS)
    arn = check_arn(engine, request, "ListTagsOfResource")
    check_table_arn(arn)
    table = table_of(engine, arn, not_found_message(arn))
    return {"Tags": [dict(tag) for tag in table.tags]}
