"""PutItem: replace a whole item, optionally under a condition."""

from __future__ import annotations

from dataclasses import dataclass

from ..answer import Answer
from ..validation import Field, Map
from ..values import normalize_item
from .read_modify_write import (
    WriteRequest,
    check_old_values_only,
    check_write_fields,
    execute,
    return_options,
    write_condition,
)

FIELDS = {"Item": Map(Field(type="any"), required=True)}


@dataclass
class PutRequest(WriteRequest):
    item: dict | None = None

    def apply(self, old: dict | None) -> dict | None:
        return self.item


def prepare(engine, request: dict) -> PutRequest:
    check_write_fields(request, FIELDS)
    table = engine.table(request["TableName"])
    check_old_values_only(request)
    item = normalize_item(request["Item"])
    pk, sk = table.key.key_from_item(item)
    condition = write_condition(request)
    return PutRequest(
        table=table,
        pk=pk,
        sk=sk,
        key=table.key.key_of(item),
        condition=condition,
        **return_options(request),
        item=item,
    )


def handle(engine, request: dict) -> Answer:
    return execute(engine, prepare(engine, request))
