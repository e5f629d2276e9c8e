"""Limits and bad input: each request gets DynamoDB's error type and the table is unchanged afterwards."""

import pytest

from conformance.tables import create_pk_table, error_of


@pytest.fixture(scope="module")
def table(dynamodb, unique_table_name):
    name = unique_table_name("Limits")
    create_pk_table(dynamodb, name)
    dynamodb.put_item(TableName=name, Item={"pk": {"S": "existing"}, "v": {"N": "1"}})
    return name


def contents(dynamodb, table):
    items = dynamodb.scan(TableName=table, ConsistentRead=True)["Items"]
    return sorted(items, key=lambda i: i["pk"]["S"])


def nested_map(depth):
    value = {"S": "leaf"}
    for _ in range(depth):
        value = {"M": {"m": value}}
    return value


def test_item_size_limit_is_exact(dynamodb, table):
    # Item size = attribute names + values: "pk" + "big" (5 bytes) + "x" + payload.
    payload = 400 * 1024 - len("pk") - len("big") - len("x")
    dynamodb.put_item(TableName=table, Item={"pk": {"S": "big"}, "x": {"S": "a" * payload}})
    before = contents(dynamodb, table)
    code, message = error_of(
        dynamodb.put_item, TableName=table, Item={"pk": {"S": "big"}, "x": {"S": "a" * (payload + 1)}}
    )
    assert code == "ValidationException" and "Item size has exceeded the maximum allowed size" in message
    assert contents(dynamodb, table) == before
    dynamodb.delete_item(TableName=table, Key={"pk": {"S": "big"}})


BAD_REQUESTS = {
    "partition key over 2048 bytes": dict(Item={"pk": {"S": "k" * 2049}}),
    "map nested 33 deep": dict(Item={"pk": {"S": "deep"}, "m": nested_map(33)}),
    "39-digit number": dict(Item={"pk": {"S": "num"}, "n": {"N": "1" * 39}}),
    "number too large": dict(Item={"pk": {"S": "num"}, "n": {"N": "1E126"}}),
    "number too small": dict(Item={"pk": {"S": "num"}, "n": {"N": "1E-131"}}),
    "empty string key": dict(Item={"pk": {"S": ""}}),
    "empty set": dict(Item={"pk": {"S": "set"}, "s": {"SS": []}}),
    "missing key": dict(Item={"other": {"S": "x"}}),
    "wrong key type": dict(Item={"pk": {"N": "1"}}),
    "unused placeholder": dict(
        Item={"pk": {"S": "x"}},
        ConditionExpression="attribute_not_exists(pk)",
        ExpressionAttributeValues={":unused": {"S": "u"}},
    ),
    "bare reserved word": dict(Item={"pk": {"S": "x"}}, ConditionExpression="attribute_not_exists(status)"),
    "undefined placeholder": dict(Item={"pk": {"S": "x"}}, ConditionExpression="v = :missing"),
}


@pytest.mark.parametrize("case", list(BAD_REQUESTS))
def test_bad_put_is_refused_and_changes_nothing(dynamodb, table, case):
    before = contents(dynamodb, table)
    code, message = error_of(dynamodb.put_item, TableName=table, **BAD_REQUESTS[case])
    assert code == "ValidationException", message
    assert contents(dynamodb, table) == before


def test_deep_but_legal_nesting_is_accepted(dynamodb, table):
    dynamodb.put_item(TableName=table, Item={"pk": {"S": "deep-ok"}, "m": nested_map(32)})
    item = dynamodb.get_item(TableName=table, Key={"pk": {"S": "deep-ok"}})["Item"]
    assert item["m"] == nested_map(32)
    dynamodb.delete_item(TableName=table, Key={"pk": {"S": "deep-ok"}})


def test_messages_name_the_problem(dynamodb, table):
    _, message = error_of(dynamodb.put_item, TableName=table, **BAD_REQUESTS["bare reserved word"])
    assert "Attribute name is a reserved keyword; reserved keyword: status" in message
    _, message = error_of(dynamodb.put_item, TableName=table, **BAD_REQUESTS["unused placeholder"])
    assert "Value provided in ExpressionAttributeValues unused in expressions: keys: {:unused}" in message
    _, message = error_of(dynamodb.put_item, TableName=table, **BAD_REQUESTS["partition key over 2048 bytes"])
    assert "Size of hashkey has exceeded the maximum size limit of2048 bytes" in message
    _, message = error_of(dynamodb.put_item, TableName=table, **BAD_REQUESTS["39-digit number"])
    assert "Attempting to store more than 38 significant digits in a Number" in message
    _, message = error_of(dynamodb.put_item, TableName=table, **BAD_REQUESTS["map nested 33 deep"])
    assert "Nesting Levels have exceeded supported limits" in message


def test_missing_table_is_resource_not_found(dynamodb):
    code, _ = error_of(dynamodb.get_item, TableName="NoSuchTable", Key={"pk": {"S": "x"}})
    assert code == "ResourceNotFoundException"


def test_key_that_does_not_match_schema(dynamodb, table):
    code, message = error_of(dynamodb.get_item, TableName=table, Key={"pk": {"S": "x"}, "extra": {"S": "y"}})
    assert code == "ValidationException"
    assert message == "The provided key element does not match the schema"
