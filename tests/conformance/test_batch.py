"""BatchGetItem, BatchWriteItem, ReturnConsumedCapacity and the legacy parameters, through boto3 against a real
region process.

Refused batches (26 requests, duplicate keys, one bad item) must change nothing; the capacity numbers are DynamoDB's
unit arithmetic for items of a known size.
"""

import pytest
from botocore.exceptions import ClientError


def make_table(dynamodb, name, sort=False):
    attrs = [{"AttributeName": "pk", "AttributeType": "S"}]
    keys = [{"AttributeName": "pk", "KeyType": "HASH"}]
    if sort:
        attrs.append({"AttributeName": "n", "AttributeType": "N"})
        keys.append({"AttributeName": "n", "KeyType": "RANGE"})
    dynamodb.create_table(TableName=name, AttributeDefinitions=attrs, KeySchema=keys, BillingMode="PAY_PER_REQUEST")
    dynamodb.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 0.2, "MaxAttempts": 50})
    return name


@pytest.fixture(scope="module")
def tables(dynamodb, unique_table_name):
    return make_table(dynamodb, unique_table_name("Users")), make_table(
        dynamodb, unique_table_name("Events"), sort=True
    )


def scan_all(dynamodb, table):
    return sorted(dynamodb.scan(TableName=table, ConsistentRead=True)["Items"], key=repr)


def refused(dynamodb, tables, call, text):
    before = [scan_all(dynamodb, table) for table in tables]
    with pytest.raises(ClientError) as caught:
        call()
    error = caught.value.response["Error"]
    assert error["Code"] == "ValidationException"
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert [scan_all(dynamodb, table) for table in tables] == before
    return error["Message"] if text is None else text == error["Message"]


def test_mixed_table_batch_write_and_get(dynamodb, tables):
    users, events = tables
    response = dynamodb.batch_write_item(
        RequestItems={
            users: [
                {"PutRequest": {"Item": {"pk": {"S": "u1"}, "name": {"S": "Ann"}, "age": {"N": "41"}}}},
                {"PutRequest": {"Item": {"pk": {"S": "u2"}, "name": {"S": "Bo"}}}},
            ],
            events: [{"PutRequest": {"Item": {"pk": {"S": "u1"}, "n": {"N": str(i)}}}} for i in range(3)],
        }
    )
    assert response["UnprocessedItems"] == {}
    got = dynamodb.batch_get_item(
        RequestItems={
            users: {
                "Keys": [{"pk": {"S": "u1"}}, {"pk": {"S": "u2"}}, {"pk": {"S": "nobody"}}],
                "ProjectionExpression": "#n",
                "ExpressionAttributeNames": {"#n": "name"},
            },
            events: {"Keys": [{"pk": {"S": "u1"}, "n": {"N": "2"}}], "ConsistentRead": True},
        }
    )
    assert got["UnprocessedKeys"] == {}
    assert sorted(got["Responses"][users], key=repr) == [{"name": {"S": "Ann"}}, {"name": {"S": "Bo"}}]
    assert got["Responses"][events] == [{"pk": {"S": "u1"}, "n": {"N": "2"}}]
    deleted = dynamodb.batch_write_item(
        RequestItems={
            users: [{"DeleteRequest": {"Key": {"pk": {"S": "u2"}}}}, {"DeleteRequest": {"Key": {"pk": {"S": "u9"}}}}]
        }
    )
    assert deleted["UnprocessedItems"] == {}
    assert dynamodb.get_item(TableName=users, Key={"pk": {"S": "u2"}}).get("Item") is None


def test_26_requests_are_refused_and_change_nothing(dynamodb, tables):
    users, _ = tables
    requests = [{"PutRequest": {"Item": {"pk": {"S": f"many-{i}"}}}} for i in range(26)]
    message = refused(dynamodb, tables, lambda: dynamodb.batch_write_item(RequestItems={users: requests}), None)
    assert message.startswith(f"1 validation error detected: Value '{{{users}=[")
    assert message.endswith(
        "at 'requestItems' failed to satisfy constraint: Map value must satisfy constraint: "
        "[Member must have length less than or equal to 25, Member must have length greater than or equal to 1]"
    )


def test_duplicate_keys_are_refused_and_change_nothing(dynamodb, tables):
    users, events = tables
    duplicates = "Provided list of item keys contains duplicates"
    put = {"PutRequest": {"Item": {"pk": {"S": "dup"}}}}
    assert refused(dynamodb, tables, lambda: dynamodb.batch_write_item(RequestItems={users: [put, put]}), duplicates)
    mixed = {events: [{"PutRequest": {"Item": {"pk": {"S": "d"}, "n": {"N": "1"}}}},
                      {"DeleteRequest": {"Key": {"pk": {"S": "d"}, "n": {"N": "1.0"}}}}]}  # fmt: skip
    assert refused(dynamodb, tables, lambda: dynamodb.batch_write_item(RequestItems=mixed), duplicates)
    keys = {users: {"Keys": [{"pk": {"S": "u1"}}, {"pk": {"S": "u1"}}]}}
    assert refused(dynamodb, tables, lambda: dynamodb.batch_get_item(RequestItems=keys), duplicates)


def test_one_bad_item_refuses_the_whole_batch(dynamodb, tables):
    users, events = tables
    good = [{"PutRequest": {"Item": {"pk": {"S": f"good-{i}"}}}} for i in range(5)]
    bad = {"PutRequest": {"Item": {"name": {"S": "no key"}}}}
    assert refused(dynamodb, tables, lambda: dynamodb.batch_write_item(RequestItems={users: good, events: [bad]}),
                   "The provided key element does not match the schema")  # fmt: skip


def test_too_many_keys_for_batch_get(dynamodb, tables):
    users, _ = tables
    keys = [{"pk": {"S": f"k{i}"}} for i in range(101)]
    with pytest.raises(ClientError) as caught:
        dynamodb.batch_get_item(RequestItems={users: {"Keys": keys}})
    assert caught.value.response["Error"]["Code"] == "ValidationException"
    assert "Member must have length less than or equal to 100" in caught.value.response["Error"]["Message"]


def test_consumed_capacity_for_known_item_sizes(dynamodb, tables):
    users, _ = tables
    # 2 + 3 (name "pk" + "cap") + 5000 bytes ("d" + 4999 characters) = 5005 bytes: 5 write units, 2 read units.
    item = {"pk": {"S": "cap"}, "d": {"S": "x" * 4999}}
    put = dynamodb.put_item(TableName=users, Item=item, ReturnConsumedCapacity="TOTAL")
    assert put["ConsumedCapacity"] == {"TableName": users, "CapacityUnits": 5.0}
    strong = dynamodb.get_item(
        TableName=users, Key={"pk": {"S": "cap"}}, ConsistentRead=True, ReturnConsumedCapacity="TOTAL"
    )
    assert strong["ConsumedCapacity"] == {"TableName": users, "CapacityUnits": 2.0}
    eventual = dynamodb.get_item(TableName=users, Key={"pk": {"S": "cap"}}, ReturnConsumedCapacity="INDEXES")
    assert eventual["ConsumedCapacity"] == {"TableName": users, "CapacityUnits": 1.0, "Table": {"CapacityUnits": 1.0}}
    batch = dynamodb.batch_get_item(
        RequestItems={users: {"Keys": [{"pk": {"S": "cap"}}, {"pk": {"S": "absent"}}], "ConsistentRead": True}},
        ReturnConsumedCapacity="TOTAL",
    )
    assert batch["ConsumedCapacity"] == [{"TableName": users, "CapacityUnits": 3.0}]
    write = dynamodb.batch_write_item(
        RequestItems={
            users: [
                {"PutRequest": {"Item": {**item, "pk": {"S": "cap2"}}}},
                {"DeleteRequest": {"Key": {"pk": {"S": "cap"}}}},
            ]
        },
        ReturnConsumedCapacity="TOTAL",
    )
    assert write["ConsumedCapacity"] == [{"TableName": users, "CapacityUnits": 10.0}]


def test_legacy_expected_and_attribute_updates(dynamodb, tables):
    users, _ = tables
    key = {"pk": {"S": "legacy"}}
    dynamodb.put_item(TableName=users, Item={**key, "v": {"N": "1"}}, Expected={"pk": {"Exists": False}})
    with pytest.raises(ClientError) as caught:
        dynamodb.put_item(TableName=users, Item=key, Expected={"pk": {"Exists": False}})
    assert caught.value.response["Error"]["Code"] == "ConditionalCheckFailedException"
    updated = dynamodb.update_item(
        TableName=users,
        Key=key,
        AttributeUpdates={
            "v": {"Action": "ADD", "Value": {"N": "2"}},
            "tags": {"Action": "ADD", "Value": {"SS": ["a"]}},
        },
        Expected={"v": {"ComparisonOperator": "LT", "AttributeValueList": [{"N": "5"}]}},
        ReturnValues="ALL_NEW",
    )
    assert updated["Attributes"] == {**key, "v": {"N": "3"}, "tags": {"SS": ["a"]}}
    with pytest.raises(ClientError) as caught:
        dynamodb.update_item(TableName=users, Key=key, AttributeUpdates={"v": {"Action": "PUT", "Value": {"N": "0"}}},
                             Expected={"v": {"Value": {"N": "1"}}, "tags": {"ComparisonOperator": "NULL"}},
                             ConditionalOperator="OR")  # fmt: skip
    assert caught.value.response["Error"]["Code"] == "ConditionalCheckFailedException"
    with pytest.raises(ClientError) as caught:
        dynamodb.put_item(
            TableName=users, Item=key, Expected={"v": {"Exists": False}}, ConditionExpression="attribute_exists(v)"
        )
    assert caught.value.response["Error"]["Message"] == (
        "Can not use both expression and non-expression parameters in the same request: "
        "Non-expression parameters: {Expected} Expression parameters: {ConditionExpression}"
    )
    assert dynamodb.get_item(TableName=users, Key=key, AttributesToGet=["v"])["Item"] == {"v": {"N": "3"}}


def test_legacy_key_conditions_and_query_filter(dynamodb, tables):
    _, events = tables
    dynamodb.batch_write_item(RequestItems={events: [
        {"PutRequest": {"Item": {"pk": {"S": "q"}, "n": {"N": str(i)}, "parity": {"S": "odd" if i % 2 else "even"}}}}
        for i in range(10)]})  # fmt: skip
    equals_q = {"ComparisonOperator": "EQ", "AttributeValueList": [{"S": "q"}]}
    response = dynamodb.query(
        TableName=events,
        KeyConditions={
            "pk": equals_q,
            "n": {"ComparisonOperator": "BETWEEN", "AttributeValueList": [{"N": "2"}, {"N": "7"}]},
        },
        QueryFilter={"parity": {"ComparisonOperator": "EQ", "AttributeValueList": [{"S": "odd"}]}},
        AttributesToGet=["n"],
        ScanIndexForward=False,
    )
    assert response["Items"] == [{"n": {"N": "7"}}, {"n": {"N": "5"}}, {"n": {"N": "3"}}]
    assert (response["Count"], response["ScannedCount"]) == (3, 6)
    scanned = dynamodb.scan(TableName=events, ScanFilter={"pk": equals_q, "parity": {"ComparisonOperator": "NOT_NULL"}})
    assert scanned["Count"] == 10
    with pytest.raises(ClientError) as caught:
        dynamodb.query(TableName=events, KeyConditions={"pk": equals_q},
                       QueryFilter={"n": {"ComparisonOperator": "GT", "AttributeValueList": [{"N": "7"}]}})  # fmt: skip
    assert caught.value.response["Error"]["Message"] == (
        "QueryFilter can only contain non-primary key attributes: Primary key attribute: n"
    )
