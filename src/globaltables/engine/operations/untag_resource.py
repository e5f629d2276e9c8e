"""UntagResource: remove tags from a table by key; keys it does not carry are ignored."""

from __future__ import annotations

from dataclasses import replace

from ..errors import validation
from ..table_validation import check_tag_key
from ..validation import List, Str, check_request, constraint_error
from .tagging import check_arn, check_table_arn, table_of

FIELDS = {"ResourceArn": Str(max_length=1283), "TagKeys": List(Str(min_length=1, max_length=128))}


def handle(engine, request: dict) -> dict:
    check_request(request, FIELDS)
    arn = check_arn(engine, request, "UntagResource")
    if request.get("TagKeys") is None:
        raise constraint_error(["Value null at 'tagKeys' failed to satisfy constraint: Member must not be null"])
    check_table_arn(arn)
    if not request["TagKeys"]:
        raise validation("Atleast one Tag Key needs to be provided as Input.")
    for key in request["TagKeys"]:
        check_tag_key(key)
    # UntagResource's not-found message is the bare one, unlike TagResource's and ListTagsOfResource's.
    table = table_of(engine, arn, "Requested resource not found")
    removed = set(request["TagKeys"])
    engine.save_table(replace(table, tags=[tag for tag in table.tags if tag["Key"] not in removed]))
    return {}
