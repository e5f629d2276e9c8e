"""DeleteItem: remove one item by key, optionally under a condition. Deleting a missing item succeeds."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ValidationException
from ..validation import Field, Map
from .read_modify_write import (
    LEGACY_WRITE_PARAMETERS,
    WriteRequest,
    check_write_fields,
    execute,
    expression_context,
    parse_write_condition,
)

FIELDS = {"Key": Map(Field(type="any"), required=True)}


@dataclass
class DeleteRequest(WriteRequest):
    def apply(self, old: dict | None) -> dict | None:
        return None


def prepare(engine, request: dict) -> DeleteRequest:
    check_write_fields(request, FIELDS)
    table = engine.table(request["TableName"])
    return_values = request.get("ReturnValues", "NONE")
    if return_values not in ("NONE", "ALL_OLD"):
        raise ValidationException("ReturnValues can only be ALL_OLD or NONE")
    pk, sk, key = table.key.key_from_request(request["Key"])
    ctx = expression_context(request, "ConditionExpression", legacy=LEGACY_WRITE_PARAMETERS)
    condition = parse_write_condition(request, ctx)
    ctx.check_unused()
    return DeleteRequest(
        table=table,
        pk=pk,
        sk=sk,
        key=key,
        condition=condition,
        return_values=return_values,
        return_on_ccf=request.get("ReturnValuesOnConditionCheckFailure", "NONE"),
        return_capacity=request.get("ReturnConsumedCapacity", "NONE"),
        return_metrics=request.get("ReturnItemCollectionMetrics", "NONE"),
    )


def handle(engine, request: dict) -> dict:
    return execute(engine, prepare(engine, request))
