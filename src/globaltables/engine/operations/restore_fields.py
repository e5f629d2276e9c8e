"""The request members both restore operations share: the target's name and the overrides (engine/backups.py)."""

from __future__ import annotations

from ..table_validation import (
    BILLING_MODE,
    GLOBAL_SECONDARY_INDEX,
    LOCAL_SECONDARY_INDEX,
    ON_DEMAND_THROUGHPUT,
    SSE_SPECIFICATION,
    provisioned_throughput_field,
)
from ..validation import List, TableNameField

TARGET_TABLE_NAME = TableNameField()
RESTORE_OVERRIDES = {
    "BillingModeOverride": BILLING_MODE,
    "GlobalSecondaryIndexOverride": List(GLOBAL_SECONDARY_INDEX),
    "LocalSecondaryIndexOverride": List(LOCAL_SECONDARY_INDEX),
    "ProvisionedThroughputOverride": provisioned_throughput_field(),
    "OnDemandThroughputOverride": ON_DEMAND_THROUGHPUT,
    "SSESpecificationOverride": SSE_SPECIFICATION,
}
