"""UpdateItem: edit an item's attributes with an UpdateExpression, creating the item when it does not exist."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..expressions import apply_update, check_key_not_updated, parse_update, updated_attributes
from ..validation import Field, Map, Str
from .read_modify_write import (
    LEGACY_WRITE_PARAMETERS,
    WriteRequest,
    check_write_fields,
    execute,
    expression_context,
    parse_condition_expression,
)

FIELDS = {"Key": Map(Field(type="any"), required=True), "UpdateExpression": Str()}


@dataclass
class UpdateRequest(WriteRequest):
    update: Any = None

    def apply(self, old: dict | None) -> dict | None:
        base = old if old is not None else dict(self.key)
        if self.update is None:
            return base
        new, _paths = apply_update(self.update, base)
        return new

    def response(self, old: dict | None, new: dict | None) -> dict:
        mode = self.return_values
        if mode == "ALL_OLD":
            attributes = old
        elif mode == "ALL_NEW":
            attributes = new
        elif mode in ("UPDATED_OLD", "UPDATED_NEW") and self.update is not None:
            attributes = updated_attributes(self.update, old, new, mode)
        else:
            attributes = None
        return {"Attributes": attributes} if attributes else {}


def prepare(engine, request: dict) -> UpdateRequest:
    check_write_fields(request, FIELDS)
    table = engine.table(request["TableName"])
    pk, sk, key = table.key.key_from_request(request["Key"])
    ctx = expression_context(request, "ConditionExpression", "UpdateExpression", legacy=LEGACY_WRITE_PARAMETERS + ("AttributeUpdates",))
    update = None
    if request.get("UpdateExpression") is not None:
        update = parse_update(request["UpdateExpression"], ctx)
        check_key_not_updated(update, table.key.names)
    condition = parse_condition_expression(request, ctx)
    ctx.check_unused()
    return UpdateRequest(
        table=table,
        pk=pk,
        sk=sk,
        key=key,
        condition=condition,
        return_values=request.get("ReturnValues", "NONE"),
        return_on_ccf=request.get("ReturnValuesOnConditionCheckFailure", "NONE"),
        return_capacity=request.get("ReturnConsumedCapacity", "NONE"),
        size_error="Item size to update has exceeded the maximum allowed size",
        update=update,
    )


def handle(engine, request: dict) -> dict:
    return execute(engine, prepare(engine, request))
