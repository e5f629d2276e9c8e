"""Table ARNs wherever DynamoDB takes a table name.

DynamoDB's API model gives `TableName` the shape `TableArn` ("You can also provide the Amazon Resource Name (ARN) of
the table in this parameter"): the single-table operations, the items of TransactWriteItems and TransactGetItems,
and the keys of BatchGetItem's and BatchWriteItem's RequestItems. `resolve` turns every such ARN into the table's
name before the operation sees the request, so validation, errors and responses are the name's; a batch's
per-table answers (Responses, UnprocessedKeys, UnprocessedItems, ItemCollectionMetrics) are keyed back by what the
caller wrote (`restore_batch_keys`), as DynamoDB documents them ("a map of table name or table ARN to ...").

An ARN names a table of this region and account (`Engine.table_arn`'s form, any partition); one of another region or
account is a table this endpoint does not have (ResourceNotFoundException), and a string that starts like an ARN but
is not a table's is refused (ValidationException).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from .errors import ResourceNotFoundException, ValidationException

if TYPE_CHECKING:
    from .engine import Engine

TABLE_ARN = re.compile(r"arn:aws[a-z-]*:dynamodb:([a-z0-9-]+):([0-9]{12}):table/([a-zA-Z0-9_.-]{3,255})")
MAX_ARN_LENGTH = 1024  # the TableArn shape's limit

TRANSACT_WRITE_KINDS = ("ConditionCheck", "Put", "Delete", "Update")
BATCH_OPERATIONS = ("BatchGetItem", "BatchWriteItem")
# The per-table maps of a batch response, keyed by the names RequestItems gave.
BATCH_RESPONSE_MAPS = ("Responses", "UnprocessedKeys", "UnprocessedItems", "ItemCollectionMetrics")


def is_arn(value: Any) -> bool:
    return type(value) is str and value.startswith("arn:")


def table_name(engine: Engine, value: str) -> str:
    """The name of the table an ARN names, in this region and account."""
    if len(value) > MAX_ARN_LENGTH:
        raise ValidationException(
            f"1 validation error detected: Value '{value}' at 'tableName' failed to satisfy constraint: "
            f"Member must have length less than or equal to {MAX_ARN_LENGTH}"
        )
    match = TABLE_ARN.fullmatch(value)
    if match is None:
        raise ValidationException(f"Invalid TableArn provided as input: {value}")
    region, account, name = match.groups()
    if region != engine.region or account != engine.account:
        raise ResourceNotFoundException(f"Requested resource not found: Table: {value} not found")
    return name


def resolve(engine: Engine, operation: str, request: Any) -> tuple[Any, dict[str, str] | None]:
    """The request with table names for table ARNs (a copy where anything changed), and for a batch the given key of
    every table whose key was an ARN ({name: ARN}) or None."""
    if not isinstance(request, dict):
        return request, None
    if is_arn(request.get("TableName")):
        request = {**request, "TableName": table_name(engine, request["TableName"])}
    items = request.get("TransactItems")
    if isinstance(items, list) and any(_transact_arn(item) for item in items):
        request = {**request, "TransactItems": [_resolve_transact_item(engine, item) for item in items]}
    if operation in BATCH_OPERATIONS:
        by_table = request.get("RequestItems")
        if isinstance(by_table, dict) and any(is_arn(key) for key in by_table):
            given: dict[str, str] = {}
            resolved: dict[str, Any] = {}
            for key, entry in by_table.items():
                name = table_name(engine, key) if is_arn(key) else key
                if name in resolved:
                    raise ValidationException(f"RequestItems names table {name} more than once (by name and by ARN)")
                resolved[name] = entry
                if name != key:
                    given[name] = key
            return {**request, "RequestItems": resolved}, given
    return request, None


def restore_batch_keys(response: dict, given: dict[str, str]) -> dict:
    """Key a batch response's per-table maps by the table ARNs the request used."""
    for field in BATCH_RESPONSE_MAPS:
        by_table = response.get(field)
        if isinstance(by_table, dict):
            response[field] = {given.get(name, name): value for name, value in by_table.items()}
    return response


def _transact_arn(item: Any) -> bool:
    if not isinstance(item, dict):
        return False
    return any(
        isinstance(item.get(kind), dict) and is_arn(item[kind].get("TableName"))
        for kind in (*TRANSACT_WRITE_KINDS, "Get")
    )


def _resolve_transact_item(engine: Engine, item: Any) -> Any:
    if not _transact_arn(item):
        return item
    out = dict(item)
    for kind in (*TRANSACT_WRITE_KINDS, "Get"):
        action = out.get(kind)
        if isinstance(action, dict) and is_arn(action.get("TableName")):
            out[kind] = {**action, "TableName": table_name(engine, action["TableName"])}
    return out
