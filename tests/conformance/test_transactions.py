"""TransactWriteItems and TransactGetItems through boto3 against a real region process.

The bank-transfer shape users copy: debit one account under a condition, credit another, and check a third item
that the transaction does not change.
"""

import uuid

import pytest
from botocore.exceptions import ClientError


CCF = {"Code": "ConditionalCheckFailed", "Message": "The conditional request failed"}
NONE = {"Code": "None"}


def create_accounts(client, name):
    client.create_table(
        TableName=name,
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    client.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 0.2, "MaxAttempts": 50})


@pytest.fixture(scope="module")
def accounts(dynamodb, unique_table_name):
    name = unique_table_name("Accounts")
    create_accounts(dynamodb, name)
    return name


def key(account):
    return {"id": {"S": account}}


def open_account(client, table, account, balance, **extra):
    client.put_item(TableName=table, Item={**key(account), "balance": {"N": str(balance)}, **extra})


def balances(client, table, *accounts):
    out = []
    for account in accounts:
        found = client.get_item(TableName=table, Key=key(account), ConsistentRead=True).get("Item")
        out.append(None if found is None else int(found["balance"]["N"]))
    return out


def transfer(table, src, dst, amount):
    value = {":a": {"N": str(amount)}}
    return [
        {
            "Update": {
                "TableName": table,
                "Key": key(src),
                "UpdateExpression": "SET balance = balance - :a",
                "ConditionExpression": "balance >= :a",
                "ExpressionAttributeValues": value,
            }
        },
        {
            "Update": {
                "TableName": table,
                "Key": key(dst),
                "UpdateExpression": "SET balance = balance + :a",
                "ExpressionAttributeValues": value,
            }
        },
    ]


def new_ids(*names):
    run = uuid.uuid4().hex[:8]
    return [f"{name}-{run}" for name in names]


def error_of(call, **kwargs):
    with pytest.raises(ClientError) as caught:
        call(**kwargs)
    return caught.value.response


def test_transfer_commits_both_sides(dynamodb, accounts):
    alice, bob = new_ids("alice", "bob")
    open_account(dynamodb, accounts, alice, 100)
    open_account(dynamodb, accounts, bob, 5)
    response = dynamodb.transact_write_items(TransactItems=transfer(accounts, alice, bob, 30))
    assert response["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert balances(dynamodb, accounts, alice, bob) == [70, 35]


def test_failed_condition_check_leaves_every_item_untouched(dynamodb, accounts):
    alice, bob, carol, frozen = new_ids("alice", "bob", "carol", "frozen")
    open_account(dynamodb, accounts, alice, 100)
    open_account(dynamodb, accounts, bob, 5)
    open_account(dynamodb, accounts, frozen, 0, status={"S": "FROZEN"})
    items = transfer(accounts, alice, bob, 30) + [
        {"Put": {"TableName": accounts, "Item": {**key(carol), "balance": {"N": "1"}}}},
        {
            "ConditionCheck": {
                "TableName": accounts,
                "Key": key(frozen),
                "ConditionExpression": "#s = :open",
                "ExpressionAttributeNames": {"#s": "status"},
                "ExpressionAttributeValues": {":open": {"S": "OPEN"}},
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        },
    ]
    response = error_of(dynamodb.transact_write_items, TransactItems=items)
    assert response["Error"]["Code"] == "TransactionCanceledException"
    assert response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert response["Error"]["Message"] == (
        "Transaction cancelled, please refer cancellation reasons for specific reasons "
        "[None, None, None, ConditionalCheckFailed]"
    )
    assert response["CancellationReasons"] == [
        NONE,
        NONE,
        NONE,
        {**CCF, "Item": {**key(frozen), "balance": {"N": "0"}, "status": {"S": "FROZEN"}}},
    ]
    assert balances(dynamodb, accounts, alice, bob, carol) == [100, 5, None]


def test_reasons_name_each_failing_action_in_request_order(dynamodb, accounts):
    alice, bob = new_ids("alice", "bob")
    open_account(dynamodb, accounts, alice, 10)
    open_account(dynamodb, accounts, bob, 10)
    items = [
        {"Put": {"TableName": accounts, "Item": {**key(bob), "balance": {"N": "0"}},
                 "ConditionExpression": "attribute_not_exists(id)"}},
    ] + transfer(accounts, alice, bob + "-x", 50)  # fmt: skip
    response = error_of(dynamodb.transact_write_items, TransactItems=items)
    # The credit of a missing account reads a balance that does not exist: DynamoDB reports that per action too.
    assert response["CancellationReasons"] == [
        CCF,
        CCF,
        {
            "Code": "ValidationError",
            "Message": "The provided expression refers to an attribute that does not exist in the item",
        },
    ]
    assert response["Error"]["Message"].endswith("[ConditionalCheckFailed, ConditionalCheckFailed, ValidationError]")
    assert balances(dynamodb, accounts, alice, bob, bob + "-x") == [10, 10, None]


def test_idempotent_retry_applies_once(dynamodb, accounts):
    alice, bob = new_ids("alice", "bob")
    open_account(dynamodb, accounts, alice, 100)
    open_account(dynamodb, accounts, bob, 0)
    token = str(uuid.uuid4())
    items = transfer(accounts, alice, bob, 40)
    dynamodb.transact_write_items(TransactItems=items, ClientRequestToken=token)
    again = dynamodb.transact_write_items(TransactItems=items, ClientRequestToken=token)
    assert again["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert balances(dynamodb, accounts, alice, bob) == [60, 40]

    response = error_of(
        dynamodb.transact_write_items, TransactItems=transfer(accounts, alice, bob, 41), ClientRequestToken=token
    )
    assert response["Error"]["Code"] == "IdempotentParameterMismatchException"
    assert response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert balances(dynamodb, accounts, alice, bob) == [60, 40]


def test_boto3_fills_in_a_fresh_token_per_call(dynamodb, accounts):
    # botocore generates ClientRequestToken (an idempotency token) when the caller gives none: two calls, two
    # transactions.
    alice, bob = new_ids("alice", "bob")
    open_account(dynamodb, accounts, alice, 100)
    open_account(dynamodb, accounts, bob, 0)
    items = transfer(accounts, alice, bob, 10)
    dynamodb.transact_write_items(TransactItems=items)
    dynamodb.transact_write_items(TransactItems=items)
    assert balances(dynamodb, accounts, alice, bob) == [80, 20]


def test_101_actions_are_refused_and_change_nothing(dynamodb, accounts):
    ids = new_ids(*(f"n{i}" for i in range(101)))
    items = [{"Put": {"TableName": accounts, "Item": {**key(i), "balance": {"N": "1"}}}} for i in ids]
    response = error_of(dynamodb.transact_write_items, TransactItems=items)
    assert response["Error"]["Code"] == "ValidationException"
    assert response["Error"]["Message"].endswith(
        "at 'transactItems' failed to satisfy constraint: Member must have length less than or equal to 100"
    )
    assert balances(dynamodb, accounts, ids[0], ids[100]) == [None, None]
    gets = [{"Get": {"TableName": accounts, "Key": key(i)}} for i in ids]
    response = error_of(dynamodb.transact_get_items, TransactItems=gets)
    assert response["Error"]["Code"] == "ValidationException"


def test_two_actions_on_one_item_are_refused_and_change_nothing(dynamodb, accounts):
    alice, bob = new_ids("alice", "bob")
    open_account(dynamodb, accounts, alice, 100)
    items = transfer(accounts, alice, bob, 10) + [
        {"ConditionCheck": {"TableName": accounts, "Key": key(alice), "ConditionExpression": "attribute_exists(id)"}}
    ]
    response = error_of(dynamodb.transact_write_items, TransactItems=items)
    assert response["Error"]["Code"] == "ValidationException"
    assert response["Error"]["Message"] == "Transaction request cannot include multiple operations on one item"
    assert balances(dynamodb, accounts, alice, bob) == [100, None]


def test_transact_get_items_in_request_order(dynamodb, accounts):
    alice, bob, ghost = new_ids("alice", "bob", "ghost")
    open_account(dynamodb, accounts, alice, 1, note={"S": "hi"})
    open_account(dynamodb, accounts, bob, 2)
    response = dynamodb.transact_get_items(
        TransactItems=[
            {"Get": {"TableName": accounts, "Key": key(bob)}},
            {"Get": {"TableName": accounts, "Key": key(ghost)}},
            {"Get": {"TableName": accounts, "Key": key(alice), "ProjectionExpression": "note"}},
        ],
        ReturnConsumedCapacity="TOTAL",
    )
    assert response["Responses"] == [
        {"Item": {**key(bob), "balance": {"N": "2"}}},
        {},
        {"Item": {"note": {"S": "hi"}}},
    ]
    assert response["ConsumedCapacity"] == [{"TableName": accounts, "CapacityUnits": 6.0, "ReadCapacityUnits": 6.0}]


def test_token_survives_a_region_restart(region_factory, client_factory, tmp_path, unique_table_name):
    region = region_factory(data_dir=tmp_path / "data")
    client = client_factory(endpoint=region.start())
    table = unique_table_name("Accounts")
    create_accounts(client, table)
    open_account(client, table, "alice", 100)
    open_account(client, table, "bob", 0)
    token = str(uuid.uuid4())
    items = transfer(table, "alice", "bob", 25)
    client.transact_write_items(TransactItems=items, ClientRequestToken=token)
    region.stop()

    client = client_factory(endpoint=region.start())
    client.transact_write_items(TransactItems=items, ClientRequestToken=token)
    assert balances(client, table, "alice", "bob") == [75, 25]
    response = error_of(
        client.transact_write_items, TransactItems=transfer(table, "alice", "bob", 1), ClientRequestToken=token
    )
    assert response["Error"]["Code"] == "IdempotentParameterMismatchException"
    assert balances(client, table, "alice", "bob") == [75, 25]
