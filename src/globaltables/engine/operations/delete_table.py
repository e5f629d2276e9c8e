"""DeleteTable: drop a table and all its items at once. A table with point-in-time recovery enabled leaves a
SYSTEM backup of itself (engine/backups.py), restorable for 35 days, as DynamoDB keeps one.

The response shows DELETING, as DynamoDB's does; the table is gone immediately after, so boto3's
`table_not_exists` waiter returns on its first DescribeTable.
"""

from __future__ import annotations

from .. import backups
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
    if table.point_in_time_recovery is not None:
        backups.create(engine, table, table.name + backups.SYSTEM_BACKUP_SUFFIX, kind="SYSTEM")
    engine.drop_table(table.name)
    return {"TableDescription": description}
