"""DeleteItem: remove one item by key, optionally under a condition. Deleting a missing item succeeds."""

from __future__ import annotations

from dataclasses import dataclass

from ..answer import Answer
from ..validation import Field, Map
from .read_modify_write import (
    WriteRequest,
    check_old_values_only,
    check_write_fields,
    execute,
    return_options,
    write_condition,
)

FIELDS = {"Key": Map(Field(type="any"), required=True)}


@dataclass
class DeleteRequest(WriteRequest):
    def apply(self, old: dict | None) -> dict | None:
        return None


def prepare(engine, request: dict) -> DeleteRequest:
    check_write_fields(request, FIELDS)
    table = engine.table(request["TableName"])
    check_old_values_only(request)
    pk, sk, key = table.key.key_from_request(request["Key"])
    condition = write_condition(request)
    return DeleteRequest(
        table=table,
        pk=pk,
        sk=sk,
        key=key,
        condition=condition,
        **return_options(request),
    )


def handle(engine, request: dict) -> Answer:
    return execute(engine, prepare(engine, request))
