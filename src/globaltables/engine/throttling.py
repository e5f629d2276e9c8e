"""Throttling answers, exactly as DynamoDB words them (capacity-facts §5; docs/capacity.md).

A `Throttle` says which limit refused a request: the resource (the table or one global secondary index, by ARN),
the operation type (Read or Write) and the limit type. Its reason string is ResourceType + OperationType +
LimitType, one of 16 (`TableWriteKeyRangeThroughputExceeded`, `IndexReadMaxOnDemandThroughputExceeded`, ...), and
the limit type decides the exception:

| limit type | exception | `__type` namespace | reasons member |
|---|---|---|---|
| ProvisionedThroughputExceeded; KeyRangeThroughputExceeded on a provisioned table | ProvisionedThroughputExceededException | com.amazonaws.dynamodb.v20120810 | ThrottlingReasons |
| KeyRangeThroughputExceeded on an on-demand table; MaxOnDemandThroughputExceeded | ThrottlingException | com.amazon.coral.availability | throttlingReasons |
| AccountLimitExceeded (the per-table on-demand quota) | RequestLimitExceeded | com.amazonaws.dynamodb.v20120810 | ThrottlingReasons |

All are HTTP 400. A transaction reports a throttled action as the cancellation code ProvisionedThroughputExceeded
(the PTEE cases) or ThrottlingError (the others).
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import DynamoError, ProvisionedThroughputExceededException

KEY_RANGE = "KeyRangeThroughputExceeded"
PROVISIONED = "ProvisionedThroughputExceeded"
ACCOUNT_LIMIT = "AccountLimitExceeded"
MAX_ON_DEMAND = "MaxOnDemandThroughputExceeded"
LIMIT_TYPES = (KEY_RANGE, PROVISIONED, ACCOUNT_LIMIT, MAX_ON_DEMAND)
# Every reason DynamoDB documents: {Table,Index}{Read,Write}{limit type}.
REASONS = frozenset(f"{r}{o}{limit}" for r in ("Table", "Index") for o in ("Read", "Write") for limit in LIMIT_TYPES)

TABLE_PROVISIONED_MESSAGE = (
    "The level of configured provisioned throughput for the table was exceeded. Consider increasing your "
    "provisioning level with the UpdateTable API."
)
INDEX_PROVISIONED_MESSAGE = (
    "The level of configured provisioned throughput for one or more global secondary indexes of the table was "
    "exceeded. Consider increasing your provisioning level for the under-provisioned global secondary indexes with "
    "the UpdateTable API."
)
TABLE_ON_DEMAND_MESSAGE = (
    "Throughput exceeds the current capacity of your table or index. DynamoDB is automatically scaling your table "
    "or index so please try again shortly. If exceptions persist, check if you have a hot key: "
    "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html"
)
INDEX_ON_DEMAND_MESSAGE = (
    "Throughput exceeds the current capacity for one or more global secondary indexes. DynamoDB is automatically "
    "scaling your index so please try again shortly."
)
MAX_ON_DEMAND_MESSAGE = "Throughput exceeds the maximum OnDemandThroughput configured on table or index"
ACCOUNT_LIMIT_MESSAGE = (
    "Throughput exceeds the current throughput limit for your account. To request a limit increase, contact AWS "
    "Support at https://aws.amazon.com/support."
)


class ThrottlingException(DynamoError):
    """On-demand throttling. The model marks it synthetic, from the `com.amazon.coral.availability` namespace."""

    namespace = "com.amazon.coral.availability"


class RequestLimitExceeded(DynamoError):
    """The account's (here: the table's) on-demand throughput quota."""


@dataclass(frozen=True, slots=True)
class Throttle:
    resource_type: str  # "Table" or "Index"
    operation: str  # "Read" or "Write"
    limit: str  # one of LIMIT_TYPES
    resource: str  # the table's or the index's ARN
    on_demand: bool

    @property
    def reason(self) -> str:
        return f"{self.resource_type}{self.operation}{self.limit}"

    @property
    def provisioned_error(self) -> bool:
        """Whether DynamoDB answers ProvisionedThroughputExceededException (else ThrottlingException or
        RequestLimitExceeded)."""
        return self.limit == PROVISIONED or (self.limit == KEY_RANGE and not self.on_demand)

    @property
    def message(self) -> str:
        index = self.resource_type == "Index"
        if self.provisioned_error:
            return INDEX_PROVISIONED_MESSAGE if index else TABLE_PROVISIONED_MESSAGE
        if self.limit == ACCOUNT_LIMIT:
            return ACCOUNT_LIMIT_MESSAGE
        if self.limit == MAX_ON_DEMAND:
            return MAX_ON_DEMAND_MESSAGE
        return INDEX_ON_DEMAND_MESSAGE if index else TABLE_ON_DEMAND_MESSAGE

    @property
    def cancellation_code(self) -> str:
        """The CancellationReason code of a throttled transaction action."""
        return "ProvisionedThroughputExceeded" if self.provisioned_error else "ThrottlingError"

    def cancellation_reason(self) -> dict:
        return {"Code": self.cancellation_code, "Message": self.message}

    def error(self) -> DynamoError:
        reasons = [{"reason": self.reason, "resource": self.resource}]
        if self.provisioned_error:
            return ProvisionedThroughputExceededException(self.message, ThrottlingReasons=reasons)
        if self.limit == ACCOUNT_LIMIT:
            return RequestLimitExceeded(self.message, ThrottlingReasons=reasons)
        return ThrottlingException(self.message, throttlingReasons=reasons)


# Every answer a limit gives (the table above): what a client backs off from and retries.
THROTTLING_ERRORS = (ProvisionedThroughputExceededException, ThrottlingException, RequestLimitExceeded)
# An experiment's final reads back off from a throttled page as an SDK would and read it again (about a minute in
# all): they are a client of the region's capacity like any other, and a replica in capacity debt must not end a run.
FINAL_READ_BACKOFF_S = (0.05, 0.1, 0.2, 0.4, 0.8, *(1.0,) * 60)
