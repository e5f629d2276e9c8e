"""UpdateItem: edit an item's attributes with an UpdateExpression, creating the item when it does not exist.

An update whose actions only take attributes away (REMOVE, DELETE) does not create a missing item: nothing is
written, no stream record appears, and ALL_NEW returns no Attributes. Any SET/ADD (legacy PUT/ADD), and an empty
AttributeUpdates, create the item from its key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..answer import Answer
from ..expressions import apply_update, check_key_not_updated, parse_update, updated_attributes
from ..expressions.ast import DELETE, REMOVE
from ..expressions.legacy import UPDATE_FIELDS as LEGACY_UPDATE_FIELDS
from ..expressions.legacy import attribute_updates
from ..validation import Field, Map, Str
from .read_modify_write import (
    LEGACY_WRITE_PARAMETERS,
    WriteRequest,
    check_write_fields,
    execute,
    expression_context,
    parse_write_condition,
    return_options,
)

# Actions that only take attributes away (REMOVE; DELETE of set elements; legacy AttributeUpdates DELETE).
REMOVING = frozenset({REMOVE, DELETE})

FIELDS = {"Key": Map(Field(type="any"), required=True), "UpdateExpression": Str()}


@dataclass
class UpdateRequest(WriteRequest):
    update: Any = None
    legacy_update: Any = None  # legacy.AttributeUpdates, whose type rules and messages differ from the expression's

    def apply(self, old: dict | None) -> dict | None:
        if self.update is None:
            return old if old is not None else dict(self.key)
        if old is None and all(action.kind in REMOVING for action in self.update.actions):
            # Removing from an item that does not exist changes nothing: no item is created, no change recorded.
            return None
        base = old if old is not None else dict(self.key)
        if self.legacy_update is not None:
            self.legacy_update.check_types(base)
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
    check_write_fields(request, FIELDS, LEGACY_UPDATE_FIELDS)
    table = engine.table(request["TableName"])
    pk, sk, key = table.key.key_from_request(request["Key"])
    # Parameter order as DynamoDB lists them in its messages.
    ctx = expression_context(request, "UpdateExpression", "ConditionExpression", legacy=("AttributeUpdates",) + LEGACY_WRITE_PARAMETERS)
    update = None
    if request.get("UpdateExpression") is not None:
        update = parse_update(request["UpdateExpression"], ctx)
        check_key_not_updated(update, table.key.names)
    legacy_update = None
    if request.get("AttributeUpdates") is not None:
        legacy_update = attribute_updates(request["AttributeUpdates"], table.key.names)
        update = legacy_update.update
    condition = parse_write_condition(request, ctx)
    ctx.check_unused()
    return UpdateRequest(
        table=table,
        pk=pk,
        sk=sk,
        key=key,
        condition=condition,
        **return_options(request),
        size_error="Item size to update has exceeded the maximum allowed size",
        update=update,
        legacy_update=legacy_update,
    )


def handle(engine, request: dict) -> Answer:
    return execute(engine, prepare(engine, request))
