"""DeleteTable: drop a table and all its items at once.

The response shows DELETING, as DynamoDB's does; the table is gone immediately after, so boto3's
`table_not_exists` waiter returns on its first DescribeTable.
"""

from __future__ import annotations

from ..errors import validation
from ..table_description import describe_table
from ..validation import TableNameField, check_request

FIELDS = {"TableName": TableNameField()}

PROTECTED = (
    "Resource cannot be deleted as it is currently protected against deletion. Disable deletion protection first."
)


def handle(engine, request: dict) -> dict:
    check_request(request, FIELDS)
    table = engine.table(request["TableName"], describe=True)
    if table.deletion_protection:
        raise validation(PROTECTED)
    # DynamoDB's DeleteTable response leaves out the global secondary indexes being dropped with the table.
    description = describe_table(engine, table, table_status="DELETING", include_gsis=False)
    engine.drop_table(table.name)
    return {"TableDescription": description}
