"""The `update-table` chaos verb's request: a table's capacity set through UpdateTable, whatever its billing mode.

Write capacity is global across a global table's replicas (capacity-facts §8), so the controller sends the change
to every replica holding the table (or the one a step names). Given the table's DescribeTable answer there:
- a provisioned table gets `ProvisionedThroughput` with the new units (a unit the step leaves out keeps its value);
- an on-demand table gets `OnDemandThroughput` maxima (MaxReadRequestUnits / MaxWriteRequestUnits) of the units
  given.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def update_table_request(
    description: Mapping[str, Any], read_units: int | None, write_units: int | None
) -> dict[str, Any]:
    """The UpdateTable request for a table described by `description` (DescribeTable's `Table`)."""
    name = description["TableName"]
    mode = (description.get("BillingModeSummary") or {}).get("BillingMode", "PROVISIONED")
    if mode == "PAY_PER_REQUEST":
        maxima = {}
        if read_units is not None:
            maxima["MaxReadRequestUnits"] = read_units
        if write_units is not None:
            maxima["MaxWriteRequestUnits"] = write_units
        return {"TableName": name, "OnDemandThroughput": maxima}
    current = description.get("ProvisionedThroughput") or {}
    return {
        "TableName": name,
        "ProvisionedThroughput": {
            "ReadCapacityUnits": read_units if read_units is not None else current.get("ReadCapacityUnits", 1),
            "WriteCapacityUnits": write_units if write_units is not None else current.get("WriteCapacityUnits", 1),
        },
    }
