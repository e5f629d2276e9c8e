"""DescribeTimeToLive: ENABLED with the attribute name, or DISABLED.

DynamoDB passes through ENABLING / DISABLING for up to an hour; here a change is effective at once.
"""

from __future__ import annotations

from ..validation import TableNameField, check_request

FIELDS = {"TableName": TableNameField()}


def handle(engine, request: dict) -> dict:
    check_request(request, FIELDS)
    table = engine.table(request["TableName"], describe=True)
    if table.ttl and table.ttl.get("TimeToLiveStatus") == "ENABLED":
        description = {"TimeToLiveStatus": "ENABLED", "AttributeName": table.ttl["AttributeName"]}
    else:
        description = {"TimeToLiveStatus": "DISABLED"}
    return {"TimeToLiveDescription": description}
