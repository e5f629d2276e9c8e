"""TransactWriteItems: up to 100 Put, Update, Delete and ConditionCheck actions on distinct items, all or nothing.

Each step finishes for every action before the next one starts, so a refused request changes nothing:
1. the whole request's shape is checked at once (constraint messages with paths like
   'transactItems.1.member.put.item'), and its size: at most 4 MB of payload, whatever the size of the items it
   changes;
2. every action is prepared by its single-item operation's own `prepare` (same validation, same messages); two
   actions on one item are refused;
3. the client request token is looked up: a replay answers success, a reuse with other TransactItems is refused;
4. every action is evaluated against the current item (injected conflict, condition, new item, its size) and gets
   a cancellation reason, `{"Code": "None"}` when fine;
5. any failure cancels the whole transaction (TransactionCanceledException, reasons in request order, nothing
   written). A condition that fails lets evaluation go on (every failed condition is reported); a validation error
   (a key that does not fit its table, an operand of the wrong type, an item over 400 KB) stops it, and the
   actions after it are reported as None. Otherwise all writes and the token record commit through one
   `Engine.commit`, one store transaction.
Serializable by construction: see engine/transactions.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import capacity, transactions
from ..errors import (
    ConditionalCheckFailedException,
    IdempotentParameterMismatchException,
    TransactionCanceledException,
    ValidationException,
)
from ..schema import validate_item_size
from ..storage.records import ItemWrite
from ..strong import refuse_if_strong
from ..validation import AnyValue, List, Map, Str, Struct, TableNameField, check_request
from ..values import item_size, normalize_item
from .read_modify_write import (
    RETURN_CONSUMED_CAPACITY,
    RETURN_ITEM_COLLECTION_METRICS,
    RETURN_VALUES_ON_CCF,
    WriteRequest,
    expression_context,
    parse_condition_expression,
)
from .write_preparers import PREPARE


def _action(**members) -> dict:
    return {
        "TableName": TableNameField(),
        "ConditionExpression": Str(),
        "ExpressionAttributeNames": Map(Str()),
        "ExpressionAttributeValues": Map(AnyValue()),
        "ReturnValuesOnConditionCheckFailure": RETURN_VALUES_ON_CCF,
        **members,
    }


KEY = Map(AnyValue(), required=True)
ACTIONS = {
    "ConditionCheck": _action(Key=KEY, ConditionExpression=Str(required=True)),
    "Put": _action(Item=Map(AnyValue(), required=True)),
    "Delete": _action(Key=KEY),
    "Update": _action(Key=KEY, UpdateExpression=Str(required=True)),
}
FIELDS = {
    "TransactItems": List(
        Struct({name: Struct(members) for name, members in ACTIONS.items()}),
        required=True,
        min_length=1,
        max_length=transactions.MAX_ACTIONS,
    ),
    "ReturnConsumedCapacity": RETURN_CONSUMED_CAPACITY,
    "ReturnItemCollectionMetrics": RETURN_ITEM_COLLECTION_METRICS,
    "ClientRequestToken": Str(min_length=1, max_length=36),
}
ONE_ACTION_MESSAGE = "TransactItems can only contain one of Check, Put, Update or Delete"


@dataclass
class ConditionCheckRequest(WriteRequest):
    """A condition on an item the transaction does not change."""

    def apply(self, old: dict | None) -> dict | None:
        return old


def prepare_condition_check(engine, request: dict) -> ConditionCheckRequest:
    table = engine.table(request["TableName"])
    pk, sk, key = table.key.key_from_request(request["Key"])
    ctx = expression_context(request, "ConditionExpression")
    condition = parse_condition_expression(request, ctx)
    ctx.check_unused()
    return ConditionCheckRequest(
        table=table,
        pk=pk,
        sk=sk,
        key=key,
        condition=condition,
        return_on_ccf=request.get("ReturnValuesOnConditionCheckFailure", "NONE"),
    )


def prepare_of(kind: str) -> Callable[[Any, dict], WriteRequest]:
    """An action's `prepare`: the single-item operation's (Put is PutItem's, ...; write_preparers.py), or the
    condition check's."""
    return prepare_condition_check if kind == "ConditionCheck" else PREPARE[f"{kind}Item"]


class _KeyRefused(Exception):
    """An action whose key does not fit its table: a cancellation reason, not a refusal of the request."""

    def __init__(self, message: str) -> None:
        self.message = message


def prepare_action(engine, transact_item: dict) -> WriteRequest:
    present = [name for name in ACTIONS if transact_item.get(name) is not None]
    if len(present) != 1:
        raise ValidationException(ONE_ACTION_MESSAGE)
    kind = present[0]
    body = transact_item[kind]
    # Only the members the action's shape has: the single-item operations know more (ReturnValues, ...), which a
    # transaction action cannot carry; the service ignores unknown members.
    request = {name: body[name] for name in ACTIONS[kind] if name in body}
    check_key(engine, kind, request)
    return prepare_of(kind)(engine, request)


def check_key(engine, kind: str, request: dict) -> None:
    """The action's key against its table's key schema (missing, extra or mistyped key attributes, empty or
    oversized key values): DynamoDB finds these while evaluating the actions and cancels the transaction."""
    table = engine.table(request["TableName"])
    try:
        if kind == "Put":
            item = normalize_item(request["Item"])  # a bad value elsewhere in the item is the request's error
        else:
            key = request["Key"]
    except ValidationException:
        return
    try:
        if kind == "Put":
            table.key.key_from_item(item)
        else:
            table.key.key_from_request(key)
    except ValidationException as error:
        raise _KeyRefused(error.message) from None


def cancelled_at(index: int, count: int, message: str) -> TransactionCanceledException:
    """Evaluation stops at the first invalid action: it gets ValidationError, every other action None."""
    reasons = [transactions.no_error() for _ in range(count)]
    reasons[index] = transactions.validation_reason(message)
    return TransactionCanceledException(reasons)


def handle(engine, request: dict) -> dict:
    check_request(request, FIELDS)
    transactions.check_payload_size(request["TransactItems"])
    actions = []
    count = len(request["TransactItems"])
    for index, transact_item in enumerate(request["TransactItems"]):
        try:
            actions.append(prepare_action(engine, transact_item))
        except _KeyRefused as refusal:
            raise cancelled_at(index, count, refusal.message) from None
    for action in actions:
        refuse_if_strong(action.table, "TransactWriteItems")
    transactions.check_distinct([(a.table.name, a.pk, a.sk) for a in actions])
    mode = request.get("ReturnConsumedCapacity", "NONE")
    token = request.get("ClientRequestToken")
    digest = None
    if token is not None:
        digest = transactions.fingerprint(request["TransactItems"])
        seen = transactions.recorded_fingerprint(engine, token)
        if seen is not None:
            if seen != digest:
                raise IdempotentParameterMismatchException(transactions.IDEMPOTENT_MISMATCH_MESSAGE)
            return replay_response(engine, actions, mode)

    throughput = engine.throughput
    writes, reasons, failed, charges = evaluate(engine, actions, capacity.wanted(mode) or throughput is not None)
    if failed:
        raise TransactionCanceledException(reasons)
    if throughput is not None:  # all or nothing: one throttled action cancels the transaction (throughput.py)
        throttles = throughput.charge_all(charges)
        if throttles:
            raise TransactionCanceledException(transactions.throttled_reasons(throttles))
    tally = None
    if capacity.wanted(mode):
        tally = transactions.CapacityTally()
        for charge in charges:
            tally.add_charge(charge)
    record = transactions.token_record(engine, token, digest) if token is not None else None
    engine.commit(writes, record)

    response: dict = {}
    if tally is not None:
        response["ConsumedCapacity"] = tally.consumed(mode, "write")
    if request.get("ReturnItemCollectionMetrics") == "SIZE":
        metrics = item_collection_metrics(engine, actions)
        if metrics:
            response["ItemCollectionMetrics"] = metrics
    return response


def evaluate(
    engine, actions: list[WriteRequest], want_capacity: bool
) -> tuple[list[ItemWrite], list[dict], bool, list[capacity.Charge]]:
    """Every action against its current item: (writes, cancellation reasons, any failure?, each action's capacity
    charge when `want_capacity`)."""
    faults = engine.faults
    get = engine.store.get
    writes: list[ItemWrite] = []
    reasons: list[dict] = []
    charges: list[capacity.Charge] = []
    failed = False
    for action in actions:
        table = action.table.name
        if faults.held and faults.is_held(table, action.pk, action.sk):
            reasons.append(transactions.conflict_reason())
            failed = True
            continue
        old = get(table, action.pk, action.sk)
        try:
            action.check_condition(old)
            new = action.apply(old)
            size = validate_item_size(new, action.size_error) if new is not None else 0
        except ConditionalCheckFailedException as error:
            reasons.append(transactions.condition_failed_reason(error.message, error.extra.get("Item")))
            failed = True
            continue
        except ValidationException as error:  # data-dependent: an update's operand types, the new item's size
            # Evaluation stops here: the actions after this one are reported as None, unevaluated.
            reasons.append(transactions.validation_reason(error.message))
            reasons.extend(transactions.no_error() for _ in range(len(actions) - len(reasons)))
            failed = True
            break
        reasons.append(transactions.no_error())
        writing = not isinstance(action, ConditionCheckRequest)
        if writing and (new is not None or old is not None):
            writes.append(ItemWrite(table, action.pk, action.sk, new, size, old))
        if want_capacity:
            # Every action, condition checks included (their "new" item is the old one: no index changes), is
            # billed as a transactional write of its larger version; the secondary indexes a write changes cost
            # double too.
            charges.append(
                capacity.item_write_charge(action.table, action.pk, old, new, size, transactional=True, sk=action.sk)
            )
    return writes, reasons, failed, charges


def replay_response(engine, actions: list[WriteRequest], mode: str) -> dict:
    """A retry of a committed transaction: nothing is applied; capacity is what reading the items costs."""
    if not capacity.wanted(mode):
        return {}
    tally = transactions.CapacityTally()
    for action in actions:
        item = engine.store.get(action.table.name, action.pk, action.sk)
        size = item_size(item) if item is not None else 0
        tally.add(action.table.name, capacity.read_units(size, consistent=True))
    return {"ConsumedCapacity": tally.consumed(mode, "read")}


def item_collection_metrics(engine, actions: list[WriteRequest]) -> dict:
    """ItemCollectionMetrics for the written items of tables with local secondary indexes, one per collection."""
    out: dict[str, list[dict]] = {}
    seen: set[tuple[str, bytes]] = set()
    for action in actions:
        table = action.table
        if not table.lsis or isinstance(action, ConditionCheckRequest) or (table.name, action.pk) in seen:
            continue
        seen.add((table.name, action.pk))
        out.setdefault(table.name, []).append(engine.indexes.collection_metrics(table, action.key, action.pk))
    return out
