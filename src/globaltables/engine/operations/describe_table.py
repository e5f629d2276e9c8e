"""DescribeTable: the table's current definition, status and (exact) item count and size."""

from __future__ import annotations

from ..table_description import describe_table
from ..validation import TableNameField, check_request

FIELDS = {"TableName": TableNameField()}


def handle(engine, request: dict) -> dict:
    check_request(request, FIELDS)
    table = engine.table(request["TableName"], describe=True)
    return {"Table": describe_table(engine, table)}
