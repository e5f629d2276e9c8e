"""The shape shared by PutItem, UpdateItem and DeleteItem (and later by transactions, batches and replication).

Rule 1: `prepare` validates everything it can before any data is read: parameters, key, expressions, placeholders.
Rule 2: `WriteRequest.apply(old)` is a pure function of the previous item: it builds the new item (or None for a
delete) and never mutates its input, so it can run more than once (a retried strong write re-evaluates it against
the newer version it was rejected for).
Rule 3: `execute` reads the old item, checks the condition, applies, checks the result's size, and commits through
`Engine.commit`, the single write path; it answers the response with the version written (or, for a write that
changed nothing, the version read: `answer.py`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .. import capacity
from ..answer import Answer
from ..capacity import WRITE_UNIT_BYTES
from ..errors import ConditionalCheckFailedException, ValidationException
from ..expressions import ExpressionContext, check_expression_parameters, evaluate_condition, parse_condition
from ..expressions.legacy import WRITE_FIELDS as LEGACY_WRITE_FIELDS
from ..expressions.legacy import check_conditional_operator, check_fields, expected_condition
from ..schema import TableDefinition, validate_item_size
from ..storage.records import ItemWrite
from ..validation import Field, Map, Str, TableNameField, check_request

# The legacy parameters DynamoDB refuses beside ConditionExpression, in the order its message lists them.
LEGACY_WRITE_PARAMETERS = ("Expected", "ConditionalOperator")

RETURN_VALUES = Str(
    enum=("NONE", "ALL_OLD", "UPDATED_OLD", "ALL_NEW", "UPDATED_NEW"),
    enum_order=("ALL_NEW", "UPDATED_OLD", "ALL_OLD", "NONE", "UPDATED_NEW"),  # as DynamoDB prints the set
)
RETURN_VALUES_ON_CCF = Str(enum=("ALL_OLD", "NONE"), wire_name="returnValuesOnConditionCheckFailure")
RETURN_CONSUMED_CAPACITY = Str(enum=("INDEXES", "TOTAL", "NONE"))
RETURN_ITEM_COLLECTION_METRICS = Str(enum=("SIZE", "NONE"))

COMMON_WRITE_FIELDS: dict[str, Field] = {
    "TableName": TableNameField(),
    "ConditionExpression": Str(),
    "ExpressionAttributeNames": Map(Str()),
    "ExpressionAttributeValues": Map(Field(type="any")),
    "ReturnValues": RETURN_VALUES,
    "ReturnValuesOnConditionCheckFailure": RETURN_VALUES_ON_CCF,
    "ReturnConsumedCapacity": RETURN_CONSUMED_CAPACITY,
    "ReturnItemCollectionMetrics": RETURN_ITEM_COLLECTION_METRICS,
}


def expression_context(request: dict, *expression_fields: str, legacy: tuple[str, ...] = ()) -> ExpressionContext:
    """The request's placeholder context, after DynamoDB's request-level rules on expression parameters."""
    check_expression_parameters(request, expression_fields, legacy)
    return ExpressionContext(request.get("ExpressionAttributeNames"), request.get("ExpressionAttributeValues"))


@dataclass
class WriteRequest:
    """A validated single-item write, ready to run against the item's previous version."""

    table: TableDefinition
    pk: bytes
    sk: bytes
    key: dict
    condition: Any = None
    return_values: str = "NONE"
    return_on_ccf: str = "NONE"
    return_capacity: str = "NONE"
    return_metrics: str = "NONE"  # ReturnItemCollectionMetrics
    size_error: str = "Item size has exceeded the maximum allowed size"
    extras: dict = field(default_factory=dict)

    def apply(self, old: dict | None) -> dict | None:
        raise NotImplementedError

    def check_condition(self, old: dict | None) -> None:
        if self.condition is not None and not evaluate_condition(self.condition, old):
            item = old if (self.return_on_ccf == "ALL_OLD" and old is not None) else None
            raise ConditionalCheckFailedException(item=item)

    def response(self, old: dict | None, new: dict | None) -> dict:
        """ReturnValues for PutItem/DeleteItem: only NONE and ALL_OLD exist there."""
        out: dict = {}
        if self.return_values == "ALL_OLD" and old is not None:
            out["Attributes"] = old
        return out


def return_options(request: dict) -> dict:
    """The Return* parameters every single-item write takes, as WriteRequest fields."""
    return {
        "return_values": request.get("ReturnValues", "NONE"),
        "return_on_ccf": request.get("ReturnValuesOnConditionCheckFailure", "NONE"),
        "return_capacity": request.get("ReturnConsumedCapacity", "NONE"),
        "return_metrics": request.get("ReturnItemCollectionMetrics", "NONE"),
    }


def check_old_values_only(request: dict) -> None:
    """PutItem and DeleteItem can return only the old item."""
    if request.get("ReturnValues", "NONE") not in ("NONE", "ALL_OLD"):
        raise ValidationException("ReturnValues can only be ALL_OLD or NONE")


def check_write_fields(
    request: dict, extra: dict[str, Field], legacy_fields: dict[str, Field] = LEGACY_WRITE_FIELDS
) -> None:
    merged = _MERGED_FIELDS.get(id(extra))
    if merged is None or merged[0] is not extra:  # built once per operation's spec, not once per request
        merged = _MERGED_FIELDS[id(extra)] = (extra, {**COMMON_WRITE_FIELDS, **extra})
    check_request(request, merged[1])
    check_fields(request, legacy_fields)


# id(extra) -> (extra, COMMON_WRITE_FIELDS + extra); holding `extra` keeps its id from being reused.
_MERGED_FIELDS: dict[int, tuple[dict, dict]] = {}


def execute(engine, request: WriteRequest) -> Answer:
    """Read, check, apply, size-check and commit one item write; build its answer."""
    table = request.table
    if engine.faults.held:  # an injected in-flight transaction (faults.py); an empty dict costs nothing
        engine.faults.check_write(table.name, request.pk, request.sk)
    throughput = engine.throughput
    # The old item's stored size (0 without one) and the key's hash, read with it: what the throughput model charges,
    # and what the store's item totals need (`ItemWrite.old_size`: the write's own read, not another one).
    if engine.versions is None:
        old, old_size, h = engine.store.get_sized(table.name, request.pk, request.sk)
        old_version, had_tombstone = None, False
    else:
        old, old_version, had_tombstone, old_size, h = engine.store.get_record_sized(
            table.name, request.pk, request.sk
        )
    if throughput is None:
        request.check_condition(old)
    else:
        try:
            request.check_condition(old)
        except ConditionalCheckFailedException:  # a failed condition consumes too (unless throttled first)
            units = capacity.write_units(old_size)
            throughput.charge_one(table.name, "write", h, units, request.pk, request.sk)
            raise
    new = request.apply(old)
    size = validate_item_size(new, request.size_error) if new is not None else 0
    charge = None
    if throughput is not None:  # throttled: nothing written, nothing drawn (throughput.py)
        if table.gsis or table.lsis:
            charge = capacity.item_write_charge(table, request.pk, old, new, size, sk=request.sk, old_size=old_size)
            throughput.charge(charge)
        else:  # the table's own partition only: no Charge to build
            units = -(-max(size, old_size) // WRITE_UNIT_BYTES) or 1  # capacity.write_units, inlined
            throughput.charge_one(table.name, "write", h, units, request.pk, request.sk)
    if new is not None or old is not None:
        write = ItemWrite(
            table.name, request.pk, request.sk, new, size, old, old_version=old_version, had_tombstone=had_tombstone,
            old_size=old_size if old is not None else None,
        )  # fmt: skip
        engine.commit([write])
        version = write.version
    else:
        version = old_version
    response = request.response(old, new)
    if capacity.wanted(request.return_capacity):
        if charge is None:
            charge = capacity.item_write_charge(table, request.pk, old, new, size)
        response["ConsumedCapacity"] = charge.consumed(request.return_capacity)
    if request.return_metrics == "SIZE" and table.lsis:  # only tables with LSIs have item collections to report
        response["ItemCollectionMetrics"] = engine.indexes.collection_metrics(table, request.key, request.pk)
    return Answer(response, version)


def write_capacity(mode: str, table: TableDefinition, old: dict | None, new: dict | None, size: int) -> dict:
    """ConsumedCapacity of one item write (`size`: the new item's, 0 for a delete), indexes included."""
    return capacity.item_write_charge(table, b"", old, new, size).consumed(mode)


def parse_condition_expression(request: dict, ctx: ExpressionContext):
    text = request.get("ConditionExpression")
    return None if text is None else parse_condition(text, ctx, "ConditionExpression")


# The parameters a write's condition can come from: a request with none of them has no condition and nothing for the
# expression rules to check (most writes; the parsing machinery is skipped for them).
CONDITION_PARAMETERS = (
    "ConditionExpression", "ExpressionAttributeNames", "ExpressionAttributeValues", "Expected", "ConditionalOperator",
)  # fmt: skip


def write_condition(request: dict):
    """The condition of a PutItem/DeleteItem request (None if it has none), after the expression rules."""
    for name in CONDITION_PARAMETERS:
        if name in request:
            break
    else:
        return None
    ctx = expression_context(request, "ConditionExpression", legacy=LEGACY_WRITE_PARAMETERS)
    condition = parse_write_condition(request, ctx)
    ctx.check_unused()
    return condition


def parse_write_condition(request: dict, ctx: ExpressionContext):
    """The condition of PutItem/UpdateItem/DeleteItem: ConditionExpression, or the legacy Expected (which
    `expression_context` has already refused beside expressions)."""
    text = request.get("ConditionExpression")
    if text is not None:
        return parse_condition(text, ctx, "ConditionExpression")
    check_conditional_operator(request, "Expected")
    expected = request.get("Expected")
    return None if expected is None else expected_condition(expected, request.get("ConditionalOperator"))
