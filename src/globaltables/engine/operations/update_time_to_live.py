"""UpdateTimeToLive: enable TTL on an attribute, or disable it.

DynamoDB refuses enabling when TTL is already enabled ("TimeToLive is already enabled") and disabling when it is
not ("TimeToLive is already disabled"), and disabling under another attribute name than the enabled one. Any
attribute name of 1 to 255 characters is accepted; items whose attribute is not a Number are simply never expired.
The change is effective at once (DynamoDB takes up to an hour and shows ENABLING meanwhile); the sweeper
(engine/ttl.py) deletes expired items from its next pass on.
"""

from __future__ import annotations

from ..errors import validation
from ..schema import TableDefinition
from ..strong import refuse_if_strong
from ..validation import Bool, Str, Struct, TableNameField, check_request

FIELDS = {
    "TableName": TableNameField(),
    "TimeToLiveSpecification": Struct(
        {"Enabled": Bool(required=True), "AttributeName": Str(required=True, min_length=1, max_length=255)},
        required=True,
    ),
}


def handle(engine, request: dict) -> dict:
    check_request(request, FIELDS)
    specification = request["TimeToLiveSpecification"]
    enabled = specification["Enabled"]
    attribute = specification["AttributeName"]
    table = engine.table(request["TableName"], describe=True)
    refuse_if_strong(table, "UpdateTimeToLive")
    current = table.ttl if table.ttl and table.ttl.get("TimeToLiveStatus") == "ENABLED" else None
    if enabled:
        if current is not None:
            raise validation("TimeToLive is already enabled")
        ttl = {"AttributeName": attribute, "TimeToLiveStatus": "ENABLED"}
    else:
        if current is None:
            raise validation("TimeToLive is already disabled")
        if current["AttributeName"] != attribute:
            raise validation(
                f"TimeToLive is active on a different AttributeName: current AttributeName is {current['AttributeName']}"
            )
        ttl = {"TimeToLiveStatus": "DISABLED"}
    new = TableDefinition.from_dict(table.to_dict())
    new.ttl = ttl
    engine.save_table(new)
    return {"TimeToLiveSpecification": {"AttributeName": attribute, "Enabled": enabled}}
