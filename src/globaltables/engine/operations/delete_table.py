"""DeleteTable: drop a table and all its items at once.

The response shows DELETING, as DynamoDB's does; the table is gone immediately after, so boto3's
`table_not_exists` waiter returns on its first DescribeTable.
"""

from __future__ import annotations

from ..errors import validation
from ..table_description import describe_table, epoch
from ..validation import TableNameField, check_request

FIELDS = {"TableName": TableNameField()}

# What DynamoDB's DeleteTable description leaves out of the table's: its schema, its indexes and when it was made.
# It keeps the name, DELETING, the ids, the capacity (0/0 on demand) and the billing mode summary.
LEFT_OUT = ("CreationDateTime", "KeySchema", "AttributeDefinitions", "GlobalSecondaryIndexes", "LocalSecondaryIndexes")

PROTECTED = (
    "Resource cannot be deleted as it is currently protected against deletion. Disable deletion protection first."
)


def handle(engine, request: dict) -> dict:
    check_request(request, FIELDS)
    table = engine.table(request["TableName"], describe=True)
    if table.deletion_protection:
        raise validation(PROTECTED)
    description = describe_table(engine, table, table_status="DELETING", include_gsis=False)
    for member in LEFT_OUT:
        description.pop(member, None)
    if table.billing_mode == "PAY_PER_REQUEST":
        summary = description.setdefault("BillingModeSummary", {"BillingMode": "PAY_PER_REQUEST"})
        # On demand since creation when never switched: the switch time is the creation time.
        summary.setdefault("LastUpdateToPayPerRequestDateTime", epoch(table.billing_mode_updated or table.creation_time))
    engine.drop_table(table.name)
    return {"TableDescription": description}
