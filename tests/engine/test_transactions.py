"""TransactWriteItems and TransactGetItems on an in-memory engine: validation, all-or-nothing, cancellation reasons,
idempotency tokens on the injected clock, consumed capacity, and injected transaction conflicts (engine.faults).

Every refused request is also checked for having changed nothing.
"""

from __future__ import annotations

import copy

import pytest

from engine_calls import call, error_of
from globaltables.engine.engine import Engine
from globaltables.engine.storage.sqlite_store import SqliteStore
from globaltables.runtime.clock import ManualClock
from store_probes import token_count

CCF = {"Code": "ConditionalCheckFailed", "Message": "The conditional request failed"}
NONE = {"Code": "None"}
CONFLICT = {"Code": "TransactionConflict", "Message": "Transaction is ongoing for the item"}


@pytest.fixture
def clock():
    return ManualClock(wall_time=1_700_000_000.0)


@pytest.fixture
def engine(clock, make_store):
    engine = Engine(make_store(), clock)
    for name, extra in (("Accounts", {}), ("Orders", {"sort": True})):
        attrs = [{"AttributeName": "id", "AttributeType": "S"}]
        keys = [{"AttributeName": "id", "KeyType": "HASH"}]
        if extra.get("sort"):
            attrs.append({"AttributeName": "n", "AttributeType": "N"})
            keys.append({"AttributeName": "n", "KeyType": "RANGE"})
        engine.handle(
            "CreateTable",
            {"TableName": name, "AttributeDefinitions": attrs, "KeySchema": keys, "BillingMode": "PAY_PER_REQUEST"},
        )
    return engine


def key(i, table="Accounts"):
    return {"id": {"S": f"a{i}"}} if table == "Accounts" else {"id": {"S": f"o{i}"}, "n": {"N": str(i)}}


def put(i, balance=100, table="Accounts", **extra):
    return {"Put": {"TableName": table, "Item": {**key(i, table), "balance": {"N": str(balance)}}, **extra}}


def seed(engine, *ids, balance=100):
    for i in ids:
        call(engine, "PutItem", put(i, balance)["Put"])


def item(engine, i, table="Accounts"):
    return call(engine, "GetItem", {"TableName": table, "Key": key(i, table)}).get("Item")


def snapshot(engine, table="Accounts"):
    return call(engine, "Scan", {"TableName": table})["Items"]


def transfer(src, dst, amount, **extra):
    """Move `amount` from src to dst if src has enough: the classic transaction."""
    return [
        {
            "Update": {
                "TableName": "Accounts",
                "Key": key(src),
                "UpdateExpression": "SET balance = balance - :a",
                "ConditionExpression": "balance >= :a",
                "ExpressionAttributeValues": {":a": {"N": str(amount)}},
                **extra,
            }
        },
        {
            "Update": {
                "TableName": "Accounts",
                "Key": key(dst),
                "UpdateExpression": "SET balance = balance + :a",
                "ExpressionAttributeValues": {":a": {"N": str(amount)}},
            }
        },
    ]


# ------------------------------------------------------------------------------------------------- the happy path


def test_all_four_actions_commit_together(engine):
    seed(engine, 1, 2, 3)
    response = call(
        engine,
        "TransactWriteItems",
        {
            "TransactItems": [
                put(9, 5),
                {"Update": {"TableName": "Accounts", "Key": key(1), "UpdateExpression": "ADD balance :one",
                            "ExpressionAttributeValues": {":one": {"N": "1"}}}},
                {"Delete": {"TableName": "Accounts", "Key": key(2)}},
                {"ConditionCheck": {"TableName": "Accounts", "Key": key(3), "ConditionExpression": "attribute_exists(id)"}},
            ]
        },
    )  # fmt: skip
    assert response == {}
    assert item(engine, 9)["balance"] == {"N": "5"}
    assert item(engine, 1)["balance"] == {"N": "101"}
    assert item(engine, 2) is None
    assert item(engine, 3)["balance"] == {"N": "100"}


def test_update_creates_missing_item_and_delete_of_missing_item_succeeds(engine):
    call(
        engine,
        "TransactWriteItems",
        {
            "TransactItems": [
                {"Update": {"TableName": "Orders", "Key": key(1, "Orders"), "UpdateExpression": "SET s = :s",
                            "ExpressionAttributeValues": {":s": {"S": "NEW"}}}},
                {"Delete": {"TableName": "Orders", "Key": key(2, "Orders")}},
            ]
        },
    )  # fmt: skip
    assert item(engine, 1, "Orders") == {**key(1, "Orders"), "s": {"S": "NEW"}}
    assert item(engine, 2, "Orders") is None


def test_actions_across_tables(engine):
    seed(engine, 1)
    call(engine, "TransactWriteItems", {"TransactItems": [put(1, 50), put(7, 1, table="Orders")]})
    assert item(engine, 1)["balance"] == {"N": "50"}
    assert item(engine, 7, "Orders")["balance"] == {"N": "1"}


def test_updates_apply_to_the_committed_version_one_after_another(engine):
    seed(engine, 1, 2)
    for _ in range(3):
        call(engine, "TransactWriteItems", {"TransactItems": transfer(1, 2, 30)})
    assert item(engine, 1)["balance"] == {"N": "10"} and item(engine, 2)["balance"] == {"N": "190"}
    error = error_of(engine, "TransactWriteItems", {"TransactItems": transfer(1, 2, 30)})
    assert error.type_name == "TransactionCanceledException"
    assert error.extra["CancellationReasons"] == [CCF, NONE]
    assert item(engine, 1)["balance"] == {"N": "10"} and item(engine, 2)["balance"] == {"N": "190"}


# ---------------------------------------------------------------------------------------------------- cancellation


def test_failed_condition_check_cancels_everything_with_reasons_in_order(engine):
    seed(engine, 1, 2)
    before = snapshot(engine)
    request = {
        "TransactItems": [
            put(1, 0),
            {"Delete": {"TableName": "Accounts", "Key": key(2)}},
            {"ConditionCheck": {"TableName": "Accounts", "Key": key(3), "ConditionExpression": "attribute_exists(id)"}},
            put(4),
        ]
    }
    error = error_of(engine, "TransactWriteItems", request)
    assert error.type_name == "TransactionCanceledException" and error.status == 400
    assert error.extra["CancellationReasons"] == [NONE, NONE, CCF, NONE]
    assert error.message == (
        "Transaction cancelled, please refer cancellation reasons for specific reasons [None, None, ConditionalCheckFailed, None]"
    )
    body = error.to_body()
    assert body["__type"] == "com.amazonaws.dynamodb.v20120810#TransactionCanceledException"
    assert body["Message"] == error.message
    assert snapshot(engine) == before


def test_every_failing_condition_is_reported(engine):
    seed(engine, 1, 2, 3)
    request = {
        "TransactItems": [
            put(1, 1, ConditionExpression="attribute_not_exists(id)"),
            put(2, 2),
            put(3, 3, ConditionExpression="balance > :x", ExpressionAttributeValues={":x": {"N": "500"}}),
        ]
    }
    error = error_of(engine, "TransactWriteItems", request)
    assert error.extra["CancellationReasons"] == [CCF, NONE, CCF]
    assert [item(engine, i)["balance"] for i in (1, 2, 3)] == [{"N": "100"}] * 3


def test_return_values_on_condition_check_failure_all_old(engine):
    seed(engine, 1, 2)
    request = {
        "TransactItems": [
            {"ConditionCheck": {"TableName": "Accounts", "Key": key(1), "ConditionExpression": "balance < :z",
                                "ExpressionAttributeValues": {":z": {"N": "0"}},
                                "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}},
            {"Delete": {"TableName": "Accounts", "Key": key(2), "ConditionExpression": "attribute_not_exists(id)",
                        "ReturnValuesOnConditionCheckFailure": "NONE"}},
            {"Put": {"TableName": "Accounts", "Item": key(3), "ConditionExpression": "attribute_exists(id)",
                     "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}},
        ]
    }  # fmt: skip
    reasons = error_of(engine, "TransactWriteItems", request).extra["CancellationReasons"]
    assert reasons[0] == {**CCF, "Item": {**key(1), "balance": {"N": "100"}}}
    assert reasons[1] == CCF  # NONE: no item
    assert reasons[2] == CCF  # ALL_OLD but there is no old item


def test_item_too_large_is_a_validation_error_reason(engine):
    seed(engine, 1)
    big = {"Put": {"TableName": "Accounts", "Item": {**key(2), "blob": {"S": "x" * (400 * 1024)}}}}
    grow = {
        "Update": {"TableName": "Accounts", "Key": key(1), "UpdateExpression": "SET photo = :b",
                   "ExpressionAttributeValues": {":b": {"S": "y" * (400 * 1024)}}}
    }  # fmt: skip
    error = error_of(engine, "TransactWriteItems", {"TransactItems": [big, grow, put(3)]})
    assert error.type_name == "TransactionCanceledException"
    # Evaluation stops at the first validation error: the later actions are None, unevaluated.
    assert error.extra["CancellationReasons"] == [
        {"Code": "ValidationError", "Message": "Item size has exceeded the maximum allowed size"},
        NONE,
        NONE,
    ]
    assert "[ValidationError, None, None]" in error.message
    assert item(engine, 2) is None and item(engine, 3) is None and "photo" not in item(engine, 1)


def test_update_operand_of_wrong_type_is_a_validation_error_reason(engine):
    call(engine, "PutItem", {"TableName": "Accounts", "Item": {**key(1), "balance": {"S": "lots"}}})
    request = {
        "TransactItems": [
            put(2),
            {"Update": {"TableName": "Accounts", "Key": key(1), "UpdateExpression": "ADD balance :one",
                        "ExpressionAttributeValues": {":one": {"N": "1"}}}},
        ]
    }  # fmt: skip
    reasons = error_of(engine, "TransactWriteItems", request).extra["CancellationReasons"]
    assert reasons[0] == NONE
    assert reasons[1]["Code"] == "ValidationError"
    assert "incorrect data type" in reasons[1]["Message"]
    assert item(engine, 2) is None


# ------------------------------------------------------------------------------------------------------ validation


def assert_refused(engine, request, type_name, message, operation="TransactWriteItems"):
    before = (snapshot(engine), snapshot(engine, "Orders"))
    error = error_of(engine, operation, request)
    assert error.type_name == type_name, error.message
    if message is not None:
        assert error.message == message
    assert (snapshot(engine), snapshot(engine, "Orders")) == before
    return error


def test_101_actions_are_refused(engine):
    error = assert_refused(engine, {"TransactItems": [put(i) for i in range(101)]}, "ValidationException", None)
    assert error.message.startswith("1 validation error detected: Value '")
    assert error.message.endswith(
        "' at 'transactItems' failed to satisfy constraint: Member must have length less than or equal to 100"
    )


def test_100_actions_are_accepted(engine):
    call(engine, "TransactWriteItems", {"TransactItems": [put(i) for i in range(100)]})
    assert len(snapshot(engine)) == 100


def test_empty_and_missing_transact_items(engine):
    assert_refused(
        engine,
        {"TransactItems": []},
        "ValidationException",
        "1 validation error detected: Value '[]' at 'transactItems' failed to satisfy constraint: "
        "Member must have length greater than or equal to 1",
    )
    assert_refused(
        engine,
        {},
        "ValidationException",
        "1 validation error detected: Value null at 'transactItems' failed to satisfy constraint: "
        "Member must not be null",
    )


def test_two_actions_on_one_item_are_refused(engine):
    seed(engine, 1)
    message = "Transaction request cannot include multiple operations on one item"
    assert_refused(engine, {"TransactItems": [put(1, 5), put(1, 6)]}, "ValidationException", message)
    check = {"ConditionCheck": {"TableName": "Accounts", "Key": key(1), "ConditionExpression": "attribute_exists(id)"}}
    assert_refused(engine, {"TransactItems": [put(2), check, put(1)]}, "ValidationException", message)
    # The same key in two tables is two items.
    call(engine, "TransactWriteItems", {"TransactItems": [put(1, 5), put(1, 6, table="Orders")]})


def test_each_transact_item_holds_exactly_one_action(engine):
    message = "TransactItems can only contain one of Check, Put, Update or Delete"
    both = {**put(1), "Delete": {"TableName": "Accounts", "Key": key(2)}}
    assert_refused(engine, {"TransactItems": [put(3), both]}, "ValidationException", message)
    assert_refused(engine, {"TransactItems": [put(3), {}]}, "ValidationException", message)


def test_constraint_messages_name_the_member_path(engine):
    error = assert_refused(
        engine,
        {"TransactItems": [put(1), {"Update": {"TableName": "Accounts", "Key": key(2)}},
                           {"Put": {"TableName": "Accounts"}}]},
        "ValidationException",
        None,
    )  # fmt: skip
    assert error.message == (
        "2 validation errors detected: "
        "Value null at 'transactItems.2.member.update.updateExpression' failed to satisfy constraint: "
        "Member must not be null; "
        "Value null at 'transactItems.3.member.put.item' failed to satisfy constraint: Member must not be null"
    )
    error = assert_refused(
        engine,
        {
            "TransactItems": [{"ConditionCheck": {"TableName": "Accounts", "Key": key(1)}}],
            "ClientRequestToken": "x" * 37,
        },
        "ValidationException",
        None,
    )
    assert "at 'transactItems.1.member.conditionCheck.conditionExpression'" in error.message
    assert "at 'clientRequestToken' failed to satisfy constraint: Member must have length less than or equal to 36" in (
        error.message
    )


def test_a_key_that_does_not_fit_its_table_cancels_the_transaction(engine):
    # DynamoDB finds a key of the wrong shape while evaluating the actions: the first such action is a
    # ValidationError reason, every other action None (evaluation stops there).
    seed(engine, 1)
    before = snapshot(engine)
    bad_delete = {"Delete": {"TableName": "Accounts", "Key": {"id": {"N": "1"}}}}
    bad_put = {"Put": {"TableName": "Accounts", "Item": {"id": {"N": "3"}}}}
    error = error_of(engine, "TransactWriteItems", {"TransactItems": [put(2), bad_delete, bad_put]})
    assert error.type_name == "TransactionCanceledException"
    assert error.extra["CancellationReasons"] == [
        NONE,
        {"Code": "ValidationError", "Message": "The provided key element does not match the schema"},
        NONE,
    ]
    error = error_of(engine, "TransactWriteItems", {"TransactItems": [bad_put, put(2)]})
    assert error.extra["CancellationReasons"] == [
        {"Code": "ValidationError",
         "Message": "One or more parameter values were invalid: Type mismatch for key id expected: S actual: N"},
        NONE,
    ]  # fmt: skip
    assert snapshot(engine) == before


def test_bad_action_refuses_the_whole_request_with_the_single_item_error(engine):
    seed(engine, 1)
    assert_refused(
        engine,
        {"TransactItems": [put(2), {"Put": {"TableName": "Nope", "Item": key(3)}}]},
        "ResourceNotFoundException",
        "Requested resource not found",
    )
    assert_refused(
        engine,
        {"TransactItems": [put(2, ConditionExpression="balance > :x")]},
        "ValidationException",
        "Invalid ConditionExpression: An expression attribute value used in expression is not defined; "
        "attribute value: :x",
    )
    assert_refused(
        engine,
        {"TransactItems": [put(2, ExpressionAttributeValues={":x": {"N": "1"}}, ConditionExpression="balance > :y")]},
        "ValidationException",
        None,
    )
    assert_refused(
        engine,
        {"TransactItems": [{"Update": {"TableName": "Accounts", "Key": key(1), "UpdateExpression": "SET id = :v",
                                       "ExpressionAttributeValues": {":v": {"S": "z"}}}}]},
        "ValidationException",
        "One or more parameter values were invalid: Cannot update attribute id. This attribute is part of the key",
    )  # fmt: skip


def test_single_item_members_outside_the_action_shape_are_ignored(engine):
    # ReturnValues belongs to PutItem, not to a transaction's Put; the service ignores unknown members.
    call(engine, "TransactWriteItems", {"TransactItems": [put(1, ReturnValues="ALL_NEW")]})
    assert item(engine, 1) is not None


def test_aggregate_size_over_4_mb_is_refused(engine):
    items = [
        {"Put": {"TableName": "Accounts", "Item": {**key(i), "blob": {"S": "x" * (390 * 1024)}}}} for i in range(11)
    ]
    assert_refused(engine, {"TransactItems": items}, "ValidationException", None)
    assert engine.store.table_stats("Accounts")[0] == 0
    call(engine, "TransactWriteItems", {"TransactItems": items[:10]})
    assert engine.store.table_stats("Accounts")[0] == 10


# ----------------------------------------------------------------------------------------------------- idempotency


def test_same_token_same_request_applies_once(engine, clock):
    seed(engine, 1, 2)
    request = {"TransactItems": transfer(1, 2, 10), "ClientRequestToken": "tok-1"}
    assert call(engine, "TransactWriteItems", request) == {}
    clock.advance(599)
    assert call(engine, "TransactWriteItems", request) == {}
    assert item(engine, 1)["balance"] == {"N": "90"} and item(engine, 2)["balance"] == {"N": "110"}


def test_replay_is_answered_even_when_the_conditions_no_longer_hold(engine):
    seed(engine, 1, 2)
    request = {"TransactItems": transfer(1, 2, 100), "ClientRequestToken": "all-in"}
    call(engine, "TransactWriteItems", request)
    assert call(engine, "TransactWriteItems", request) == {}  # balance is now 0; a fresh run would be cancelled
    assert item(engine, 1)["balance"] == {"N": "0"}


def test_same_token_different_request_is_a_mismatch(engine):
    seed(engine, 1, 2)
    call(engine, "TransactWriteItems", {"TransactItems": transfer(1, 2, 10), "ClientRequestToken": "tok-2"})
    error = assert_refused(
        engine,
        {"TransactItems": transfer(1, 2, 20), "ClientRequestToken": "tok-2"},
        "IdempotentParameterMismatchException",
        None,
    )
    assert error.to_body()["__type"] == "com.amazonaws.dynamodb.v20120810#IdempotentParameterMismatchException"
    assert error.status == 400 and error.message
    assert item(engine, 1)["balance"] == {"N": "90"}


def test_key_order_inside_the_request_does_not_make_a_different_request(engine):
    seed(engine, 1, 2)
    request = {"TransactItems": transfer(1, 2, 10), "ClientRequestToken": "tok-order"}
    call(engine, "TransactWriteItems", request)
    reordered = copy.deepcopy(request)
    reordered["TransactItems"][0]["Update"] = dict(reversed(list(reordered["TransactItems"][0]["Update"].items())))
    call(engine, "TransactWriteItems", reordered)
    assert item(engine, 1)["balance"] == {"N": "90"}


def test_token_expires_after_ten_minutes(engine, clock):
    seed(engine, 1, 2)
    request = {"TransactItems": transfer(1, 2, 10), "ClientRequestToken": "tok-3"}
    call(engine, "TransactWriteItems", request)
    clock.advance(600)
    call(engine, "TransactWriteItems", request)  # a new request now: applied again
    assert item(engine, 1)["balance"] == {"N": "80"}
    clock.advance(601)
    other = {"TransactItems": transfer(2, 1, 5), "ClientRequestToken": "tok-3"}
    call(engine, "TransactWriteItems", other)  # expired token: a different request is no mismatch
    assert item(engine, 1)["balance"] == {"N": "85"}


def test_cancelled_transaction_records_no_token(engine):
    seed(engine, 1, 2)
    request = {"TransactItems": transfer(1, 2, 500), "ClientRequestToken": "tok-4"}
    error_of(engine, "TransactWriteItems", request)
    call(engine, "PutItem", put(1, 1000)["Put"])
    call(engine, "TransactWriteItems", request)  # runs afresh and now succeeds
    assert item(engine, 1)["balance"] == {"N": "500"}


def test_token_of_a_condition_check_only_transaction_is_recorded(engine):
    seed(engine, 1)
    check = {"ConditionCheck": {"TableName": "Accounts", "Key": key(1), "ConditionExpression": "attribute_exists(id)"}}
    call(engine, "TransactWriteItems", {"TransactItems": [check], "ClientRequestToken": "tok-5"})
    error = error_of(engine, "TransactWriteItems", {"TransactItems": [put(2)], "ClientRequestToken": "tok-5"})
    assert error.type_name == "IdempotentParameterMismatchException"


def test_tokens_survive_reopening_the_store(tmp_path, clock):
    path = tmp_path / "region.db"
    engine = Engine(SqliteStore(path), clock)
    engine.handle("CreateTable", {
        "TableName": "Accounts", "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
        "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}], "BillingMode": "PAY_PER_REQUEST",
    })  # fmt: skip
    seed(engine, 1, 2)
    request = {"TransactItems": transfer(1, 2, 10), "ClientRequestToken": "durable"}
    call(engine, "TransactWriteItems", request)
    engine.store.close()

    reopened = Engine(SqliteStore(path), clock)
    assert call(reopened, "TransactWriteItems", request) == {}
    assert item(reopened, 1)["balance"] == {"N": "90"}
    error = error_of(reopened, "TransactWriteItems", {**request, "TransactItems": transfer(1, 2, 11)})
    assert error.type_name == "IdempotentParameterMismatchException"
    reopened.store.close()


def test_expired_tokens_are_purged(engine, clock):
    seed(engine, 1, 2)
    for i in range(5):
        call(engine, "TransactWriteItems", {"TransactItems": [put(i)], "ClientRequestToken": f"old-{i}"})
    clock.advance(700)
    call(engine, "TransactWriteItems", {"TransactItems": [put(9)], "ClientRequestToken": "new"})
    assert token_count(engine.store) == 1


# ------------------------------------------------------------------------------------------ capacity and metrics


def test_consumed_capacity_is_double_per_table(engine):
    seed(engine, 1)
    response = call(
        engine,
        "TransactWriteItems",
        {
            "TransactItems": [
                put(1, 5),
                {"Put": {"TableName": "Accounts", "Item": {**key(2), "blob": {"S": "x" * 1500}}}},
                put(3, table="Orders"),
                {"ConditionCheck": {"TableName": "Orders", "Key": key(4, "Orders"),
                                    "ConditionExpression": "attribute_not_exists(id)"}},
            ],
            "ReturnConsumedCapacity": "TOTAL",
        },
    )  # fmt: skip
    assert response["ConsumedCapacity"] == [
        {"TableName": "Accounts", "CapacityUnits": 6.0, "WriteCapacityUnits": 6.0},
        {"TableName": "Orders", "CapacityUnits": 4.0, "WriteCapacityUnits": 4.0},
    ]
    indexes = call(engine, "TransactWriteItems", {"TransactItems": [put(5)], "ReturnConsumedCapacity": "INDEXES"})
    assert indexes["ConsumedCapacity"] == [
        {"TableName": "Accounts", "CapacityUnits": 2.0, "WriteCapacityUnits": 2.0,
         "Table": {"CapacityUnits": 2.0, "WriteCapacityUnits": 2.0}}
    ]  # fmt: skip


def test_replay_reports_read_capacity(engine):
    seed(engine, 1, 2)
    request = {"TransactItems": transfer(1, 2, 10), "ClientRequestToken": "cap", "ReturnConsumedCapacity": "TOTAL"}
    first = call(engine, "TransactWriteItems", request)
    assert first["ConsumedCapacity"] == [{"TableName": "Accounts", "CapacityUnits": 4.0, "WriteCapacityUnits": 4.0}]
    again = call(engine, "TransactWriteItems", request)
    assert again["ConsumedCapacity"] == [{"TableName": "Accounts", "CapacityUnits": 2.0, "ReadCapacityUnits": 2.0}]


def test_item_collection_metrics_only_for_tables_with_local_indexes(engine):
    engine.handle("CreateTable", {
        "TableName": "Threads",
        "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"},
                                 {"AttributeName": "n", "AttributeType": "N"},
                                 {"AttributeName": "at", "AttributeType": "S"}],
        "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}, {"AttributeName": "n", "KeyType": "RANGE"}],
        "LocalSecondaryIndexes": [{"IndexName": "byAt", "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"},
                                                                      {"AttributeName": "at", "KeyType": "RANGE"}],
                                   "Projection": {"ProjectionType": "KEYS_ONLY"}}],
        "BillingMode": "PAY_PER_REQUEST",
    })  # fmt: skip
    response = call(
        engine,
        "TransactWriteItems",
        {
            "TransactItems": [put(1, table="Threads"), put(2, table="Threads"), put(3)],
            "ReturnItemCollectionMetrics": "SIZE",
        },
    )
    metrics = response["ItemCollectionMetrics"]
    assert list(metrics) == ["Threads"]
    assert metrics["Threads"] == [
        {"ItemCollectionKey": {"id": {"S": "o1"}}, "SizeEstimateRangeGB": [0.0, 1.0]},
        {"ItemCollectionKey": {"id": {"S": "o2"}}, "SizeEstimateRangeGB": [0.0, 1.0]},
    ]
    plain = call(engine, "TransactWriteItems", {"TransactItems": [put(4)], "ReturnItemCollectionMetrics": "SIZE"})
    assert "ItemCollectionMetrics" not in plain


# ------------------------------------------------------------------------------------------------ TransactGetItems


def get(i, table="Accounts", **extra):
    return {"Get": {"TableName": table, "Key": key(i, table), **extra}}


def test_transact_get_items_in_request_order(engine):
    seed(engine, 1, 2)
    call(engine, "PutItem", put(5, 7, table="Orders")["Put"])
    response = call(
        engine,
        "TransactGetItems",
        {
            "TransactItems": [
                get(2),
                get(3),
                get(5, "Orders", ProjectionExpression="#b", ExpressionAttributeNames={"#b": "balance"}),
                get(1),
            ]
        },
    )
    assert response == {
        "Responses": [
            {"Item": {**key(2), "balance": {"N": "100"}}},
            {},
            {"Item": {"balance": {"N": "7"}}},
            {"Item": {**key(1), "balance": {"N": "100"}}},
        ]
    }


def test_transact_get_items_capacity(engine):
    seed(engine, 1)
    call(engine, "PutItem", {"TableName": "Accounts", "Item": {**key(2), "blob": {"S": "x" * 5000}}})
    response = call(
        engine,
        "TransactGetItems",
        {"TransactItems": [get(1), get(2), get(3), get(1, "Orders")], "ReturnConsumedCapacity": "TOTAL"},
    )
    assert response["ConsumedCapacity"] == [
        {"TableName": "Accounts", "CapacityUnits": 8.0, "ReadCapacityUnits": 8.0},
        {"TableName": "Orders", "CapacityUnits": 2.0, "ReadCapacityUnits": 2.0},
    ]


def test_transact_get_items_validation(engine):
    seed(engine, 1)
    error = assert_refused(engine, {"TransactItems": [get(i) for i in range(101)]}, "ValidationException", None,
                           operation="TransactGetItems")  # fmt: skip
    assert error.message.endswith("Member must have length less than or equal to 100")
    assert_refused(
        engine,
        {"TransactItems": [get(1), get(1)]},
        "ValidationException",
        "Transaction request cannot include multiple operations on one item",
        operation="TransactGetItems",
    )
    assert_refused(
        engine,
        {"TransactItems": [get(1), {}]},
        "ValidationException",
        "1 validation error detected: Value null at 'transactItems.2.member.get' failed to satisfy constraint: "
        "Member must not be null",
        operation="TransactGetItems",
    )
    assert_refused(
        engine,
        {"TransactItems": [get(1, ExpressionAttributeNames={"#b": "balance"})]},
        "ValidationException",
        "ExpressionAttributeNames can only be specified when using expressions",
        operation="TransactGetItems",
    )
    assert_refused(
        engine,
        {"TransactItems": [{"Get": {"TableName": "Accounts", "Key": {"nope": {"S": "1"}}}}]},
        "ValidationException",
        "The provided key element does not match the schema",
        operation="TransactGetItems",
    )


# ---------------------------------------------------------------------------------- injected transaction conflicts


def test_held_item_cancels_a_transaction_with_transaction_conflict(engine):
    seed(engine, 1, 2)
    engine.faults.hold_item(engine.table("Accounts"), key(2))
    before = snapshot(engine)
    error = error_of(engine, "TransactWriteItems", {"TransactItems": transfer(1, 2, 10)})
    assert error.type_name == "TransactionCanceledException"
    assert error.extra["CancellationReasons"] == [NONE, CONFLICT]
    assert "[None, TransactionConflict]" in error.message
    assert snapshot(engine) == before


def test_held_item_refuses_plain_writes_with_transaction_conflict_exception(engine):
    seed(engine, 1, 2)
    engine.faults.hold_item(engine.table("Accounts"), key(1))
    before = snapshot(engine)
    requests = [
        ("PutItem", put(1, 5)["Put"]),
        ("UpdateItem", {"TableName": "Accounts", "Key": key(1), "UpdateExpression": "REMOVE balance"}),
        ("DeleteItem", {"TableName": "Accounts", "Key": key(1)}),
        # Even a write whose condition would fail: the conflict comes first.
        ("DeleteItem", {"TableName": "Accounts", "Key": key(1), "ConditionExpression": "attribute_not_exists(id)"}),
    ]
    for operation, request in requests:
        error = error_of(engine, operation, request)
        assert error.type_name == "TransactionConflictException"
        assert error.message == "Transaction is ongoing for the item"
        assert error.to_body() == {
            "__type": "com.amazonaws.dynamodb.v20120810#TransactionConflictException",
            "message": "Transaction is ongoing for the item",
        }
    assert snapshot(engine) == before
    # Other items and reads are unaffected.
    call(engine, "PutItem", put(2, 7)["Put"])
    assert item(engine, 1)["balance"] == {"N": "100"}


def test_held_item_cancels_transact_get_items(engine):
    seed(engine, 1, 2)
    engine.faults.hold_item(engine.table("Accounts"), key(1))
    error = error_of(engine, "TransactGetItems", {"TransactItems": [get(2), get(1), get(3)]})
    assert error.type_name == "TransactionCanceledException"
    assert error.extra["CancellationReasons"] == [NONE, CONFLICT, NONE]


def test_hold_for_a_duration_and_release(engine, clock):
    seed(engine, 1, 2)
    accounts = engine.table("Accounts")
    engine.faults.hold_item(accounts, key(1), duration_s=5)
    clock.advance(4.9)
    assert error_of(engine, "PutItem", put(1, 5)["Put"]).type_name == "TransactionConflictException"
    clock.advance(0.1)
    call(engine, "PutItem", put(1, 5)["Put"])
    assert not engine.faults.held  # the expired hold is gone: the hot path is back to one empty-dict test

    engine.faults.hold_item(accounts, key(2))
    clock.advance(3600)
    assert error_of(engine, "TransactWriteItems", {"TransactItems": transfer(1, 2, 1)}).type_name == (
        "TransactionCanceledException"
    )
    assert engine.faults.release_item(accounts, key(2)) is True
    assert engine.faults.release_item(accounts, key(2)) is False
    call(engine, "TransactWriteItems", {"TransactItems": transfer(1, 2, 1)})
    assert item(engine, 2)["balance"] == {"N": "101"}

    engine.faults.hold_item(accounts, key(1))
    engine.faults.hold_item(engine.table("Orders"), key(1, "Orders"))
    engine.faults.release_all()
    call(engine, "TransactWriteItems", {"TransactItems": transfer(1, 2, 1)})


def test_replay_of_a_committed_transaction_is_not_blocked_by_a_hold(engine):
    seed(engine, 1, 2)
    request = {"TransactItems": transfer(1, 2, 10), "ClientRequestToken": "held-replay"}
    call(engine, "TransactWriteItems", request)
    engine.faults.hold_item(engine.table("Accounts"), key(1))
    assert call(engine, "TransactWriteItems", request) == {}


# ------------------------------------------------------------------------------------------- secondary indexes


def test_transactions_maintain_global_indexes_and_bill_them_double(engine):
    engine.handle("CreateTable", {
        "TableName": "Users",
        "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"},
                                 {"AttributeName": "email", "AttributeType": "S"}],
        "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
        "GlobalSecondaryIndexes": [{"IndexName": "byEmail", "KeySchema": [{"AttributeName": "email", "KeyType": "HASH"}],
                                    "Projection": {"ProjectionType": "ALL"}}],
        "BillingMode": "PAY_PER_REQUEST",
    })  # fmt: skip

    def by_email(address):
        return call(engine, "Query", {
            "TableName": "Users", "IndexName": "byEmail", "KeyConditionExpression": "email = :e",
            "ExpressionAttributeValues": {":e": {"S": address}},
        })["Items"]  # fmt: skip

    user = {"id": {"S": "u1"}, "email": {"S": "a@example.com"}}
    response = call(
        engine,
        "TransactWriteItems",
        {"TransactItems": [{"Put": {"TableName": "Users", "Item": user}}], "ReturnConsumedCapacity": "INDEXES"},
    )
    assert response["ConsumedCapacity"] == [
        {"TableName": "Users", "CapacityUnits": 4.0, "WriteCapacityUnits": 4.0,
         "Table": {"CapacityUnits": 2.0, "WriteCapacityUnits": 2.0},
         "GlobalSecondaryIndexes": {"byEmail": {"CapacityUnits": 2.0, "WriteCapacityUnits": 2.0}}}
    ]  # fmt: skip
    assert by_email("a@example.com") == [user]

    moved = {
        "Update": {"TableName": "Users", "Key": {"id": {"S": "u1"}}, "UpdateExpression": "SET email = :e",
                   "ExpressionAttributeValues": {":e": {"S": "b@example.com"}}}
    }  # fmt: skip
    blocked = {
        "ConditionCheck": {"TableName": "Accounts", "Key": key(1), "ConditionExpression": "attribute_exists(id)"}
    }
    error_of(engine, "TransactWriteItems", {"TransactItems": [moved, blocked]})
    assert by_email("a@example.com") == [user] and by_email("b@example.com") == []
    seed(engine, 1)
    call(engine, "TransactWriteItems", {"TransactItems": [moved, blocked]})
    assert by_email("a@example.com") == [] and by_email("b@example.com") == [{**user, "email": {"S": "b@example.com"}}]
