"""TagResource: add or overwrite tags on a table (at most 50 tags per table)."""

from __future__ import annotations

from dataclasses import replace

from ..errors import validation
from ..table_validation import TAG_LIST, check_tags, merge_tags
from ..validation import Str, check_request, constraint_error
from .tagging import check_arn, check_table_arn, not_found_message, table_of

FIELDS = {"ResourceArn": Str(max_length=1283), "Tags": TAG_LIST}


def handle(engine, request: dict) -> dict:
    check_request(request, FIELDS)
    arn = check_arn(engine, request, "TagResource")
    if request.get("Tags") is None:
        raise constraint_error(["Value null at 'tags' failed to satisfy constraint: Member must not be null"])
    check_table_arn(arn)
    if not request["Tags"]:
        raise validation("Atleast one Tag needs to be provided as Input.")
    check_tags(request["Tags"])  # the request's own characters, before the table is looked up
    table = table_of(engine, arn, not_found_message(arn))
    tags = merge_tags(table.tags, request["Tags"])
    check_tags(tags)
    engine.save_table(replace(table, tags=tags))
    return {}
