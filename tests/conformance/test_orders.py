"""The Orders access patterns of the README, through boto3 against a real region process.

Orders: partition key customerId, sort key sk = "<orderDate>#<orderId>". These are the examples users copy, so each
test is written the way DynamoDB documents the behaviour.
"""

import pytest
from botocore.exceptions import ClientError


@pytest.fixture(scope="module")
def orders(dynamodb, unique_table_name):
    name = unique_table_name("Orders")
    dynamodb.create_table(
        TableName=name,
        AttributeDefinitions=[
            {"AttributeName": "customerId", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        KeySchema=[{"AttributeName": "customerId", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        BillingMode="PAY_PER_REQUEST",
    )
    dynamodb.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 0.2, "MaxAttempts": 50})
    return name


def put_order(dynamodb, table, customer, date, order_id, **attrs):
    item = {"customerId": {"S": customer}, "sk": {"S": f"{date}#{order_id}"}, "orderId": {"S": order_id}}
    item.update(attrs)
    dynamodb.put_item(TableName=table, Item=item)


def test_begins_with_newest_first(dynamodb, orders):
    put_order(dynamodb, orders, "C-17", "2026-10-02", "o-967", total={"N": "19.90"})
    put_order(dynamodb, orders, "C-17", "2026-10-28", "o-981", total={"N": "42"})
    put_order(dynamodb, orders, "C-17", "2026-09-30", "o-900")
    put_order(dynamodb, orders, "C-18", "2026-10-05", "o-970")
    response = dynamodb.query(
        TableName=orders,
        KeyConditionExpression="customerId = :c AND begins_with(sk, :month)",
        ExpressionAttributeValues={":c": {"S": "C-17"}, ":month": {"S": "2026-10"}},
        ScanIndexForward=False,
    )
    assert [item["orderId"]["S"] for item in response["Items"]] == ["o-981", "o-967"]
    assert response["Count"] == 2 and response["ScannedCount"] == 2
    assert response["Items"][1]["total"] == {"N": "19.9"}  # numbers come back in canonical form


def test_optimistic_locking_succeeds_once(dynamodb, orders):
    key = {"customerId": {"S": "C-20"}, "sk": {"S": "2026-10-03#o-971"}}
    dynamodb.put_item(TableName=orders, Item={**key, "status": {"S": "NEW"}, "version": {"N": "1"}})
    update = dict(
        TableName=orders,
        Key=key,
        UpdateExpression="SET #st = :paid, version = :next",
        ConditionExpression="version = :seen",
        ExpressionAttributeNames={"#st": "status"},
        ExpressionAttributeValues={":paid": {"S": "PAID"}, ":next": {"N": "2"}, ":seen": {"N": "1"}},
        ReturnValues="ALL_NEW",
    )
    first = dynamodb.update_item(**update)
    assert first["Attributes"]["status"] == {"S": "PAID"}
    assert first["Attributes"]["version"] == {"N": "2"}
    with pytest.raises(ClientError) as caught:
        dynamodb.update_item(**update)
    assert caught.value.response["Error"]["Code"] == "ConditionalCheckFailedException"
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    item = dynamodb.get_item(TableName=orders, Key=key, ConsistentRead=True)["Item"]
    assert item["version"] == {"N": "2"}


def test_condition_failure_returns_item_when_asked(dynamodb, orders):
    key = {"customerId": {"S": "C-21"}, "sk": {"S": "2026-10-04#o-972"}}
    dynamodb.put_item(TableName=orders, Item={**key, "version": {"N": "5"}})
    with pytest.raises(ClientError) as caught:
        dynamodb.update_item(
            TableName=orders,
            Key=key,
            UpdateExpression="SET version = :next",
            ConditionExpression="version = :seen",
            ExpressionAttributeValues={":next": {"N": "2"}, ":seen": {"N": "1"}},
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
    assert caught.value.response["Error"]["Code"] == "ConditionalCheckFailedException"
    assert caught.value.response["Item"] == {**key, "version": {"N": "5"}}


def test_put_if_absent(dynamodb, orders):
    item = {"customerId": {"S": "C-22"}, "sk": {"S": "2026-10-05#o-973"}, "status": {"S": "NEW"}}
    dynamodb.put_item(TableName=orders, Item=item, ConditionExpression="attribute_not_exists(customerId)")
    with pytest.raises(ClientError) as caught:
        dynamodb.put_item(
            TableName=orders,
            Item={**item, "status": {"S": "OVERWRITTEN"}},
            ConditionExpression="attribute_not_exists(customerId)",
        )
    assert caught.value.response["Error"]["Code"] == "ConditionalCheckFailedException"
    got = dynamodb.get_item(TableName=orders, Key={"customerId": item["customerId"], "sk": item["sk"]})
    assert got["Item"]["status"] == {"S": "NEW"}


def test_return_values_of_put_and_delete(dynamodb, orders):
    key = {"customerId": {"S": "C-23"}, "sk": {"S": "2026-10-06#o-974"}}
    assert "Attributes" not in dynamodb.put_item(TableName=orders, Item={**key, "n": {"N": "1"}}, ReturnValues="ALL_OLD")
    replaced = dynamodb.put_item(TableName=orders, Item={**key, "n": {"N": "2"}}, ReturnValues="ALL_OLD")
    assert replaced["Attributes"]["n"] == {"N": "1"}
    deleted = dynamodb.delete_item(TableName=orders, Key=key, ReturnValues="ALL_OLD")
    assert deleted["Attributes"]["n"] == {"N": "2"}
    assert "Item" not in dynamodb.get_item(TableName=orders, Key=key)
    with pytest.raises(ClientError) as caught:
        dynamodb.put_item(TableName=orders, Item={**key, "n": {"N": "3"}}, ReturnValues="ALL_NEW")
    assert caught.value.response["Error"]["Code"] == "ValidationException"


def test_update_return_values_updated_old_and_new(dynamodb, orders):
    key = {"customerId": {"S": "C-24"}, "sk": {"S": "2026-10-07#o-975"}}
    dynamodb.put_item(TableName=orders, Item={**key, "a": {"N": "1"}, "b": {"S": "keep"}})
    old = dynamodb.update_item(
        TableName=orders, Key=key, UpdateExpression="SET a = a + :one", ExpressionAttributeValues={":one": {"N": "1"}},
        ReturnValues="UPDATED_OLD",
    )
    assert old["Attributes"] == {"a": {"N": "1"}}
    new = dynamodb.update_item(
        TableName=orders, Key=key, UpdateExpression="SET a = a + :one", ExpressionAttributeValues={":one": {"N": "1"}},
        ReturnValues="UPDATED_NEW",
    )
    assert new["Attributes"] == {"a": {"N": "3"}}


def test_update_creates_missing_item(dynamodb, orders):
    key = {"customerId": {"S": "C-25"}, "sk": {"S": "2026-10-08#o-976"}}
    dynamodb.update_item(
        TableName=orders, Key=key, UpdateExpression="ADD visits :one", ExpressionAttributeValues={":one": {"N": "1"}}
    )
    assert dynamodb.get_item(TableName=orders, Key=key)["Item"] == {**key, "visits": {"N": "1"}}


def test_updating_a_key_attribute_is_refused(dynamodb, orders):
    key = {"customerId": {"S": "C-26"}, "sk": {"S": "2026-10-09#o-977"}}
    with pytest.raises(ClientError) as caught:
        dynamodb.update_item(
            TableName=orders, Key=key, UpdateExpression="SET sk = :x", ExpressionAttributeValues={":x": {"S": "y"}}
        )
    assert caught.value.response["Error"]["Code"] == "ValidationException"
    assert "This attribute is part of the key" in caught.value.response["Error"]["Message"]
    assert "Item" not in dynamodb.get_item(TableName=orders, Key=key)


def test_sort_key_order_is_utf8_bytes(dynamodb, orders):
    for sk in ["z", "a", "A", "¿", "Z0"]:
        dynamodb.put_item(TableName=orders, Item={"customerId": {"S": "C-order"}, "sk": {"S": sk}})
    response = dynamodb.query(
        TableName=orders, KeyConditionExpression="customerId = :c", ExpressionAttributeValues={":c": {"S": "C-order"}}
    )
    assert [i["sk"]["S"] for i in response["Items"]] == ["A", "Z0", "a", "z", "¿"]
